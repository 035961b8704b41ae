// libFuzzer target for RawArray (.ra) k-space through io::loadDataset. Input: the .ra file, optionally
// followed by |SPLIT| and a .ra trajectory (then the load is non-Cartesian).
#include <cstdint>

#include "fuzz_common.hpp"
#include "larmor/io/dataset_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace larmor;
  const auto parts = fuzz::splitInput(data, size, 2);
  const std::string& dir = fuzz::scratchDir();
  fuzz::writeFile(dir + "/k.ra", parts[0]);
  io::LoadOptions options;
  if (parts.size() > 1) {
    fuzz::writeFile(dir + "/t.ra", parts[1]);
    options.trajectoryPath = dir + "/t.ra";
  }
  try {
    (void)io::loadDataset(dir + "/k.ra", options);
  } catch (const Error&) {
    // bad input, reported as it should be
  }
  return 0;
}
