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
#include <QMessageBox>
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
#include "pacs_dialog.hpp"
#include "phantom_dialog.hpp"
#include "reference_match.hpp"
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

ExportImages MainWindow::prepareExport(const QString& path, DicomExportOptions& o, bool dicom) {
  const std::string problem = model_.exportProblem();
  require(problem.empty(), path.toStdString() + ": " + problem);
  using Frames = DicomExportOptions::Frames;
  const model::WorkstationModel::SeriesExport se = model_.seriesExport(o.frames != Frames::Current);
  require(o.frames != Frames::All || se.missing.empty(),
          path.toStdString() + ": " + se.missing + " (show each frame once, or play the cine, to reconstruct it; or export the frame on screen)");
  if (!se.missing.empty()) log(tr("export: %1; the frame on screen alone is written").arg(QString::fromStdString(se.missing)));
  if (o.windowHigh <= o.windowLow && viewer_->component() == quality::Component::Magnitude) {
    o.windowLow = viewer_->windowLow();  // the window on screen (DICOM WindowCenter/Width, NIfTI cal_min/max)
    o.windowHigh = viewer_->windowHigh();
  }
  if (o.seriesDescription.isEmpty()) o.seriesDescription = asciiText(QString::fromStdString(se.description)).left(64);
  const model::StudyFields study = model_.study();
  const auto orStudy = [](QString& field, const std::string& kept) {
    if (field.trimmed().isEmpty()) field = QString::fromStdString(kept);
  };
  orStudy(o.patientName, study.patientName);
  orStudy(o.patientId, study.patientId);
  orStudy(o.accessionNumber, study.accessionNumber);
  orStudy(o.studyDescription, study.studyDescription);
  model::StudyFields kept = study;  // what this export writes is what the study's next one proposes
  kept.patientName = o.patientName.trimmed().toStdString(), kept.patientId = o.patientId.trimmed().toStdString();
  kept.accessionNumber = o.accessionNumber.trimmed().toStdString();
  kept.studyDescription = o.studyDescription.trimmed().toStdString();
  model_.setStudy(kept);
  ExportImages images;
  images.results = se.results;
  if (se.wholeSeries) images.series = model_.data().series.get();
  else images.dataset = model_.dataset().get();
  if (dicom) images.seriesNumber = model_.reserveSeries(1, images.studyUid);
  return images;
}

QString MainWindow::framesWritten(const ExportImages& images) const {
  if (images.results.size() > 1) return tr("%1 frames").arg(images.results.size());
  if (model_.frameCount() > 1) return QString::fromStdString(model::frameLabel(model_.frame(), model_.frameCount()));
  return {};
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
    DicomExportOptions o = options;
    const ExportImages images = prepareExport(directory, o, true);
    const QStringList files = exportDicom(directory, images, o, exportProgress());
    for (const QString& f : files)
      if (f.startsWith("warning")) log(f);
    const int n = dicomInstanceCount(files);
    const QString frames = framesWritten(images);
    const QString what = (n == 1 ? tr("Exported 1 DICOM image") : tr("Exported %1 DICOM images").arg(n)) +
                         (frames.isEmpty() ? QString() : tr(" of %1").arg(frames)) +
                         tr(" (series %1 \"%2\") into %3").arg(images.seriesNumber).arg(asciiText(o.seriesDescription), QDir(directory).absolutePath());
    lastNotice_ = what;
    statusBar()->showMessage(what, 15000);  // on screen, not only in the log
    return what;
  });
}

bool MainWindow::exportNiftiFile(const QString& path, const DicomExportOptions& options) {
  return exportWith("nifti", path, [&] {
    DicomExportOptions o = options;  // the magnitude carries the window on screen (cal_min / cal_max)
    const ExportImages images = prepareExport(path, o, false);
    exportNifti(path, images, o, exportProgress());
    const QString frames = framesWritten(images);
    const QString what = images.results.size() > 1 ? tr("Exported %1 (NIfTI, %2 as a 4th dimension)").arg(QFileInfo(path).absoluteFilePath(), frames)
                         : frames.isEmpty() ? tr("Exported %1 (NIfTI)").arg(QFileInfo(path).absoluteFilePath())
                                            : tr("Exported %1 (NIfTI, %2)").arg(QFileInfo(path).absoluteFilePath(), frames);
    lastNotice_ = what;
    statusBar()->showMessage(what, 15000);  // the path on screen, not only "written"
    return what;
  });
}

