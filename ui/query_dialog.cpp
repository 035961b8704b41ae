// Query/Retrieve dialog (query_dialog.hpp): filters, a table of the series found, retrieve as reference B.
// The engine calls run on QThreadPool::globalInstance() (as Send to PACS does); progress comes back through
// queued calls on this dialog, dropped when it is gone.
#include "query_dialog.hpp"

#include <QComboBox>
#include <QDir>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QThreadPool>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>

#include "larmor/util/error.hpp"
#include "queued_progress.hpp"

namespace larmor::ui {

QueryDialog::QueryDialog(std::function<bool(const QString&)> openReference, QWidget* parent)
    : QDialog(parent), openReference_(std::move(openReference)), watcher_(new QFutureWatcher<Outcome>(this)) {
  setObjectName("queryDialog");
  setWindowTitle(tr("Query PACS"));
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(makeFiltersBox());
  table_ = new QTableWidget(0, 7);
  table_->setObjectName("queryResults");
  table_->setHorizontalHeaderLabels(
      {tr("Patient ID"), tr("Patient"), tr("Study date"), tr("Modality"), tr("Series"), tr("Description"), tr("Images")});
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  layout->addWidget(table_, 1);
  bar_ = new QProgressBar;
  bar_->setRange(0, 1000);
  bar_->setTextVisible(false);
  layout->addWidget(bar_);
  status_ = new QLabel;
  status_->setObjectName("queryStatus");
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(status_);
  auto* buttons = new QHBoxLayout;
  retrieve_ = new QPushButton(tr("Retrieve and compare"));
  retrieve_->setToolTip(tr("Fetch the chosen series (C-GET) and show it as reference B in the Compare tab"));
  cancel_ = new QPushButton(tr("Cancel"));
  auto* close = new QPushButton(tr("Close"));
  buttons->addStretch(1);
  for (auto* b : {retrieve_, cancel_, close}) buttons->addWidget(b);
  layout->addLayout(buttons);

  connect(search_, &QPushButton::clicked, this, &QueryDialog::search);
  connect(patientId_, &QLineEdit::returnPressed, this, &QueryDialog::search);
  connect(patientName_, &QLineEdit::returnPressed, this, &QueryDialog::search);
  connect(retrieve_, &QPushButton::clicked, this, &QueryDialog::retrieveSelected);
  connect(table_, &QTableWidget::cellDoubleClicked, this, &QueryDialog::retrieveSelected);
  connect(cancel_, &QPushButton::clicked, this, &QueryDialog::cancel);
  connect(close, &QPushButton::clicked, this, &QDialog::reject);
  connect(table_, &QTableWidget::itemSelectionChanged, this, &QueryDialog::updateButtons);
  connect(watcher_, &QFutureWatcher<Outcome>::finished, this, &QueryDialog::finished);
  if (!io::dicomNetworkAvailable()) setStatus(tr("This build has no DICOM networking (LARMOR_IO)"), true);
  updateButtons();
  resize(820, 560);
}

QWidget* QueryDialog::makeFiltersBox() {
  auto* box = new QGroupBox(tr("Find series"));
  auto* form = new QFormLayout(box);
  node_ = new QComboBox;
  node_->setObjectName("queryNode");
  node_->setEditable(true);
  node_->lineEdit()->setPlaceholderText(tr("AET@host:port, e.g. ORTHANC@localhost:4242"));
  std::vector<std::string> lines;
  for (const QString& l : QSettings().value("pacs/nodes").toStringList()) lines.push_back(l.toStdString());
  nodes_ = model::DicomNodeList::fromLines(lines);
  for (const auto& e : nodes_.entries()) node_->addItem(QString::fromStdString(io::toString(e.node)));
  timeout_ = new QSpinBox;
  timeout_->setRange(1, 3600);
  timeout_->setValue(10);
  timeout_->setSuffix(tr(" s"));
  timeout_->setToolTip(tr("How long to wait for the PACS (a typed node; a stored node keeps its own)"));
  patientId_ = new QLineEdit;
  patientId_->setObjectName("queryPatientId");
  patientName_ = new QLineEdit;
  patientName_->setPlaceholderText(tr("e.g. DOE^JANE or DOE*"));
  studyDate_ = new QLineEdit;
  studyDate_->setPlaceholderText(tr("YYYYMMDD or YYYYMMDD-YYYYMMDD"));
  modality_ = new QLineEdit(QStringLiteral("MR"));
  search_ = new QPushButton(tr("Search"));
  search_->setDefault(true);
  form->addRow(tr("PACS"), node_);
  form->addRow(tr("Timeout"), timeout_);
  form->addRow(tr("Patient ID"), patientId_);
  form->addRow(tr("Patient name"), patientName_);
  form->addRow(tr("Study date"), studyDate_);
  form->addRow(tr("Modality"), modality_);
  form->addRow(QString(), search_);
  return box;
}

QueryDialog::~QueryDialog() {
  if (token_) token_->cancel();
  watcher_->disconnect(this);
  watcher_->waitForFinished();  // the engine stops at the next message, or at its timeout
}

void QueryDialog::setNode(const QString& nodeText, int timeoutSeconds) {
  node_->setEditText(nodeText);
  timeout_->setValue(timeoutSeconds);
}

void QueryDialog::setPatientId(const QString& id) { patientId_->setText(id); }

io::DicomNode QueryDialog::node() const {
  const std::string text = node_->currentText().trimmed().toStdString();
  for (const auto& e : nodes_.entries())
    if (io::toString(e.node) == text) return e.node;  // a stored node: its timeout and calling AE title
  io::DicomNode n = io::parseDicomNode(text);
  n.timeoutSeconds = timeout_->value();
  return n;
}

void QueryDialog::search() {
  if (busy()) return;
  try {
    const io::DicomNode n = node();
    io::QueryFilters f;
    f.level = io::QueryLevel::Series;
    f.patientId = patientId_->text().trimmed().toStdString();
    f.patientName = patientName_->text().trimmed().toStdString();
    f.studyDate = studyDate_->text().trimmed().toStdString();
    f.modality = modality_->text().trimmed().toStdString();
    io::checkQueryFilters(f);
    start(tr("Searching %1 (C-FIND)…").arg(QString::fromStdString(io::toString(n))),
          [n, f](const Progress& p) {
            Outcome o;
            o.rows = io::query(n, f, p);
            o.ok = true;
            o.message = tr("%n series found on %1", nullptr, static_cast<int>(o.rows.size()))
                            .arg(QString::fromStdString(io::toString(n)));
            return o;
          },
          false);
  } catch (const std::exception& e) {
    setStatus(QString::fromStdString(e.what()), true);
  }
}

void QueryDialog::retrieveSelected() {
  const int row = table_->currentRow();
  if (busy() || row < 0 || row >= static_cast<int>(rows_.size())) return;
  try {
    const io::DicomNode n = node();
    const io::QueryRow r = rows_[static_cast<std::size_t>(row)];
    if (!folder_) folder_ = std::make_unique<QTemporaryDir>(QDir::tempPath() + "/larmor-retrieve-XXXXXX");
    require(folder_->isValid(), "cannot create a temporary folder for the retrieved series (" +
                                    folder_->errorString().toStdString() + ")");
    const QString dir = folder_->filePath(QString("series-%1").arg(++retrieves_));
    start(tr("Retrieving series %1 \"%2\" (C-GET)…").arg(QString::fromStdString(r.seriesNumber),
                                                         QString::fromStdString(r.seriesDescription)),
          [n, r, dir](const Progress& p) {
            Outcome o;
            const io::RetrieveReport rep = io::retrieve(n, r.seriesUid, dir.toStdString(), r.studyUid, p);
            o.ok = true;
            o.folder = QString::fromStdString(rep.folder);
            o.message = QString::fromStdString(rep.summary());
            return o;
          },
          true);
  } catch (const std::exception& e) {
    setStatus(QString::fromStdString(e.what()), true);
  }
}

void QueryDialog::cancel() {
  if (!token_) return;
  token_->cancel();
  setStatus(tr("Cancelling…"), false);
}

bool QueryDialog::busy() const { return watcher_->isRunning(); }

QString QueryDialog::statusText() const { return status_->text(); }

void QueryDialog::start(const QString& label, std::function<Outcome(const Progress&)> work, bool isRetrieve) {
  token_ = std::make_shared<CancelToken>();
  retrieving_ = isRetrieve;
  bar_->setValue(0);
  if (!isRetrieve) bar_->setRange(0, 0);  // C-FIND: busy indicator
  setStatus(label, false);
  const Progress progress = queuedProgress(bar_, status_, token_.get());
  auto token = token_;  // kept alive by the closure while the work runs
  watcher_->setFuture(QtConcurrent::run(QThreadPool::globalInstance(), [work = std::move(work), progress, token] {
    try {
      return work(progress);
    } catch (const Cancelled&) {
      return Outcome{false, tr("Cancelled"), {}, {}};
    } catch (const std::exception& e) {
      return Outcome{false, QString::fromStdString(e.what()), {}, {}};
    }
  }));
  updateButtons();
}

void QueryDialog::finished() {
  Outcome o = watcher_->result();
  token_.reset();
  bar_->setRange(0, 1000);
  bar_->setValue(o.ok ? 1000 : 0);
  if (!retrieving_) {
    if (o.ok) {
      rows_ = std::move(o.rows);
      showRows();
    }
    setStatus(o.message, !o.ok);
    updateButtons();
    emit searchFinished(o.ok, o.message);
    return;
  }
  if (o.ok) {
    retrieved_ = o.folder;
    const QStringList files = QDir(o.folder).entryList({"*.dcm"}, QDir::Files, QDir::Name);
    o.ok = !files.isEmpty() && openReference_ && openReference_(QDir(o.folder).filePath(files.front()));
    o.message = o.ok ? tr("%1; opened in the Compare tab as a reference (B when it fits the shown image)").arg(o.message)
                     : tr("%1, but it could not be shown as the reference").arg(o.message);
  }
  setStatus(o.message, !o.ok);
  updateButtons();
  emit retrieveFinished(o.ok, o.message);
}

void QueryDialog::showRows() {
  table_->setRowCount(static_cast<int>(rows_.size()));
  for (int i = 0; i < static_cast<int>(rows_.size()); ++i) {
    const io::QueryRow& r = rows_[static_cast<std::size_t>(i)];
    const QStringList cells = {QString::fromStdString(r.patientId),   QString::fromStdString(r.patientName),
                               QString::fromStdString(r.studyDate),   QString::fromStdString(r.modality),
                               QString::fromStdString(r.seriesNumber), QString::fromStdString(r.seriesDescription),
                               r.instances < 0 ? QStringLiteral("?") : QString::number(r.instances)};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      item->setToolTip(QString::fromStdString("series " + r.seriesUid + "\nstudy " + r.studyUid));
      table_->setItem(i, c, item);
    }
  }
  table_->resizeColumnsToContents();
  if (!rows_.empty()) table_->selectRow(0);
}

void QueryDialog::setStatus(const QString& text, bool error) {
  status_->setText(text);
  status_->setStyleSheet(error ? QStringLiteral("color: #c83030;") : QString());
}

void QueryDialog::updateButtons() {
  const bool running = watcher_ && watcher_->isRunning();
  search_->setEnabled(!running);
  retrieve_->setEnabled(!running && table_->currentRow() >= 0 && !rows_.empty());
  cancel_->setEnabled(running);
}

QueryDialog* openQueryPacs(QWidget* parent, std::function<bool(const QString&)> openReference) {
  auto* dlg = new QueryDialog(std::move(openReference), parent);
  dlg->setAttribute(Qt::WA_DeleteOnClose);
  dlg->setWindowModality(Qt::WindowModal);
  dlg->show();
  return dlg;
}

}  // namespace larmor::ui
