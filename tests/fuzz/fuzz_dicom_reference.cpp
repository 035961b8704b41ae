// libFuzzer target for DICOM reference images through io::readDicomSeriesImage (what `larmor-cli
// compare --ref DIR` or `--ref x.dcm` and the GUI's "Reference file…" read): every .dcm file of a
// folder with the first one's SeriesInstanceUID, slices in InstanceNumber order. Input:
// DCM [|SPLIT| DCM ...] (at most 4 files), written as a fresh folder's 0001.dcm, 0002.dcm, ...; the
// series is read from the folder and from its first file.
#include <cstdint>
#include <cstdio>
#include <filesystem>

#include "fuzz_common.hpp"
#include "larmor/io/dicom.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace larmor;
  const auto parts = fuzz::splitInput(data, size, 4);
  const std::string dir = fuzz::scratchDir() + "/series";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);  // no file of the previous input may join this series
  std::filesystem::create_directories(dir);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "/%04zu.dcm", i + 1);
    fuzz::writeFile(dir + name, parts[i]);
  }
  for (const std::string& ref : {dir, dir + "/0001.dcm"}) {
    try {
      (void)io::readDicomSeriesImage(ref);
    } catch (const Error&) {
      // bad input, reported as it should be
    }
  }
  return 0;
}
