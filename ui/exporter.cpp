#include "exporter.hpp"

#include <QDir>
#include <QFileInfo>

#include "larmor/io/cfl.hpp"
#include "larmor/io/output_safety.hpp"
#include "larmor/util/atomic_file.hpp"
#include "larmor/util/error.hpp"
#include "larmor/io/export.hpp"

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

namespace {

std::vector<std::string> toStrings(const QStringList& l) {
  std::vector<std::string> v;
  for (const auto& s : l) v.push_back(s.toStdString());
  return v;
}

// The engine's up-front rules (the same as larmor-cli's), for one image output.
void checkImageOutput(const std::string& path, const Shape& shape, const std::vector<std::string>& inputs,
                      const io::ExportOptions& options = {}) {
  io::PlannedOutput o;
  o.path = path;
  o.role = io::OutputRole::Image;
  o.image = shape;
  o.options = options;
  io::checkOutputs({o}, inputs);
}

// The dataset's file, when it came from one ("simulated" names no file).
std::vector<std::string> inputsOf(const Dataset& d) {
  if (d.source.empty() || d.source == "simulated") return {};
  return {d.source};
}

}  // namespace

void exportCfl(const QString& path, const CArray& image, const QStringList& inputs) {
  require(!image.empty(), path.toStdString() + ": no image to export");
  checkImageOutput(path.toStdString(), image.shape(), toStrings(inputs));
  io::writeCfl(path.toStdString(), toBartLayout(image));
}

void exportPng(const QString& path, const QImage& image, const QStringList& inputs) {
  require(!image.isNull(), path.toStdString() + ": no picture to save");
  const std::string p = path.toStdString();
  checkImageOutput(p, Shape{image.width(), image.height(), 1, 1, 1}, toStrings(inputs));
  AtomicFile file(p);
  QImage marked = image;  // tEXt "Software" = "Larmor VERSION": a later export may replace it (output_safety.hpp)
  marked.setText(QStringLiteral("Software"), QString::fromStdString(io::softwareText()));
  require(marked.save(QString::fromStdString(file.tempPath()), "PNG"), p + ": could not write the PNG file");
  file.commit();
}

// DICOM needs the engine's file-format libraries (LARMOR_IO, DCMTK); NIfTI is always written.
#ifdef LARMOR_HAVE_IO
bool dicomExportAvailable() { return true; }
#else
bool dicomExportAvailable() { return false; }
#endif
bool niftiExportAvailable() { return true; }

namespace {

io::ExportOptions engineOptions(const DicomExportOptions& o) {
  io::ExportOptions opt;
  opt.seriesDescription = asciiText(o.seriesDescription).toStdString();
  opt.anonymize = o.anonymize;
  opt.patientName = o.patientName.trimmed().toStdString();
  opt.patientId = o.patientId.trimmed().toStdString();
  opt.accessionNumber = o.accessionNumber.trimmed().toStdString();
  opt.studyDescription = o.studyDescription.trimmed().toStdString();
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

QString asciiText(const QString& text) {
  static const std::pair<QChar, const char*> spelled[] = {
      {QChar(0x03BB), "lambda"}, {QChar(0x03C1), "rho"},   {QChar(0x0394), "Delta"}, {QChar(0x03B4), "delta"},
      {QChar(0x03C3), "sigma"},  {QChar(0x03C7), "chi"},   {QChar(0x03B7), "eta"},   {QChar(0x03BA), "kappa"},
      {QChar(0x03C0), "pi"},     {QChar(0x2014), "-"},     {QChar(0x2013), "-"},     {QChar(0x00D7), "x"},
      {QChar(0x00B7), "."},      {QChar(0x00B2), "2"},     {QChar(0x2026), "..."},   {QChar(0x00B5), "u"}};
  QString out;
  for (const QChar c : text) {
    if (c.unicode() < 0x80) {
      out += c;
      continue;
    }
    for (const auto& [from, to] : spelled)
      if (c == from) {
        out += QString::fromLatin1(to);
        break;
      }
  }
  return out.simplified();
}

int dicomInstanceCount(const QStringList& files) {
  int n = 0;
  for (const QString& f : files) n += f.endsWith(QStringLiteral(".dcm"), Qt::CaseInsensitive) ? 1 : 0;
  return n;
}

namespace {

// One frame through writeImageOutput, several through writeSeriesOutput (the CLI's paths).
io::ExportReport writeImages(const std::string& path, const ExportImages& images, const io::ExportOptions& opt,
                             const Progress& progress) {
  require(!images.results.empty() && images.results.front(), path + ": no image to export");
  const Dataset& first = images.series ? images.series->frames.front() : *images.dataset;
  checkImageOutput(path, images.results.front()->image.shape(), inputsOf(first), opt);
  if (images.results.size() == 1 || !images.series)
    return io::writeImageOutput(path, *images.results.front(), images.dataset ? *images.dataset : first, opt, progress);
  std::vector<recon::ReconResult> results;
  for (const auto& r : images.results) results.push_back(*r);
  return io::writeSeriesOutput(path, results, *images.series, opt, progress);
}

}  // namespace

QStringList exportDicom(const QString& directory, const ExportImages& images, const DicomExportOptions& options,
                        const Progress& progress) {
  std::string dir = QDir(directory).absolutePath().toStdString();
  if (dir.back() != '/') dir += '/';  // a trailing slash means "DICOM series" to writeImageOutput, as to the CLI
  io::ExportOptions opt = engineOptions(options);
  opt.studyInstanceUid = images.studyUid;
  opt.seriesNumber = images.seriesNumber;
  return files(writeImages(dir, images, opt, progress));
}

QStringList exportNifti(const QString& path, const ExportImages& images, const DicomExportOptions& options,
                        const Progress& progress) {
  io::ExportOptions opt = engineOptions(options);
  opt.niftiComplex = options.component != quality::Component::Magnitude;
  QStringList written = files(writeImages(path.toStdString(), images, opt, progress));
  progress.report(1.0, "written " + path.toStdString());
  return written;
}

QStringList exportDicom(const QString& directory, const recon::ReconResult& result, const Dataset& dataset,
                        const DicomExportOptions& options, const Progress& progress) {
  ExportImages images;
  images.results = {std::shared_ptr<const recon::ReconResult>(&result, [](const recon::ReconResult*) {})};
  images.dataset = &dataset;
  return exportDicom(directory, images, options, progress);
}

}  // namespace larmor::ui
