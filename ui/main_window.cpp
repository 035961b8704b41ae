// MainWindow's construction: the widgets, docks, actions, menus, tool bar and status bar, and the
// connections from the widgets and the worker to the window's handlers.
#include "main_window.hpp"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDesktopServices>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QScreen>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QUrl>
#include <QVBoxLayout>

#include "about_dialog.hpp"
#include "compare_view.hpp"
#include "dataset_panel.hpp"
#include "image_viewer.hpp"
#include "live_view.hpp"
#include "larmor/backend/registry.hpp"
#include "pacs_dialog.hpp"
#include "query_dialog.hpp"
#include "settings_panel.hpp"
#include "frame_bar.hpp"
#include "help.hpp"
#include "slice_view.hpp"
#include "time_curve_view.hpp"
#include "timings_view.hpp"

namespace larmor::ui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("Larmor — MRI reconstruction workstation"));
  setWindowIcon(QIcon(":/icons/larmor.svg"));
  setAcceptDrops(true);
  setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);
  worker_ = new Worker(this);
  live_ = std::make_shared<LiveLambdaEngine>();

  makeTabs();
  makeBanner();
  makeMethodBanner();
  makeCentral();
  makeDocks();
  buildActions();
  buildMenus();
  buildToolBar();
  buildStatusBar();

  connectWidgets();
  makeLiveView();
  model_.addObserver(this);
  refreshDevices();
  applySession(lastSession());
  warmUpDevice();

  const QRect avail = screen() ? screen()->availableGeometry() : QRect(0, 0, 1440, 900);
  resize(std::min(1440, avail.width()), std::min(900, avail.height()));
  log(tr("Larmor started. %1").arg(deviceText()));
}

void MainWindow::makeTabs() {
  viewer_ = new ImageViewer;
  compare_ = new CompareView;
  timings_ = new TimingsView;
  log_ = new QPlainTextEdit;
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);
  tabs_ = new QTabWidget;
  tabs_->setDocumentMode(true);
  // The image tab: the viewer, and under it the time-intensity curve of a series.
  curve_ = new TimeCurveView;
  curve_->hide();
  auto* imageTab = new QWidget;
  auto* il = new QVBoxLayout(imageTab);
  il->setContentsMargins(0, 0, 0, 0);
  il->setSpacing(2);
  il->addWidget(viewer_, 1);
  il->addWidget(curve_);
  tabs_->addTab(imageTab, tr("Image"));
  tabs_->addTab(compare_, QIcon(":/icons/compare.svg"), tr("Compare"));
  tabs_->addTab(timings_, tr("Timings"));
  tabs_->addTab(log_, tr("Log"));
  sideBySide_ = new SideBySideView;
  tabs_->addTab(sideBySide_, tr("Side by side"));
}

void MainWindow::makeBanner() {
  // The error banner: errors are shown in the window, never in a modal box that would block a
  // scripted run (an engine error is information, not a crash).
  banner_ = new QWidget;
  banner_->setObjectName("errorBanner");
  auto* bl = new QHBoxLayout(banner_);
  bl->setContentsMargins(10, 4, 4, 4);
  bannerText_ = new QLabel;
  bannerText_->setObjectName("errorText");
  bannerText_->setWordWrap(true);
  bannerText_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* close = new QToolButton;
  close->setText(QStringLiteral("✕"));
  close->setAutoRaise(true);
  connect(close, &QToolButton::clicked, this, &MainWindow::clearError);
  bl->addWidget(bannerText_, 1);
  bl->addWidget(close);
  banner_->hide();
}

void MainWindow::makeCentral() {
  auto* central = new QWidget;
  auto* cl = new QVBoxLayout(central);
  cl->setContentsMargins(0, 0, 0, 0);
  cl->setSpacing(0);
  demoCaption_ = new QLabel;
  demoCaption_->setObjectName("demoCaption");
  demoCaption_->setAlignment(Qt::AlignCenter);
  demoCaption_->setStyleSheet(QStringLiteral("#demoCaption { background: #1f3b57; color: #ffffff; font-weight: bold; padding: 6px; }"));
  demoCaption_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  demoCaption_->setWordWrap(true);  // a long caption takes two lines on a small screen, never cut at the edges
  demoCaption_->hide();
  cl->addWidget(demoCaption_);
  cl->addWidget(banner_);
  cl->addWidget(methodBanner_);
  frames_ = new FrameBar;
  cl->addWidget(frames_);
  cl->addWidget(tabs_, 1);
  setCentralWidget(central);
}

