// MainWindow as the model's observer: each change of the WorkstationModel (new data, a run, the shown
// run, the slice, the comparison, the device, the session) updated in the widgets that show it.
#include <QFileInfo>
#include <QLabel>
#include <QStatusBar>
#include <QProgressBar>
#include <QStyle>
#include <map>

#include "compare_view.hpp"
#include "dataset_panel.hpp"
#include "image_viewer.hpp"
#include "larmor/backend/registry.hpp"
#include "main_window.hpp"

#include "frame_bar.hpp"
#include "method_fit.hpp"
#include "settings_panel.hpp"
#include "slice_view.hpp"
#include "time_curve_view.hpp"
#include "timings_view.hpp"

namespace larmor::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

void MainWindow::datasetChanged() {
  const model::LoadedDataset& d = model_.data();
  datasetPanel_->setDataset(d.dataset);
  if (!d.truthProblem.empty()) log(tr("no comparison truth: %1").arg(qs(d.truthProblem)));
  const QString name = qs(d.source.name());
  setWindowTitle(tr("%1 — Larmor").arg(name));
  viewer_->clear(tr("%1 loaded. Choose a method and press Run (Ctrl+R).").arg(name));
  compare_->setComparison(nullptr, {}, {1, 1, 1}, {}, -1);
  // Nothing of the previous data stays on screen: the last run's line, the probe,
  // the stage, the progress, the convergence plot; the new data's display convention and the methods
  // that can apply to them.
  summary_->clear();
  sideBySidePicked_.clear();
  framedReference_.reset();  // paired with the previous data's frames
  refreshSideBySide();
  viewer_->resetProbe();
  viewer_->setPatientGeometry(std::nullopt);
  progress_->setValue(0);
  stage_->setText(tr("Loaded"));
  progressResiduals_.clear();
  timings_->clearResult();
  statusBar()->clearMessage();
  if (d.dataset) {
    const model::DisplayOrientation o = model::displayOrientation(d.dataset->header, d.dataset->source);
    viewer_->setOrientation(o);
    compare_->setOrientation(o);
    std::map<recon::Method, QString> problems;
    for (auto m : {recon::Method::Fft, recon::Method::Gridding, recon::Method::Tron, recon::Method::Dft, recon::Method::Cg,
                   recon::Method::Grappa, recon::Method::Cs})
      if (const std::string why = model::methodProblem(m, *d.dataset); !why.empty()) problems[m] = qs(why);
    settings_->setMethodProblems(problems);
    adoptMethodFor(*d.dataset);
    if (runAfterLoad_) viewer_->clear(tr("%1 loaded: reconstructing with %2…").arg(name, qs(model::methodLabel(model_.session().settings.method))));
    settings_->setDataFolder(d.source.isFile() ? QFileInfo(qs(d.source.path)).absolutePath() : defaultOutputFolder());
    if (o.basis != "geometry" && o.basis != "simulator") log(tr("display orientation: %1").arg(qs(o.basis)));
  }
  setFrameBar();
  settings_->setSeriesFrames(static_cast<int>(d.frameCount()));
  roi_.reset();
  refreshTimeCurve();
  log(tr("loaded %1: %2").arg(name, qs(d.description())));
  if (d.series) log(tr("%1: %2 frames (%3); the frame bar shows one at a time").arg(name).arg(d.frameCount()).arg(qs(d.series->describeDims())));
}

void MainWindow::setFrameBar() {
  const model::LoadedDataset& d = model_.data();
  const std::size_t n = d.series ? d.series->keys.size() : 0;
  // "frame 2/4 · repetition 2": the label of the run titles, then the file's terms; made for the frame shown.
  auto dims = std::make_shared<const model::FrameDims>(d.series ? model::varyingFrameDims(*d.series) : model::FrameDims{});
  frames_->setFrames(static_cast<int>(n), [this, dims, n](int f) {
    const std::shared_ptr<const io::Series>& s = model_.data().series;
    if (!s || static_cast<std::size_t>(f) >= s->keys.size()) return QString();
    const std::string detail = model::frameDetail(*s, static_cast<std::size_t>(f), *dims);
    return qs(model::frameLabel(static_cast<std::size_t>(f), n) + (detail.empty() ? "" : " · " + detail));
  }, static_cast<int>(d.frame));
}

void MainWindow::frameChanged() {
  const model::LoadedDataset& d = model_.data();
  datasetPanel_->setDataset(d.dataset);
  frames_->setCurrent(static_cast<int>(d.frame));
  curve_->setCurrentFrame(static_cast<int>(d.frame));
  syncSession();
  // The frame's own run with these settings when there is one; otherwise reconstruct it when the user
  // has been reconstructing (or plays the cine), else say what to do.
  if (const int run = model_.runForFrame(d.frame, model_.session())) {
    model_.showRun(run);
  } else if (!model_.runs().runs().empty() || frames_->playing()) {
    runReconstruction();
  } else {
    viewer_->clear(tr("%1 shown. Press Run (Ctrl+R) to reconstruct it.").arg(qs(d.frameName())));
  }
  followReferenceFrame();
}

void MainWindow::onFrameRequested(int f) {
  if (f < 0) return;
  model_.setFrame(static_cast<std::size_t>(f));
}

