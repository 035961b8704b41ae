// MainWindow's tasks: loading, simulating and reconstructing on the worker thread. The model says what
// to run (or why nothing can run) and takes the results; this file turns its plans into worker tasks
// and keeps the status bar, the progress and the log up to date.
#include <QDateTime>
#include <QFileInfo>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QRegularExpression>
#include <QStatusBar>
#include <QTabWidget>

#include "command_line.hpp"
#include "dataset_panel.hpp"
#include "larmor/recon/settings_table.hpp"
#include "image_viewer.hpp"
#include "main_window.hpp"
#include "settings_panel.hpp"
#include "tasks.hpp"
#include "timings_view.hpp"

namespace larmor::ui {

namespace {

ReconJob jobFor(const model::RunPlan& plan) {
  ReconJob job;
  job.dataset = plan.dataset;
  job.settings = plan.settings;
  job.device = plan.session.device;
  job.backend = plan.backend;
  job.warmStart = plan.warmStart;
  job.series = plan.series;
  return job;
}

/// The λ that cross-validation chose for a single-slice CS run (recon/lambda_cv.hpp), 0 where none was chosen.
double crossValidatedLambdaOf(const recon::ReconResult& r) {
  const nlohmann::json& c = r.convergence;
  if (!c.is_object() || !c.contains("lambda_rule") || !c.contains("lambda_used") || !c["lambda_used"].is_number())
    return 0;
  const nlohmann::json& rule = c["lambda_rule"];
  return rule.is_object() && rule.value("rule", std::string()) == "cv" ? c["lambda_used"].get<double>() : 0;
}

}  // namespace

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

void MainWindow::applySession(const SessionState& s) {
  settings_->setState(s);
  syncSession();
}

SessionState MainWindow::session() const { return model_.session(); }

void MainWindow::syncSession() {
  model_.setSession(settings_->state());
  if (!model_.deviceError().empty()) showError(QString::fromStdString(model_.deviceError()));
}

void MainWindow::rememberSession(const SessionState& s) {
  if (interactive_) saveLastSession(s);
}

void MainWindow::forgetTrajectoryUnlessFor(const QString& dataPath) {
  // A BART trajectory belongs to the .cfl it was given for: other data must not inherit it (it would be
  // loaded with them, saved in their session and put into Copy CLI as --traj).
  SessionState s = settings_->state();
  if (s.trajectoryPath.empty()) return;
  const bool same = !dataPath.isEmpty() && model_.source().isFile() &&
                    QFileInfo(dataPath).absoluteFilePath() == QFileInfo(QString::fromStdString(model_.source().path)).absoluteFilePath();
  if (same) return;
  s.trajectoryPath.clear();
  applySession(s);
}

void MainWindow::openFile(const QString& path, bool trajectoryForIt) {
  if (path.isEmpty()) return;
  clearError();
  const QFileInfo fi(path);
  if (!trajectoryForIt) forgetTrajectoryUnlessFor(fi.absoluteFilePath());
  // A sidecar next to the data restores the settings it was last reconstructed with; without one (and
  // without a method on the command line) the data choose their method when they arrive.
  chooseForLoad_ = !methodGiven_;
  if (auto side = interactive_ ? loadSidecar(fi.absoluteFilePath()) : std::nullopt) {
    applySession(*side);
    chooseForLoad_ = false;
    log(tr("settings restored from %1").arg(sidecarPath(fi.fileName())));
  }
  syncSession();
  io::LoadOptions lo;
  const model::SessionSettings& s = model_.session();
  lo.trajectoryPath = s.trajectoryPath;
  if (s.settings.matrix[0] > 0)
    for (int i = 0; i < 3; ++i) lo.matrix[i] = s.settings.matrix[i];
  const quint64 id = worker_->restart(makeLoadTask(fi.absoluteFilePath(), lo));
  model_.loadStarted(id, model::DataSource::file(fi.absoluteFilePath().toStdString()));
}

void MainWindow::newPhantom(const phantom::SimulateSettings& s) {
  clearError();
  chooseForLoad_ = false;
  forgetTrajectoryUnlessFor({});
  const quint64 id = worker_->restart(makeSimulateTask(s));
  model_.loadStarted(id, model::DataSource::simulated(s));
}

bool MainWindow::submitRecon(model::RunKind kind) {
  const model::RunPlan plan = model_.planRun(kind);
  if (!plan.ok()) {
    showError(QString::fromStdString(plan.error));
    // A reconstruction asked for and refused before it started has failed as one that stopped in the engine
    // (a scripted --run waits for either outcome).
    if (kind == model::RunKind::Recon) {
      stage_->setText(tr("Reconstruction failed"));
      emit reconFailed(QString::fromStdString(plan.error));
    }
    return false;
  }
  const quint64 id = worker_->restart(makeReconTask(jobFor(plan), TaskKind::Recon, QString::fromStdString(plan.description)));
  model_.runStarted(id, plan);
  rememberSession(plan.session);
  return true;
}

void MainWindow::runReconstruction() {
  clearError();
  syncSession();
  submitRecon(model::RunKind::Recon);
}

bool MainWindow::showRun(int number) { return model_.showRun(number); }

void MainWindow::cancelRun() {
  if (!worker_->busy()) return;
  worker_->cancel();
  stage_->setText(tr("Cancelling…"));
}

void MainWindow::runLambdaSweep(const QVector<double>& lambdas) {
  syncSession();
  const model::RunPlan plan = model_.planRun(model::RunKind::Sweep);
  if (!plan.ok()) {
    showError(QString::fromStdString(plan.error));
    return;
  }
  timings_->clearSweep();
  worker_->restart(makeLambdaSweepTask(jobFor(plan), lambdas));
  log(tr("λ sweep over %1 values").arg(lambdas.size()));
}

void MainWindow::onSettingsChanged() {
  syncSession();
  rememberSession(session());
  // A setting changed during a reconstruction: the running one is now stale; restart with the new
  // settings (Worker::restart cancels the old run first).
  if (worker_->busy() && worker_->runningKind() == TaskKind::Recon) {
    log(tr("settings changed during the run: restarting"));
    submitRecon(model::RunKind::Recon);
  }
}

void MainWindow::onLambdaDragged(double lambda) {
  SessionState s = settings_->state();
  s.settings.iterative.lambda = lambda;
  s.settings.iterative.lambdaRule = recon::LambdaRule::Fixed;  // a λ dragged to is the λ used
  model_.setSession(s);
  rememberSession(s);
  const bool iterative = s.settings.method == recon::Method::Cg || s.settings.method == recon::Method::Cs;
  if (settings_->liveLambda() && iterative && model_.hasData()) {
    // Live λ: re-solve from the shown solution. Each slider step supersedes the previous one, so a
    // fast drag only finishes the λ where the slider stops.
    clearError();
    const model::RunPlan plan = model_.planRun(model::RunKind::LiveLambda);
    const ReconJob job = plan.ok() ? jobFor(plan) : ReconJob{};
    if (!plan.ok() || plan.series || !LiveLambdaEngine::applies(job)) {
      // Multi-slice: the whole pipeline, warm-started; a series under cs: every frame jointly again.
      submitRecon(model::RunKind::LiveLambda);
      return;
    }
    // One kept problem, chunked warm-started solves, each chunk's image on screen (live_lambda.hpp).
    const QString label = QString::fromStdString(plan.description);
    LiveLambdaEngine::Publish publish = [this, deliver = liveDelivery(), label](std::shared_ptr<const CArray> image,
                                                                                int done, int total) {
      deliver(done, total, [this, label, image, done, total] {
        viewer_->setImage(image, model_.voxelSpacing(*image), tr("%1 — %2/%3 iterations").arg(label).arg(done).arg(total));
      });
    };
    const quint64 id = worker_->restart(makeLiveLambdaTask(live_, job, label, std::move(publish)));
    model_.runStarted(id, plan);
    rememberSession(plan.session);
  } else if (worker_->busy() && worker_->runningKind() == TaskKind::Recon) {
    submitRecon(model::RunKind::Recon);
  }
}

std::function<void(int, int, std::function<void()>)> MainWindow::liveDelivery() {
  // From the worker: `show` queued on the window's thread, dropped when the window is gone or a newer λ has
  // started since; the live timing records when the chunk was published and when it was on screen.
  const quint64 generation = ++liveGeneration_;
  liveClock_.start();
  return [this, alive = alive_, generation, clock = liveClock_](int done, int total, std::function<void()> show) {
    if (!alive->load()) return;
    const double publishedMs = static_cast<double>(clock.nsecsElapsed()) / 1e6;
    QMetaObject::invokeMethod(
        this,
        [this, alive, generation, done, total, publishedMs, show = std::move(show)] {
          if (!alive->load() || generation != liveGeneration_) return;  // a newer λ is on its way
          show();
          liveTiming_ = {publishedMs, static_cast<double>(liveClock_.nsecsElapsed()) / 1e6};
          emit liveImageShown(done, total);
        },
        Qt::QueuedConnection);
  };
}

void MainWindow::onTemporalLambdaDragged(double lambda) {
  SessionState s = settings_->state();
  s.settings.dynamic.temporalLambda = lambda;
  model_.setSession(s);
  rememberSession(s);
  // The joint reconstruction again with the new weight, in the worker: each move supersedes the run still
  // going (Worker::restart), so a drag ends with the weight where the slider rests. Live (the λ slider's live
  // setting): one kept series (live_lambda.hpp's LiveSeriesEngine) solved from the last series in growing
  // chunks, the shown frame of each chunk on screen; otherwise the whole joint reconstruction, cold.
  if (!model_.hasData() || !model_.runsWholeSeries() || s.settings.dynamic.framesIndependent) return;
  clearError();
  const model::RunPlan plan = model_.planRun(model::RunKind::Recon);
  const ReconJob job = plan.ok() ? jobFor(plan) : ReconJob{};
  if (!settings_->liveLambda() || !plan.ok() || !LiveSeriesEngine::applies(job)) {
    submitRecon(model::RunKind::Recon);
    return;
  }
  const QString label = QString::fromStdString(plan.description);
  LiveSeriesEngine::Publish publish = [this, deliver = liveDelivery(), label](
                                          std::shared_ptr<const std::vector<CArray>> frames, int done, int total) {
    deliver(done, total, [this, label, frames, done, total] {
      const std::size_t f = std::min(model_.frame(), frames->size() - 1);
      auto image = std::make_shared<const CArray>((*frames)[f]);
      viewer_->setImage(image, model_.voxelSpacing(*image),
                        tr("%1 — %2, %3/%4 iterations")
                            .arg(label, QString::fromStdString(model::frameLabel(f, frames->size())))
                            .arg(done)
                            .arg(total));
    });
  };
  const quint64 id = worker_->restart(makeLiveSeriesTask(liveSeries_, job, label, std::move(publish)));
  model_.runStarted(id, plan);
}

QString MainWindow::remainingText(qint64 elapsedMs, double fraction) {
  // Runs over 5 s say how long they still need: elapsed x (1 - f) / f, once a few percent are done.
  if (elapsedMs < 5000 || fraction < 0.03 || fraction >= 1) return {};
  const double left = elapsedMs * (1 - fraction) / fraction;
  return tr("  — about %1 left").arg(QString::fromStdString(model::formatDuration(std::max(1000.0, std::round(left / 1000) * 1000))));
}

void MainWindow::warmUpDevice() {
  // A GPU's first reconstruction of a process pays for loading the libraries' kernels (0.2 s for a 256²
  // CG-SENSE on the H100, measured 2026-11-24); the worker does that now, while the user picks a file. The CPU
  // needs no warming. The session's method first, then the other families, each a task of its own (the
  // session's method is only a guess: measured on the H100, a first CS-TV run after the warm-up of another
  // method took 250 ms against 101 ms warm). A run asked for meanwhile clears the
  // queued ones and waits for the one running (at most ~0.4 s), then runs warm.
  const std::shared_ptr<Backend> be = model_.backend();
  if (!be || !be->info().gpu) return;
  const recon::ReconSettings session = model_.session().settings;
  worker_->enqueue(makeWarmUpTask(be, session));
  for (const recon::Method m : {recon::Method::Cs, recon::Method::Cg, recon::Method::Grappa, recon::Method::Tron}) {
    if (m == session.method) continue;
    recon::ReconSettings s;
    s.method = m;
    recon::settings::applyMethodDefaults(s);
    worker_->enqueue(makeWarmUpTask(be, s));
  }
}

void MainWindow::onTaskStarted(quint64, TaskKind kind, const QString& label) {
  settings_->setRunning(kind != TaskKind::Load && kind != TaskKind::WarmUp);
  cancelAction_->setEnabled(true);
  progress_->setValue(0);
  stage_->setText(label);
  taskClock_.start();
  if (kind == TaskKind::Recon) progressResiduals_.clear();
  log(tr("started: %1").arg(label));
}

void MainWindow::onTaskProgress(quint64, double fraction, const QString& stage) {
  progress_->setValue(static_cast<int>(std::clamp(fraction, 0.0, 1.0) * 1000));
  stage_->setText(stage + remainingText(taskClock_.isValid() ? taskClock_.elapsed() : 0, fraction));
  // Residuals in the stage text ("iteration 12/60, residual 3.1e-3") feed the convergence plot live.
  static const QRegularExpression re(QStringLiteral("iteration\\s+(\\d+).*residual\\s*[=:]?\\s*([0-9.eE+-]+)"));
  const auto m = re.match(stage);
  if (m.hasMatch()) {
    progressResiduals_.append(QPointF(m.captured(1).toDouble(), m.captured(2).toDouble()));
    timings_->setConvergence(progressResiduals_, tr("running"));
  }
}

void MainWindow::onTaskSucceeded(quint64 id, TaskKind kind, const QVariant&, const TaskOutput& out) {
  progress_->setValue(1000);
  if (kind == TaskKind::Load) {
    const bool current = out.series ? model_.loadFinished(id, out.series) : model_.loadFinished(id, out.dataset);
    if (!current) return;  // a later load supersedes it
    if (model_.source().isFile()) addRecentFile(QString::fromStdString(model_.source().path));
    stage_->setText(tr("Loaded"));
    ranOnOpen_ = runAfterLoad_;
    runAfterLoad_ = false;
    if (ranOnOpen_) runReconstruction();  // the method chosen for the file (adoptMethodFor)
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
  if (kind == TaskKind::Prepare) {
    stage_->setText(tr("Live λ ready"));
    return;
  }
  if (kind == TaskKind::WarmUp) {
    const std::string why = out.extra.value("error", std::string());
    stage_->setText(tr("Ready"));
    log(why.empty() ? tr("GPU warmed up in %1 ms").arg(qRound(out.extra.value("ms", 0.0)))
                    : tr("GPU warm-up skipped: %1").arg(QString::fromStdString(why)));
    return;
  }
  const bool planned = out.frames.empty() ? static_cast<bool>(model_.runFinished(id, out.result))
                                           : static_cast<bool>(model_.runFinished(id, out.frames));
  if (!planned) return;  // not a run the model planned
  stage_->setText(tr("Done"));
  if (out.frames.empty() && out.result) showChosenLambda(*out.result);
  emit reconFinished();
  prepareLiveLambda();
}

void MainWindow::showChosenLambda(const recon::ReconResult& r) {
  const double chosen = crossValidatedLambdaOf(r);
  if (!(chosen > 0)) return;
  // The slider and the field centred on the λ the image was made with, so that a drag starts from it; the rule
  // stays (a new run chooses again, from the same data the same λ).
  SessionState s = settings_->state();
  s.settings.iterative.lambda = chosen;
  applySession(s);
  log(tr("λ %1 chosen by cross-validation").arg(chosen, 0, 'g', 3));
}

void MainWindow::prepareLiveLambda() {
  // After an iterative run, build the λ-independent part of the problem in the background so that the
  // first slider move only solves (the worker drops this as soon as anything else is asked of it).
  const SessionState s = model_.session();
  const bool iterative = s.settings.method == recon::Method::Cg || s.settings.method == recon::Method::Cs;
  // Scripted runs (--quit) never move the slider.
  if (!interactive_ || !settings_->liveLambda() || !iterative || worker_->busy()) return;
  const model::RunPlan plan = model_.planRun(model::RunKind::LiveLambda);
  if (!plan.ok()) return;
  if (plan.series) {  // a joint series: its kept problem, for the temporal λ slider (λ re-runs the series whole)
    const ReconJob job = jobFor(model_.planRun(model::RunKind::Recon));
    if (LiveSeriesEngine::applies(job) && !liveSeries_->ready(job))
      worker_->enqueue(makeLiveSeriesPrepareTask(liveSeries_, job));
    return;
  }
  const ReconJob job = jobFor(plan);
  if (!LiveLambdaEngine::applies(job) || live_->ready(job)) return;
  worker_->enqueue(makeLivePrepareTask(live_, job));
}

void MainWindow::onTaskFailed(quint64 id, TaskKind kind, const QString& message) {
  if (kind == TaskKind::WarmUp) {  // recon::warmUp does not throw; a worker error is only logged
    log(tr("GPU warm-up: %1").arg(message));
    stage_->setText(tr("Ready"));
    return;
  }
  if (kind == TaskKind::Prepare) {  // the next λ builds the problem itself and reports what fails
    log(tr("live λ preparation: %1").arg(message));
    stage_->setText(tr("Ready"));
    return;
  }
  progress_->setValue(0);
  stage_->setText(kind == TaskKind::Load ? tr("Loading failed") : tr("Reconstruction failed"));
  showError(message);
  if (kind == TaskKind::Load) {
    emit loadFailed(message);
  } else if (kind == TaskKind::Sweep) {
    emit sweepFinished();
  } else {
    model_.runEnded(id);
    emit reconFailed(message);
  }
}

void MainWindow::onTaskCancelled(quint64 id, TaskKind kind) {
  progress_->setValue(0);
  stage_->setText(worker_->queued() > 0 ? tr("Restarting with the new settings…") : tr("Cancelled"));
  log(tr("cancelled"));
  if (kind == TaskKind::Recon) {
    model_.runEnded(id);
    emit reconCancelled();
  }
  if (kind == TaskKind::Sweep) emit sweepFinished();
}

void MainWindow::showTab(const QString& name) {
  const QStringList names = {"image", "compare", "timings", "log", "side"};
  const int i = names.indexOf(name.toLower());
  if (i >= 0) tabs_->setCurrentIndex(i);
  if (name.toLower() == "dataset") datasetPanel_->parentWidget()->raise();
}

void MainWindow::showSideBySide(const QVector<SideBySideView::Panel>& panels) {
  const auto ds = model_.dataset();
  sideBySide_->setPanels(panels, ds ? model::displayOrientation(ds->header, ds->source) : model::DisplayOrientation{});
  sideBySideStale_ = false;
  showTab("side");
}

void MainWindow::showSideBySideRuns(const std::vector<int>& numbers) {
  sideBySidePicked_ = numbers;
  fillSideBySide();
  showTab("side");
}

void MainWindow::refreshSideBySide() {
  sideBySideStale_ = true;
  if (tabs_ && tabs_->currentWidget() == sideBySide_) fillSideBySide();
}

// Each panel titled with its run, its time and its error where a truth exists.
void MainWindow::fillSideBySide() {
  const model::RunHistory& runs = model_.runs();
  const std::vector<int> shown = model::sideBySideRuns(runs, sideBySidePicked_);
  QVector<SideBySideView::Panel> panels;
  for (int number : shown) {
    const model::RunRecord* r = runs.find(number);
    QString label = QString::fromStdString(r->label) + QStringLiteral(" — ") +
                    QString::fromStdString(model::formatDuration(r->result->timings.totalMilliseconds()));
    const auto& m = r->result->metrics;
    if (m.contains("percent_error") && m["percent_error"].is_number())
      label += tr(", %1 % error").arg(m["percent_error"].get<double>(), 0, 'f', 1);
    panels.append({label, r->image(), model_.voxelSpacing(r->result->image), QString()});
  }
  QVector<SideBySideView::Choice> choices;
  for (const model::RunRecord& r : runs.runs()) choices.append({r.number, QString::fromStdString(r.label)});
  sideBySide_->setChoices(choices, QVector<int>(shown.begin(), shown.end()));
  const auto ds = model_.dataset();
  sideBySide_->setPanels(panels, ds ? model::displayOrientation(ds->header, ds->source) : model::DisplayOrientation{});
  sideBySideStale_ = false;
}

void MainWindow::setDemoCaption(const QString& text) {
  demoCaption_->setText(text);
  QFont f = font();
  f.setPointSizeF(f.pointSizeF() * 1.4);
  f.setBold(true);
  demoCaption_->setFont(f);
  demoCaption_->setVisible(!text.isEmpty());
}

QString MainWindow::cliCommandText() const {
  CliCommandInput in;
  const model::DataSource& src = model_.source();
  in.input = QString::fromStdString(src.path);
  in.session = session();
  if (!src.isFile()) in.phantom = src.phantom.value_or(bundledPhantom(in.session.settings.method));
  return cliCommand(in);
}

}  // namespace larmor::ui