void MainWindow::makeDocks() {
  datasetPanel_ = new DatasetPanel;
  auto* dataDock = new QDockWidget(tr("Dataset"), this);
  dataDock->setObjectName("datasetDock");
  dataDock->setWidget(datasetPanel_);
  dataDock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  addDockWidget(Qt::LeftDockWidgetArea, dataDock);
  settings_ = new SettingsPanel;
  auto* settingsDock = new QDockWidget(tr("Settings"), this);
  settingsDock->setObjectName("settingsDock");
  settingsDock->setWidget(settings_);
  settingsDock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  addDockWidget(Qt::RightDockWidgetArea, settingsDock);
  resizeDocks({dataDock, settingsDock}, {330, 350}, Qt::Horizontal);
  // The docks keep a readable width (the dataset panel must not collapse to ~150 px) and the
  // window still fits 1024 px: the centre gives way first (the views scale, long labels elide).
  datasetPanel_->setMinimumWidth(190);
  settings_->setMinimumWidth(255);
  // In presenter mode (large type) a dock, when shown, gets the width its contents need (nothing cut on the right):
  // the settings their widest row, the dataset its header (at most 40 % of the window; its values wrap).
  const auto fit = [this](QDockWidget* dock, int need) {
    const int missing = need - dock->widget()->width();
    if (presenter_.on && dock->isVisible() && missing > 0) resizeDocks({dock}, {dock->width() + missing}, Qt::Horizontal);
  };
  const auto fitData = [this, fit, dataDock] { fit(dataDock, std::min(datasetPanel_->sizeHint().width(), width() * 2 / 5)); };
  connect(settingsDock, &QDockWidget::visibilityChanged, this, [this, fit, settingsDock] { fit(settingsDock, settings_->fittingWidth()); });
  connect(dataDock, &QDockWidget::visibilityChanged, this, fitData);
  connect(this, &MainWindow::datasetLoaded, this, fitData);
}

void MainWindow::setUiScale(double scale) {
  scale = std::clamp(scale, 0.6, 3.0);
  if (baseFontPt_ <= 0) baseFontPt_ = QApplication::font().pointSizeF() > 0 ? QApplication::font().pointSizeF() : 9.0;
  const bool windowed = !isFullScreen() && !isMaximized();
  if (uiScale_ == 1.0 && scale != 1.0 && windowed) unzoomedSize_ = size();
  uiScale_ = scale;
  QFont f = QApplication::font();
  f.setPointSizeF(baseFontPt_ * scale);
  QApplication::setFont(f);  // every widget without a font of its own, dialogs included
  for (QToolBar* tb : findChildren<QToolBar*>()) tb->setIconSize(QSize(qRound(20 * scale), qRound(20 * scale)));
  log(tr("zoom %1 %").arg(qRound(scale * 100)));
  if (windowed) QTimer::singleShot(50, this, [this] { fitZoomedWindow(); });  // once the layouts know the new fonts
}

void MainWindow::fitZoomedWindow() {
  if (isFullScreen() || isMaximized()) return;
  if (layout()) layout()->activate();
  if (uiScale_ == 1.0 && unzoomedSize_.isValid()) {
    resize(unzoomedSize_);  // Actual size: the window as it was before the zoom
    unzoomedSize_ = QSize();
    return;
  }
  // Larger type may push the window's minimum out; it never grows wider or taller than the screen.
  if (const QScreen* sc = screen()) {
    const QRect avail = sc->availableGeometry();
    if (width() > avail.width() || height() > avail.height())
      resize(std::min(width(), avail.width()), std::min(height(), avail.height()));
  }
}

