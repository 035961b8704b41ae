// Reading ISMRMRD files (larmor/io/ismrmrd.hpp): the entry points. The work lies in
//   hdf5_guards.cpp           structural checks before libhdf5 trusts the file
//   hdf5_global_heap.cpp      global heap collections (variable-length data), parsed and checked by us
//   ismrmrd_header.cpp        opening the file, the XML header into Larmor's Header
//   ismrmrd_arrays.cpp        the reference image and coil maps stored as NDArrays
//   ismrmrd_records.cpp       the acquisition records, checked against what the file stores
//   ismrmrd_direct.cpp        the records read straight from the file (no libhdf5 conversion)
//   ismrmrd_acquisitions.cpp  the acquisitions into k-space (Cartesian) or profiles (non-Cartesian)
//
// libhdf5 1.10 (Debian 12's) trusts sizes and indices it reads from the file in more places than those
// checks can cover without reimplementing HDF5 (fuzz_ismrmrd keeps finding them: a local heap whose size
// makes an allocation fail unchecked, heap object indices, ...). So before a file is read in-process it is
// read by larmor-h5check (engine/tools/h5check_main.cpp) in the crash sandbox
// (larmor/util/subprocess_sandbox.hpp): a crash there is a damaged file, reported as one Error; only a
// file that reads there is read here. The helper makes the libhdf5 calls the in-process read makes
// (checkIsmrmrdStructure) but reads no samples: the acquisitions' samples are read once, in-process, by
// our own code (ismrmrd_direct.cpp) where the file is laid out as libismrmrd writes it, so the helper
// costs a fraction of the read. LARMOR_H5CHECK names the helper; without one (LARMOR_NO_SANDBOX=1, or a
// build that has none) files are read in-process only.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <system_error>
#include <vector>

#include "ismrmrd_acquisitions.hpp"
#include "ismrmrd_arrays.hpp"
#include "ismrmrd_header.hpp"
#include "ismrmrd_records.hpp"
#include "sampling_facts.hpp"
#include "larmor/io/ismrmrd.hpp"
#include "larmor/util/input_file.hpp"
#include "larmor/util/subprocess_sandbox.hpp"

