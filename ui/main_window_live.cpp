// The window's live view (File ▸ Listen…, docs/streaming.md): the streaming server inside the workstation
// (live_view.hpp), its state in the status bar, each arriving image shown at once as the growing scan's run
// (model::WorkstationModel::showLiveScan), with the window the scan's first image got kept for the rest. With
// several scanners streaming at once, a list in the status bar names each connection's scan and shows the one
// picked (the others go on growing beside it).
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStatusBar>

#include "frame_bar.hpp"
#include "dataset_panel.hpp"
#include "image_viewer.hpp"
#include "larmor/batch/settings_file.hpp"
#include "live_view.hpp"
#include "main_window.hpp"

namespace larmor::ui {

void MainWindow::makeLiveView() {
  liveView_ = new LiveView(this);
  listenAction_->setObjectName("listen");
  listenAction_->setToolTip(tr("Reconstruct what a scanner streams here (ISMRMRD streaming protocol) and show it as it arrives"));
  stopListeningAction_->setObjectName("stopListening");
  stopListeningAction_->setEnabled(false);
  listening_ = new QLabel;
  listening_->setObjectName("listening");
  listening_->hide();
  statusBar()->addPermanentWidget(listening_);
  liveScans_ = new QComboBox;
  liveScans_->setObjectName("liveScans");
  liveScans_->setToolTip(tr("The scans streamed here, one per connection: pick the one to show"));
  liveScans_->hide();
  statusBar()->addPermanentWidget(liveScans_);
  connect(liveScans_, &QComboBox::activated, this, [this](int row) { liveView_->show(liveScans_->itemData(row).toInt()); });
  connect(liveView_, &LiveView::scansChanged, this, &MainWindow::refreshLiveScans);
  connect(liveView_, &LiveView::scanGrew, this, &MainWindow::onLiveScan);
  connect(liveView_, &LiveView::started, this, [this](const QString& address) {
    listening_->setText(tr("Listening on %1").arg(address));
    stopListeningAction_->setEnabled(true);
    log(tr("live: listening on %1").arg(address));
  });
  connect(liveView_, &LiveView::failed, this, [this](const QString& error) {
    listening_->hide();
    stopListeningAction_->setEnabled(false);
    showError(tr("Listen: %1").arg(error));
  });
  connect(liveView_, &LiveView::logLine, this, [this](const QString& line) { log(tr("live: %1").arg(line)); });
  connect(liveView_, &LiveView::connectionEnded, this, [this](int id, const QString& peer, const QString& error) {
    if (id != liveView_->connection() || !liveView_->scan()) return;
    // The scan's data whole (every arrived slice's k-space), once, now that nothing more arrives.
    if (model_.showLiveScan(*liveView_->scan(), false, true)) datasetPanel_->setDataset(model_.dataset());
    if (!error.isEmpty()) showError(tr("The live scan from %1 ended early: %2").arg(peer, error));
  });
}

bool MainWindow::startListening(int port, const QString& address, const QString& settingsFile) {
  syncSession();
  LiveView::Options o;
  o.port = port;
  o.listen = address;
  o.devices = QString::fromStdString(model_.session().device);
  o.settings = model_.session().settings;
  try {
    if (!settingsFile.isEmpty()) o.settings = batch::readSettingsFile(settingsFile.toStdString()).settings;
  } catch (const std::exception& e) {
    showError(tr("Listen: %1").arg(QString::fromStdString(e.what())));
    return false;
  }
  liveView_->start(o);
  listening_->setText(tr("Starting the server on %1:%2…").arg(address).arg(port));
  listening_->show();
  stopListeningAction_->setEnabled(true);
  log(tr("live: starting the server on %1:%2 (%3)").arg(address).arg(port)
          .arg(settingsFile.isEmpty() ? tr("the settings panel's settings") : settingsFile));
  return true;
}

void MainWindow::stopListening() {
  const QString was = liveView_->address();
  liveView_->stop();
  listening_->hide();
  stopListeningAction_->setEnabled(false);
  if (!was.isEmpty()) log(tr("live: stopped listening on %1").arg(was));
}

void MainWindow::listenDialog() {
  QDialog d(this);
  d.setWindowTitle(tr("Listen for a scanner"));
  auto* port = new QSpinBox;
  port->setRange(0, 65535);
  port->setValue(9002);
  port->setToolTip(tr("0: any free port"));
  auto* address = new QLineEdit(QStringLiteral("127.0.0.1"));
  address->setToolTip(tr("0.0.0.0: every network interface"));
  auto* settings = new QLineEdit;
  settings->setPlaceholderText(tr("the settings panel's"));
  auto* browse = new QPushButton(tr("Browse…"));
  connect(browse, &QPushButton::clicked, &d, [&] {
    const QString f = QFileDialog::getOpenFileName(&d, tr("Settings JSON"), {}, tr("Settings (*.json)"));
    if (!f.isEmpty()) settings->setText(f);
  });
  auto* row = new QHBoxLayout;
  row->addWidget(settings, 1);
  row->addWidget(browse);
  auto* form = new QFormLayout(&d);
  form->addRow(tr("Port"), port);
  form->addRow(tr("Address"), address);
  form->addRow(tr("Settings"), row);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Listen"));
  connect(buttons, &QDialogButtonBox::accepted, &d, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, &d, &QDialog::reject);
  form->addRow(buttons);
  if (d.exec() == QDialog::Accepted) startListening(port->value(), address->text().trimmed(), settings->text().trimmed());
}

// One row per connection's scan (shown when there are two or more), the one on screen current.
void MainWindow::refreshLiveScans() {
  const QSignalBlocker quiet(liveScans_);
  liveScans_->clear();
  for (int id : liveView_->connections()) {
    liveScans_->addItem(liveView_->describe(id), id);
    if (id == liveView_->connection()) liveScans_->setCurrentIndex(liveScans_->count() - 1);
  }
  liveScans_->setVisible(liveScans_->count() > 1);
}

void MainWindow::onLiveScan(bool fresh) {
  const model::LiveScan* scan = liveView_->scan();
  if (!scan) return;
  const bool keepWindow = !fresh && model_.hasData();
  const double lo = viewer_->windowLow(), hi = viewer_->windowHigh();
  const std::size_t framesBefore = model_.frameCount();
  // A new frame: the panel lets the scan's data go, so that they grow in place (model/live_scan.hpp); the frame
  // change gives it the new frame.
  const bool grows = !fresh && scan->keys().size() != framesBefore;
  if (grows) datasetPanel_->setDataset(nullptr);
  if (!model_.showLiveScan(*scan, fresh)) {
    if (grows) datasetPanel_->setDataset(model_.dataset());
    return;
  }
  if (keepWindow) viewer_->setWindow(lo, hi);  // the series' window, not each image's
  const model::LoadedDataset& d = model_.data();
  if (!fresh && d.frameCount() != framesBefore && d.series) setFrameBar();  // O(frames) once a frame, names made when shown
  // The newest image on screen: its frame, its slice (as a scanner's console follows the scan).
  const auto [frame, slice] = scan->newest();
  if (frame != model_.frame()) model_.setFrame(frame);
  model_.setSlice(slice);
  stage_->setText(tr("Live: %1 images").arg(scan->imageCount()));
}

}  // namespace larmor::ui
