#pragma once
// Side by side: up to four reconstructions in a row, one window (the first image's auto window) and
// linked zoom, pan and cursor, each titled with its run — the presenter's "gridding vs iterative vs
// compressed sensing" and a quick look at any runs of the session. The Runs menu lists the runs of the
// current data; checking some shows those, none checked shows the newest (model::sideBySideRuns).
#include <QVector>
#include <QWidget>
#include <array>
#include <memory>

#include "display_orientation.hpp"
#include "larmor/array/array.hpp"

class QHBoxLayout;
class QLabel;
class QToolButton;

namespace larmor::ui {

class SliceView;

class SideBySideView : public QWidget {
  Q_OBJECT
 public:
  struct Panel {
    QString label;
    std::shared_ptr<const CArray> image;  ///< [x, y, z, 1, slices]; the middle plane is shown
    std::array<double, 3> spacingMm{1, 1, 1};
    QString caption;  ///< under the title: time, error
  };
  struct Choice {
    int number = 0;
    QString label;  ///< "run 3: cg, fd λ 0.01"
  };
  explicit SideBySideView(QWidget* parent = nullptr);
  /// The Runs menu: every run of the data, those in `shown` checked.
  void setChoices(const QVector<Choice>& runs, const QVector<int>& shown);
  QToolButton* runsButton() const { return runs_; }
  void setPanels(const QVector<Panel>& panels, const model::DisplayOrientation& orientation = {});
  int panelCount() const { return count_; }
  SliceView* view(int i) const;

 signals:
  /// The user checked or unchecked a run in the Runs menu: the numbers now checked (empty: the newest).
  void runsPicked(const QVector<int>& numbers);

 private:
  QToolButton* runs_ = nullptr;
  static constexpr int kMax = 4;
  std::array<SliceView*, kMax> views_{};
  QLabel* hint_ = nullptr;
  int count_ = 0;
};

}  // namespace larmor::ui