void MainWindow::setPresenterMode(bool on) {
  if (on == presenter_.on) return;
  auto* dataDock = findChild<QDockWidget*>("datasetDock");
  auto* settingsDock = findChild<QDockWidget*>("settingsDock");
  if (on) {
    presenter_ = {true, uiScale_, isMaximized(), dataDock->isVisible(), settingsDock->isVisible()};
    showFullScreen();
    setUiScale(1.5);
    dataDock->hide();
    settingsDock->hide();
  } else {
    presenter_.on = false;
    setDemoCaption({});
    setUiScale(presenter_.scale);
    if (presenter_.maximized) showMaximized();
    else showNormal();
    dataDock->setVisible(presenter_.datasetDock);
    settingsDock->setVisible(presenter_.settingsDock);
  }
  if (presenterAction_) presenterAction_->setChecked(on);
}

void MainWindow::restoreSavedLayout() {
  QSettings qs;
  restoreGeometry(qs.value("window/geometry").toByteArray());
  restoreState(qs.value("window/state").toByteArray());
}

MainWindow::~MainWindow() {
  liveView_->stop();  // no image arrives after this
  liveView_->disconnect(this);
  model_.removeObserver(this);
  // QWidget deletes the children after the members, the model among them: nothing the widgets or the
  // worker emit while they go may reach it.
  for (QObject* o : std::initializer_list<QObject*>{worker_, settings_, viewer_, viewer_->planeView(SliceView::Axial),
                                                    compare_, timings_})
    o->disconnect(this);
  // No live-λ image may be posted to a window that is going: stop the publisher, then wait for the task.
  alive_->store(false);
  delete worker_;
  worker_ = nullptr;
}

void MainWindow::connectWidgets() {
  connect(frames_, &FrameBar::frameRequested, this, &MainWindow::onFrameRequested);
  connect(viewer_, &ImageViewer::frameStepRequested, this, [this](int step) {  // Left/Right on the image
    const int n = static_cast<int>(model_.frameCount()), f = static_cast<int>(model_.frame()) + step;
    if (n < 2 || f < 0 || f >= n) return;
    frames_->setCurrent(f);
    onFrameRequested(f);
  });
  connect(viewer_, &ImageViewer::screenshotRequested, this, &MainWindow::exportViewPngDialog);
  connect(frames_, &FrameBar::cineTick, this, [this] {
    if (worker_->busy() || model_.frameCount() < 2) return;  // the frame still reconstructs: wait for it
    const int next = static_cast<int>((model_.frame() + 1) % model_.frameCount());
    frames_->setCurrent(next);
    onFrameRequested(next);
  });
  connect(worker_, &Worker::started, this, &MainWindow::onTaskStarted);
  connect(worker_, &Worker::progress, this, &MainWindow::onTaskProgress);
  connect(worker_, &Worker::succeeded, this, &MainWindow::onTaskSucceeded);
  connect(worker_, &Worker::failed, this, &MainWindow::onTaskFailed);
  connect(worker_, &Worker::cancelled, this, &MainWindow::onTaskCancelled);
  connect(worker_, &Worker::idle, this, [this] {
    settings_->setRunning(false);
    cancelAction_->setEnabled(false);
  });
  connect(settings_, &SettingsPanel::settingsChanged, this, &MainWindow::onSettingsChanged);
  connect(settings_, &SettingsPanel::lambdaDragged, this, &MainWindow::onLambdaDragged);
  connect(settings_, &SettingsPanel::temporalLambdaDragged, this, &MainWindow::onTemporalLambdaDragged);
  connect(settings_, &SettingsPanel::runRequested, this, &MainWindow::runReconstruction);
  connect(settings_, &SettingsPanel::cancelRequested, this, &MainWindow::cancelRun);
  connect(settings_, &SettingsPanel::copyCliRequested, this, &MainWindow::copyCliCommand);
  connect(settings_, &SettingsPanel::trajectoryChanged, this, [this](const QString&) {
    syncSession();
    // The trajectory is part of loading a .cfl: the file is loaded again with it.
    if (model_.source().isFile()) openFile(QString::fromStdString(model_.source().path));
  });
  connect(timings_, &TimingsView::sweepRequested, this, &MainWindow::runLambdaSweep);
  // Queued: the menu that emitted is rebuilt by the refill.
  connect(sideBySide_, &SideBySideView::runsPicked, this, [this](const QVector<int>& numbers) {
    sideBySidePicked_.assign(numbers.begin(), numbers.end());
    refreshSideBySide();
  }, Qt::QueuedConnection);
  connect(tabs_, &QTabWidget::currentChanged, this, [this] {
    if (sideBySideStale_ && tabs_->currentWidget() == sideBySide_) fillSideBySide();
  });
  connect(viewer_, &ImageViewer::roiDrawn, this, [this](const model::PlaneRoi& roi) {
    roi_ = roi;
    refreshTimeCurve();
  });
  connect(timings_, &TimingsView::lambdaPicked, this, [this](double lambda) {
    SessionState s = settings_->state();
    s.settings.iterative.lambda = lambda;
    s.settings.iterative.lambdaRule = recon::LambdaRule::Fixed;  // a λ picked is the λ used
    applySession(s);
    log(tr("λ %1 chosen on the L-curve").arg(lambda, 0, 'g', 3));
    runReconstruction();
  });
  connect(viewer_, &ImageViewer::probed, this, [this](const QString& t) { statusBar()->showMessage(t, 4000); });
  connect(viewer_->planeView(SliceView::Axial), &SliceView::sliceChanged, this,
          [this](int slice) { model_.setSlice(slice); });
  connect(compare_, &CompareView::referenceChosen, this, [this](int index) {
    const auto& c = model_.comparison().candidates;
    if (index >= 0 && index < static_cast<int>(c.size())) model_.chooseReference(c[index].run);
  });
  connect(compare_, &CompareView::testChosen, this, [this](int index) {
    const auto& t = model_.comparison().tests;
    if (index >= 0 && index < static_cast<int>(t.size())) model_.chooseTest(t[index].run);
  });
  connect(compare_, &CompareView::referenceFileRequested, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Reference image"), defaultOutputFolder(), tr("Images (*.cfl *.dcm *.nii *.nii.gz);;BART image (*.cfl);;DICOM series (*.dcm);;NIfTI (*.nii *.nii.gz)"));
    if (!f.isEmpty()) loadReferenceFile(f);
  });
  connect(compare_, &CompareView::computed, this, [this] {
    model_.setComparisonMetrics(compare_->hasMaps() ? std::optional(compare_->volumeMetrics()) : std::nullopt);
  });
}