void MainWindow::sessionChanged() {
  // The panel edits the session; it is only set from here when the model's differs from what it shows.
  const SessionState s = model_.session();
  if (toJson(settings_->state()) != toJson(s)) settings_->setState(s);
}

void MainWindow::deviceChanged() {
  const std::shared_ptr<Backend> backend = model_.backend();
  if (!backend) return;  // the error is shown by whoever asked for the device
  const DeviceInfo info = backend->info();
  const QString id = qs(info.id), name = qs(info.name);
  if (info.gpu) {
    device_->setText(QStringLiteral("  GPU  %1  ").arg(id));
    device_->setProperty("kind", "gpu");
    device_->setToolTip(tr("Reconstructions run on %1 (%2)").arg(id, name));
  } else {
    // Said plainly: no GPU, everything on the CPU, and why.
    const QString why = qs(BackendRegistry::instance().whyNoGpu());
    device_->setText(QStringLiteral("  CPU only — no GPU  "));
    device_->setProperty("kind", "cpu");
    device_->setToolTip(model_.device() == "cpu"
                            ? tr("Runs on the CPU (%1), as chosen").arg(name)
                            : tr("Runs on the CPU (%1): %2").arg(name, why.isEmpty() ? qs(model_.deviceNotice()) : why));
  }
  device_->style()->unpolish(device_);
  device_->style()->polish(device_);
  if (!model_.deviceNotice().empty()) log(tr("device: %1").arg(qs(model_.deviceNotice())));
}

void MainWindow::runAdded(const model::RunRecord& run) {
  log(qs(run.summary()));
  refreshSideBySide();
  for (const auto& s : run.result->timings.stages())
    log(QStringLiteral("    %1  %2 ms  [%3]").arg(qs(s.stage), -22).arg(s.milliseconds, 9, 'f', 3).arg(qs(s.device)));
}

void MainWindow::shownRunChanged() {
  const model::RunRecord* run = model_.shownRun();
  if (!run) return;  // only new data show none, and datasetChanged cleared the views
  clearError();
  // A series run holds every frame: its title names the one on screen, as a run of one frame does.
  const QString label = qs(run->label) + (run->isSeries() && model_.frameCount() > 1 ? qs(" · " + model_.data().frameName()) : QString());
  viewer_->setImage(run->image(), model_.voxelSpacing(run->result->image), label);
  if (const auto ds = model_.dataset()) {
    try {
      io::ImageGeometry g = io::imageGeometry(ds->header, run->result->image.shape());
      viewer_->setPatientGeometry(std::move(g));
    } catch (const std::exception&) {
      viewer_->setPatientGeometry(std::nullopt);  // positions in voxels only
    }
  }
  timings_->showResult(*run->result, label);
  // The residuals seen in the progress text stand in when the newest run's result carries none.
  if (run == model_.runs().newest() && convergenceHistory(*run->result).isEmpty() && !progressResiduals_.isEmpty())
    timings_->setConvergence(progressResiduals_, label);
  summary_->setText(qs(run->summary()));
  refreshTimeCurve();
  followReferenceFrame();  // a frame reconstructed now: the reference's images of it
}

void MainWindow::setTimeCurveRoi(const model::PlaneRoi& roi) { viewer_->setRoi(roi); }

void MainWindow::refreshTimeCurve() {
  const bool series = model_.frameCount() > 1;
  curve_->setVisible(series);
  if (!series) return;
  curve_->setCurrentFrame(static_cast<int>(model_.frame()));
  if (!roi_) {
    curve_->clearCurve({});
    return;
  }
  const model::PlaneRoi& r = *roi_;
  curve_->setCurve(model_.timeCurve(r), tr("x %1–%2, y %3–%4").arg(r.x0).arg(r.x1).arg(r.y0).arg(r.y1));
}

void MainWindow::sliceChanged(int slice) {
  SliceView* axial = viewer_->planeView(SliceView::Axial);
  if (slice >= 0 && viewer_->hasImage() && axial->slice() != slice) axial->setSlice(slice);
}

void MainWindow::comparisonChanged() {
  const model::ComparisonState& c = model_.comparison();
  const model::RunRecord* run = model_.shownRun();
  QVector<CompareView::Candidate> candidates;
  int current = -1;
  for (const model::CompareCandidate& x : c.candidates) {
    if (x.run == c.reference) current = static_cast<int>(candidates.size());
    candidates.append({qs(x.label), x.image});
  }
  QStringList tests;
  int test = -1;
  for (const model::CompareCandidate& x : c.tests) {
    if (x.run == c.test) test = static_cast<int>(tests.size());
    tests << qs(x.label);
  }
  compare_->setTestChoices(tests, test);
  QVector<ImageViewer::PaneChoice> panes;  // what the image tab's panes can show: the session's runs and references
  for (const model::CompareCandidate& x : c.tests)
    if (x.run != model::kTruth && x.image) panes.append({x.run, qs(x.label), x.image, model_.voxelSpacing(*x.image)});
  viewer_->setPaneChoices(panes);
  if (!run || !c.testImage) {
    compare_->setComparison(nullptr, {}, {1, 1, 1}, {}, -1);
    return;
  }
  compare_->setComparison(c.testImage, qs(c.testLabel), model_.voxelSpacing(*c.testImage), candidates, current);
}

}  // namespace larmor::ui
