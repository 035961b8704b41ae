#include <hdf5.h>
#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/version.h>
#include <ismrmrd/xml.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>
#include <sstream>
#include <vector>

#include "larmor/io/ismrmrd.hpp"
#include "larmor/util/atomic_file.hpp"

namespace larmor::io {

namespace {

thread_local std::string g_writeError;

void recordWriteError(const char*, int, const char*, int, const char* msg) {
  if (g_writeError.empty() && msg) g_writeError = msg;
}

std::string firstLine(const std::string& s) {
  std::string out = s.substr(0, s.find('\n'));
  return out.size() > 240 ? out.substr(0, 240) + "..." : out;
}

ISMRMRD::TrajectoryType ismrmrdTrajectory(TrajectoryKind k) {
  switch (k) {
    case TrajectoryKind::Cartesian: return ISMRMRD::TrajectoryType::CARTESIAN;
    case TrajectoryKind::Radial:
    case TrajectoryKind::Radial3D: return ISMRMRD::TrajectoryType::RADIAL;
    case TrajectoryKind::GoldenAngle: return ISMRMRD::TrajectoryType::GOLDENANGLE;
    case TrajectoryKind::Spiral:
    case TrajectoryKind::StackOfSpirals: return ISMRMRD::TrajectoryType::SPIRAL;
    case TrajectoryKind::Other: return ISMRMRD::TrajectoryType::OTHER;
  }
  return ISMRMRD::TrajectoryType::OTHER;
}

unsigned short u16(index_t v, const std::string& path, const std::string& what) {
  if (v < 0 || v > 65535)
    throw Error(path + ": " + what + " " + std::to_string(v) + " does not fit ISMRMRD's 16-bit field");
  return static_cast<unsigned short>(v);
}

ISMRMRD::UserParameters userParameters(const Header& h, const nlohmann::json& simulatorSettings) {
  ISMRMRD::UserParameters up;
  up.userParameterString.push_back({kTrajectoryUnitsParameter, "cycles_per_fov"});
  up.userParameterString.push_back({kTrajectoryKindParameter, toString(h.trajectory)});
  if (!simulatorSettings.is_null()) up.userParameterString.push_back({kSimulatorParameter, simulatorSettings.dump()});
  return up;
}

// `repetitions` > 1: a series (writeIsmrmrdSeries), whose frames are repetitions 0 .. repetitions - 1.
std::string headerXml(const Dataset& d, const std::string& path, const nlohmann::json& simulatorSettings,
                      bool hasCalibration, index_t profiles, index_t repetitions = 1) {
  const Header& h = d.header;
  ISMRMRD::IsmrmrdHeader x;
  x.version = ISMRMRD_XMLHDR_VERSION;
  // The schema requires a Larmor frequency; 1.5 T stands in when the field is unknown.
  const double fieldT = h.systemFieldT > 0 ? h.systemFieldT : 1.5;
  x.experimentalConditions.H1resonanceFrequency_Hz = std::lround(42.577478518e6 * fieldT);

  ISMRMRD::AcquisitionSystemInformation sys;
  sys.receiverChannels = u16(h.coils, path, "coil count");
  if (h.systemFieldT > 0) sys.systemFieldStrength_T = h.systemFieldT;
  if (!h.deviceDescription.empty()) sys.systemModel = h.deviceDescription;
  x.acquisitionSystemInformation = sys;

  // DICOM DA/TM (the Header's form) back to xs:date "YYYY-MM-DD" and xs:time "HH:MM:SS".
  const auto xsDate = [](const std::string& da) { return da.substr(0, 4) + "-" + da.substr(4, 2) + "-" + da.substr(6, 2); };
  const auto xsTime = [](const std::string& tm) { return tm.substr(0, 2) + ":" + tm.substr(2, 2) + ":" + tm.substr(4, 2); };
  if (!h.patientName.empty() || !h.patientId.empty() || !h.patientBirthDate.empty() || !h.patientSex.empty()) {
    ISMRMRD::SubjectInformation subject;
    if (!h.patientName.empty()) subject.patientName = h.patientName;
    if (!h.patientId.empty()) subject.patientID = h.patientId;
    if (h.patientBirthDate.size() == 8) subject.patientBirthdate = xsDate(h.patientBirthDate);
    if (!h.patientSex.empty()) subject.patientGender = h.patientSex;
    x.subjectInformation = subject;
  }
  if (!h.studyDescription.empty() || h.studyDate.size() == 8) {
    ISMRMRD::StudyInformation study;
    if (!h.studyDescription.empty()) study.studyDescription = h.studyDescription;
    if (h.studyDate.size() == 8) study.studyDate = xsDate(h.studyDate);
    if (h.studyDate.size() == 8 && h.studyTime.size() == 6) study.studyTime = xsTime(h.studyTime);
    x.studyInformation = study;
  }
  if (!h.protocolName.empty()) {
    ISMRMRD::MeasurementInformation meas;
    meas.patientPosition = "HFS";  // required by the schema; the simulator's subject lies head first supine
    meas.protocolName = h.protocolName;
    x.measurementInformation = meas;
  }

  ISMRMRD::Encoding e;
  e.encodedSpace.matrixSize = ISMRMRD::MatrixSize(u16(h.encoded[0], path, "encoded matrix"),
                                                  u16(h.encoded[1], path, "encoded matrix"),
                                                  u16(h.encoded[2], path, "encoded matrix"));
  e.encodedSpace.fieldOfView_mm = {h.encodedFovMm[0], h.encodedFovMm[1], h.encodedFovMm[2]};
  e.reconSpace.matrixSize = ISMRMRD::MatrixSize(u16(h.recon[0], path, "recon matrix"),
                                                u16(h.recon[1], path, "recon matrix"),
                                                u16(h.recon[2], path, "recon matrix"));
  e.reconSpace.fieldOfView_mm = {h.reconFovMm[0], h.reconFovMm[1], h.reconFovMm[2]};
  const bool cartesian = h.trajectory == TrajectoryKind::Cartesian;
  if (cartesian) {
    e.encodingLimits.kspace_encoding_step_1 = ISMRMRD::Limit(
        0, u16(h.encoded[1] - 1, path, "phase encodes"), static_cast<unsigned short>(h.encoded[1] / 2));
    e.encodingLimits.kspace_encoding_step_2 = ISMRMRD::Limit(
        0, u16(h.encoded[2] - 1, path, "partition encodes"), static_cast<unsigned short>(h.encoded[2] / 2));
  } else {
    e.encodingLimits.kspace_encoding_step_1 =
        ISMRMRD::Limit(0, static_cast<unsigned short>(std::min<index_t>(profiles - 1, 65535)), 0);
  }
  e.encodingLimits.slice = ISMRMRD::Limit(0, u16(h.slices - 1, path, "slice count"), 0);
  if (repetitions > 1) e.encodingLimits.repetition = ISMRMRD::Limit(0, u16(repetitions - 1, path, "frame count"), 0);
  e.trajectory = ismrmrdTrajectory(h.trajectory);
  if (cartesian && (h.accelerationPe1 > 1 || h.accelerationPe2 > 1 || hasCalibration)) {
    ISMRMRD::ParallelImaging pi;
    pi.accelerationFactor.kspace_encoding_step_1 = u16(std::max(1, h.accelerationPe1), path, "acceleration");
    pi.accelerationFactor.kspace_encoding_step_2 = u16(std::max(1, h.accelerationPe2), path, "acceleration");
    if (hasCalibration) pi.calibrationMode = std::string("embedded");
    e.parallelImaging = pi;
  }
  x.encoding.push_back(e);

  x.userParameters = userParameters(h, simulatorSettings);

  std::ostringstream out;
  ISMRMRD::serialize(x, out);
  return out.str();
}

// libismrmrd's acquisition header is packed to 2 bytes, so its float and uint32 members may be misaligned
// and Acquisition's accessors (float*, uint32_t&) write through misaligned pointers (undefined behaviour,
// reported by UBSan). Larmor writes those members on a copy of the header, byte-wise, and sets it back.
template <class T>
void putField(ISMRMRD::AcquisitionHeader& head, std::size_t offset, const T& value) {
  std::memcpy(reinterpret_cast<unsigned char*>(static_cast<ISMRMRD::ISMRMRD_AcquisitionHeader*>(&head)) + offset,
              &value, sizeof value);
}

// Where the acquisitions of one Dataset go in the file: the next scan counter, the repetition (frame) index,
// and whether it is the file's last Dataset (whose last acquisition is the last in the measurement).
struct FramePlace {
  std::uint32_t counter = 0;
  std::uint16_t repetition = 0;
  bool last = true;
};

// The scan counter, the repetition and the geometry of slice `s`: the group's position moved along sliceDir to
// the slice's position, so that a reader projecting position onto slice_dir gets slicePositions back.
void setCounterAndGeometry(ISMRMRD::Acquisition& acq, FramePlace& place, const Geometry& g, index_t s) {
  acq.idx().repetition = place.repetition;
  const std::uint32_t counter = place.counter++;
  using H = ISMRMRD::ISMRMRD_AcquisitionHeader;
  ISMRMRD::AcquisitionHeader head = acq.getHead();
  putField(head, offsetof(H, scan_counter), counter);
  float position[3] = {0, 0, 0}, read[3] = {0, 0, 0}, phase[3] = {0, 0, 0}, slice[3] = {0, 0, 0};
  if (g.present) {
    float shift = 0;
    if (static_cast<std::size_t>(s) < g.slicePositions.size() && !g.slicePositions.empty())
      shift = g.slicePositions[static_cast<std::size_t>(s)] - g.slicePositions[0];
    for (int k = 0; k < 3; ++k) {
      position[k] = g.position[k] + shift * g.sliceDir[k];
      read[k] = g.readDir[k];
      phase[k] = g.phaseDir[k];
      slice[k] = g.sliceDir[k];
    }
  }
  putField(head, offsetof(H, position), position);
  putField(head, offsetof(H, read_dir), read);
  putField(head, offsetof(H, phase_dir), phase);
  putField(head, offsetof(H, slice_dir), slice);
  acq.setHead(head);
}

void appendComplexArray(ISMRMRD::Dataset& ds, const std::string& var, const CArray& a) {
  std::vector<std::size_t> dims;
  for (auto v : a.shape().dims()) dims.push_back(static_cast<std::size_t>(v));
  while (dims.size() > ISMRMRD::ISMRMRD_NDARRAY_MAXDIM && dims.back() == 1) dims.pop_back();
  require(dims.size() <= ISMRMRD::ISMRMRD_NDARRAY_MAXDIM, var + " has too many dimensions for an ISMRMRD NDArray");
  ISMRMRD::NDArray<complex_float_t> arr(dims);
  std::memcpy(arr.getDataPtr(), a.data(), static_cast<std::size_t>(a.size()) * sizeof(cfloat));
  ds.appendNDArray(var, arr);
}

void writeAcquisitions(ISMRMRD::Dataset& ds, const Dataset& d, const std::string& path, FramePlace& place) {
  const Header& h = d.header;
  const Shape& ks = d.kspace.shape();
  const index_t coils = h.coils, slices = h.slices;
  const Geometry& geometry = h.geometry;
  ISMRMRD::Acquisition acq;

  if (h.trajectory == TrajectoryKind::Cartesian) {
    const index_t n = ks[0], enc1 = ks[1], enc2 = ks[2];
    const auto samples = u16(n, path, "readout length");
    struct Line { index_t pe1, pe2, slice; };
    std::vector<Line> lines;
    for (index_t s = 0; s < slices; ++s)
      for (index_t p2 = 0; p2 < enc2; ++p2)
        for (index_t p1 = 0; p1 < enc1; ++p1)
          if (d.sampled(p1, p2, s)) lines.push_back({p1, p2, s});
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const Line& l = lines[i];
      acq.resize(samples, u16(coils, path, "coil count"), 0);
      acq.clearAllFlags();
      const bool firstInSlice = i == 0 || lines[i - 1].slice != l.slice;
      const bool lastInSlice = i + 1 == lines.size() || lines[i + 1].slice != l.slice;
      const bool firstInPe1 = firstInSlice || lines[i - 1].pe2 != l.pe2;
      const bool lastInPe1 = lastInSlice || lines[i + 1].pe2 != l.pe2;
      if (firstInSlice) acq.setFlag(ISMRMRD::ISMRMRD_ACQ_FIRST_IN_SLICE);
      if (lastInSlice) acq.setFlag(ISMRMRD::ISMRMRD_ACQ_LAST_IN_SLICE);
      if (firstInPe1) acq.setFlag(ISMRMRD::ISMRMRD_ACQ_FIRST_IN_ENCODE_STEP1);
      if (lastInPe1) acq.setFlag(ISMRMRD::ISMRMRD_ACQ_LAST_IN_ENCODE_STEP1);
      if (enc2 > 1 && firstInSlice) acq.setFlag(ISMRMRD::ISMRMRD_ACQ_FIRST_IN_ENCODE_STEP2);
      if (enc2 > 1 && lastInSlice) acq.setFlag(ISMRMRD::ISMRMRD_ACQ_LAST_IN_ENCODE_STEP2);
      if (i + 1 == lines.size() && place.last) acq.setFlag(ISMRMRD::ISMRMRD_ACQ_LAST_IN_MEASUREMENT);
      // Simulated ACS lines are part of the image too (embedded calibration).
      if (!d.calibration.empty() && d.calibration(l.pe1, l.pe2, l.slice))
        acq.setFlag(ISMRMRD::ISMRMRD_ACQ_IS_PARALLEL_CALIBRATION_AND_IMAGING);
      acq.available_channels() = static_cast<std::uint16_t>(coils);
      acq.center_sample() = static_cast<std::uint16_t>(n / 2);
      acq.idx().kspace_encode_step_1 = static_cast<std::uint16_t>(l.pe1);
      acq.idx().kspace_encode_step_2 = static_cast<std::uint16_t>(l.pe2);
      acq.idx().slice = static_cast<std::uint16_t>(l.slice);
      setCounterAndGeometry(acq, place, geometry, l.slice);
      for (index_t c = 0; c < coils; ++c)
        std::memcpy(acq.getDataPtr() + c * n, d.kspace.data() + n * (l.pe1 + enc1 * (l.pe2 + enc2 * (c + coils * l.slice))),
                    static_cast<std::size_t>(n) * sizeof(cfloat));
      ds.appendAcquisition(acq);
    }
    return;
  }

