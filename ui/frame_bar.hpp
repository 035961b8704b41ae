#pragma once
// The frame bar (series, not merges): for a file with several frames (repetitions, echoes,
// cardiac phases, sets; io/series.hpp) a slider over the frames, the frame's name and a cine button that
// steps through them. Hidden for single-frame data. It only asks; the window makes the frame current in
// the model and shows (or reconstructs) its image.
#include <QStringList>
#include <QWidget>

class QLabel;
class QSlider;
class QTimer;
class QToolButton;

namespace larmor::ui {

class FrameBar : public QWidget {
  Q_OBJECT
 public:
  explicit FrameBar(QWidget* parent = nullptr);
  /// The frames' names ("repetition 0", ...) and the current one; fewer than two hide the bar.
  void setFrames(const QStringList& names, int current);
  void setCurrent(int frame);
  int current() const;
  bool playing() const;
  /// Cine: the next frame every `ms` (the window may hold a step back while a frame reconstructs).
  void setPlaying(bool on, int ms = 250);

 signals:
  void frameRequested(int frame);
  /// A cine tick: the window moves to the next frame when it is ready for one.
  void cineTick();

 private:
  QSlider* slider_ = nullptr;
  QLabel* name_ = nullptr;
  QToolButton* play_ = nullptr;
  QTimer* timer_ = nullptr;
  QStringList names_;
};

}  // namespace larmor::ui
