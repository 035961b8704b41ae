#pragma once
// The compare tab: an image A (the shown run, or any run of the session, of any data, or a reference file)
// next to a reference (B: the phantom's truth, another run, an image file: .cfl, DICOM, NIfTI),
// with the error map |a·|A| − |B|| and the local PSNR map (engine's quality module), colour bars,
// percent error / PSNR / SSIM for the slice and the volume, and an A/B flicker. Cursor, zoom/pan and
// window are linked across the four views. The maps are computed off the GUI thread. Which pair is
// compared is the model's choice (model/comparison.hpp); the view shows it and reports the user's pick.
#include <QString>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include "display_orientation.hpp"
#include <array>
#include <memory>

#include "larmor/array/array.hpp"
#include "larmor/quality/metrics.hpp"

class QComboBox;
class QLayout;
class QLabel;
class QPushButton;
class QSlider;
class QTableWidget;
class QTimer;

namespace larmor::ui {

class SliceView;
struct CompareData;

class CompareView : public QWidget {
  Q_OBJECT
 public:
  struct Candidate {
    QString label;
    std::shared_ptr<const CArray> image;  ///< [x, y, z, 1, slices]
  };
  explicit CompareView(QWidget* parent = nullptr);
  ~CompareView() override;

  /// A (null: nothing to compare) and the references to choose from, `current` chosen (-1: none). The
  /// maps are computed again only when the pair changed.
  void setComparison(std::shared_ptr<const CArray> test, const QString& label, std::array<double, 3> spacingMm,
                     const QVector<Candidate>& candidates, int current);
  void clear(const QString& message);
  /// The images A can be (any run of the session, of any data, or a reference file), `current` chosen.
  void setTestChoices(const QStringList& labels, int current);
  int testChoice() const;
  void setFlicker(bool on);
  bool flickering() const;
  /// True once the maps for the current pair are shown (tests wait for it).
  bool ready() const { return ready_; }
  /// True when the maps and metrics of a pair are shown (false: nothing to compare, or they differ in size).
  bool hasMaps() const;
  quality::Metrics volumeMetrics() const { return volumeMetrics_; }
  QString metricsText() const;
  SliceView* view(int i) const { return views_[i]; }
  /// The display convention of the data (orientation letters on the four views).
  void setOrientation(const model::DisplayOrientation& o);
  /// The status line (scale factor, or why there is nothing to compare), unelided.
  QString statusText() const;

 signals:
  void computed();
  /// The user chose candidate `index` as the reference (the view already computes that pair).
  void referenceChosen(int index);
  /// The user chose test choice `index` as A.
  void testChosen(int index);
  /// "Reference file…": the user wants an image file as B.
  void referenceFileRequested();

 private:
  // The constructor's parts: the choosers, slider and status; the layout's rows (which parent nothing yet);
  // the signals.
  void makeControls();
  QLayout* pickRow();
  QLayout* controlRow();
  QLayout* viewGrid();
  QLayout* metricsRow();
  void connectControls();
  void recompute();
  void apply(std::shared_ptr<const CompareData> data, quint64 generation);
  void updateSliceMetrics();
  void onHover(int i, int j, int k);
  void setSlice(int slice);
  void setStatus(const QString& text);

  std::shared_ptr<const CArray> test_;
  QString testLabel_;
  std::array<double, 3> spacing_{1, 1, 1};
  QVector<Candidate> candidates_;
  std::shared_ptr<const CompareData> data_;
  quint64 generation_ = 0;
  bool ready_ = false;
  bool showingB_ = false;
  quality::Metrics volumeMetrics_{};

  QComboBox* test_choice_ = nullptr;
  QComboBox* reference_ = nullptr;
  QPushButton* flicker_ = nullptr;
  QSlider* slice_ = nullptr;
  QLabel* sliceLabel_ = nullptr;
  SliceView* views_[4] = {nullptr, nullptr, nullptr, nullptr};
  QTableWidget* table_ = nullptr;
  QLabel* probe_ = nullptr;
  QLabel* status_ = nullptr;
  QTimer* flickerTimer_ = nullptr;
};

}  // namespace larmor::ui
