// Send to PACS dialog (pacs_dialog.hpp): node list, C-ECHO, C-STORE with progress and a result per file.
// The engine calls run on QThreadPool::globalInstance() (not the reconstruction worker: a send may go on while
// the next reconstruction runs); progress comes back through queued calls on this dialog.
#include "pacs_dialog.hpp"

#include <QDir>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QThreadPool>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>

#include "exporter.hpp"
#include "larmor/util/error.hpp"
#include "queued_progress.hpp"

namespace larmor::ui {

namespace {
constexpr const char* kSettingsKey = "pacs/nodes";

std::vector<std::string> toStd(const QStringList& l) {
  std::vector<std::string> v;
  for (const auto& s : l) v.push_back(s.toStdString());
  return v;
}
}  // namespace

PacsDialog::PacsDialog(const QStringList& files, const QString& what, QWidget* parent)
    : QDialog(parent), files_(files), watcher_(new QFutureWatcher<Outcome>(this)) {
  setObjectName("pacsDialog");
  setWindowTitle(tr("Send to PACS"));
  auto* layout = new QVBoxLayout(this);

  layout->addWidget(makeNodesBox());

  auto* what_ = new QLabel(tr("To send: %1 (%n DICOM file(s))", nullptr, static_cast<int>(files_.size())).arg(what));
  what_->setWordWrap(true);
  layout->addWidget(what_);
  bar_ = new QProgressBar;
  bar_->setRange(0, 1000);
  bar_->setValue(0);
  bar_->setTextVisible(false);
  layout->addWidget(bar_);
  status_ = new QLabel;
  status_->setObjectName("pacsStatus");
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(status_);
  table_ = new QTableWidget(0, 2);
  table_->setObjectName("pacsResults");
  table_->setHorizontalHeaderLabels({tr("File"), tr("Result")});
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  layout->addWidget(table_, 1);
  auto* buttons = new QHBoxLayout;
  send_ = new QPushButton(tr("Send"));
  send_->setDefault(true);
  cancel_ = new QPushButton(tr("Cancel"));
  auto* close = new QPushButton(tr("Close"));
  buttons->addStretch(1);
  for (auto* b : {send_, cancel_, close}) buttons->addWidget(b);
  layout->addLayout(buttons);

  connect(add_, &QPushButton::clicked, this,
          [this] { addNode(name_->text(), node_->text(), timeout_->value(), callingAe_->text()); });
  connect(node_, &QLineEdit::returnPressed, add_, &QPushButton::click);
  connect(remove_, &QPushButton::clicked, this, &PacsDialog::removeSelectedNode);
  connect(verify_, &QPushButton::clicked, this, &PacsDialog::verify);
  connect(send_, &QPushButton::clicked, this, &PacsDialog::send);
  connect(cancel_, &QPushButton::clicked, this, &PacsDialog::cancel);
  connect(close, &QPushButton::clicked, this, &QDialog::reject);
  connect(list_, &QListWidget::currentRowChanged, this, [this] { updateButtons(); });
  connect(watcher_, &QFutureWatcher<Outcome>::finished, this, &PacsDialog::finished);

  std::vector<std::string> problems;
  nodes_ = model::DicomNodeList::fromLines(toStd(QSettings().value(kSettingsKey).toStringList()), &problems);
  refreshNodes();
  if (!nodes_.empty()) list_->setCurrentRow(0);
  if (!problems.empty()) setStatus(tr("Skipped a stored node: %1").arg(QString::fromStdString(problems.front())), true);
  if (!io::dicomNetworkAvailable()) setStatus(tr("This build has no DICOM networking (LARMOR_IO)"), true);
  updateButtons();
  resize(620, 560);
}

QWidget* PacsDialog::makeNodesBox() {
  auto* nodesBox = new QGroupBox(tr("DICOM nodes"));
  auto* nodesLayout = new QVBoxLayout(nodesBox);
  list_ = new QListWidget;
  list_->setObjectName("pacsNodes");
  nodesLayout->addWidget(list_);
  auto* form = new QFormLayout;
  name_ = new QLineEdit;
  name_->setPlaceholderText(tr("e.g. Hospital PACS (optional)"));
  node_ = new QLineEdit;
  node_->setPlaceholderText(tr("AET@host:port, e.g. ORTHANC@localhost:4242"));
  timeout_ = new QSpinBox;
  timeout_->setRange(1, 3600);
  timeout_->setValue(10);
  timeout_->setSuffix(tr(" s"));
  timeout_->setToolTip(tr("How long to wait for the PACS to connect, accept and answer each request"));
  form->addRow(tr("Name"), name_);
  form->addRow(tr("Node"), node_);
  form->addRow(tr("Timeout"), timeout_);
  callingAe_ = new QLineEdit(QStringLiteral("LARMOR"));
  callingAe_->setObjectName("callingAeTitle");
  callingAe_->setMaxLength(16);
  callingAe_->setToolTip(tr("Our AE title, as the PACS knows this workstation (up to 16 characters)"));
  form->addRow(tr("Calling AE title"), callingAe_);
  nodesLayout->addLayout(form);
  auto* nodeButtons = new QHBoxLayout;
  add_ = new QPushButton(tr("Add"));
  remove_ = new QPushButton(tr("Remove"));
  verify_ = new QPushButton(tr("Verify (C-ECHO)"));
  verify_->setToolTip(tr("Check that the selected node answers (DICOM C-ECHO)"));
  for (auto* b : {add_, remove_, verify_}) nodeButtons->addWidget(b);
  nodeButtons->addStretch(1);
  nodesLayout->addLayout(nodeButtons);
  return nodesBox;
}

PacsDialog::~PacsDialog() {
  if (token_) token_->cancel();
  watcher_->disconnect(this);
  watcher_->waitForFinished();  // the engine stops at the next file, or at its timeout
}

void PacsDialog::keepTemporaryFolder(std::unique_ptr<QTemporaryDir> dir) { tempDir_ = std::move(dir); }

bool PacsDialog::addNode(const QString& name, const QString& nodeText, int timeoutSeconds, const QString& callingAe) {
  try {
    const QString calling = callingAe.trimmed().isEmpty() ? QStringLiteral("LARMOR") : callingAe.trimmed();
    const std::size_t i = nodes_.add(name.trimmed().toStdString(), nodeText.trimmed().toStdString(), timeoutSeconds,
                                     calling.toStdString());
    saveNodes();
    refreshNodes();
    list_->setCurrentRow(static_cast<int>(i));
    name_->clear();
    node_->clear();
    setStatus(tr("Added %1").arg(QString::fromStdString(model::displayText(nodes_.at(i)))), false);
    return true;
  } catch (const std::exception& e) {
    setStatus(QString::fromStdString(e.what()), true);
    return false;
  }
}

void PacsDialog::removeSelectedNode() {
  const int i = selectedNode();
  if (i < 0) return;
  nodes_.remove(static_cast<std::size_t>(i));
  saveNodes();
  refreshNodes();
  list_->setCurrentRow(std::min(i, static_cast<int>(nodes_.size()) - 1));
}

void PacsDialog::selectNode(int index) { list_->setCurrentRow(index); }
int PacsDialog::selectedNode() const {
  const int i = list_->currentRow();
  return i >= 0 && i < static_cast<int>(nodes_.size()) ? i : -1;
}

void PacsDialog::verify() {
  const int i = selectedNode();
  if (i < 0 || busy()) return;
  const io::DicomNode node = nodes_.at(static_cast<std::size_t>(i)).node;
  start(tr("Verifying %1 (C-ECHO)…").arg(QString::fromStdString(io::toString(node))),
        [node](const Progress&) {
          Outcome o;
          try {
            io::echo(node);
            o.ok = true;
            o.message = QObject::tr("%1 answered C-ECHO").arg(QString::fromStdString(io::toString(node)));
          } catch (const std::exception& e) {
            o.message = QString::fromStdString(e.what());
          }
          return o;
        },
        false);
}

void PacsDialog::send() {
  const int i = selectedNode();
  if (i < 0 || busy()) return;
  if (files_.isEmpty()) {
    setStatus(tr("Nothing to send"), true);
    return;
  }
  const io::DicomNode node = nodes_.at(static_cast<std::size_t>(i)).node;
  const std::vector<std::string> files = toStd(files_);
  table_->setRowCount(0);
  start(tr("Sending %n file(s) to %1…", nullptr, static_cast<int>(files.size())).arg(QString::fromStdString(io::toString(node))),
        [node, files](const Progress& p) {
          Outcome o;
          try {
            o.report = std::make_shared<io::SendReport>(io::send(node, files, p));
            o.ok = o.report->allSent();
            o.message = QString::fromStdString(o.report->summary());
          } catch (const std::exception& e) {
            o.message = QString::fromStdString(e.what());
          }
          return o;
        },
        true);
}

void PacsDialog::cancel() {
  if (token_) {
    token_->cancel();
    setStatus(tr("Cancelling after the file being sent…"), false);
  }
}

bool PacsDialog::busy() const { return watcher_->isRunning(); }

QString PacsDialog::statusText() const { return status_->text(); }

void PacsDialog::start(const QString& label, std::function<Outcome(const Progress&)> work, bool isSend) {
  token_ = std::make_shared<CancelToken>();
  sending_ = isSend;
  bar_->setValue(0);
  if (!isSend) bar_->setRange(0, 0);  // C-ECHO: busy indicator
  setStatus(label, false);
  const Progress progress = queuedProgress(bar_, status_, token_.get());
  auto token = token_;  // kept alive by the closure while the work runs
  watcher_->setFuture(QtConcurrent::run(QThreadPool::globalInstance(), [work = std::move(work), progress, token] {
    return work(progress);
  }));
  updateButtons();
}

void PacsDialog::finished() {
  const Outcome o = watcher_->result();
  bar_->setRange(0, 1000);
  if (sending_) {
    report_ = o.report;
    if (report_) showReport(*report_);
    bar_->setValue(report_ && !report_->results.empty()
                       ? static_cast<int>(1000 * report_->sent() / report_->results.size()) : 0);
    setStatus(o.message, !o.ok);
    token_.reset();
    updateButtons();
    emit sendFinished(o.ok, o.message);
  } else {
    bar_->setValue(o.ok ? 1000 : 0);
    setStatus(o.message, !o.ok);
    token_.reset();
    updateButtons();
    emit verifyFinished(o.ok, o.message);
  }
}

void PacsDialog::showReport(const io::SendReport& r) {
  table_->setRowCount(static_cast<int>(r.results.size()));
  for (int i = 0; i < static_cast<int>(r.results.size()); ++i) {
    const io::SendResult& x = r.results[static_cast<std::size_t>(i)];
    auto* file = new QTableWidgetItem(QFileInfo(QString::fromStdString(x.file)).fileName());
    file->setToolTip(QString::fromStdString(x.file));
    auto* result = new QTableWidgetItem((x.ok ? QStringLiteral("✔ ") : QStringLiteral("✘ ")) + QString::fromStdString(x.message));
    result->setForeground(x.ok ? palette().color(QPalette::Text) : QColor(200, 40, 40));
    result->setToolTip(QString::fromStdString(x.sopInstanceUid));
    table_->setItem(i, 0, file);
    table_->setItem(i, 1, result);
  }
  table_->resizeColumnToContents(0);
}

void PacsDialog::setStatus(const QString& text, bool error) {
  status_->setText(text);
  status_->setStyleSheet(error ? QStringLiteral("color: #c83030;") : QString());
}

void PacsDialog::refreshNodes() {
  const int row = list_->currentRow();
  list_->clear();
  for (const auto& e : nodes_.entries()) {
    auto* item = new QListWidgetItem(QString::fromStdString(model::displayText(e)));
    item->setToolTip(tr("calling AE title %1, timeout %2 s")
                         .arg(QString::fromStdString(e.node.callingAeTitle))
                         .arg(e.node.timeoutSeconds));
    list_->addItem(item);
  }
  if (row >= 0 && row < list_->count()) list_->setCurrentRow(row);
  updateButtons();
}

void PacsDialog::saveNodes() const {
  QStringList l;
  for (const auto& s : nodes_.toLines()) l << QString::fromStdString(s);
  QSettings().setValue(kSettingsKey, l);
}

void PacsDialog::updateButtons() {
  const bool running = watcher_ && watcher_->isRunning();
  const bool net = io::dicomNetworkAvailable();
  const bool node = selectedNode() >= 0;
  add_->setEnabled(!running);
  remove_->setEnabled(!running && node);
  verify_->setEnabled(net && !running && node);
  send_->setEnabled(net && !running && node && !files_.isEmpty());
  cancel_->setEnabled(running && sending_);
}

PacsDialog* openSendToPacs(QWidget* parent, const std::function<std::pair<QStringList, QString>(const QString&)>& write) {
  if (!dicomExportAvailable()) {
    QMessageBox::information(parent, QObject::tr("Send to PACS"), QObject::tr("This build has no DICOM writer"));
    return nullptr;
  }
  auto dir = std::make_unique<QTemporaryDir>(QDir::tempPath() + "/larmor-pacs-XXXXXX");
  std::pair<QStringList, QString> series;
  try {
    require(dir->isValid(), "cannot make a temporary folder for the series: " + dir->errorString().toStdString());
    series = write(dir->path() + "/series");
  } catch (const std::exception& e) {
    QMessageBox::warning(parent, QObject::tr("Send to PACS"), QObject::tr("Nothing to send: %1").arg(QString::fromStdString(e.what())));
    return nullptr;
  }
  auto* dlg = new PacsDialog(series.first, series.second, parent);
  dlg->keepTemporaryFolder(std::move(dir));
  dlg->setAttribute(Qt::WA_DeleteOnClose);
  dlg->setWindowModality(Qt::WindowModal);
  dlg->show();
  return dlg;
}

}  // namespace larmor::ui