void MainWindow::buildActions() {
  auto make = [this](const QString& icon, const QString& text, const QKeySequence& key, auto slot) {
    auto* a = new QAction(icon.isEmpty() ? QIcon() : QIcon(icon), text, this);
    if (!key.isEmpty()) a->setShortcut(key);
    connect(a, &QAction::triggered, this, slot);
    return a;
  };
  openAction_ = make(":/icons/open.svg", tr("&Open…"), QKeySequence::Open, [this] { openDialog(); });
  phantomAction_ = make(":/icons/phantom.svg", tr("&New phantom…"), QKeySequence::New, [this] { newPhantomDialog(); });
  runAction_ = make(":/icons/run.svg", tr("&Run"), QKeySequence(Qt::CTRL | Qt::Key_R), [this] { runReconstruction(); });
  cancelAction_ = make(":/icons/cancel.svg", tr("&Cancel"), QKeySequence(Qt::Key_Escape), [this] { cancelRun(); });
  cancelAction_->setEnabled(false);
  exportPngAction_ = make(":/icons/export.svg", tr("PNG of the view…"), QKeySequence(Qt::CTRL | Qt::Key_E),
                          [this] { exportViewPngDialog(); });
  exportPngAction_->setIconText(tr("Export PNG"));
  exportCflAction_ = make("", tr("Image as BART .cfl…"), {}, [this] { exportCflDialog(); });
  exportDicomAction_ = make("", tr("DICOM series…"), {}, [this] { exportDicomDialog(); });
  exportNiftiAction_ = make("", tr("NIfTI…"), {}, [this] { exportNiftiDialog(); });
  if (!dicomExportAvailable()) {
    exportDicomAction_->setEnabled(false);
    exportDicomAction_->setToolTip(tr("This build has no DICOM writer"));
  }
  exportNiftiAction_->setEnabled(niftiExportAvailable());
  copyCliAction_ = make(":/icons/terminal.svg", tr("Copy as larmor-cli command"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C),
                        [this] { copyCliCommand(); });
  copyCliAction_->setIconText(tr("Copy CLI"));
  saveSessionAction_ = make(":/icons/save.svg", tr("Save session next to the data"), QKeySequence::Save,
                            [this] { saveSessionSidecar(); });
  sweepAction_ = make(":/icons/sweep.svg", tr("λ sweep (L-curve)"), {}, [this] {
    showTab("timings");
    runLambdaSweep(timings_->sweepLambdas());
  });
  quitAction_ = make("", tr("&Quit"), QKeySequence::Quit, [this] { close(); });
  // View ▸ Zoom scales the whole window's text (and the toolbar icons) — for a projector, a small screen.
  zoomInAction_ = make("", tr("Zoom &in"), QKeySequence(Qt::CTRL | Qt::Key_Equal), [this] { setUiScale(uiScale_ * 1.15); });
  zoomInAction_->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Equal), QKeySequence(Qt::CTRL | Qt::Key_Plus), QKeySequence::ZoomIn});
  zoomOutAction_ = make("", tr("Zoom &out"), QKeySequence(Qt::CTRL | Qt::Key_Minus), [this] { setUiScale(uiScale_ / 1.15); });
  zoomResetAction_ = make("", tr("&Actual size"), QKeySequence(Qt::CTRL | Qt::Key_0), [this] { setUiScale(1.0); });
  for (QAction* a : {zoomInAction_, zoomOutAction_, zoomResetAction_}) addAction(a);
  for (QAction* a : {runAction_, cancelAction_}) addAction(a);
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(openAction_);
  file->addAction(phantomAction_);
  recentMenu_ = file->addMenu(tr("Open &recent"));
  file->addSeparator();
  file->addAction(saveSessionAction_);
  listenAction_ = file->addAction(tr("&Listen…"), this, &MainWindow::listenDialog);
  stopListeningAction_ = file->addAction(tr("Stop &listening"), this, &MainWindow::stopListening);
  QMenu* exp = file->addMenu(QIcon(":/icons/export.svg"), tr("&Export"));
  exp->addAction(exportPngAction_);
  exp->addAction(exportCflAction_);
  exp->addAction(exportDicomAction_);
  exp->addAction(exportNiftiAction_);
  exp->addAction(tr("Send to PACS…"), this, &MainWindow::sendToPacsDialog)->setObjectName("sendToPacs");
  file->addAction(tr("&Query PACS…"), this, [this] { openQueryPacs(this, [this](const QString& f) { return loadReferenceFile(f); }); })
      ->setObjectName("queryPacs");
  file->addSeparator();
  file->addAction(quitAction_);
  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  edit->addAction(copyCliAction_);
  QMenu* rec = menuBar()->addMenu(tr("&Reconstruct"));
  rec->addAction(runAction_);
  rec->addAction(cancelAction_);
  rec->addAction(sweepAction_);
  rec->addSeparator();
  rec->addAction(runOnOpenAction_);
  QMenu* view = menuBar()->addMenu(tr("&View"));
  const char* tabNames[] = {"image", "compare", "timings", "log", "side"};
  for (int i = 0; i < 5; ++i) {
    const QString name = QString::fromLatin1(tabNames[i]);
    auto* a = view->addAction(tabs_->tabText(i), [this, name] { showTab(name); });
    a->setShortcut(QKeySequence(Qt::CTRL | (Qt::Key_1 + i)));
  }
  view->addMenu(viewer_->layoutMenu());  // the image tab's panes (1x1, 1x2, 2x2) and their views
  view->addSeparator();
  view->addAction(zoomInAction_);
  view->addAction(zoomOutAction_);
  view->addAction(zoomResetAction_);
  presenterAction_ = view->addAction(tr("&Presenter mode"), QKeySequence(Qt::Key_F11), this,
                                     [this] { setPresenterMode(!presenter_.on); });
  presenterAction_->setObjectName("presenterMode");
  presenterAction_->setCheckable(true);
  addAction(presenterAction_);  // F11 works in full screen, without the menu bar too
  view->addAction(tr("Scripted &demo"), this, [this] { emit demoRequested(); })->setObjectName("scriptedDemo");
  view->addSeparator();
  runsMenu_ = view->addMenu(tr("&Runs"));
  connect(runsMenu_, &QMenu::aboutToShow, this, &MainWindow::refreshRunsMenu);
  refreshRunsMenu();
  view->addSeparator();
  for (QDockWidget* d : findChildren<QDockWidget*>()) view->addAction(d->toggleViewAction());
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&User guide"), this, [] {
    const QString guide = userGuidePath();
    if (!guide.isEmpty()) QDesktopServices::openUrl(QUrl::fromLocalFile(guide));
  })->setObjectName("userGuide");
  help->addAction(tr("&Keyboard shortcuts"), this, [this] { showShortcutsDialog(this); })->setObjectName("keyboardShortcuts");
  help->addSeparator();
  help->addAction(tr("&About Larmor"), this, [this] { showAboutDialog(this, deviceText()); });
  connect(recentMenu_, &QMenu::aboutToShow, this, &MainWindow::refreshRecentMenu);
  refreshRecentMenu();
}

