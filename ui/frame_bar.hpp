#pragma once
// The frame bar (series, not merges): for a file with several frames (repetitions, echoes,
// cardiac phases, sets; io/series.hpp) a slider over the frames, the frame's name ("frame 2/4 · repetition 2",
// as the run titles name it; every number counted from 1), a cine button that steps through them and the cine's speed (frames per second). Hidden for single-frame data. It only asks; the window makes the frame current in
// the model and shows (or reconstructs) its image.
#include <QString>
#include <QWidget>
#include <functional>

class QComboBox;
class QLabel;
class QSlider;
class QTimer;
class QToolButton;

namespace larmor::ui {

class FrameBar : public QWidget {
  Q_OBJECT
 public:
  explicit FrameBar(QWidget* parent = nullptr);
  /// The number of frames, their names ("frame 1/4 · repetition 1", ...; asked only for the frame shown, so a series
  /// of tens of thousands of frames costs one name per step) and the current one; fewer than two hide the bar.
  void setFrames(int count, std::function<QString(int)> name, int current);
  void setCurrent(int frame);
  int current() const;
  bool playing() const;
  /// Cine: the next frame every `ms` (0: at the speed chosen; the window may hold a step back while a frame
  /// reconstructs).
  void setPlaying(bool on, int ms = 0);
  /// The cine's speed in frames per second (one of cineRates()); a running cine takes it at once.
  void setCineRate(double framesPerSecond);
  double cineRate() const;
  static QList<double> cineRates();
  /// The name shown for the current frame.
  QString currentName() const;

 signals:
  void frameRequested(int frame);
  /// A cine tick: the window moves to the next frame when it is ready for one.
  void cineTick();

 private:
  QSlider* slider_ = nullptr;
  QLabel* name_ = nullptr;
  QToolButton* play_ = nullptr;
  QComboBox* speed_ = nullptr;
  QTimer* timer_ = nullptr;
  std::function<QString(int)> nameOf_;
  int count_ = 0;
  QString nameOf(int frame) const { return nameOf_ && frame >= 0 && frame < count_ ? nameOf_(frame) : QString(); }
};

}  // namespace larmor::ui
