// The ISMRMRD XML header (ismrmrd_header.hpp). Format facts (ISMRMRD 1.x, ismrmrd.readthedocs.io):
// - /group/xml holds one string, variable-length as libismrmrd writes it (fixed-length is accepted too);
// - sizes come from the first <encoding>: encodedSpace is what was sampled (readout oversampled),
//   reconSpace what is shown; encodingLimits give the centre line of each phase-encoding direction (the
//   line that holds k = 0; absent, the middle) and the last slice index;
// - <trajectory> is an enumeration (cartesian, epi, radial, goldenangle, spiral, other); Larmor's own
//   finer name, when it wrote the file, is the user parameter kTrajectoryKindParameter.
#include "ismrmrd_header.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <filesystem>
#include <system_error>
#include <vector>

#include "larmor/io/ismrmrd.hpp"

namespace fs = std::filesystem;

namespace larmor::io::detail {

namespace {

// The names of the first links in the file's root, for the error that the group is missing.
std::string rootLinks(hid_t file) {
  std::string have;
  H5G_info_t info;
  if (H5Gget_info(file, &info) >= 0) {
    for (hsize_t i = 0; i < info.nlinks && i < 8; ++i) {
      char name[256] = {0};
      if (H5Lget_name_by_idx(file, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof(name), H5P_DEFAULT) > 0)
        have += std::string(have.empty() ? "" : ", ") + "/" + name;
    }
  }
  H5Eclear2(H5E_DEFAULT);
  return have;
}

// /group/xml: one string, variable-length as libismrmrd writes it, or fixed-length.
std::string readXmlText(hid_t file, const std::string& path, const std::string& group) {
  const std::string name = "/" + group + "/xml";
  auto fail = [&](const std::string& why) -> void {
    failFile(path, "cannot read the ISMRMRD XML header " + name + " (" + why + ")");
  };
  H5Id dset(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (dset.id < 0) fail(hdf5Reason());
  requireCompactStorageFits(dset.id, path, name);
  ChunkCheck(dset.id, path, name).check(0, 1);
  H5Id type(H5Dget_type(dset.id), H5Tclose);
  H5Id space(H5Dget_space(dset.id), H5Sclose);
  if (type.id < 0 || space.id < 0) fail(hdf5Reason());
  if (H5Tget_class(type.id) != H5T_STRING) fail("not a string");
  if (H5Sget_simple_extent_npoints(space.id) != 1) fail("not one string");
  const htri_t variable = H5Tis_variable_str(type.id);
  if (variable < 0) fail(hdf5Reason());
  H5Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
  // The memory type takes the file's character set: HDF5 converts no string between ASCII and UTF-8
  // ("no appropriate function for conversion path"), and XML is UTF-8 anyway.
  const H5T_cset_t cset = H5Tget_cset(type.id);
  if (cset == H5T_CSET_UTF8 || cset == H5T_CSET_ASCII) H5Tset_cset(mem.id, cset);
  if (variable > 0) {
    requireStringLengthFits(dset.id, path, name);
    H5Tset_size(mem.id, H5T_VARIABLE);
    const VlenTransfer xfer(path);
    char* text = nullptr;
    if (H5Dread(dset.id, mem.id, H5S_ALL, H5S_ALL, xfer.id(), &text) < 0) fail(hdf5Reason());
    std::string out = text ? text : "";
    H5Dvlen_reclaim(mem.id, space.id, xfer.id(), &text);
    return out;
  }
  const std::size_t size = H5Tget_size(type.id);
  std::error_code ec;
  if (size == 0 || size > std::max<std::uintmax_t>(fs::file_size(path, ec), 1 << 20)) fail("implausible size");
  H5Tset_size(mem.id, size);
  std::vector<char> buf(size + 1, '\0');
  if (H5Dread(dset.id, mem.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0) fail(hdf5Reason());
  return std::string(buf.data());
}

TrajectoryKind kindFromHeader(const ISMRMRD::Encoding& e) {
  switch (e.trajectory) {
    case ISMRMRD::TrajectoryType::CARTESIAN:
    case ISMRMRD::TrajectoryType::EPI: return TrajectoryKind::Cartesian;
    case ISMRMRD::TrajectoryType::RADIAL: return TrajectoryKind::Radial;
    case ISMRMRD::TrajectoryType::GOLDENANGLE: return TrajectoryKind::GoldenAngle;
    case ISMRMRD::TrajectoryType::SPIRAL:
      return e.encodedSpace.matrixSize.z > 1 ? TrajectoryKind::StackOfSpirals : TrajectoryKind::Spiral;
    case ISMRMRD::TrajectoryType::OTHER: return TrajectoryKind::Other;
  }
  return TrajectoryKind::Other;
}

// Largest plausible field of view: 10 m (a scanner's bore is under 1 m).
constexpr float kMaxFovMm = 1e4f;

std::string fovText(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
  return buf;
}

// Matrix sizes and fields of view of the encoding; both matrices must be non-empty.
void readSpaces(const ISMRMRD::Encoding& enc, const std::string& path, Header& h) {
  const auto& em = enc.encodedSpace.matrixSize;
  const auto& rm = enc.reconSpace.matrixSize;
  h.encoded[0] = em.x, h.encoded[1] = em.y, h.encoded[2] = em.z;
  h.recon[0] = rm.x, h.recon[1] = rm.y, h.recon[2] = rm.z;
  for (int i = 0; i < 3; ++i)
    if (h.encoded[i] <= 0 || h.recon[i] <= 0)
      failFile(path, "the XML header's matrix size is zero (encoded " +
                         Shape{h.encoded[0], h.encoded[1], h.encoded[2]}.str() + ", recon " +
                         Shape{h.recon[0], h.recon[1], h.recon[2]}.str() + ")");
  h.encodedFovMm[0] = enc.encodedSpace.fieldOfView_mm.x;
  h.encodedFovMm[1] = enc.encodedSpace.fieldOfView_mm.y;
  h.encodedFovMm[2] = enc.encodedSpace.fieldOfView_mm.z;
  h.reconFovMm[0] = enc.reconSpace.fieldOfView_mm.x;
  h.reconFovMm[1] = enc.reconSpace.fieldOfView_mm.y;
  h.reconFovMm[2] = enc.reconSpace.fieldOfView_mm.z;
  // A field of view sets the pixel size and the encoded/recon ratio (the readout crop, the maps' grid):
  // NaN, zero or negative squashed the image, Inf or 1e30 striped it.
  static const char* axis = "xyz";
  for (int i = 0; i < 3; ++i)
    for (const auto& [space, fov] : {std::pair<const char*, float>{"encodedSpace", h.encodedFovMm[i]},
                                     std::pair<const char*, float>{"reconSpace", h.reconFovMm[i]}})
      if (!(fov > 0.f && fov <= kMaxFovMm))
        failFile(path, std::string("the XML header's ") + space + " fieldOfView_mm " + axis[i] + " is " +
                           fovText(fov) + " (a field of view must lie in (0, " + fovText(kMaxFovMm) + "] mm)");
}

// xs:date "YYYY-MM-DD" as DICOM DA "YYYYMMDD"; xs:time "HH:MM:SS[.fff]" as TM "HHMMSS"; else "".
std::string dicomDate(const std::string& s) {
  if (s.size() < 10 || s[4] != '-' || s[7] != '-') return {};
  const std::string da = s.substr(0, 4) + s.substr(5, 2) + s.substr(8, 2);
  if (!std::all_of(da.begin(), da.end(), [](char c) { return c >= '0' && c <= '9'; })) return {};
  const int month = std::stoi(da.substr(4, 2)), day = std::stoi(da.substr(6, 2));
  return month >= 1 && month <= 12 && day >= 1 && day <= 31 ? da : std::string();
}
std::string dicomTime(const std::string& s) {
  if (s.size() < 8 || s[2] != ':' || s[5] != ':') return {};
  const std::string tm = s.substr(0, 2) + s.substr(3, 2) + s.substr(6, 2);
  if (!std::all_of(tm.begin(), tm.end(), [](char c) { return c >= '0' && c <= '9'; })) return {};
  return std::stoi(tm.substr(0, 2)) < 24 && std::stoi(tm.substr(2, 2)) < 60 && std::stoi(tm.substr(4, 2)) < 61
             ? tm : std::string();
}

// Scanner, subject, study and protocol, where the header has them.
void readDescription(const ISMRMRD::IsmrmrdHeader& xml, Header& h) {
  if (xml.acquisitionSystemInformation) {
    const auto& sys = *xml.acquisitionSystemInformation;
    if (sys.systemFieldStrength_T) h.systemFieldT = *sys.systemFieldStrength_T;
    std::string dev;
    if (sys.systemVendor) dev = *sys.systemVendor;
    if (sys.systemModel) dev += (dev.empty() ? "" : " ") + *sys.systemModel;
    h.deviceDescription = dev;
  }
  if (xml.subjectInformation) {
    if (xml.subjectInformation->patientName) h.patientName = *xml.subjectInformation->patientName;
    if (xml.subjectInformation->patientID) h.patientId = *xml.subjectInformation->patientID;
    if (xml.subjectInformation->patientBirthdate)
      h.patientBirthDate = dicomDate(*xml.subjectInformation->patientBirthdate);
    if (xml.subjectInformation->patientGender) {
      const std::string& g = *xml.subjectInformation->patientGender;  // ISMRMRD: M, F or O
      if (g == "M" || g == "F" || g == "O") h.patientSex = g;
    }
  }
  if (xml.studyInformation) {
    const auto& st = *xml.studyInformation;
    if (st.studyDescription) h.studyDescription = *st.studyDescription;
    if (st.studyDate) h.studyDate = dicomDate(*st.studyDate);
    if (st.studyTime && !h.studyDate.empty()) h.studyTime = dicomTime(*st.studyTime);
  }
  if (xml.measurementInformation && xml.measurementInformation->protocolName)
    h.protocolName = *xml.measurementInformation->protocolName;
}

// libismrmrd stores matrix sizes, encoding limits and acceleration factors as unsigned short and
// narrows whatever the XML says (x = 1000000000 becomes 51712, x = -5 becomes 65531). The text is
// checked first: every leaf value inside <matrixSize>, <encodingLimits> and <accelerationFactor> must be
// an integer in [0, 65535].
void checkNarrowedValues(const std::string& xml, const std::string& path) {
  for (const std::string block : {"matrixSize", "encodingLimits", "accelerationFactor"}) {
    const std::string open = "<" + block + ">", close = "</" + block + ">";
    for (std::size_t b = xml.find(open); b != std::string::npos; b = xml.find(open, b + 1)) {
      const std::size_t e = xml.find(close, b);
      if (e == std::string::npos) break;  // the XML parser reports the broken document
      std::size_t pos = b + open.size();
      while (true) {
        const std::size_t lt = xml.find('<', pos);
        if (lt == std::string::npos || lt >= e) break;
        const std::size_t gt = xml.find('>', lt);
        if (gt == std::string::npos || gt > e) break;
        const std::string tag = xml.substr(lt + 1, gt - lt - 1);
        pos = gt + 1;
        if (tag.empty() || tag[0] == '/' || tag.back() == '/') continue;
        const std::size_t end = xml.find('<', pos);
        if (end == std::string::npos || end > e || xml.compare(end, 2, "</") != 0) continue;  // not a leaf
        std::string text = xml.substr(pos, end - pos);
        const auto first = text.find_first_not_of(" \t\r\n"), last = text.find_last_not_of(" \t\r\n");
        text = first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
        char* stop = nullptr;
        errno = 0;
        const long long v = std::strtoll(text.c_str(), &stop, 10);
        const bool integer = !text.empty() && stop && *stop == '\0' && errno == 0;
        if (!integer || v < 0 || v > 65535)
          failFile(path, "the XML header's <" + block + "><" + tag + "> is '" + text.substr(0, 32) +
                             "', beyond ISMRMRD's range 0..65535");
      }
    }
  }
}

}  // namespace

// Larmor reads ISMRMRD files with HDF5 directly rather than through libismrmrd's Dataset, which opens
// files read-write (creating a missing group in the user's file), trusts the sizes the file states, and
// leaves HDF5 objects open when a read fails (the file then stays open for the rest of the session).
H5Id openIsmrmrdFile(const std::string& path, const std::string& group) {
  quietLibraries();
  std::error_code ec;
  if (!fs::exists(path, ec)) failFile(path, "no such file");
  if (fs::is_directory(path, ec)) failFile(path, "is a directory, not an ISMRMRD file");
  const htri_t isHdf5 = H5Fis_hdf5(path.c_str());
  if (isHdf5 == 0) failFile(path, "not an HDF5 file, so not ISMRMRD");
  if (isHdf5 < 0) failFile(path, "cannot read the file (" + hdf5Reason() + ")");
  H5Id f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (f.id < 0) failFile(path, "damaged or truncated HDF5 file (" + hdf5Reason() + ")");
  const std::string g = "/" + group;
  const htri_t groupExists = H5Lexists(f.id, g.c_str(), H5P_DEFAULT);
  if (groupExists < 0) failFile(path, "cannot read the ISMRMRD group " + g + " (" + hdf5Reason() + ")");
  if (groupExists == 0) {
    H5Eclear2(H5E_DEFAULT);
    const std::string have = rootLinks(f.id);
    failFile(path, "no ISMRMRD group " + g +
                       (have.empty() ? " (the HDF5 file holds no objects at its root)" : " (it has " + have + ")"));
  }
  H5O_info_t oinfo;
#if H5_VERSION_GE(1, 12, 0)
  const herr_t got = H5Oget_info_by_name3(f.id, g.c_str(), &oinfo, H5O_INFO_BASIC, H5P_DEFAULT);
#else
  const herr_t got = H5Oget_info_by_name(f.id, g.c_str(), &oinfo, H5P_DEFAULT);
#endif
  if (got < 0) failFile(path, g + " cannot be opened (" + hdf5Reason() + ")");
  if (oinfo.type != H5O_TYPE_GROUP) failFile(path, g + " is not a group, so this is not an ISMRMRD file");
  const std::string xml = g + "/xml";
  if (H5Lexists(f.id, xml.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    failFile(path, "no ISMRMRD XML header (" + xml + ")");
  }
  return f;
}

ISMRMRD::IsmrmrdHeader parseHeader(hid_t file, const std::string& path, const std::string& group) {
  return parseHeaderText(readXmlText(file, path, group), path);
}

std::string headerText(hid_t file, const std::string& path, const std::string& group) {
  return readXmlText(file, path, group);
}

ISMRMRD::IsmrmrdHeader parseHeaderText(const std::string& xml, const std::string& path) {
  checkNarrowedValues(xml, path);
  ISMRMRD::IsmrmrdHeader hdr;
  try {
    ISMRMRD::deserialize(xml.c_str(), hdr);
  } catch (const std::exception& e) {
    failFile(path, "invalid ISMRMRD XML header (" + oneLine(e.what()) + ")");
  }
  return hdr;
}

const std::string* findStringParameter(const ISMRMRD::IsmrmrdHeader& h, const std::string& name) {
  if (!h.userParameters) return nullptr;
  for (const auto& p : h.userParameters->userParameterString)
    if (p.name == name) return &p.value;
  return nullptr;
}

Header headerFromXml(const ISMRMRD::IsmrmrdHeader& xml, const std::string& path, EncodingFacts& facts) {
  Header h;
  if (xml.encoding.empty()) failFile(path, "the ISMRMRD XML header has no <encoding> section");
  const ISMRMRD::Encoding& enc = xml.encoding[0];
  readSpaces(enc, path, h);
  const auto& lim = enc.encodingLimits;
  facts.center1 = lim.kspace_encoding_step_1 ? lim.kspace_encoding_step_1->center : h.encoded[1] / 2;
  facts.center2 = lim.kspace_encoding_step_2 ? lim.kspace_encoding_step_2->center : h.encoded[2] / 2;
  // Partial Fourier claimed by the limits: a centre off the middle of the encoded steps (more than a line).
  const auto partialMax = [](const auto& limit) {
    if (!limit) return -1;
    const int lo = limit->minimum, hi = limit->maximum, c = limit->center;
    return hi > lo && std::abs(2 * c - (lo + hi + 1)) > 2 ? hi : -1;
  };
  facts.partialMax1 = partialMax(lim.kspace_encoding_step_1);
  facts.partialMax2 = partialMax(lim.kspace_encoding_step_2);
  facts.slices = lim.slice ? index_t{lim.slice->maximum} + 1 : 1;
  facts.slicesDeclared = lim.slice.has_value();
  const auto maxOf = [](const auto& limit) { return limit ? static_cast<int>(limit->maximum) : -1; };
  facts.maxContrast = maxOf(lim.contrast), facts.maxPhase = maxOf(lim.phase);
  facts.maxRepetition = maxOf(lim.repetition), facts.maxSet = maxOf(lim.set), facts.maxAverage = maxOf(lim.average);
  if (xml.sequenceParameters && xml.sequenceParameters->TE)
    for (float te : *xml.sequenceParameters->TE) facts.echoTimesMs.push_back(te);
  h.trajectory = kindFromHeader(enc);
  if (const std::string* k = findStringParameter(xml, kTrajectoryKindParameter)) {
    try {
      h.trajectory = trajectoryKindFromString(*k);
    } catch (const Error&) {
      failFile(path, "unknown " + std::string(kTrajectoryKindParameter) + " '" + *k + "'");
    }
  }
  const std::string* units = findStringParameter(xml, kTrajectoryUnitsParameter);
  facts.trajectoryInCycles = units && *units == "cycles_per_fov";
  if (enc.parallelImaging) {
    h.accelerationPe1 = std::max<int>(1, enc.parallelImaging->accelerationFactor.kspace_encoding_step_1);
    h.accelerationPe2 = std::max<int>(1, enc.parallelImaging->accelerationFactor.kspace_encoding_step_2);
  }
  readDescription(xml, h);
  return h;
}

}  // namespace larmor::io::detail