  const index_t n = ks[0], profiles = ks[1];
  const auto samples = u16(n, path, "readout length");
  bool threeD = h.is3D();
  for (index_t i = 2; i < d.trajectory.size() && !threeD; i += 3) threeD = d.trajectory[i] != 0.f;
  const std::uint16_t td = threeD ? 3 : 2;
  for (index_t s = 0; s < slices; ++s)
    for (index_t p = 0; p < profiles; ++p) {
      acq.resize(samples, u16(coils, path, "coil count"), td);
      acq.clearAllFlags();
      if (p == 0) acq.setFlag(ISMRMRD::ISMRMRD_ACQ_FIRST_IN_SLICE);
      if (p + 1 == profiles) acq.setFlag(ISMRMRD::ISMRMRD_ACQ_LAST_IN_SLICE);
      if (p + 1 == profiles && s + 1 == slices && place.last) acq.setFlag(ISMRMRD::ISMRMRD_ACQ_LAST_IN_MEASUREMENT);
      acq.available_channels() = static_cast<std::uint16_t>(coils);
      acq.center_sample() = static_cast<std::uint16_t>(n / 2);
      acq.idx().kspace_encode_step_1 = static_cast<std::uint16_t>(p % 65536);
      acq.idx().slice = static_cast<std::uint16_t>(s);
      setCounterAndGeometry(acq, place, geometry, s);
      for (index_t c = 0; c < coils; ++c)
        std::memcpy(acq.getDataPtr() + c * n, d.kspace.data() + n * (p + profiles * (c + coils * s)),
                    static_cast<std::size_t>(n) * sizeof(cfloat));
      float* t = acq.getTrajPtr();
      const float* src = d.trajectory.data() + 3 * n * p;
      for (index_t k = 0; k < n; ++k)
        for (int dim = 0; dim < td; ++dim) t[k * td + dim] = src[3 * k + dim];
      ds.appendAcquisition(acq);
    }
}

void requireValid(const Dataset& d, const std::string& path) {
  try {
    d.validate();
  } catch (const Error& e) {
    throw Error(path + ": cannot write invalid data (" + e.what() + ")");
  }
}

bool hasCalibration(const Dataset& d) {
  for (index_t i = 0; i < d.calibration.size(); ++i)
    if (d.calibration[i] != 0) return true;
  return false;
}

// The frames of a series share one XML header: the same trajectory kind, matrices, coils, slices and k-space
// shape; a reference in every frame or in none.
void requireSameAcquisition(const Dataset& a, const Dataset& b, std::size_t frame, const std::string& path) {
  const Header &x = a.header, &y = b.header;
  bool same = x.trajectory == y.trajectory && x.coils == y.coils && x.slices == y.slices &&
              a.kspace.shape() == b.kspace.shape() && a.reference.has_value() == b.reference.has_value();
  for (int i = 0; i < 3; ++i) same = same && x.encoded[i] == y.encoded[i] && x.recon[i] == y.recon[i];
  require(same, path + ": frame " + std::to_string(frame) + " (" + toString(y.trajectory) + " " +
                    b.kspace.shape().str() + ") does not share frame 0's acquisition (" + toString(x.trajectory) +
                    " " + a.kspace.shape().str() + "), or only one of them has a reference");
}

// Creates the file (atomically: a temporary renamed into place), writes the XML header, then `body`.
void writeFile(const std::string& path, const std::string& xml, const std::function<void(ISMRMRD::Dataset&)>& body) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  ISMRMRD::ismrmrd_set_error_handler(recordWriteError);
  g_writeError.clear();
  AtomicFile out(path);
  try {
    ISMRMRD::Dataset ds(out.tempPath().c_str(), "dataset", true);
    ds.writeHeader(xml);
    body(ds);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    const std::string why = firstLine(g_writeError.empty() ? std::string(e.what()) : g_writeError);
    g_writeError.clear();
    throw Error(path + ": cannot write (" + why + ")");
  }
  out.commit();
}

}  // namespace

