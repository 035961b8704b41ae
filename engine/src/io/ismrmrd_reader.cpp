// Reading ISMRMRD files (larmor/io/ismrmrd.hpp): the entry points. The work lies in
//   hdf5_guards.cpp           structural checks before libhdf5 trusts the file
//   ismrmrd_header.cpp        opening the file, the XML header into Larmor's Header
//   ismrmrd_arrays.cpp        the reference image and coil maps stored as NDArrays
//   ismrmrd_records.cpp       the acquisition records, checked against what the file stores
//   ismrmrd_acquisitions.cpp  the acquisitions into k-space (Cartesian) or profiles (non-Cartesian)
//
// libhdf5 1.10 (Debian 12's) trusts sizes and indices it reads from the file in more places than those
// checks can cover without reimplementing HDF5 (fuzz_ismrmrd keeps finding them: a local heap whose size
// makes an allocation fail unchecked, heap object indices, ...). So before a file is read in-process it is
// read by larmor-h5check (engine/tools/h5check_main.cpp) in the crash sandbox
// (larmor/util/subprocess_sandbox.hpp): a crash there is a damaged file, reported as one Error; only a
// file that reads there is read here. Costs one more read of the file (page-cached). LARMOR_H5CHECK names
// the helper; without one (LARMOR_NO_SANDBOX=1, or a build that has none) files are read in-process only.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <system_error>

#include "ismrmrd_acquisitions.hpp"
#include "ismrmrd_arrays.hpp"
#include "ismrmrd_header.hpp"
#include "larmor/io/ismrmrd.hpp"
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
};

SideArrays readSideArrays(hid_t file, const std::string& path, const std::string& group) {
  SideArrays a;
  a.reference = readNdArray(file, path, group, "reference");
  if (!a.reference) a.phantom = readNdArray(file, path, group, "phantom");
  a.coilMaps = readNdArray(file, path, group, "coil_maps");
  if (!a.coilMaps) a.csm = readNdArray(file, path, group, "csm");
  return a;
}

void attachSideArrays(SideArrays a, const std::string& path, Dataset& d) {
  const Header& h = d.header;
  const Shape imageShape{h.recon[0], h.recon[1], h.recon[2], 1, h.slices};
  d.reference = a.reference ? fitArray(std::move(a.reference), imageShape, path, "reference", true)
                            : fitArray(std::move(a.phantom), imageShape, path, "phantom", false);
  const Shape mapShape{h.recon[0], h.recon[1], h.recon[2], h.coils, h.slices};
  d.coilMaps = a.coilMaps ? fitArray(std::move(a.coilMaps), mapShape, path, "coil_maps", true)
                          : fitArray(std::move(a.csm), mapShape, path, "csm", false);
}

}  // namespace

std::string readIsmrmrdSimulatorSettings(const std::string& path, const std::string& group) {
  const H5Id file = openIsmrmrdFile(path, group);
  const ISMRMRD::IsmrmrdHeader hdr = parseHeader(file.id, path, group);
  const std::string* s = findStringParameter(hdr, kSimulatorParameter);
  return s ? *s : std::string();
}

Dataset readIsmrmrd(const std::string& path, const std::string& group, const Progress& progress, int repetition) {
  sandboxedCheck(path, group, repetition, progress);
  ISMRMRD::IsmrmrdHeader xml;
  SideArrays arrays;
  {
    const H5Id file = openIsmrmrdFile(path, group);
    xml = parseHeader(file.id, path, group);
    arrays = readSideArrays(file.id, path, group);
  }
  Dataset d;
  d.source = path;
  EncodingFacts facts;
  d.header = headerFromXml(xml, path, facts);
  readAcquisitions(path, group, facts, repetition, progress, d);
  attachSideArrays(std::move(arrays), path, d);
  d.validate();
  return d;
}

}  // namespace larmor::io
