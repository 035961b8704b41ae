// libFuzzer target for BART .cfl/.hdr k-space through io::loadDataset (the path `larmor-cli recon`
// takes). Input: HDR |SPLIT| CFL [|SPLIT| TRAJ_HDR |SPLIT| TRAJ_CFL]; with the trajectory parts the
// load is non-Cartesian (LoadOptions::trajectoryPath).
#include <cstdint>

#include "fuzz_common.hpp"
#include "larmor/io/dataset_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace larmor;
  const auto parts = fuzz::splitInput(data, size, 4);
  const std::string& dir = fuzz::scratchDir();
  fuzz::writeFile(dir + "/k.hdr", parts[0]);
  fuzz::writeFile(dir + "/k.cfl", parts.size() > 1 ? parts[1] : std::string_view());
  io::LoadOptions options;
  if (parts.size() > 2) {
    fuzz::writeFile(dir + "/t.hdr", parts[2]);
    fuzz::writeFile(dir + "/t.cfl", parts.size() > 3 ? parts[3] : std::string_view());
    options.trajectoryPath = dir + "/t.cfl";
  }
  try {
    (void)io::loadDataset(dir + "/k.cfl", options);
  } catch (const Error&) {
    // bad input, reported as it should be
  }
  return 0;
}
