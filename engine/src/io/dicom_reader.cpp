// Reading DICOM files back with DCMTK: what the export tests and `info` use to see what a viewer sees.
// While a file is read, DCMTK's dcmdata messages ("E: DcmElement: ... larger than remaining bytes") are
// captured rather than printed, and the first error joins the one-line Error of a file that cannot be read.
#include <dcmtk/config/osconfig.h>  // must come first: DCMTK's build configuration
#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcfilefo.h>
#include <dcmtk/dcmdata/dcitem.h>
#include <dcmtk/dcmdata/dcelem.h>
#include <dcmtk/oflog/oflog.h>
#include <dcmtk/oflog/spi/logevent.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>

#include "larmor/io/dicom.hpp"
#include "larmor/recon/resources.hpp"

namespace larmor::io {

namespace {

// dcmdata's messages on this thread while readDicomFile runs; elsewhere (the writer) they go to stderr as before.
struct Capture {
  std::string firstError;
};
thread_local Capture* tlsCapture = nullptr;

class CaptureAppender : public dcmtk::log4cplus::Appender {
 public:
  ~CaptureAppender() override { destructorImpl(); }
  void close() override {}

 protected:
  void append(const dcmtk::log4cplus::spi::InternalLoggingEvent& e) override {
    const bool error = e.getLogLevel() >= dcmtk::log4cplus::ERROR_LOG_LEVEL;
    if (!tlsCapture) {
      std::cerr << (error ? "E: " : "W: ") << e.getMessage().c_str() << '\n';
      return;
    }
    if (!error || !tlsCapture->firstError.empty()) return;
    for (char c : std::string(e.getMessage().c_str())) tlsCapture->firstError += (c == '\n' || c == '\r') ? ' ' : c;
    if (tlsCapture->firstError.size() > 200) tlsCapture->firstError = tlsCapture->firstError.substr(0, 200) + "...";
  }
};

struct CaptureScope {
  Capture capture;
  CaptureScope() {
    static std::once_flag once;
    std::call_once(once, [] {
      OFLogger l = OFLog::getLogger("dcmtk.dcmdata");
      l.setAdditivity(false);  // not to the root logger's console appender
      l.removeAllAppenders();
      l.addAppender(dcmtk::log4cplus::SharedAppenderPtr(new CaptureAppender));
    });
    tlsCapture = &capture;
  }
  ~CaptureScope() { tlsCapture = nullptr; }
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;
};

}  // namespace

std::string DicomInstance::get(std::uint16_t group, std::uint16_t element) const {
  const auto it = values.find((static_cast<std::uint32_t>(group) << 16) | element);
  return it == values.end() ? std::string() : it->second;
}

double DicomInstance::value(index_t i) const {
  const std::string slope = get(0x0028, 0x1053), intercept = get(0x0028, 0x1052);
  const double m = slope.empty() ? 1.0 : std::strtod(slope.c_str(), nullptr);
  const double b = intercept.empty() ? 0.0 : std::strtod(intercept.c_str(), nullptr);
  const std::uint16_t w = pixels.at(static_cast<std::size_t>(i));
  double stored = w;
  if (signedPixels) {
    std::int16_t s;
    std::memcpy(&s, &w, sizeof s);
    stored = s;
  }
  return stored * m + b;
}

DicomInstance readDicomFile(const std::string& path) {
  DcmFileFormat file;
  CaptureScope scope;
  const OFCondition c = file.loadFile(path.c_str());
  const std::string& detail = scope.capture.firstError;
  if (c.bad()) throw Error(path + ": cannot read as DICOM (" + std::string(c.text()) + (detail.empty() ? "" : ": " + detail) + ")");
  DcmDataset& ds = *file.getDataset();
  DicomInstance out;
  for (unsigned long i = 0; i < ds.card(); ++i) {
    DcmElement* e = ds.getElement(i);
    if (!e) continue;
    const DcmTagKey key = e->getTag().getXTag();
    if (key == DCM_PixelData) continue;
    OFString text;
    if (e->isLeaf()) e->getOFStringArray(text);
    out.values[(static_cast<std::uint32_t>(key.getGroup()) << 16) | key.getElement()] = text.c_str();
  }
  Uint16 rows = 0, columns = 0, representation = 0;
  ds.findAndGetUint16(DCM_Rows, rows);
  ds.findAndGetUint16(DCM_Columns, columns);
  ds.findAndGetUint16(DCM_PixelRepresentation, representation);
  out.rows = rows, out.columns = columns, out.signedPixels = representation == 1;
  const Uint16* px = nullptr;
  unsigned long count = 0;
  if (ds.findAndGetUint16Array(DCM_PixelData, px, &count).good() && px) out.pixels.assign(px, px + count);
  // The private block: find the element reserved by creator "LARMOR" rather than assuming 0x10.
  for (Uint16 block = 0x10; block <= 0xff; ++block) {
    const char* creator = nullptr;
    if (ds.findAndGetString(DcmTagKey(kLarmorPrivateGroup, block), creator).bad() || !creator) continue;
    if (std::string(creator) != kLarmorPrivateCreator) continue;
    const Uint16 element = static_cast<Uint16>((block << 8) | (kLarmorProvenanceElement & 0xff));
    OFString json;
    if (ds.findAndGetOFStringArray(DcmTagKey(kLarmorPrivateGroup, element), json).good()) out.provenanceJson = json.c_str();
    break;
  }
  return out;
}

namespace {

std::vector<double> numbers(const std::string& text) {
  std::vector<double> v;
  const char* p = text.c_str();
  while (*p) {
    char* end = nullptr;
    const double x = std::strtod(p, &end);
    if (end == p) return {};  // not a list of numbers: as if absent
    v.push_back(x);
    p = end;
    while (*p == '\\' || *p == ' ') ++p;
  }
  return v;
}

/// The geometry and frame tags of one image (DicomImageKey).
DicomImageKey keyOf(const DicomInstance& d, const std::string& file) {
  DicomImageKey k;
  k.file = file;
  k.rows = d.rows, k.columns = d.columns;
  k.position = numbers(d.get(0x0020, 0x0032));
  k.orientation = numbers(d.get(0x0020, 0x0037));
  k.spacing = numbers(d.get(0x0028, 0x0030));
  k.echo = d.get(0x0018, 0x0086);
  k.temporalPosition = d.get(0x0020, 0x0100);
  const std::vector<double> trigger = numbers(d.get(0x0018, 0x1060));
  k.triggerTimeMs = trigger.empty() ? -1.0 : trigger.front();
  if (k.position.size() != 3) k.position.clear();
  if (k.orientation.size() != 6) k.orientation.clear();
  if (k.spacing.size() != 2) k.spacing.clear();
  return k;
}

}  // namespace

DicomSeries readDicomSeries(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool isDir = fs::is_directory(path, ec);
  const fs::path folder = isDir ? fs::path(path) : fs::path(path).parent_path();
  std::string series;  // the chosen file's SeriesInstanceUID (0020,000E); a folder: the first file's
  if (!isDir) series = readDicomFile(path).get(0x0020, 0x000E);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(folder.empty() ? fs::path(".") : folder, ec))
    if (e.is_regular_file() && e.path().extension() == ".dcm") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  struct Slice {
    long number;  // InstanceNumber (0020,0013)
    DicomInstance d;
    std::string file;  // for the messages
  };
  std::vector<Slice> slices;
  for (const auto& f : files) {
    DicomInstance d = readDicomFile(f.string());
    if (series.empty()) series = d.get(0x0020, 0x000E);
    if (d.get(0x0020, 0x000E) != series || d.rows <= 0 || d.columns <= 0) continue;
    // Rows x Columns must be what PixelData holds (16-bit words): a lie read past the pixels.
    const std::size_t want = static_cast<std::size_t>(d.rows) * static_cast<std::size_t>(d.columns);
    require(!d.pixels.empty(), f.string() + ": has no 16-bit pixel data (PixelData missing, empty or of 8 bits) for its " +
                                   std::to_string(d.columns) + "x" + std::to_string(d.rows) + " image");
    require(d.pixels.size() >= want, f.string() + ": Rows x Columns " + std::to_string(d.rows) + " x " +
                                         std::to_string(d.columns) + " need " + std::to_string(want) +
                                         " pixels but PixelData holds " + std::to_string(d.pixels.size()));
    const long number = std::strtol(d.get(0x0020, 0x0013).c_str(), nullptr, 10);
    slices.push_back(Slice{number, std::move(d), f.string()});
  }
  require(!slices.empty(), path + ": no DICOM image of the series in " + folder.string());
  std::stable_sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) { return a.number < b.number; });
  const index_t nx = slices.front().d.columns, ny = slices.front().d.rows;
  recon::requireHostMemory(8.0 * static_cast<double>(nx) * static_cast<double>(ny) * static_cast<double>(slices.size()),
                           path, "the reference image of " + std::to_string(slices.size()) + " DICOM images");
  DicomSeries out;
  out.image = CArray(Shape{nx, ny, static_cast<index_t>(slices.size())});
  for (std::size_t z = 0; z < slices.size(); ++z) {
    const DicomInstance& d = slices[z].d;
    require(d.columns == nx && d.rows == ny, slices[z].file + ": its image is " + std::to_string(d.columns) + "x" +
                                                 std::to_string(d.rows) + ", the series' first " + std::to_string(nx) +
                                                 "x" + std::to_string(ny) + " (the series' images differ in size)");
    for (index_t i = 0; i < nx * ny; ++i)
      out.image[static_cast<index_t>(z) * nx * ny + i] = cfloat(static_cast<float>(d.value(i)), 0.f);
    out.images.push_back(keyOf(d, slices[z].file));
  }
  return out;
}

CArray readDicomSeriesImage(const std::string& path) { return readDicomSeries(path).image; }

}  // namespace larmor::io