namespace larmor::io {

namespace {

using namespace detail;

// Reads the file in larmor-h5check first, when there is one.
void sandboxedCheck(const std::string& path, const std::string& group, int repetition, const Progress& progress) {
  SandboxJob job;
  job.helper = findSandboxHelper("larmor-h5check", "LARMOR_H5CHECK");
  if (job.helper.empty()) return;
  job.file = path;
  job.args = {group, std::to_string(repetition)};
  job.errorMarker = kH5CheckErrorMarker;
  job.crashVerdict = "damaged HDF5 file";
  job.crasher = "libhdf5";
  // Room for the data many times over: an allocation bomb in a damaged file fails in the helper.
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  job.addressSpaceBytes = (std::uint64_t{4} << 30) + (ec ? 0 : static_cast<std::uint64_t>(bytes) * 16);
  (void)runSandboxed(job, progress);  // HelperUnavailable: read in-process as before
}

// The reference image and coil maps: Larmor's own arrays, else the ISMRMRD generator's.
struct SideArrays {
  std::optional<NdArray> reference, phantom, coilMaps, csm;
  std::string referenceError;  ///< why the reference could not be read (it is optional: a warning)
};

SideArrays readSideArrays(hid_t file, const std::string& path, const std::string& group, bool readReference,
                          bool readMaps) {
  SideArrays a;
  try {
    a.reference = readNdArray(file, path, group, "reference", readReference);
    if (!a.reference) a.phantom = readNdArray(file, path, group, "phantom", readReference);
  } catch (const Error& e) {
    a.referenceError = e.what();
  }
  a.coilMaps = readNdArray(file, path, group, "coil_maps", readMaps);
  if (!a.coilMaps) a.csm = readNdArray(file, path, group, "csm", readMaps);
  return a;
}

// A series' references (writeIsmrmrdSeries): "reference" holding one NDArray per repetition, read into one
// entry each (empty when it holds one or none, the reference of every frame). Not readable: the reference is
// dropped with a warning, as one that does not fit.
std::vector<std::optional<NdArray>> readRepetitionReferences(hid_t file, const std::string& path,
                                                            const std::string& group, bool readData, SideArrays& a) {
  const hsize_t count = ndArrayCount(file, group, "reference");
  if (count <= 1 || !a.referenceError.empty()) return {};
  std::vector<std::optional<NdArray>> out;
  try {
    if (count > 65536)
      throw Error(path + ": NDArray 'reference' holds " + std::to_string(count) +
                  " arrays (at most one per repetition, 65536)");
    for (hsize_t i = 0; i < count; ++i) out.push_back(readNdArray(file, path, group, "reference", readData, i));
  } catch (const Error& e) {
    a.referenceError = e.what();
    return {};
  }
  a.reference.reset();
  return out;
}

// Frame `repetition`'s own reference into `a` (from readRepetitionReferences' list).
void takeRepetitionReference(std::vector<std::optional<NdArray>>& list, int repetition, SideArrays& a,
                             const std::string& path, Dataset& d) {
  const auto r = static_cast<std::size_t>(repetition);
  if (r < list.size()) {
    a.reference = std::move(list[r]);
    return;
  }
  d.warnings.push_back(path + ": the file's " + std::to_string(list.size()) +
                       " references (one per repetition) have none for repetition " + std::to_string(repetition) +
                       " (no metrics)");
}

// The reference image is optional (only metrics use it): one that does not fit the
// image or holds NaN/Inf is dropped with a warning, and the reconstruction goes on.
void attachReference(SideArrays& a, const Shape& imageShape, const std::string& path, Dataset& d) {
  if (!a.referenceError.empty()) {
    d.warnings.push_back(a.referenceError + "; the reference is ignored (no metrics)");
    return;
  }
  try {
    d.reference = a.reference ? fitArray(std::move(a.reference), imageShape, path, "reference", true)
                              : fitArray(std::move(a.phantom), imageShape, path, "phantom", false);
  } catch (const Error& e) {
    d.warnings.push_back(std::string(e.what()) + "; the reference is ignored (no metrics)");
    return;
  }
  if (!d.reference) return;
  index_t bad = 0, first = -1;
  for (index_t i = 0; i < d.reference->size(); ++i) {
    const cfloat v = (*d.reference)[i];
    if (std::isfinite(v.real()) && std::isfinite(v.imag())) continue;
    if (bad++ == 0) first = i;
  }
  if (bad == 0) return;
  d.warnings.push_back(path + ": the embedded reference image has " + std::to_string(bad) + " non-finite value" +
                       (bad == 1 ? "" : "s") + " (first at voxel " + std::to_string(first) +
                       "); the reference is ignored (no metrics)");
  d.reference.reset();
}

// Structure only: the reference's shape as attachReference would fit it, its values not read (so a
// NaN in them is not seen: `info` describes the reference, `recon` checks it).
std::optional<Shape> describeReference(const SideArrays& a, const Shape& imageShape, const std::string& path,
                                       Dataset& d) {
  const std::string ignored = "; the reference is ignored (no metrics)";
  if (!a.referenceError.empty()) {
    d.warnings.push_back(a.referenceError + ignored);
    return std::nullopt;
  }
  const std::optional<NdArray>& raw = a.reference ? a.reference : a.phantom;
  try {
    if (raw && arrayFits(*raw, imageShape, path, a.reference ? "reference" : "phantom", a.reference.has_value()))
      return imageShape;
  } catch (const Error& e) {
    d.warnings.push_back(e.what() + ignored);
  }
  return std::nullopt;
}

// The side arrays into `d`; structure only: the reference described (its shape returned), the maps not.
std::optional<Shape> attachSideArrays(SideArrays a, const std::string& path, Dataset& d, bool structureOnly) {
  const Header& h = d.header;
  const Shape imageShape{h.recon[0], h.recon[1], h.recon[2], 1, h.slices};
  if (structureOnly) return describeReference(a, imageShape, path, d);
  attachReference(a, imageShape, path, d);
  const Shape mapShape{h.recon[0], h.recon[1], h.recon[2], h.coils, h.slices};
  d.coilMaps = a.coilMaps ? fitArray(std::move(a.coilMaps), mapShape, path, "coil_maps", true)
                          : fitArray(std::move(a.csm), mapShape, path, "csm", false);
  return std::nullopt;
}

// The header with what the acquisitions add cheaply: coils from the first record (one block read),
// slices from the encoding limits. For io::LoadOptions::beforeData.
Dataset headerOnly(const Dataset& d, const EncodingFacts& facts, const std::string& path, const std::string& group) {
  Dataset peek;
  peek.source = d.source;
  peek.header = d.header;
  peek.header.slices = std::max<index_t>(1, facts.slices);
  AcquisitionReader reader(path, group);
  if (reader.count() > 0) peek.header.coils = reader.get(0).head.active_channels;
  return peek;
}

}  // namespace

std::string readIsmrmrdSimulatorSettings(const std::string& path, const std::string& group) {
  const H5Id file = openIsmrmrdFile(path, group);
  const ISMRMRD::IsmrmrdHeader hdr = parseHeader(file.id, path, group);
  const std::string* s = findStringParameter(hdr, kSimulatorParameter);
  return s ? *s : std::string();
}

void checkIsmrmrdStructure(const std::string& path, const std::string& group) {
  EncodingFacts facts;
  const H5Id file = openIsmrmrdFile(path, group);  // the group and the XML header found
  const Header h = headerFromXml(parseHeader(file.id, path, group), path, facts);  // its heap checked first
  SideArrays arrays = readSideArrays(file.id, path, group, false, false);
  (void)readRepetitionReferences(file.id, path, group, false, arrays);
  AcquisitionReader reader(path, group);  // /data's type, members, layout and stored size
  // Read directly, the records need libhdf5 only to find their chunks: every lookup the in-process read
  // will make is made here first.
  reader.lookUpEveryChunk();
  const std::uint64_t count = reader.count();
  // The first and the last block of records (their descriptors and heap objects), not the rest: the
  // in-process read checks every record as it reads it (and, on the fallback, before HDF5 converts it).
  if (count > 0) (void)reader.get(0);
  if (count > 1) (void)reader.get(count - 1);
  (void)h;
}

Series readIsmrmrdSeries(const std::string& path, const std::string& group, const Progress& progress,
                         const FrameSelection& select, const std::function<void(const Dataset&)>& beforeData,
                         bool structureOnly) {
  requireRegularInput(path);
  sandboxedCheck(path, group, select.repetition, progress);
  SideArrays arrays;
  std::vector<std::optional<NdArray>> repetitionReferences;
  Dataset base;
  base.source = path;
  EncodingFacts facts;
  bool keepSamples = true;
  {
    const H5Id file = openIsmrmrdFile(path, group);
    base.header = headerFromXml(parseHeader(file.id, path, group), path, facts);
    // The caller's check before anything large is read (the side arrays may be as large as the k-space).
    if (beforeData) beforeData(headerOnly(base, facts, path, group));
    // Structure only: Cartesian samples are checked as they are read but not kept, nor the coil maps'
    // values (non-Cartesian profiles are small and are kept, with the maps).
    keepSamples = !structureOnly || base.header.trajectory != TrajectoryKind::Cartesian;
    arrays = readSideArrays(file.id, path, group, keepSamples, keepSamples);
    repetitionReferences = readRepetitionReferences(file.id, path, group, keepSamples, arrays);
  }
  AcquisitionFrames read = readAcquisitions(path, group, facts, select, progress, base, keepSamples);
  Series series;
  series.acquisitions = std::move(read.all);
  series.contrasts = read.contrasts, series.phases = read.phases;
  series.repetitions = read.repetitions, series.sets = read.sets;
  const std::size_t n = read.frames.size();
  std::size_t k = 0;
  for (auto& [key, d] : read.frames) {
    // The reference image and coil maps belong to every frame (the last frame takes the originals), unless
    // the file holds a reference per repetition.
    SideArrays frameArrays = ++k == n ? std::move(arrays) : arrays;
    if (!repetitionReferences.empty())
      takeRepetitionReference(repetitionReferences, key.repetition, frameArrays, path, d);
    const std::optional<Shape> reference = attachSideArrays(std::move(frameArrays), path, d, !keepSamples);
    if (k == 1) series.referenceShape = reference;
    if (detail::sortSlicesByPosition(d) && k == 1)
      d.warnings.push_back(path + ": slices reordered by their position along the slice direction");
    // Every sample was checked as it was read (ismrmrd_acquisitions.cpp): no second pass over them.
    if (keepSamples) d.validateStructure();
    const auto c = static_cast<std::size_t>(key.contrast);
    series.echoTimeMs.push_back(c < facts.echoTimesMs.size() ? facts.echoTimesMs[c] : unknownTime());
    const auto trigger = read.triggerTimeMs.find(key);
    series.triggerTimeMs.push_back(trigger != read.triggerTimeMs.end() ? trigger->second : unknownTime());
    series.keys.push_back(key);
    series.frames.push_back(std::move(d));
  }
  return series;
}

std::string ismrmrdAcquisitionRead(const std::string& path, const std::string& group) {
  requireRegularInput(path);
  { const H5Id file = openIsmrmrdFile(path, group); }
  const AcquisitionReader reader(path, group);
  return reader.fallbackReason().empty() ? "direct" : "libhdf5: " + reader.fallbackReason();
}

Dataset readIsmrmrd(const std::string& path, const std::string& group, const Progress& progress, int repetition,
                    const std::function<void(const Dataset&)>& beforeData) {
  FrameSelection select;
  select.repetition = repetition;
  Series s = readIsmrmrdSeries(path, group, progress, select, beforeData);
  return singleFrame(std::move(s), path);
}

}  // namespace larmor::io