PacsDialog* MainWindow::sendToPacs(const DicomExportOptions& options) {
  DicomExportOptions o = options;
  return openSendToPacs(this, [this, o](const QString& dir) mutable {
    const ExportImages images = prepareExport(dir, o, true);
    QStringList files;
    for (const QString& f : exportDicom(dir, images, o, {}))
      if (!f.startsWith("warning")) files << f;
    const QString frames = framesWritten(images);
    return std::make_pair(files, tr("series %1 \"%2\"%3").arg(images.seriesNumber).arg(asciiText(o.seriesDescription),
                                                                   frames.isEmpty() ? QString() : tr(", %1").arg(frames)));
  });
}

namespace {
/// A reference file's images as the comparison keeps them: [columns, rows, planes, 1, 1].
std::shared_ptr<const CArray> referenceImage(CArray img, const QString& path) {
  const Shape& s = img.shape();
  require(img.size() > 0 && s[0] > 0 && s[1] > 0, path.toStdString() + ": an empty image");
  img.reshape(Shape{s[0], s[1], img.size() / (s[0] * s[1]), 1, 1});
  return std::make_shared<const CArray>(std::move(img));
}
}  // namespace

bool MainWindow::loadReferenceFile(const QString& path) {
  try {
    const QString suffix = QFileInfo(path).suffix().toLower();
    const bool nifti = suffix == "nii" || path.endsWith(".nii.gz", Qt::CaseInsensitive);
    require(suffix == "cfl" || suffix == "hdr" || suffix == "dcm" || nifti,
            path.toStdString() + ": a reference image must be a BART .cfl, a DICOM series (.dcm) or a NIfTI-1 .nii/.nii.gz");
    // A DICOM file stands for its series (every slice in its folder); magnitude, as stored; paired with the
    // shown reconstruction by geometry and frame as `larmor-cli compare` pairs two series (reference_match.hpp).
#ifdef LARMOR_HAVE_IO
    QString matched;  // how the series was paired with the reconstruction
    const auto dicom = [&] {
      if (!model_.exportProblem().empty()) {  // nothing reconstructed to pair it with
        matched = tr("in InstanceNumber order (no reconstruction to match it with by geometry)");
        return io::readDicomSeriesImage(path.toStdString());
      }
      MatchedReference m = pairWithShownFrame(path);
      matched = m.how;
      return std::move(m.image);
    };
    CArray img = nifti ? io::readNiftiImage(path.toStdString()) : suffix == "dcm" ? dicom() : io::readCfl(path.toStdString());
#else
    require(suffix != "dcm", path.toStdString() + ": DICOM is not in this build (LARMOR_IO=OFF)");
    CArray img = nifti ? io::readNiftiImage(path.toStdString()) : io::readCfl(path.toStdString());
#endif
    const auto image = referenceImage(std::move(img), path);
    const int id = model_.addReferenceImage(QFileInfo(path).fileName().toStdString(), image);
    framedReference_.reset();
#ifdef LARMOR_HAVE_IO
    if (suffix == "dcm" && model_.exportProblem().empty() && model_.frameCount() > 1)  // paired by frame: it follows
      framedReference_ = FramedReference{id, path, {{model_.frame(), image}}, model_.frame()};
#endif
    log(tr("reference image %1").arg(path));
#ifdef LARMOR_HAVE_IO
    if (!matched.isEmpty()) {  // on screen: a pairing by order is not one by geometry
      const QString how = tr("reference %1: %2").arg(QFileInfo(path).fileName(), matched);
      log(how);
      statusBar()->showMessage(how, 20000);
    }
#endif
    showTab("compare");
    return true;
  } catch (const std::exception& e) {
    showError(QString::fromUtf8(e.what()));
    return false;
  }
}

