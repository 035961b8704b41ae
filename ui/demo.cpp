// The presenter's scripted sequence (demo.hpp).
#include "demo.hpp"

#include <QApplication>
#include <QDockWidget>
#include <QSlider>
#include <QStatusBar>
#include <QTimer>
#include <cmath>
#include <iostream>

#include "frame_bar.hpp"
#include "image_viewer.hpp"
#include "larmor/phantom/dynamic.hpp"
#include "main_window.hpp"
#include "settings_panel.hpp"
#include "side_by_side_view.hpp"

namespace larmor::ui {

namespace {

phantom::SimulateSettings radialPhantom() {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 128;
  s.coils = 8;
  s.trajectory = TrajectoryKind::Radial;
  s.spokes = 64;  // undersampled: Nyquist needs about π/2 · 128 ≈ 201 spokes
  s.noiseSigma = 0.002f;
  return s;
}

/// The dynamic phantom (phantom/dynamic.hpp): 64², 4 coils, 8 frames of 21 golden-angle spokes.
phantom::SimulateSettings dynamicPhantom() {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 64;
  s.coils = 4;
  s.trajectory = TrajectoryKind::GoldenAngle;
  s.frames = 8;
  s.noiseSigma = 0.002f;
  return s;
}

phantom::SimulateSettings grappaPhantom() {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 256;
  s.coils = 8;
  s.accel = 4;
  s.acs = 24;
  s.noiseSigma = 0.002f;
  return s;
}

}  // namespace

DemoScript::DemoScript(MainWindow* window, bool quitAfter, QObject* parent)
    : QObject(parent), w_(window), quitAfter_(quitAfter) {
  defineSteps();
  // A step's caption appears with its picture: when the data are loaded (their truth) or the run has finished.
  connect(w_, &MainWindow::datasetLoaded, this, [this] {
    if (!running_ || waiting_ != Wait::Load) return;
    waiting_ = Wait::Pause;
    showTruth();
    showCaption();
    QTimer::singleShot(pauseMs_ / 3, this, &DemoScript::next);
  });
  connect(w_, &MainWindow::reconFinished, this, [this] {
    if (!running_ || waiting_ != Wait::Recon) return;
    waiting_ = Wait::Pause;
    showCaption();
    QTimer::singleShot(pauseMs_, this, &DemoScript::next);
  });
  connect(w_, &MainWindow::loadFailed, this, [this](const QString& m) {
    if (running_) fail(m);
  });
  connect(w_, &MainWindow::reconFailed, this, [this](const QString& m) {
    if (running_) fail(m);
  });
}

void DemoScript::useMethod(recon::Method m, int iterations) {
  SessionState s = w_->session();
  s.settings.method = m;
  recon::settings::applyMethodDefaults(s.settings);
  if (iterations > 0) s.settings.iterative.iterations = iterations;
  s.device = "auto";
  w_->applySession(s);
}

void DemoScript::rememberShown() {
  if (const auto* r = w_->model().shownRun()) radialRuns_.push_back(r->number);
}

void DemoScript::defineSteps() {
  steps_.clear();
  // GRAPPA R4 (the weakest picture) first, the radial methods side by side (the strongest) last.
  for (auto part : {&DemoScript::cartesianSteps, &DemoScript::dynamicSteps, &DemoScript::radialSteps})
    for (Step& st : (this->*part)()) steps_.push_back(std::move(st));
}

std::vector<DemoScript::Step> DemoScript::radialSteps() {
  return {
      {tr("Undersampled radial phantom: 64 spokes, 8 coils"),
       [this] {
         docks(false, false);
         if (auto* bar = w_->findChild<FrameBar*>()) bar->setPlaying(false);  // the dynamic scene's cine
         w_->showTab("image");
         w_->newPhantom(radialPhantom());
       },
       Wait::Load},
      {tr("1/3 Gridding (density-compensated adjoint NUFFT): streaks"),
       [this] {
         useMethod(recon::Method::Gridding);
         w_->runReconstruction();
       },
       Wait::Recon},
      {tr("2/3 Iterative CG-SENSE: the coils fill the gaps"),
       [this] {
         rememberShown();
         useMethod(recon::Method::Cg, 30);
         w_->runReconstruction();
       },
       Wait::Recon},
      {tr("3/3 Compressed sensing (total variation)"),
       [this] {
         rememberShown();
         useMethod(recon::Method::Cs, 60);
         w_->runReconstruction();
       },
       Wait::Recon},
      {tr("Live λ: more regularization — smoother, less noise"),
       [this] {
         rememberShown();
         docks(false, true);  // the slider is in the settings
         w_->settingsPanel()->slideLambdaTo(3e-3);
       },
       Wait::Recon},
      {tr("Live λ: too much — the edges blur"),
       [this] { w_->settingsPanel()->slideLambdaTo(3e-2); }, Wait::Recon},
      {tr("Live λ: back to a good balance"),
       [this] { w_->settingsPanel()->slideLambdaTo(3e-4); }, Wait::Recon},
      // The strongest screen last: the three methods on the same 64 spokes.
      {tr("Gridding vs CG vs CS, side by side"),
       [this] {
         docks(false, false);
         showSideBySide();
       },
       Wait::Pause},
  };
}

std::vector<DemoScript::Step> DemoScript::cartesianSteps() {
  return {
      {tr("Cartesian, R = 4 with 24 calibration lines"),
       [this] {
         docks(true, false);  // the sampling plot shows the calibration block
         w_->newPhantom(grappaPhantom());
       },
       Wait::Load},
      {tr("GRAPPA R4: the calibration lines teach the missing ones"),
       [this] {
         useMethod(recon::Method::Grappa);
         w_->runReconstruction();
       },
       Wait::Recon},
      {tr("GRAPPA R4 against the truth"),
       [this] {
         docks(false, false);
         w_->showTab("compare");
       },
       Wait::Pause},
  };
}

std::vector<DemoScript::Step> DemoScript::dynamicSteps() {
  return {
      {tr("Dynamic phantom: 8 frames of 21 spokes — a beating ventricle, breathing, a contrast wash-in"),
       [this] {
         docks(false, false);
         w_->showTab("image");
         w_->newPhantom(dynamicPhantom());
       },
       Wait::Load},
      {tr("Frame by frame (CS, no temporal prior): each frame from its 21 spokes alone"),
       [this] {
         SessionState s = w_->session();
         s.settings.method = recon::Method::Cs;
         recon::settings::applyMethodDefaults(s.settings);
         s.settings.iterative.iterations = 40;
         s.settings.dynamic.framesIndependent = true;
         w_->applySession(s);
         w_->runReconstruction();
       },
       Wait::Recon},
      {tr("Jointly over time (spatio-temporal TV): the frames lend each other their spokes"),
       [this] {
         SessionState s = w_->session();
         s.settings.dynamic.framesIndependent = false;
         // The default weight along time, not the last session's: the next step's move must be a move.
         s.settings.dynamic.temporalLambda = recon::ReconSettings{}.dynamic.temporalLambda;
         w_->applySession(s);
         w_->runReconstruction();
       },
       Wait::Recon},
      {tr("Temporal λ, moved live: the weight of the prior along time"),
       [this] {
         docks(false, true);  // the slider is in the settings, under λ
         w_->settingsPanel()->slideTemporalLambdaTo(1e-2);
       },
       Wait::Recon},
      {tr("The cine, and the contrast wash-in: mean intensity in the ROI over the frames, beside the truth"),
       [this] {
         docks(false, false);
         // The wash-in ellipse's centre in voxels (phantom::rasterize: index = position x N + N/2).
         const phantom::Ellipse e = phantom::dynamicEllipses(phantom::DynamicModel{}, 0, 64)[phantom::kWashInEllipse];
         const int x = static_cast<int>(std::lround(e.cx * 64 + 32)), y = static_cast<int>(std::lround(e.cy * 64 + 32));
         w_->setTimeCurveRoi({x - 3, y - 3, x + 3, y + 3, 0});
         if (auto* bar = w_->findChild<FrameBar*>()) bar->setPlaying(true, 300);
       },
       Wait::Pause},
  };
}

void DemoScript::start(int pauseMs) {
  pauseMs_ = pauseMs;
  done_ = 0;
  radialRuns_.clear();
  running_ = true;
  w_->setPresenterMode(true);  // full screen, large type, the pictures get the whole screen
  next();
}

void DemoScript::next() {
  if (!running_) return;
  if (!screenshots_.isEmpty() && done_ > 0)
    w_->saveScreenshot(QStringLiteral("%1-%2.png").arg(screenshots_).arg(done_, 2, 10, QLatin1Char('0')));
  if (done_ >= static_cast<int>(steps_.size())) {
    finish(0);
    return;
  }
  const Step& s = steps_[static_cast<std::size_t>(done_++)];
  waiting_ = s.wait;
  s.act();
  if (s.wait == Wait::Pause) {
    showCaption();
    QTimer::singleShot(pauseMs_, this, &DemoScript::next);
  }
}

void DemoScript::showCaption() {
  const Step& s = steps_[static_cast<std::size_t>(done_ - 1)];
  w_->statusBar()->showMessage(tr("Demo %1/%2 — %3").arg(done_).arg(steps_.size()).arg(s.caption));
  w_->setDemoCaption(s.caption);
  std::cout << "larmor demo " << done_ << "/" << steps_.size() << ": " << s.caption.toStdString() << std::endl;
  emit captionShown(done_ - 1);
}

QString DemoScript::stepCaption(int i) const { return steps_.at(static_cast<std::size_t>(i)).caption; }

bool DemoScript::stepWaitsForImage(int i) const { return steps_.at(static_cast<std::size_t>(i)).wait != Wait::Pause; }

void DemoScript::docks(bool dataset, bool settings) {
  if (auto* d = w_->findChild<QDockWidget*>("datasetDock")) d->setVisible(dataset);
  if (auto* d = w_->findChild<QDockWidget*>("settingsDock")) d->setVisible(settings);
}

void DemoScript::showTruth() {
  // Loaded k-space has no picture until a run: the placeholder's text would stand under the caption. The
  // phantom's truth is what a complete scan would show, the picture the next steps' runs are measured against.
  const model::LoadedDataset& d = w_->model().data();
  if (!d.truth) return;
  w_->showTab("image");
  w_->imageViewer()->setImage(d.truth, w_->model().voxelSpacing(*d.truth), tr("phantom truth: what a complete scan shows"));
}

void DemoScript::showSideBySide() { w_->showSideBySideRuns(radialRuns_); }

void DemoScript::fail(const QString& message) {
  std::cerr << "larmor demo: step " << done_ << " failed: " << message.toStdString() << std::endl;
  finish(1);
}

void DemoScript::finish(int code) {
  if (!running_) return;
  running_ = false;
  w_->setDemoCaption({});
  // In presenter mode the last screen stays whole (leaving presenter mode brings back the docks as they were).
  if (!w_->presenterMode()) docks(true, true);
  std::cout << "larmor demo: " << (code == 0 ? "done" : "stopped") << std::endl;
  emit finished(code);
  if (quitAfter_) QTimer::singleShot(100, qApp, [code] { QCoreApplication::exit(code); });
}

}  // namespace larmor::ui
