// MainWindow's dialogs and exports: open, new phantom, PNG/.cfl/DICOM/NIfTI, the CLI command, the
// session sidecar, screenshots. Each export is recorded in the model, which proposes the next name.
#include <algorithm>

#include <QApplication>
#include <QLabel>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QPlainTextEdit>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>

#include "exporter.hpp"
#include "larmor/io/cfl.hpp"
#include "larmor/io/dicom.hpp"
#include "larmor/io/nifti.hpp"
#include "larmor/util/error.hpp"
#include "image_viewer.hpp"
#include "main_window.hpp"
#include "phantom_dialog.hpp"
#include "settings_panel.hpp"

namespace larmor::ui {

namespace {
/// The files the shown data came from (the dataset's file, a BART trajectory): no export may replace them.
QStringList inputFiles(const model::WorkstationModel& m) {
  QStringList l;
  if (const auto d = m.dataset(); d && !d->source.empty() && d->source != "simulated")
    l << QString::fromStdString(d->source);
  if (!m.session().trajectoryPath.empty()) l << QString::fromStdString(m.session().trajectoryPath);
  return l;
}
}  // namespace

void MainWindow::openDialog() {
  const model::DataSource& src = model_.source();
  const QString dir = src.isFile() ? QFileInfo(QString::fromStdString(src.path)).absolutePath() : QDir::currentPath();
  const QString f = QFileDialog::getOpenFileName(
      this, tr("Open raw data"), dir,
      tr("Raw data (*.h5 *.mrd *.ismrmrd *.cfl *.hdr *.ra *.dat);;ISMRMRD (*.h5 *.mrd *.ismrmrd);;BART k-space (*.cfl *.hdr);;"
         "RawArray (*.ra);;Siemens twix (*.dat);;All files (*)"));
  if (!f.isEmpty()) openFile(f);
}

void MainWindow::newPhantomDialog() {
  PhantomDialog dlg(this);
  dlg.setSettings(model_.phantom().value_or(phantom::SimulateSettings{}));
  if (dlg.exec() == QDialog::Accepted) newPhantom(dlg.settings());
}

template <class F>
bool MainWindow::exportWith(const char* kind, const QString& path, F&& write) {
  model::ExportOutcome outcome{kind, path.toStdString(), false, {}};
  try {
    outcome.message = write().toStdString();
    outcome.ok = true;
    log(QString::fromStdString(outcome.message));
  } catch (const std::exception& e) {
    outcome.message = e.what();
    showError(QString::fromStdString(outcome.message));
  }
  model_.recordExport(outcome);
  return outcome.ok;
}

Progress MainWindow::exportProgress() {
  // Exports run on the GUI thread: the bar and the stage line are repainted at once, per file written.
  exportFractions_.clear();
  return Progress([this](double f, const std::string& stage) {
    exportFractions_.append(f);
    progress_->setValue(static_cast<int>(std::clamp(f, 0.0, 1.0) * 1000));
    stage_->setText(tr("export: %1").arg(QString::fromStdString(stage)));
    progress_->repaint();
    stage_->repaint();
  });
}

QString MainWindow::defaultOutputFolder() {
  QString docs = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
  if (docs.isEmpty()) docs = QDir::homePath();
  return QDir(docs).filePath(QStringLiteral("Larmor"));
}

QString MainWindow::suggestedOutput(const QString& suffix) const {
  // Exports go to Larmor's output folder (Documents/Larmor), never next to the raw data by default;
  // after an export, to the folder the user last chose (the model remembers it).
  const QString folder = defaultOutputFolder();
  QDir().mkpath(folder);
  return QString::fromStdString(model_.suggestedOutputBase(folder.toStdString())) + suffix;
}

QString MainWindow::defaultSeriesDescription() const {
  // Protocol + method, as a radiographer reads it in the PACS: "t1_se_tra GRAPPA R4".
  const model::RunRecord* run = model_.shownRun();
  const auto ds = model_.dataset();
  QString protocol = ds ? QString::fromStdString(ds->header.protocolName).trimmed() : QString();
  const QString method = run ? QString::fromStdString(run->description) : QString();
  return asciiText(protocol.isEmpty() ? method : protocol + QStringLiteral(" ") + method).left(64);
}

bool MainWindow::saveScreenshot(const QString& path) {
  return exportWith("screenshot", path, [&] {
    // grab() paints every child, and the VTK views render into their paint events, so the picture
    // holds the images and not black rectangles.
    exportPng(path, grab().toImage(), inputFiles(model_));
    return tr("screenshot: %1").arg(path);
  });
}

bool MainWindow::exportViewPng(const QString& path) {
  return exportWith("png", path, [&] {
    require(viewer_->hasImage(), path.toStdString() + ": no image to export yet");
    QWidget* area = tabs_->currentIndex() == 0 ? viewer_->viewArea() : tabs_->currentWidget();  // 0: the image tab
    exportPng(path, area->grab().toImage(), inputFiles(model_));
    return tr("exported the view: %1").arg(path);
  });
}

bool MainWindow::exportCflFile(const QString& path) {
  return exportWith("cfl", path, [&] {
    const std::string problem = model_.exportProblem();
    require(problem.empty(), path.toStdString() + ": " + problem);
    exportCfl(path, model_.shownResult()->image, inputFiles(model_));
    return tr("exported %1 (BART .cfl/.hdr)").arg(path);
  });
}

bool MainWindow::exportDicomSeries(const QString& directory, const DicomExportOptions& options) {
  return exportWith("dicom", directory, [&] {
    const std::string problem = model_.exportProblem();
    require(problem.empty(), directory.toStdString() + ": " + problem);
    DicomExportOptions o = options;
    if (o.windowHigh <= o.windowLow && viewer_->component() == quality::Component::Magnitude) {
      o.windowLow = viewer_->windowLow();
      o.windowHigh = viewer_->windowHigh();
    }
    if (o.seriesDescription.isEmpty()) o.seriesDescription = defaultSeriesDescription();
    const QStringList files = exportDicom(directory, *model_.shownResult(), *model_.dataset(), o, exportProgress());
    for (const QString& f : files)
      if (f.startsWith("warning")) log(f);
    const int n = dicomInstanceCount(files);
    const QString what = tr("Exported %n DICOM image(s)", nullptr, n) + tr(" (series \"%1\") into %2").arg(asciiText(o.seriesDescription), directory);
    lastNotice_ = what;
    statusBar()->showMessage(what, 15000);  // on screen, not only in the log
    return what;
  });
}

bool MainWindow::exportNiftiFile(const QString& path, const DicomExportOptions& options) {
  return exportWith("nifti", path, [&] {
    const std::string problem = model_.exportProblem();
    require(problem.empty(), path.toStdString() + ": " + problem);
    DicomExportOptions o = options;  // the magnitude carries the window on screen (cal_min / cal_max)
    if (o.windowHigh <= o.windowLow && viewer_->component() == quality::Component::Magnitude) {
      o.windowLow = viewer_->windowLow();
      o.windowHigh = viewer_->windowHigh();
    }
    exportNifti(path, *model_.shownResult(), *model_.dataset(), o, exportProgress());
    return tr("exported %1 (NIfTI)").arg(path);
  });
}

bool MainWindow::loadReferenceFile(const QString& path) {
  try {
    const QString suffix = QFileInfo(path).suffix().toLower();
    const bool nifti = suffix == "nii" || path.endsWith(".nii.gz", Qt::CaseInsensitive);
    require(suffix == "cfl" || suffix == "hdr" || suffix == "dcm" || nifti,
            path.toStdString() + ": a reference image must be a BART .cfl, a DICOM series (.dcm) or a NIfTI-1 .nii/.nii.gz");
    // A DICOM file stands for its series (every slice in its folder); magnitude, as stored.
#ifdef LARMOR_HAVE_IO
    CArray img = nifti ? io::readNiftiImage(path.toStdString())
                 : suffix == "dcm" ? io::readDicomSeriesImage(path.toStdString()) : io::readCfl(path.toStdString());
#else
    require(suffix != "dcm", path.toStdString() + ": DICOM is not in this build (LARMOR_IO=OFF)");
    CArray img = nifti ? io::readNiftiImage(path.toStdString()) : io::readCfl(path.toStdString());
#endif
    const Shape& s = img.shape();
    require(img.size() > 0 && s[0] > 0 && s[1] > 0, path.toStdString() + ": an empty image");
    img.reshape(Shape{s[0], s[1], img.size() / (s[0] * s[1]), 1, 1});
    model_.addReferenceImage(QFileInfo(path).fileName().toStdString(), std::make_shared<const CArray>(std::move(img)));
    log(tr("reference image %1").arg(path));
    showTab("compare");
    return true;
  } catch (const std::exception& e) {
    showError(QString::fromUtf8(e.what()));
    return false;
  }
}

void MainWindow::exportViewPngDialog() {
  const QString f = QFileDialog::getSaveFileName(this, tr("Save the view as PNG"), suggestedOutput(".png"), tr("PNG (*.png)"));
  if (!f.isEmpty()) exportViewPng(f);
}

void MainWindow::exportCflDialog() {
  const QString f = QFileDialog::getSaveFileName(this, tr("Save the image as BART .cfl"), suggestedOutput(".cfl"),
                                                 tr("BART (*.cfl)"));
  if (!f.isEmpty()) exportCflFile(f);
}

void MainWindow::exportDicomDialog() {
  QDialog dlg(this);
  dlg.setWindowTitle(tr("Export DICOM series"));
  auto* form = new QFormLayout(&dlg);
  auto* dir = new QLineEdit(suggestedOutput("-dicom"));
  auto* browse = new QPushButton(tr("Choose…"));
  connect(browse, &QPushButton::clicked, &dlg, [&] {
    const QString d = QFileDialog::getExistingDirectory(&dlg, tr("Series directory"), dir->text());
    if (!d.isEmpty()) dir->setText(d);
  });
  auto* row = new QHBoxLayout;
  row->addWidget(dir, 1);
  row->addWidget(browse);
  form->addRow(tr("Directory"), row);
  const model::RunRecord* run = model_.shownRun();
  (void)run;
  auto* desc = new QLineEdit(defaultSeriesDescription());
  desc->setMaxLength(64);
  desc->setToolTip(tr("DICOM SeriesDescription: plain ASCII, up to 64 characters (λ is written as lambda)"));
  form->addRow(tr("Series description"), desc);
  auto* anon = new QCheckBox(tr("remove names, IDs and dates"));
  form->addRow(tr("Anonymize"), anon);
  auto* comp = new QComboBox;
  for (const char* c : {"magnitude", "phase", "real", "imaginary"}) comp->addItem(QString::fromLatin1(c));
  form->addRow(tr("Component"), comp);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  connect(buttons, &QDialogButtonBox::accepted, &dlg, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
  form->addRow(buttons);
  if (dlg.exec() != QDialog::Accepted) return;
  DicomExportOptions o;
  o.seriesDescription = desc->text();
  o.anonymize = anon->isChecked();
  o.component = quality::componentFromString(comp->currentText().toStdString());
  exportDicomSeries(dir->text(), o);
}

void MainWindow::exportNiftiDialog() {
  const QString f = QFileDialog::getSaveFileName(this, tr("Save the image as NIfTI"), suggestedOutput(".nii"),
                                                 tr("NIfTI (*.nii)"));
  if (!f.isEmpty()) exportNiftiFile(f);
}

void MainWindow::copyCliCommand() {
  syncSession();
  const QString cmd = cliCommandText();
  QApplication::clipboard()->setText(cmd);
  statusBar()->showMessage(tr("Copied: %1").arg(cmd), 8000);
  log(tr("larmor-cli command: %1").arg(cmd));
}

void MainWindow::saveSessionSidecar() {
  syncSession();
  if (!model_.source().isFile()) {
    saveLastSession(session());  // asked for explicitly, so also in a scripted session
    statusBar()->showMessage(tr("Session saved (a phantom has no file to keep it next to)"), 5000);
    return;
  }
  const QString dataPath = QString::fromStdString(model_.source().path);
  QString error;
  if (saveSidecar(dataPath, session(), &error)) {
    statusBar()->showMessage(tr("Session saved: %1").arg(sidecarPath(dataPath)), 5000);
    log(tr("session saved: %1").arg(sidecarPath(dataPath)));
  } else {
    showError(tr("%1: %2").arg(sidecarPath(dataPath), error));
  }
}

}  // namespace larmor::ui