void writeIsmrmrd(const Dataset& d, const std::string& path, const nlohmann::json& simulatorSettings) {
  requireValid(d, path);
  const std::string xml = headerXml(d, path, simulatorSettings, hasCalibration(d), d.kspace.shape()[1]);
  writeFile(path, xml, [&](ISMRMRD::Dataset& ds) {
    FramePlace place;
    writeAcquisitions(ds, d, path, place);
    if (d.reference) appendComplexArray(ds, "reference", *d.reference);
    if (d.coilMaps) appendComplexArray(ds, "coil_maps", *d.coilMaps);
  });
}

void writeIsmrmrdSeries(const std::vector<Dataset>& frames, const std::string& path,
                        const nlohmann::json& simulatorSettings) {
  require(!frames.empty(), path + ": cannot write a series of no frames");
  if (frames.size() == 1) return writeIsmrmrd(frames.front(), path, simulatorSettings);
  const Dataset& first = frames.front();
  bool calibration = false;
  for (std::size_t f = 0; f < frames.size(); ++f) {
    requireValid(frames[f], path);
    requireSameAcquisition(first, frames[f], f, path);
    calibration = calibration || hasCalibration(frames[f]);
  }
  const auto count = static_cast<index_t>(frames.size());
  const std::string xml = headerXml(first, path, simulatorSettings, calibration, first.kspace.shape()[1], count);
  writeFile(path, xml, [&](ISMRMRD::Dataset& ds) {
    FramePlace place;
    for (std::size_t f = 0; f < frames.size(); ++f) {
      place.repetition = u16(static_cast<index_t>(f), path, "frame index");
      place.last = f + 1 == frames.size();
      writeAcquisitions(ds, frames[f], path, place);
    }
    // One reference per repetition, in repetition order: the reader gives frame r the array at index r.
    for (const Dataset& d : frames)
      if (d.reference) appendComplexArray(ds, "reference", *d.reference);
    if (first.coilMaps) appendComplexArray(ds, "coil_maps", *first.coilMaps);
  });
}

}  // namespace larmor::io
