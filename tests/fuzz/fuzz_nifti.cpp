// libFuzzer target for NIfTI-1 reference images through io::readNiftiImage (what `larmor-cli compare
// --ref x.nii` and the GUI's "Reference file…" read). Input: the whole file; a first byte pair of gzip's
// magic (1f 8b) is written as .nii.gz, everything else as .nii (zlib's gzread reads both alike).
#include <cstdint>

#include "fuzz_common.hpp"
#include "larmor/io/nifti.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace larmor;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const bool gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  const std::string path = fuzz::scratchDir() + (gz ? "/ref.nii.gz" : "/ref.nii");
  fuzz::writeFile(path, bytes);
  try {
    (void)io::readNiftiImage(path);
  } catch (const Error&) {
    // bad input, reported as it should be
  }
  return 0;
}
