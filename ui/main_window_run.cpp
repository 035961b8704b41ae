// MainWindow's behaviour: loading, running, showing results, errors and the device in use.
#include <QDateTime>
#include <QFileInfo>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QRegularExpression>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>

#include "command_line.hpp"
#include "compare_view.hpp"
#include "dataset_panel.hpp"
#include "image_viewer.hpp"
#include "larmor/backend/registry.hpp"
#include "larmor/quality/display.hpp"
#include "main_window.hpp"
#include "settings_panel.hpp"
#include "tasks.hpp"
#include "timings_view.hpp"

namespace larmor::ui {

void MainWindow::log(const QString& message) {
  log_->appendPlainText(QDateTime::currentDateTime().toString("HH:mm:ss  ") + message);
}

void MainWindow::showError(const QString& message) {
  lastError_ = message;
  bannerText_->setText(message);
  banner_->show();
  log(tr("error: %1").arg(message));
}

void MainWindow::clearError() {
  banner_->hide();
}

QString MainWindow::statusText() const { return stage_->text() + QStringLiteral("  ") + summary_->text(); }

QString MainWindow::deviceText() const { return device_ ? device_->toolTip() : QString(); }

void MainWindow::selectBackend(const std::string& device) {
  if (backend_ && device == backendDevice_) return;
  try {
    const Selection sel = BackendRegistry::instance().select(device);
    backend_ = sel.backend;
    backendDevice_ = device;
    backendNotice_ = QString::fromStdString(sel.notice);
    const DeviceInfo info = backend_->info();
    const QString id = QString::fromStdString(info.id), name = QString::fromStdString(info.name);
    if (info.gpu) {
      device_->setText(QStringLiteral("  GPU  %1  ").arg(id));
      device_->setProperty("kind", "gpu");
      device_->setToolTip(tr("Reconstructions run on %1 (%2)").arg(id, name));
    } else {
      // Said plainly, as the issue asks: no GPU, everything on the CPU, and why.
      const QString why = QString::fromStdString(BackendRegistry::instance().whyNoGpu());
      device_->setText(QStringLiteral("  CPU only — no GPU  "));
      device_->setProperty("kind", "cpu");
      device_->setToolTip(device == "cpu" ? tr("Runs on the CPU (%1), as chosen").arg(name)
                                          : tr("Runs on the CPU (%1): %2").arg(name, why.isEmpty() ? backendNotice_ : why));
    }
    device_->style()->unpolish(device_);
    device_->style()->polish(device_);
    if (!backendNotice_.isEmpty()) log(tr("device: %1").arg(backendNotice_));
  } catch (const std::exception& e) {
    backend_.reset();
    backendDevice_.clear();
    showError(QString::fromStdString(e.what()));
  }
}

void MainWindow::applySession(const SessionState& s) {
  settings_->setState(s);
  selectBackend(s.device);
}

SessionState MainWindow::session() const { return settings_->state(); }

void MainWindow::rememberSession(const SessionState& s) {
  if (interactive_) saveLastSession(s);
}

void MainWindow::openFile(const QString& path) {
  if (path.isEmpty()) return;
  clearError();
  const QFileInfo fi(path);
  // A sidecar next to the data restores the settings it was last reconstructed with.
  if (auto side = interactive_ ? loadSidecar(fi.absoluteFilePath()) : std::nullopt) {
    applySession(*side);
    log(tr("settings restored from %1").arg(sidecarPath(fi.fileName())));
  }
  io::LoadOptions lo;
  const SessionState s = session();
  lo.trajectoryPath = s.trajectoryPath;
  if (s.settings.matrix[0] > 0)
    for (int i = 0; i < 3; ++i) lo.matrix[i] = s.settings.matrix[i];
  Task t = makeLoadTask(fi.absoluteFilePath(), lo);
  t.tag = fi.absoluteFilePath();
  worker_->restart(std::move(t));
}

void MainWindow::newPhantom(const phantom::SimulateSettings& s) {
  clearError();
  Task t = makeSimulateTask(s);
  t.tag = QVariant::fromValue(QStringLiteral("phantom"));
  phantom_ = s;
  worker_->restart(std::move(t));
}

bool MainWindow::submitRecon(const SessionState& s, TaskKind kind, const QVariant& tag, bool warm) {
  if (!dataset_) {
    showError(tr("No data: open a file or make a phantom first."));
    return false;
  }
  selectBackend(s.device);
  if (!backend_) return false;
  ReconJob job;
  job.dataset = dataset_;
  job.settings = s.settings;
  job.device = s.device;
  job.backend = backend_;
  job.settings.keepCoilImages = false;  // the viewer shows the combined image; skip the coil download
  if (warm && result_ && s.settings.method == recon::Method::Cg) job.warmStart = std::shared_ptr<const CArray>(result_, &result_->image);
  QString label = describeJob(job);
  if (kind == TaskKind::Sweep) label = tr("λ sweep: %1").arg(label);
  Task t = makeReconTask(std::move(job), kind, label);
  // A reconstruction carries its own description back (the settings may have changed meanwhile).
  t.tag = kind == TaskKind::Recon ? QVariant(label) : tag;
  lastReconId_ = worker_->restart(std::move(t));
  rememberSession(s);
  return true;
}

void MainWindow::runReconstruction() {
  clearError();
  submitRecon(session(), TaskKind::Recon, {}, false);
}

void MainWindow::cancelRun() {
  if (!worker_->busy()) return;
  worker_->cancel();
  stage_->setText(tr("Cancelling…"));
}

void MainWindow::runLambdaSweep(const QVector<double>& lambdas) {
  const SessionState s = session();
  if (s.settings.method != recon::Method::Cg) {
    showError(tr("The λ sweep needs the iterative method (CG); choose it under Settings ▸ Method."));
    return;
  }
  if (!dataset_) {
    showError(tr("No data: open a file or make a phantom first."));
    return;
  }
  selectBackend(s.device);
  if (!backend_) return;
  timings_->clearSweep();
  ReconJob job;
  job.dataset = dataset_;
  job.settings = s.settings;
  job.settings.keepCoilImages = false;
  job.device = s.device;
  job.backend = backend_;
  worker_->restart(makeLambdaSweepTask(std::move(job), lambdas));
  log(tr("λ sweep over %1 values").arg(lambdas.size()));
}

void MainWindow::onSettingsChanged() {
  const SessionState s = session();
  rememberSession(s);
  selectBackend(s.device);
  // A setting changed during a reconstruction: the running one is now stale; restart with the new
  // settings (Worker::restart cancels the old run first).
  if (worker_->busy() && worker_->runningKind() == TaskKind::Recon) {
    log(tr("settings changed during the run: restarting"));
    submitRecon(s, TaskKind::Recon, {}, false);
  }
}

void MainWindow::onLambdaDragged(double lambda) {
  SessionState s = session();
  s.settings.iterative.lambda = lambda;
  rememberSession(s);
  const bool live = settings_->liveLambda() && s.settings.method == recon::Method::Cg && dataset_;
  if (live) {
    // Live λ: re-solve from the last solution. Each slider step supersedes the previous one, so a
    // fast drag only finishes the λ where the slider stops.
    submitRecon(s, TaskKind::Recon, {}, true);
  } else if (worker_->busy() && worker_->runningKind() == TaskKind::Recon) {
    submitRecon(s, TaskKind::Recon, {}, false);
  }
}

void MainWindow::onTaskStarted(quint64, TaskKind kind, const QString& label) {
  settings_->setRunning(kind != TaskKind::Load);
  cancelAction_->setEnabled(true);
  progress_->setValue(0);
  stage_->setText(label);
  if (kind == TaskKind::Recon) progressResiduals_.clear();
  log(tr("started: %1").arg(label));
}

void MainWindow::onTaskProgress(quint64, double fraction, const QString& stage) {
  progress_->setValue(static_cast<int>(std::clamp(fraction, 0.0, 1.0) * 1000));
  stage_->setText(stage);
  // Residuals in the stage text ("iteration 12/60, residual 3.1e-3") feed the convergence plot live.
  static const QRegularExpression re(QStringLiteral("iteration\\s+(\\d+).*residual\\s*[=:]?\\s*([0-9.eE+-]+)"));
  const auto m = re.match(stage);
  if (m.hasMatch()) {
    progressResiduals_.append(QPointF(m.captured(1).toDouble(), m.captured(2).toDouble()));
    timings_->setConvergence(progressResiduals_, tr("running"));
  }
}

void MainWindow::onTaskSucceeded(quint64 id, TaskKind kind, const QVariant& tag, const TaskOutput& out) {
  progress_->setValue(1000);
  if (kind == TaskKind::Load) {
    const QString path = tag.toString();
    if (path != "phantom") {
      dataPath_ = path;
      phantom_.reset();
      addRecentFile(path);
    } else {
      dataPath_.clear();
    }
    setDataset(out.dataset);
    stage_->setText(tr("Loaded"));
    emit datasetLoaded();
    return;
  }
  if (kind == TaskKind::Sweep) {
    timings_->setSweep(out.extra);
    stage_->setText(tr("λ sweep done"));
    log(tr("λ sweep: %1 points").arg(out.extra.size()));
    emit sweepFinished();
    return;
  }
  (void)id;
  const QString label = tr("run %1: %2").arg(++runCounter_).arg(tag.toString());
  showResult(out.result, label);
  emit reconFinished();
}

void MainWindow::onTaskFailed(quint64, TaskKind kind, const QString& message) {
  progress_->setValue(0);
  stage_->setText(kind == TaskKind::Load ? tr("Loading failed") : tr("Reconstruction failed"));
  showError(message);
  if (kind == TaskKind::Load) emit loadFailed(message);
  else if (kind == TaskKind::Sweep) {
    emit sweepFinished();
  } else {
    emit reconFailed(message);
  }
}

void MainWindow::onTaskCancelled(quint64, TaskKind kind) {
  progress_->setValue(0);
  stage_->setText(worker_->queued() > 0 ? tr("Restarting with the new settings…") : tr("Cancelled"));
  log(tr("cancelled"));
  if (kind == TaskKind::Recon) emit reconCancelled();
  if (kind == TaskKind::Sweep) emit sweepFinished();
}

std::array<double, 3> MainWindow::voxelSpacing(const CArray& image) const {
  std::array<double, 3> sp{1, 1, 1};
  if (!dataset_) return sp;
  const Header& h = dataset_->header;
  for (int i = 0; i < 2; ++i)
    if (image.shape()[i] > 0) sp[i] = h.reconFovMm[i] / static_cast<double>(image.shape()[i]);
  // 3D: FOV over partitions; multi-slice 2D: the slice thickness (the FOV's third entry).
  sp[2] = image.shape()[2] > 1 ? h.reconFovMm[2] / static_cast<double>(image.shape()[2]) : h.reconFovMm[2];
  return sp;
}

void MainWindow::setDataset(std::shared_ptr<const Dataset> d) {
  dataset_ = std::move(d);
  result_.reset();
  runs_.clear();
  truth_.reset();
  datasetPanel_->setDataset(dataset_);
  if (dataset_ && dataset_->reference) {
    try {
      truth_ = std::make_shared<const CArray>(quality::comparisonTruth(*dataset_));
    } catch (const std::exception& e) {
      log(tr("no comparison truth: %1").arg(QString::fromStdString(e.what())));
    }
  }
  const QString name = dataPath_.isEmpty() ? tr("phantom") : QFileInfo(dataPath_).fileName();
  setWindowTitle(tr("%1 — Larmor").arg(name));
  viewer_->clear(tr("%1 loaded. Choose a method and press Run (Ctrl+R).").arg(name));
  compare_->clear(tr("Run a reconstruction to compare it."));
  const Header& h = dataset_->header;
  log(tr("loaded %1: %2, k-space %3, %4 coils")
          .arg(name, QString::fromStdString(toString(h.trajectory)), QString::fromStdString(dataset_->kspace.shape().str()))
          .arg(h.coils));
}

void MainWindow::showResult(std::shared_ptr<const recon::ReconResult> r, const QString& label) {
  result_ = std::move(r);
  resultLabel_ = label;
  clearError();
  auto image = std::shared_ptr<const CArray>(result_, &result_->image);
  const auto spacing = voxelSpacing(result_->image);
  viewer_->setImage(image, spacing, label);
  timings_->showResult(*result_, label);
  if (convergenceHistory(*result_).isEmpty() && !progressResiduals_.isEmpty())
    timings_->setConvergence(progressResiduals_, label);
  runs_.prepend({runCounter_, label, result_});
  while (runs_.size() > 8) runs_.removeLast();
  compare_->setTest(image, label, spacing);
  updateCompareCandidates();

  QString summary = tr("%1 — %2 ms on %3").arg(label).arg(result_->timings.totalMilliseconds(), 0, 'f', 1)
                        .arg(QString::fromStdString(result_->device));
  const auto& m = result_->metrics;
  if (m.contains("percent_error") && m["percent_error"].is_number())
    summary += tr("  |  %1 % error, PSNR %2 dB, SSIM %3")
                   .arg(m["percent_error"].get<double>(), 0, 'f', 2)
                   .arg(m["psnr_db"].get<double>(), 0, 'f', 2)
                   .arg(m["ssim"].get<double>(), 0, 'f', 4);
  summary_->setText(summary);
  stage_->setText(tr("Done"));
  log(summary);
  for (const auto& s : result_->timings.stages())
    log(QStringLiteral("    %1  %2 ms  [%3]").arg(QString::fromStdString(s.stage), -22).arg(s.milliseconds, 9, 'f', 3)
            .arg(QString::fromStdString(s.device)));
}

void MainWindow::updateCompareCandidates() {
  QVector<CompareView::Candidate> c;
  if (truth_) c.append({tr("phantom truth"), truth_});
  for (const auto& run : runs_)
    if (run.result != result_) c.append({run.label, std::shared_ptr<const CArray>(run.result, &run.result->image)});
  compare_->setCandidates(c);
}

void MainWindow::showTab(const QString& name) {
  const QStringList names = {"image", "compare", "timings", "log"};
  const int i = names.indexOf(name.toLower());
  if (i >= 0) tabs_->setCurrentIndex(i);
  if (name.toLower() == "dataset") datasetPanel_->parentWidget()->raise();
}

QString MainWindow::cliCommandText() const {
  CliCommandInput in;
  in.input = dataPath_;
  if (dataPath_.isEmpty()) in.phantom = phantom_.value_or(bundledPhantom(session().settings.method));
  in.session = session();
  return cliCommand(in);
}

}  // namespace larmor::ui
