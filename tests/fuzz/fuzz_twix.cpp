// libFuzzer target for Siemens twix (.dat) through io::loadDataset. Input: the .dat file, optionally
// followed by |SPLIT| and anything non-empty: then the load is non-Cartesian with the computed radial
// trajectory (LoadOptions::trajectoryPath = "radial:180"), which exercises the profile path too.
// Seeds: small VB and VD/VE files from tests/support/twix_writer.hpp (make_corpus.cpp).
#include <cstdint>

#include "fuzz_common.hpp"
#include "larmor/io/dataset_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace larmor;
  const auto parts = fuzz::splitInput(data, size, 2);
  const std::string& dir = fuzz::scratchDir();
  fuzz::writeFile(dir + "/k.dat", parts[0]);
  io::LoadOptions options;
  if (parts.size() > 1 && !parts[1].empty()) options.trajectoryPath = "radial:180";
  try {
    (void)io::loadDataset(dir + "/k.dat", options);
  } catch (const Error&) {
    // bad input, reported as it should be
  }
  return 0;
}