void MainWindow::refreshRecentMenu() {
  recentMenu_->clear();
  const QStringList files = recentFiles();
  for (const QString& f : files) recentMenu_->addAction(QFileInfo(f).fileName(), this, [this, f] { openFile(f); })->setToolTip(f);
  if (files.isEmpty()) recentMenu_->addAction(tr("(none)"))->setEnabled(false);
  else {
    recentMenu_->addSeparator();
    recentMenu_->addAction(tr("Clear"), this, [] { clearRecentFiles(); });
  }
}

void MainWindow::refreshRunsMenu() {
  runsMenu_->clear();
  const model::RunRecord* shown = model_.shownRun();
  for (const model::RunRecord& run : model_.runs().runs()) {
    const int number = run.number;
    QAction* a = runsMenu_->addAction(QString::fromStdString(run.label), this, [this, number] { showRun(number); });
    a->setCheckable(true);
    a->setChecked(shown && shown->number == number);
  }
  if (model_.runs().empty()) runsMenu_->addAction(tr("(none yet)"))->setEnabled(false);
}

void MainWindow::buildToolBar() {
  QToolBar* tb = addToolBar(tr("Main"));
  tb->setObjectName("mainToolBar");
  tb->setMovable(false);
  tb->setIconSize(QSize(20, 20));
  tb->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  tb->addAction(openAction_);
  tb->addAction(phantomAction_);
  tb->addSeparator();
  tb->addAction(runAction_);
  tb->addAction(cancelAction_);
  tb->addSeparator();
  tb->addAction(exportPngAction_);
  tb->addAction(copyCliAction_);
  tb->addSeparator();
  tb->addAction(QIcon(":/icons/compare.svg"), tr("Compare"), this, [this] { showTab("compare"); });
}