#ifdef LARMOR_HAVE_IO
MatchedReference MainWindow::pairWithShownFrame(const QString& path) const {
  const model::WorkstationModel::SeriesExport se = model_.seriesExport(true);
  ExportImages shown;
  shown.results = se.results;
  if (se.wholeSeries) shown.series = model_.data().series.get();
  else shown.dataset = model_.dataset().get();
  return matchReferenceSeries(path, shown, model_.frame());
}
#endif

void MainWindow::followReferenceFrame() {
#ifdef LARMOR_HAVE_IO
  if (!framedReference_) return;
  FramedReference& r = *framedReference_;
  const std::size_t f = model_.frame();
  if (f == r.shown) return;
  auto it = r.frames.find(f);
  if (it == r.frames.end()) {
    // Paired with this frame's reconstruction: wait until it is the one shown.
    const model::RunRecord* run = model_.shownRun();
    if (!run || run->number != model_.runForFrame(f, model_.session())) return;
    std::shared_ptr<const CArray> image;
    const QString name = QFileInfo(r.path).fileName();
    try {
      MatchedReference m = pairWithShownFrame(r.path);
      image = referenceImage(std::move(m.image), r.path);
      log(tr("reference %1, %2: %3").arg(name, QString::fromStdString(model_.data().frameName()), m.how));
    } catch (const std::exception& e) {
      const QString why = tr("reference %1 has no images of %2: %3").arg(name, QString::fromStdString(model_.data().frameName()), QString::fromUtf8(e.what()));
      log(why);
      statusBar()->showMessage(why, 20000);
    }
    it = r.frames.emplace(f, std::move(image)).first;
  }
  if (!it->second) return;  // this frame could not be paired (said when it was tried): the images stay
  r.shown = f;
  const int id = r.id;
  if (!model_.replaceReferenceImage(id, it->second)) framedReference_.reset();  // no longer kept by the model
#endif
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

bool MainWindow::askDicomOptions(const QString& title, DicomExportOptions& o, QString* directory) {
  QDialog dlg(this);
  dlg.setWindowTitle(title);
  auto* form = new QFormLayout(&dlg);
  QLineEdit* dir = nullptr;
  if (directory) {
    dir = new QLineEdit(*directory);
    auto* browse = new QPushButton(tr("Choose…"));
    connect(browse, &QPushButton::clicked, &dlg, [&] {
      const QString d = QFileDialog::getExistingDirectory(&dlg, tr("Series directory"), dir->text());
      if (!d.isEmpty()) dir->setText(d);
    });
    auto* row = new QHBoxLayout;
    row->addWidget(dir, 1);
    row->addWidget(browse);
    form->addRow(tr("Directory"), row);
  }
  // Frames: every frame of the series by default, when each has a run with these settings.
  auto* frames = new QComboBox;
  frames->setObjectName("exportFrames");
  const std::size_t n = model_.frameCount();
  const auto all = model_.seriesExport(true);
  if (n > 1) {
    frames->addItem(all.missing.empty() ? tr("All %1 frames").arg(n) : tr("All %1 frames (%2)").arg(n).arg(QString::fromStdString(all.missing)),
                    static_cast<int>(DicomExportOptions::Frames::All));
    frames->addItem(tr("This frame only (%1)").arg(QString::fromStdString(model::frameLabel(model_.frame(), n))),
                    static_cast<int>(DicomExportOptions::Frames::Current));
    if (!all.missing.empty()) frames->setCurrentIndex(1);
    form->addRow(tr("Frames"), frames);
  }
  auto* desc = new QLineEdit(asciiText(QString::fromStdString(all.description)).left(64));
  desc->setMaxLength(64);
  desc->setToolTip(tr("DICOM SeriesDescription: plain ASCII, up to 64 characters (λ is written as lambda)"));
  form->addRow(tr("Series description"), desc);
  // The study's fields, kept for this study: every series exported from it lands in the same study.
  const model::StudyFields study = model_.study();
  auto field = [&](const QString& label, const std::string& value, int maxLength, const char* name) {
    auto* e = new QLineEdit(QString::fromStdString(value));
    e->setObjectName(QString::fromLatin1(name));
    e->setMaxLength(maxLength);
    form->addRow(label, e);
    return e;
  };
  QLineEdit* patient = field(tr("Patient name"), study.patientName, 64, "patientName");
  patient->setPlaceholderText(tr("FAMILY^GIVEN (empty: LARMOR^UNKNOWN)"));
  QLineEdit* pid = field(tr("Patient ID"), study.patientId, 64, "patientId");
  QLineEdit* accession = field(tr("Accession number"), study.accessionNumber, 16, "accessionNumber");
  QLineEdit* studyDesc = field(tr("Study description"), study.studyDescription, 64, "studyDescription");
  auto* anon = new QCheckBox(tr("remove names, IDs and dates"));
  form->addRow(tr("Anonymize"), anon);
  auto* comp = new QComboBox;
  for (const char* c : {"magnitude", "phase", "real", "imaginary"}) comp->addItem(QString::fromLatin1(c));
  form->addRow(tr("Component"), comp);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  connect(buttons, &QDialogButtonBox::accepted, &dlg, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
  form->addRow(buttons);
  if (dlg.exec() != QDialog::Accepted) return false;
  if (dir) *directory = dir->text();
  if (n > 1) o.frames = static_cast<DicomExportOptions::Frames>(frames->currentData().toInt());
  o.seriesDescription = desc->text();
  model::StudyFields kept = study;  // kept for the study even when the export is then refused
  kept.patientName = patient->text().trimmed().toStdString();
  kept.patientId = pid->text().trimmed().toStdString();
  kept.accessionNumber = accession->text().trimmed().toStdString();
  kept.studyDescription = studyDesc->text().trimmed().toStdString();
  model_.setStudy(kept);
  o.patientName = patient->text(), o.patientId = pid->text();
  o.accessionNumber = accession->text(), o.studyDescription = studyDesc->text();
  o.anonymize = anon->isChecked();
  o.component = quality::componentFromString(comp->currentText().toStdString());
  return true;
}

void MainWindow::exportDicomDialog() {
  DicomExportOptions o;
  QString dir = suggestedOutput("-dicom");
  if (askDicomOptions(tr("Export DICOM series"), o, &dir)) exportDicomSeries(dir, o);
}

void MainWindow::sendToPacsDialog() {
  DicomExportOptions o;
  if (askDicomOptions(tr("Send to PACS: the series"), o, nullptr)) sendToPacs(o);
}

void MainWindow::exportNiftiDialog() {
  const QString f = QFileDialog::getSaveFileName(this, tr("Save the image as NIfTI"), suggestedOutput(".nii"),
                                                 tr("NIfTI (*.nii)"));
  if (f.isEmpty()) return;
  DicomExportOptions o;  // every frame as a 4th dimension when each has a run; the user may keep to one
  if (model_.frameCount() > 1 && model_.seriesExport(true).missing.empty()) {
    QMessageBox ask(QMessageBox::Question, tr("Export NIfTI"), tr("Write every frame of the series (a 4D NIfTI) or the frame on screen?"),
                    QMessageBox::NoButton, this);
    QPushButton* every = ask.addButton(tr("All %1 frames").arg(model_.frameCount()), QMessageBox::AcceptRole);
    ask.addButton(tr("This frame only"), QMessageBox::RejectRole);
    ask.setDefaultButton(every);
    ask.exec();
    o.frames = ask.clickedButton() == every ? DicomExportOptions::Frames::All : DicomExportOptions::Frames::Current;
  }
  exportNiftiFile(f, o);
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
