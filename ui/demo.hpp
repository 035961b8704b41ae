#pragma once
// The scripted demo (`larmor --demo`, View ▸ Scripted demo): presenter mode (MainWindow::setPresenterMode:
// full screen, large type) and a sequence a workshop audience can follow —
//   1. a Cartesian phantom undersampled R = 4 with 24 calibration lines, reconstructed by GRAPPA and
//      compared with the truth;
//   2. a dynamic phantom (8 frames of 21 golden-angle spokes) reconstructed frame by frame, then jointly
//      with the spatio-temporal prior; its temporal λ slider moved (live); the cine plays with the
//      time-intensity curve of the contrast wash-in;
//   3. an undersampled radial Shepp-Logan phantom (128², 8 coils, 64 spokes: a third of Nyquist's π/2·N)
//      reconstructed by gridding, by iterative CG-SENSE and by compressed sensing (TV); the λ slider of the
//      CS reconstruction moved through three values; it ends on the three methods side by side.
// Each step waits for the window's own signals (loaded, finished) and shows its caption only then, with its
// picture (a load step's is the phantom's truth); an engine error ends the demo with the error shown. With quitAfter (--demo --quit) the
// application exits at the end: 0 when every step worked, 1 otherwise (a GUI test runs it under Xvfb).
#include <QObject>
#include <QString>
#include <functional>
#include <vector>

#include "larmor/recon/settings.hpp"

namespace larmor::ui {

class MainWindow;

class DemoScript : public QObject {
  Q_OBJECT
 public:
  DemoScript(MainWindow* window, bool quitAfter, QObject* parent = nullptr);
  /// Full screen, zoom 1.5, then the steps. pauseMs: the time each picture stays before the next step.
  void start(int pauseMs = 2500);
  bool running() const { return running_; }
  int stepsDone() const { return done_; }
  int stepCount() const { return static_cast<int>(steps_.size()); }
  QString stepCaption(int i) const;
  /// Whether step i's picture comes from a load or a run (its caption waits for it).
  bool stepWaitsForImage(int i) const;
  /// Saves a screenshot PREFIX-NN.png of each step just before the next one (docs, tests).
  void setScreenshotPrefix(const QString& prefix) { screenshots_ = prefix; }

 signals:
  void finished(int code);
  /// Step i's caption is shown (with its picture).
  void captionShown(int i);

 private:
  enum class Wait { Load, Recon, Pause };
  struct Step {
    QString caption;
    std::function<void()> act;
    Wait wait;
  };
  void defineSteps();  ///< steps_: the tour, one (caption, action, what ends it) a step
  // The tour's parts: the radial phantom (methods side by side, live λ), the dynamic phantom (frame by frame,
  // jointly, the cine with the wash-in curve), the Cartesian phantom (GRAPPA against the truth).
  std::vector<Step> radialSteps();
  std::vector<Step> dynamicSteps();
  std::vector<Step> cartesianSteps();
  void useMethod(recon::Method m, int iterations = 0);  ///< the session's method, its defaults, on "auto"
  void rememberShown();  ///< the shown run goes into the side-by-side view
  void next();
  void showCaption();  ///< the current step's caption in the window, the status bar and on stdout
  void fail(const QString& message);
  void finish(int code);
  void showSideBySide();
  void showTruth();  ///< a load step's picture: the phantom's truth in the image tab
  void docks(bool dataset, bool settings);

  MainWindow* w_;
  bool quitAfter_;
  bool running_ = false;
  int pauseMs_ = 2500;
  QString screenshots_;
  int done_ = 0;
  Wait waiting_ = Wait::Pause;
  std::vector<Step> steps_;
  std::vector<int> radialRuns_;
};

}  // namespace larmor::ui
