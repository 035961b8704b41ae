// MainWindow's dialogs and exports: open, new phantom, PNG/.cfl/DICOM/NIfTI, the CLI command, the
// session sidecar, screenshots.
#include <QApplication>
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
#include <QPushButton>
#include <QPlainTextEdit>
#include <QStatusBar>
#include <QTabWidget>

#include "exporter.hpp"
#include "larmor/util/error.hpp"
#include "image_viewer.hpp"
#include "main_window.hpp"
#include "phantom_dialog.hpp"
#include "settings_panel.hpp"

namespace larmor::ui {

void MainWindow::openDialog() {
  const QString dir = dataPath_.isEmpty() ? QDir::currentPath() : QFileInfo(dataPath_).absolutePath();
  const QString f = QFileDialog::getOpenFileName(
      this, tr("Open raw data"), dir,
      tr("Raw data (*.h5 *.mrd *.ismrmrd *.cfl *.hdr *.ra);;ISMRMRD (*.h5 *.mrd *.ismrmrd);;BART k-space (*.cfl *.hdr);;"
         "RawArray (*.ra);;All files (*)"));
  if (!f.isEmpty()) openFile(f);
}

void MainWindow::newPhantomDialog() {
  PhantomDialog dlg(this);
  dlg.setSettings(phantom_.value_or(phantom::SimulateSettings{}));
  if (dlg.exec() == QDialog::Accepted) newPhantom(dlg.settings());
}

bool MainWindow::saveScreenshot(const QString& path) {
  try {
    // grab() paints every child, and the VTK views render into their paint events, so the picture
    // holds the images and not black rectangles.
    exportPng(path, grab().toImage());
    log(tr("screenshot: %1").arg(path));
    return true;
  } catch (const std::exception& e) {
    showError(QString::fromStdString(e.what()));
    return false;
  }
}

bool MainWindow::exportViewPng(const QString& path) {
  try {
    require(viewer_->hasImage(), path.toStdString() + ": no image to export yet");
    QWidget* area = tabs_->currentWidget() == viewer_ ? viewer_->viewArea() : tabs_->currentWidget();
    exportPng(path, area->grab().toImage());
    log(tr("exported the view: %1").arg(path));
    return true;
  } catch (const std::exception& e) {
    showError(QString::fromStdString(e.what()));
    return false;
  }
}

bool MainWindow::exportCflFile(const QString& path) {
  try {
    require(result_ != nullptr, path.toStdString() + ": no reconstruction to export yet");
    exportCfl(path, result_->image);
    log(tr("exported %1 (BART .cfl/.hdr)").arg(path));
    return true;
  } catch (const std::exception& e) {
    showError(QString::fromStdString(e.what()));
    return false;
  }
}

bool MainWindow::exportDicomSeries(const QString& directory, const DicomExportOptions& options) {
  try {
    require(result_ != nullptr && dataset_ != nullptr, directory.toStdString() + ": no reconstruction to export yet");
    DicomExportOptions o = options;
    if (o.windowHigh <= o.windowLow && viewer_->component() == quality::Component::Magnitude) {
      o.windowLow = viewer_->windowLow();
      o.windowHigh = viewer_->windowHigh();
    }
    const QStringList files = exportDicom(directory, *result_, *dataset_, o);
    log(tr("exported a DICOM series into %1 (%2 files)").arg(directory).arg(files.size()));
    for (const QString& f : files)
      if (f.startsWith("warning")) log(f);
    return true;
  } catch (const std::exception& e) {
    showError(QString::fromStdString(e.what()));
    return false;
  }
}

bool MainWindow::exportNiftiFile(const QString& path, const DicomExportOptions& options) {
  try {
    require(result_ != nullptr && dataset_ != nullptr, path.toStdString() + ": no reconstruction to export yet");
    exportNifti(path, *result_, *dataset_, options);
    log(tr("exported %1 (NIfTI)").arg(path));
    return true;
  } catch (const std::exception& e) {
    showError(QString::fromStdString(e.what()));
    return false;
  }
}

namespace {

QString defaultOutputBase(const QString& dataPath, const QString& label) {
  QString base = dataPath.isEmpty() ? QStringLiteral("phantom") : QFileInfo(dataPath).completeBaseName();
  QString method = label.section(':', 1).trimmed().section(',', 0, 0).trimmed();
  if (!method.isEmpty()) base += '-' + method;
  return QDir(dataPath.isEmpty() ? QDir::currentPath() : QFileInfo(dataPath).absolutePath()).filePath(base);
}

}  // namespace

void MainWindow::exportViewPngDialog() {
  const QString f = QFileDialog::getSaveFileName(this, tr("Save the view as PNG"),
                                                 defaultOutputBase(dataPath_, resultLabel_) + ".png", tr("PNG (*.png)"));
  if (!f.isEmpty()) exportViewPng(f);
}

void MainWindow::exportCflDialog() {
  const QString f = QFileDialog::getSaveFileName(this, tr("Save the image as BART .cfl"),
                                                 defaultOutputBase(dataPath_, resultLabel_) + ".cfl", tr("BART (*.cfl)"));
  if (!f.isEmpty()) exportCflFile(f);
}

void MainWindow::exportDicomDialog() {
  QDialog dlg(this);
  dlg.setWindowTitle(tr("Export DICOM series"));
  auto* form = new QFormLayout(&dlg);
  auto* dir = new QLineEdit(defaultOutputBase(dataPath_, resultLabel_) + "-dicom");
  auto* browse = new QPushButton(tr("Choose…"));
  connect(browse, &QPushButton::clicked, &dlg, [&] {
    const QString d = QFileDialog::getExistingDirectory(&dlg, tr("Series directory"), dir->text());
    if (!d.isEmpty()) dir->setText(d);
  });
  auto* row = new QHBoxLayout;
  row->addWidget(dir, 1);
  row->addWidget(browse);
  form->addRow(tr("Directory"), row);
  auto* desc = new QLineEdit(resultLabel_.section(':', 1).trimmed());
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
  const QString f = QFileDialog::getSaveFileName(this, tr("Save the image as NIfTI"),
                                                 defaultOutputBase(dataPath_, resultLabel_) + ".nii", tr("NIfTI (*.nii)"));
  if (!f.isEmpty()) exportNiftiFile(f);
}

void MainWindow::copyCliCommand() {
  const QString cmd = cliCommandText();
  QApplication::clipboard()->setText(cmd);
  statusBar()->showMessage(tr("Copied: %1").arg(cmd), 8000);
  log(tr("larmor-cli command: %1").arg(cmd));
}

void MainWindow::saveSessionSidecar() {
  if (dataPath_.isEmpty()) {
    saveLastSession(session());  // asked for explicitly, so also in a scripted session
    statusBar()->showMessage(tr("Session saved (a phantom has no file to keep it next to)"), 5000);
    return;
  }
  QString error;
  if (saveSidecar(dataPath_, session(), &error)) {
    statusBar()->showMessage(tr("Session saved: %1").arg(sidecarPath(dataPath_)), 5000);
    log(tr("session saved: %1").arg(sidecarPath(dataPath_)));
  } else {
    showError(tr("%1: %2").arg(sidecarPath(dataPath_), error));
  }
}

}  // namespace larmor::ui
