#include "exporter.hpp"

#include <QDir>
#include <QFileInfo>

#include "larmor/io/cfl.hpp"
#include "larmor/util/error.hpp"
// The engine's image writer (DICOM, NIfTI) arrived with the DICOM issue; builds of the engine without
// it still give a GUI that exports PNG and .cfl.
#if __has_include("larmor/io/export.hpp")
#include "larmor/io/export.hpp"
#define LARMOR_UI_HAVE_EXPORT 1
#else
#define LARMOR_UI_HAVE_EXPORT 0
#endif

namespace larmor::ui {

CArray toBartLayout(const CArray& image) {
  CArray out = image;
  const Shape& s = image.shape();
  if (s[4] > 1) {
    std::vector<index_t> dims(14, 1);
    for (std::size_t i = 0; i < 4; ++i) dims[i] = s[i];
    dims[13] = s[4];
    out.reshape(Shape(dims));
  } else {
    out.reshape(s[3] > 1 ? Shape{s[0], s[1], s[2], s[3]} : Shape{s[0], s[1], s[2]});
  }
  return out;
}

void exportCfl(const QString& path, const CArray& image) {
  require(!image.empty(), path.toStdString() + ": no image to export");
  io::writeCfl(path.toStdString(), toBartLayout(image));
}

void exportPng(const QString& path, const QImage& image) {
  require(!image.isNull(), path.toStdString() + ": no picture to save");
  require(image.save(path, "PNG"), path.toStdString() + ": could not write the PNG file");
}

bool dicomExportAvailable() { return LARMOR_UI_HAVE_EXPORT != 0; }
bool niftiExportAvailable() { return LARMOR_UI_HAVE_EXPORT != 0; }

#if LARMOR_UI_HAVE_EXPORT
namespace {

io::ExportOptions engineOptions(const DicomExportOptions& o) {
  io::ExportOptions opt;
  opt.seriesDescription = o.seriesDescription.toStdString();
  opt.anonymize = o.anonymize;
  opt.components = {quality::toString(o.component)};
  // The window only means something for magnitude (it is stored for the magnitude series).
  if (o.component == quality::Component::Magnitude && o.windowHigh > o.windowLow) {
    opt.windowCenter = static_cast<float>(0.5 * (o.windowLow + o.windowHigh));
    opt.windowWidth = static_cast<float>(o.windowHigh - o.windowLow);
  }
  opt.printWarnings = false;  // the GUI shows them in its log
  return opt;
}

QStringList files(const io::ExportReport& r) {
  QStringList l;
  for (const auto& f : r.files) l << QString::fromStdString(f);
  for (const auto& w : r.warnings) l << QStringLiteral("warning: ") + QString::fromStdString(w);
  return l;
}

}  // namespace
#endif

QStringList exportDicom(const QString& directory, const recon::ReconResult& result, const Dataset& dataset,
                        const DicomExportOptions& options) {
#if LARMOR_UI_HAVE_EXPORT
  std::string dir = QDir(directory).absolutePath().toStdString();
  if (dir.back() != '/') dir += '/';  // a trailing slash means "DICOM series" to writeImageOutput, as to the CLI
  return files(io::writeImageOutput(dir, result, dataset, engineOptions(options)));
#else
  (void)result, (void)dataset, (void)options;
  throw Error(directory.toStdString() + ": DICOM export is not in this build (the engine has no DICOM writer)");
#endif
}

QStringList exportNifti(const QString& path, const recon::ReconResult& result, const Dataset& dataset,
                        const DicomExportOptions& options) {
#if LARMOR_UI_HAVE_EXPORT
  io::ExportOptions opt = engineOptions(options);
  opt.niftiComplex = options.component != quality::Component::Magnitude;
  return files(io::writeImageOutput(path.toStdString(), result, dataset, opt));
#else
  (void)result, (void)dataset, (void)options;
  throw Error(path.toStdString() + ": NIfTI export is not in this build (the engine has no NIfTI writer)");
#endif
}

}  // namespace larmor::ui