void MainWindow::buildStatusBar() {
  stage_ = new QLabel(tr("Ready"));
  stage_->setMinimumWidth(160);
  stage_->setMaximumWidth(320);
  progress_ = new QProgressBar;
  progress_->setRange(0, 1000);
  progress_->setMaximumWidth(220);
  progress_->setTextVisible(false);
  progress_->setValue(0);
  summary_ = new QLabel;
  summary_->setObjectName("runSummary");
  summary_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // long lines elide, the window keeps its width
  device_ = new QLabel;
  device_->setObjectName("devicePill");
  statusBar()->addWidget(stage_);
  statusBar()->addWidget(progress_);
  statusBar()->addWidget(summary_, 1);
  statusBar()->addPermanentWidget(device_);
}

void MainWindow::refreshDevices() {
  auto& reg = BackendRegistry::instance();
  reg.loadPlugins();
  settings_->setDevices(reg.devices(), QString::fromStdString(reg.whyNoGpu()));
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (!e->mimeData()->hasUrls()) return;
  for (const QUrl& u : e->mimeData()->urls()) {
    const QString suffix = QFileInfo(u.toLocalFile()).suffix().toLower();
    if (QStringList{"h5", "mrd", "ismrmrd", "cfl", "hdr", "ra"}.contains(suffix)) {
      e->acceptProposedAction();
      return;
    }
  }
}

void MainWindow::dropEvent(QDropEvent* e) {
  const auto urls = e->mimeData()->urls();
  if (!urls.isEmpty()) openFile(urls.front().toLocalFile());
  e->acceptProposedAction();
}

void MainWindow::closeEvent(QCloseEvent* e) {
  worker_->cancel();
  QSettings qs;
  qs.setValue("window/geometry", saveGeometry());
  qs.setValue("window/state", saveState());
  syncSession();
  rememberSession(session());
  QMainWindow::closeEvent(e);
}

}  // namespace larmor::ui
