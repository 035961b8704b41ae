// DICOM MR Image Storage export with DCMTK. docs/dicom.md lists every attribute and why it holds what
// it holds; this file follows that page module by module (PS3.3 A.4: the MR Image IOD).
#include <dcmtk/config/osconfig.h>  // must come first: DCMTK's build configuration
#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcdict.h>
#include <dcmtk/dcmdata/dcfilefo.h>
#include <dcmtk/dcmdata/dcitem.h>
#include <dcmtk/dcmdata/dcuid.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <limits>
#include <numbers>
#include <random>

#include "larmor/io/dicom.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/util/provenance.hpp"

namespace fs = std::filesystem;

namespace larmor::io {

namespace {

// ---- value formatting within the VRs' limits (PS3.5 6.2) ----

// DS: at most 16 characters. The shortest %g form that fits, never "-0".
std::string decimal(double v) {
  if (!std::isfinite(v)) v = 0;
  if (std::abs(v) < 1e-12) return "0";
  char buf[64];
  for (int p = 12; p >= 1; --p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, v);
    if (std::strlen(buf) <= 16) break;
  }
  return buf;
}

// A DS that parses back to a value >= v (v > 0): a scale factor that must not shrink, or the largest
// stored value would overflow 16 bits.
std::string dsAtLeast(double v) {
  char buf[64];
  for (int p = 10; p >= 4; --p) {
    const double bumped = v * (1 + 2 * std::pow(10.0, 1 - p));
    std::snprintf(buf, sizeof buf, "%.*g", p, bumped);
    if (std::strlen(buf) <= 16 && std::strtod(buf, nullptr) >= v) return buf;
  }
  throw Error("cannot express the scale factor " + std::to_string(v) + " as a DICOM decimal string");
}

std::string dsList(std::initializer_list<double> values) {
  std::string s;
  for (double v : values) {
    if (!s.empty()) s += '\\';
    s += decimal(v);
  }
  return s;
}

// Text from the data (names, descriptions) made fit for a string VR: valid UTF-8 (invalid bytes become
// '?'), no control characters, no backslash (the value delimiter), at most maxBytes bytes cut at a
// character boundary. Sets nonAscii when the result needs SpecificCharacterSet ISO_IR 192.
std::string cleanText(const std::string& in, std::size_t maxBytes, bool& nonAscii, bool allowNewlines = false) {
  std::string out;
  for (std::size_t i = 0; i < in.size();) {
    const auto c = static_cast<unsigned char>(in[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool valid = len > 0 && i + len <= in.size();
    for (std::size_t k = 1; valid && k < len; ++k) valid = (static_cast<unsigned char>(in[i + k]) & 0xc0) == 0x80;
    std::string ch;
    if (!valid) {
      ch = "?", len = 1;
    } else if (len == 1) {
      if (c == '\\') ch = "/";
      else if (c == '\n' && allowNewlines) ch = "\r\n";
      else if (c < 0x20 || c == 0x7f) ch = " ";
      else ch = std::string(1, static_cast<char>(c));
    } else {
      ch = in.substr(i, len);
      nonAscii = true;
    }
    if (out.size() + ch.size() > maxBytes) break;
    out += ch;
    i += len;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();  // trailing spaces are padding in DICOM
  return out;
}

std::string dateNow(const std::tm& t) {
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y%m%d", &t);
  return buf;
}
std::string timeNow(const std::tm& t) {
  char buf[16];
  std::strftime(buf, sizeof buf, "%H%M%S", &t);
  return buf;
}

// ---- scaling of float pixels to 16-bit stored values ----

struct Scaling {
  bool isSigned = false;
  std::string slope, intercept = "0";
  double slopeValue = 1;
};

// One slope for the whole series, so that stored values compare across slices: magnitude unsigned
// [0, 65535], phase/real/imaginary signed [-32767, 32767] (symmetric, so 0 maps to 0).
Scaling scalingFor(const RArray& v, ImageComponent c) {
  Scaling s;
  s.isSigned = c != ImageComponent::Magnitude;
  double maxAbs = 0;
  for (index_t i = 0; i < v.size(); ++i)
    if (std::isfinite(v[i])) maxAbs = std::max(maxAbs, static_cast<double>(std::abs(v[i])));
  if (c == ImageComponent::Phase) maxAbs = std::numbers::pi;  // a fixed scale: radians read the same in every series
  const double limit = s.isSigned ? 32767.0 : 65535.0;
  s.slope = maxAbs > 0 ? dsAtLeast(maxAbs / limit) : "1";
  s.slopeValue = std::strtod(s.slope.c_str(), nullptr);
  return s;
}

// ---- the writer ----

struct SeriesContext {
  const recon::ReconResult* r = nullptr;
  const Dataset* d = nullptr;
  const ExportOptions* o = nullptr;
  const ImageGeometry* g = nullptr;
  std::string studyUid, frameOfReferenceUid, date, time, timezone;
  bool nonAscii = false;
  std::string patientName, patientId, accessionNumber, studyDescription, protocolName, derivation, provenanceJson;
  std::string methodName;
};

void put(DcmItem& ds, const DcmTagKey& tag, const std::string& value, const std::string& file) {
  const OFCondition c = ds.putAndInsertString(DcmTag(tag), value.c_str());
  if (c.bad()) throw Error(file + ": cannot set " + DcmTag(tag).getTagName() + " (" + c.text() + ")");
}

void putTag(DcmItem& ds, const DcmTag& tag, const std::string& value, const std::string& file) {
  const OFCondition c = ds.putAndInsertString(tag, value.c_str());
  if (c.bad()) throw Error(file + ": cannot set private element (" + std::string(c.text()) + ")");
}

std::string componentTerm(ImageComponent c) {
  switch (c) {
    case ImageComponent::Magnitude: return "MAGNITUDE";
    case ImageComponent::Phase: return "PHASE";
    case ImageComponent::Real: return "REAL";
    case ImageComponent::Imaginary: return "IMAGINARY";
  }
  return "MIXED";
}

int seriesNumber(const ExportOptions& o, ImageComponent c) {
  if (o.seriesNumber <= 0) return 1 + static_cast<int>(c);
  int rank = 0;  // the component's place among those exported
  for (const auto& name : o.components)
    if (componentFromString(name) == c) break;
    else ++rank;
  return o.seriesNumber + rank;
}

// Explicit VR Little Endian: every reader supports it and private elements keep their VR (UT).
void writeInstance(DcmFileFormat& file, const std::string& path) {
  const OFCondition c = file.saveFile(path.c_str(), EXS_LittleEndianExplicit, EET_ExplicitLength, EGL_recalcGL,
                                      EPD_withoutPadding, 0, 0, EWM_createNewMeta);
  if (c.bad()) throw Error(path + ": cannot write the DICOM file (" + std::string(c.text()) + ")");
}

/// What every instance of one component's series shares: the values, their scaling and window, the UID.
struct SeriesPlan {
  RArray values;  ///< the component, [x, y, planes x frames]
  Scaling sc;
  double center = 0, width = 0;  ///< the window, in image units
  std::string seriesUid, description;
  bool nonAscii = false;  ///< SpecificCharacterSet ISO_IR 192
};

SeriesPlan planSeries(const SeriesContext& ctx, ImageComponent comp) {
  const ExportOptions& o = *ctx.o;
  SeriesPlan sp;
  sp.values = extractComponent(ctx.r->image, comp);
  sp.sc = scalingFor(sp.values, comp);
  // Window in image units (applied after the rescale, PS3.3 C.11.2.1.2).
  double lo = 0, hi = 0;
  if (comp == ImageComponent::Magnitude && o.windowWidth > 0) {
    lo = static_cast<double>(o.windowCenter) - 0.5 * o.windowWidth;
    hi = static_cast<double>(o.windowCenter) + 0.5 * o.windowWidth;
  } else {
    automaticWindow(sp.values, comp, lo, hi);
  }
  sp.center = 0.5 * (lo + hi), sp.width = std::max(hi - lo, 1e-30);
  sp.seriesUid = newDicomUid();
  std::string description = o.seriesDescription.empty() ? "Larmor " + ctx.methodName : o.seriesDescription;
  if (comp != ImageComponent::Magnitude) description += " (" + toString(comp) + ")";
  if (o.anonymize) description = withoutPaths(description);  // the user's own text may name a file
  sp.nonAscii = ctx.nonAscii;
  sp.description = cleanText(description, 64, sp.nonAscii);
  return sp;
}

/// One instance (file) of a series as it is filled in.
struct Instance {
  DcmDataset& ds;
  std::string path;
  index_t number = 0;  ///< 0-based: plane + planes x frame
  index_t plane = 0, frame = 0;
  const FrameTags* ft = nullptr;  ///< the frame's tags (null for a single frame)
  void set(const DcmTagKey& tag, const std::string& v) { put(ds, tag, v, path); }
};

void putSopAndPatient(Instance& in, const SeriesContext& ctx, const SeriesPlan& sp) {
  const Header& h = ctx.d->header;
  const ExportOptions& o = *ctx.o;
  DcmDataset& ds = in.ds;
  const std::string& path = in.path;
  // SOP Common (C.12.1)
  if (sp.nonAscii) in.set(DCM_SpecificCharacterSet, "ISO_IR 192");
  in.set(DCM_SOPClassUID, kMrImageStorageUid);
  in.set(DCM_SOPInstanceUID, newDicomUid());
  if (!o.anonymize) {
    in.set(DCM_InstanceCreationDate, ctx.date);
    in.set(DCM_InstanceCreationTime, ctx.time);
    in.set(DCM_TimezoneOffsetFromUTC, ctx.timezone);
  }

  // Patient (C.7.1.1): from the header, else clearly marked placeholders; the de-identified export
  // writes dummies (PS3.15 E.1: "D" for type 1/2 identifiers, "Z" (empty) for birth date and sex).
  in.set(DCM_PatientName, ctx.patientName);
  in.set(DCM_PatientID, ctx.patientId);
  // Birth date and sex from the header when it has them (a PACS expects them), empty when anonymized.
  in.set(DCM_PatientBirthDate, o.anonymize ? "" : h.patientBirthDate);
  in.set(DCM_PatientSex, o.anonymize ? "" : h.patientSex);
  if (o.anonymize) {
    in.set(DCM_PatientIdentityRemoved, "YES");
    in.set(DCM_DeidentificationMethod, "Larmor basic: names and IDs replaced, dates and paths removed");
    DcmItem* code = nullptr;
    if (ds.findOrCreateSequenceItem(DCM_DeidentificationMethodCodeSequence, code, 0).bad() || !code)
      throw Error(path + ": cannot create DeidentificationMethodCodeSequence");
    put(*code, DCM_CodeValue, "113100", path);
    put(*code, DCM_CodingSchemeDesignator, "DCM", path);
    put(*code, DCM_CodeMeaning, "Basic Application Confidentiality Profile", path);
  }
}

void putStudyAndSeries(Instance& in, const SeriesContext& ctx, const SeriesPlan& sp, ImageComponent comp) {
  const Header& h = ctx.d->header;
  const ExportOptions& o = *ctx.o;
  // General Study (C.7.2.1): the header's study date and time when it has them, else the export's
  // (none when anonymized); the series are dated by the export.
  in.set(DCM_StudyInstanceUID, ctx.studyUid);
  const bool headerDate = !h.studyDate.empty();
  in.set(DCM_StudyDate, o.anonymize ? "" : headerDate ? h.studyDate : ctx.date);
  in.set(DCM_StudyTime, o.anonymize ? "" : headerDate ? h.studyTime : ctx.time);
  in.set(DCM_ReferringPhysicianName, "");
  in.set(DCM_StudyID, "LARMOR");  // type 2, but DICOMDIR builders need a value; not identifying
  in.set(DCM_AccessionNumber, o.anonymize ? "" : ctx.accessionNumber);
  if (!ctx.studyDescription.empty() && !o.anonymize) in.set(DCM_StudyDescription, ctx.studyDescription);

  // General Series (C.7.3.1)
  in.set(DCM_Modality, "MR");
  in.set(DCM_SeriesInstanceUID, sp.seriesUid);
  in.set(DCM_SeriesNumber, std::to_string(seriesNumber(o, comp)));
  in.set(DCM_SeriesDescription, sp.description);
  if (!o.anonymize) {
    in.set(DCM_SeriesDate, ctx.date);
    in.set(DCM_SeriesTime, ctx.time);
    if (!ctx.protocolName.empty()) in.set(DCM_ProtocolName, ctx.protocolName);
  }
  // Type 2C (paired body parts); the raw data do not say which body part, so present and empty.
  in.set(DCM_Laterality, "");
  // Type 2C for MR without a Patient Orientation Code Sequence; the header does not record it.
  in.set(DCM_PatientPosition, h.deviceDescription == "Larmor simulator" ? "HFS" : "");

  // Frame of Reference (C.7.4.1): one for every series of the export (they share the voxels).
  in.set(DCM_FrameOfReferenceUID, ctx.frameOfReferenceUid);
  in.set(DCM_PositionReferenceIndicator, "");

  // General Equipment (C.7.5.1): the equipment that made these images is Larmor.
  in.set(DCM_Manufacturer, "Larmor");
  in.set(DCM_ManufacturerModelName, "Larmor MRI reconstruction");
  in.set(DCM_SoftwareVersions, versionString());
}

void putMrImage(Instance& in, const SeriesContext& ctx, ImageComponent comp) {
  const Header& h = ctx.d->header;
  const ExportOptions& o = *ctx.o;
  const ImageGeometry& g = *ctx.g;
  const FrameTags* ft = in.ft;
  const std::string& path = in.path;
  // General Image (C.7.6.1) and MR Image (C.8.3.1)
  in.set(DCM_InstanceNumber, std::to_string(in.number + 1));
  if (!o.anonymize) {
    in.set(DCM_ContentDate, ctx.date);
    in.set(DCM_ContentTime, ctx.time);
  }
  in.set(DCM_ImageType, "DERIVED\\SECONDARY\\OTHER\\" + componentTerm(comp));
  in.set(DCM_DerivationDescription, ctx.derivation);
  in.set(DCM_ImageComments, "Larmor provenance (JSON): private creator LARMOR, element (0019,1000)");
  in.set(DCM_LossyImageCompression, "00");
  in.set(DCM_BurnedInAnnotation, "NO");
  in.set(DCM_ComplexImageComponent, componentTerm(comp));
  // A reconstruction knows nothing of the sequence: RM (research mode) and NONE are the honest values;
  // timing parameters are type 2 (present, empty) because the header does not carry them.
  in.set(DCM_ScanningSequence, "RM");
  in.set(DCM_SequenceVariant, "NONE");
  in.set(DCM_ScanOptions, "");
  in.set(DCM_MRAcquisitionType, h.is3D() || g.threeD ? "3D" : "2D");
  in.set(DCM_RepetitionTime, "");
  in.set(DCM_EchoTime, ft && std::isfinite(ft->echoTimeMs) ? decimal(ft->echoTimeMs) : "");
  if (ft) {
    // A series' frames (docs/dicom.md): what a viewer sorts time points and echoes by.
    in.set(DCM_EchoNumbers, std::to_string(ft->echoNumber));
    in.set(DCM_TemporalPositionIdentifier, std::to_string(ft->temporalPosition));
    in.set(DCM_NumberOfTemporalPositions, std::to_string(ft->temporalPositions));
    if (std::isfinite(ft->triggerTimeMs)) in.set(DCM_TriggerTime, decimal(ft->triggerTimeMs));
    in.set(DCM_AcquisitionNumber, std::to_string(in.frame + 1));
  }
  in.set(DCM_EchoTrainLength, "");
  in.set(DCM_ImagedNucleus, "1H");
  if (h.systemFieldT > 0) in.set(DCM_MagneticFieldStrength, decimal(h.systemFieldT));
  if (g.planeSpacing > 0) in.set(DCM_SpacingBetweenSlices, decimal(g.planeSpacing));
  // Readout along rows (x = column index), phase encoding down the columns.
  in.set(DCM_InPlanePhaseEncodingDirection, "COL");
  {
    const Uint16 acq[4] = {0, static_cast<Uint16>(std::min<index_t>(h.recon[0], 65535)),
                           static_cast<Uint16>(std::min<index_t>(h.encoded[1], 65535)), 0};
    if (in.ds.putAndInsertUint16Array(DCM_AcquisitionMatrix, acq, 4).bad())
      throw Error(path + ": cannot set AcquisitionMatrix");
  }
}

void putPlaneAndPixelModule(Instance& in, const SeriesContext& ctx, const SeriesPlan& sp, ImageComponent comp) {
  const ExportOptions& o = *ctx.o;
  const ImageGeometry& g = *ctx.g;
  const Vec3 n = g.normal();
  const Scaling& sc = sp.sc;
  const double center = sp.center, width = sp.width;
  // Image Plane (C.7.6.2): pixel (0,0)'s centre, row and column directions, (row, column) spacing.
  const Vec3& tl = g.topLeft[static_cast<std::size_t>(in.plane)];
  in.set(DCM_ImagePositionPatient, dsList({tl[0], tl[1], tl[2]}));
  in.set(DCM_ImageOrientationPatient,
         dsList({g.row[0], g.row[1], g.row[2], g.column[0], g.column[1], g.column[2]}));
  in.set(DCM_PixelSpacing, dsList({g.spacingY, g.spacingX}));
  in.set(DCM_SliceThickness, decimal(g.sliceThickness));
  in.set(DCM_SliceLocation, decimal(tl[0] * n[0] + tl[1] * n[1] + tl[2] * n[2]));

  // Image Pixel (C.7.6.3) with the rescale to image units and the VOI window.
  in.set(DCM_SamplesPerPixel, "1");
  in.set(DCM_PhotometricInterpretation, "MONOCHROME2");
  in.set(DCM_Rows, std::to_string(g.ny));
  in.set(DCM_Columns, std::to_string(g.nx));
  in.set(DCM_BitsAllocated, "16");
  in.set(DCM_BitsStored, "16");
  in.set(DCM_HighBit, "15");
  in.set(DCM_PixelRepresentation, sc.isSigned ? "1" : "0");
  in.set(DCM_RescaleIntercept, sc.intercept);
  in.set(DCM_RescaleSlope, sc.slope);
  in.set(DCM_WindowCenter, decimal(center));
  // decimal() writes tiny values as "0", an invalid width: the smallest DS >= the width instead.
  in.set(DCM_WindowWidth, width < 1e-6 ? dsAtLeast(width) : decimal(width));
  // LINEAR requires a width >= 1 (C.11.2.1.2.1); images in arbitrary units often span less than 1,
  // which LINEAR_EXACT (width > 0) expresses without rescaling the data.
  if (width < 1) in.set(DCM_VOILUTFunction, "LINEAR_EXACT");
  in.set(DCM_WindowCenterWidthExplanation,
         comp == ImageComponent::Magnitude && o.windowWidth > 0 ? "USER" : "AUTOMATIC");
}

// The pixel data: the values quantised by the rescale slope to 16 bits (signed for phase, real, imaginary).
void putPixels(Instance& in, const SeriesContext& ctx, const SeriesPlan& sp, std::vector<std::uint16_t>& pixels) {
  const index_t nx = ctx.g->nx, ny = ctx.g->ny, instance = in.number;
  const Scaling& sc = sp.sc;
  const std::string& path = in.path;
  const float* src = sp.values.data() + instance * nx * ny;
  const double limitLo = sc.isSigned ? -32767.0 : 0.0, limitHi = sc.isSigned ? 32767.0 : 65535.0;
  for (index_t i = 0; i < nx * ny; ++i) {
    const double v = std::isfinite(src[i]) ? static_cast<double>(src[i]) : 0.0;
    const double q = std::clamp(std::nearbyint(v / sc.slopeValue), limitLo, limitHi);
    if (sc.isSigned) {
      const auto s16 = static_cast<std::int16_t>(q);
      std::uint16_t bits;
      std::memcpy(&bits, &s16, sizeof bits);
      pixels[static_cast<std::size_t>(i)] = bits;
    } else {
      pixels[static_cast<std::size_t>(i)] = static_cast<std::uint16_t>(q);
    }
  }
  if (in.ds.putAndInsertUint16Array(DCM_PixelData, pixels.data(), static_cast<unsigned long>(pixels.size())).bad())
    throw Error(path + ": cannot set PixelData");
}

std::vector<std::string> writeSeries(const SeriesContext& ctx, ImageComponent comp, const std::string& dir,
                                     const Progress& progress, index_t& done, index_t total) {
  const ImageGeometry& g = *ctx.g;
  const ExportOptions& o = *ctx.o;
  const SeriesPlan sp = planSeries(ctx, comp);
  const index_t planes = g.planes();
  // A series (writeSeriesOutput): the frames one after another; instance i = plane + planes x frame.
  const index_t frames = std::max<index_t>(1, static_cast<index_t>(o.frames.size()));
  std::vector<std::string> written;
  std::vector<std::uint16_t> pixels(static_cast<std::size_t>(g.nx * g.ny));
  for (index_t instance = 0; instance < planes * frames; ++instance) {
    const index_t frame = instance / planes;
    const std::string name = dicomFileName(comp, instance + 1, planes * frames);
    DcmFileFormat file;
    Instance in{*file.getDataset(), (fs::path(dir) / name).string(), instance, instance % planes, frame,
                o.frames.empty() ? nullptr : &o.frames[static_cast<std::size_t>(frame)]};
    putSopAndPatient(in, ctx, sp);
    putStudyAndSeries(in, ctx, sp, comp);
    putMrImage(in, ctx, comp);
    putPlaneAndPixelModule(in, ctx, sp, comp);
    putPixels(in, ctx, sp, pixels);
    // Provenance: the full JSON in the private block (docs/dicom.md).
    putTag(in.ds, DcmTag(kLarmorPrivateGroup, kLarmorPrivateCreatorElement, EVR_LO), kLarmorPrivateCreator, in.path);
    putTag(in.ds, DcmTag(kLarmorPrivateGroup, kLarmorProvenanceElement, EVR_UT), ctx.provenanceJson, in.path);
    writeInstance(file, in.path);
    written.push_back(in.path);
    ++done;
    progress.report(static_cast<double>(done) / static_cast<double>(total), "writing DICOM");
  }
  return written;
}

std::string placeholderOr(const std::string& value, const std::string& placeholder) {
  return value.empty() ? placeholder : value;
}

}  // namespace

std::string dicomFileName(ImageComponent c, index_t number, index_t count) {
  const int width = std::max(4, static_cast<int>(std::to_string(count).size()));
  std::string n = std::to_string(number);
  if (static_cast<int>(n.size()) < width) n.insert(0, static_cast<std::size_t>(width) - n.size(), '0');
  return toString(c) + "_" + n + ".dcm";
}

std::string newDicomUid() {
  thread_local std::mt19937_64 rng{[] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }()};
  unsigned __int128 u = (static_cast<unsigned __int128>(rng()) << 64) | rng();
  // UUID version 4 (random) and variant 10 (RFC 4122), as ISO/IEC 9834-8 expects of a UUID.
  const unsigned __int128 one = 1;
  u &= ~(static_cast<unsigned __int128>(0xf) << 76);
  u |= static_cast<unsigned __int128>(0x4) << 76;
  u &= ~(static_cast<unsigned __int128>(0x3) << 62);
  u |= one << 63;
  std::string digits;
  while (u > 0) {
    digits.push_back(static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  std::reverse(digits.begin(), digits.end());
  return "2.25." + digits;
}

std::vector<std::string> writeDicomSeriesFiles(const std::string& dir, const recon::ReconResult& r, const Dataset& d,
                                               const ExportOptions& o, const ImageGeometry& g,
                                               const Progress& progress) {
  if (!dcmDataDict.isDictionaryLoaded())
    throw Error(dir + ": DCMTK's data dictionary is not loaded (check DCMDICTPATH)");
  const Header& h = d.header;
  SeriesContext ctx;
  ctx.r = &r, ctx.d = &d, ctx.o = &o, ctx.g = &g;
  ctx.studyUid = o.studyInstanceUid.empty() ? newDicomUid() : o.studyInstanceUid;
  ctx.frameOfReferenceUid = newDicomUid();
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  ctx.date = dateNow(utc), ctx.time = timeNow(utc), ctx.timezone = "+0000";

  const bool simulated = h.deviceDescription == "Larmor simulator" || d.source == "simulated";
  if (o.anonymize) {
    ctx.patientName = "ANONYMIZED^PATIENT";
    ctx.patientId = "ANONYMIZED";
  } else {
    // PN: 64 bytes per component group; LO: 64 bytes.
    // The user's fields first, then the header's, then clearly marked placeholders.
    const std::string& name = o.patientName.empty() ? h.patientName : o.patientName;
    const std::string& id = o.patientId.empty() ? h.patientId : o.patientId;
    ctx.patientName = cleanText(placeholderOr(name, simulated ? "LARMOR^PHANTOM" : "LARMOR^UNKNOWN"), 64, ctx.nonAscii);
    ctx.patientId = cleanText(placeholderOr(id, simulated ? "LARMOR-PHANTOM" : "LARMOR-UNKNOWN"), 64, ctx.nonAscii);
    ctx.accessionNumber = cleanText(o.accessionNumber, 16, ctx.nonAscii);  // SH: 16 characters
    ctx.studyDescription =
        cleanText(o.studyDescription.empty() ? h.studyDescription : o.studyDescription, 64, ctx.nonAscii);
    ctx.protocolName = cleanText(h.protocolName, 64, ctx.nonAscii);
  }

  nlohmann::json prov = r.provenance;
  if (o.anonymize) {
    // No dates, host, path or file name at any depth (the input, --ref, --coil-maps FILE, --q-cache DIR,
    // and the copies of them that the convergence report keeps): util/provenance.hpp.
    prov = anonymizedProvenance(std::move(prov));
  } else if (prov.is_object()) {
    // A series leaves the site: the host name goes, the raw data's path shrinks to its file name.
    prov.erase("host");
    if (prov.contains("input") && prov["input"].is_string())
      prov["input"] = std::filesystem::path(prov["input"].get<std::string>()).filename().string();
  }
  // ensure_ascii: the JSON is plain ASCII whatever the input paths held, so UT needs no character set.
  ctx.provenanceJson = prov.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);

  const nlohmann::json settings = prov.contains("settings") ? prov["settings"] : nlohmann::json::object();
  ctx.methodName = settings.contains("method") && settings["method"].is_string()
                       ? settings["method"].get<std::string>() : std::string("reconstruction");
  std::string deriv = "Reconstructed by Larmor " + versionString() + " from MR raw data with method " +
                      ctx.methodName + " on " +
                      (prov.contains("device") && prov["device"].contains("id") && prov["device"]["id"].is_string()
                           ? prov["device"]["id"].get<std::string>() : std::string("?")) +
                      "; settings " + settings.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  bool ignore = false;
  ctx.derivation = cleanText(deriv, 1024, ignore);

  std::vector<ImageComponent> comps;
  for (const auto& name : o.components) {
    const ImageComponent c = componentFromString(name);
    if (std::find(comps.begin(), comps.end(), c) == comps.end()) comps.push_back(c);
  }
  require(!comps.empty(), dir + ": no image component to export");

  const index_t frames = std::max<index_t>(1, static_cast<index_t>(o.frames.size()));
  require(ctx.r->image.size() == g.nx * g.ny * g.planes() * frames, dir + ": the image does not hold the frames it should");
  const index_t total = g.planes() * frames * static_cast<index_t>(comps.size());
  index_t done = 0;
  std::vector<std::string> files;
  for (ImageComponent c : comps) {
    auto f = writeSeries(ctx, c, dir, progress, done, total);
    files.insert(files.end(), f.begin(), f.end());
  }
  return files;
}

}  // namespace larmor::io
