// larmor-h5check FILE GROUP REPETITION: reads an ISMRMRD file the way Larmor does, in a process of its own,
// so that a crash inside libhdf5 (1.10, Debian 12: several found by fuzz_ismrmrd, docs/dicom.md) ends
// this process and not the workstation. The engine starts it before reading a file in-process
// (engine/src/io/ismrmrd_reader.cpp, `sandboxedCheck`): exit 0 = the file reads; exit 3 = larmor::Error, its
// text on stdout after kH5CheckErrorMarker; a signal = libhdf5 crashed. Not meant to be run by hand.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>

#include "larmor/io/ismrmrd.hpp"
#include "larmor/util/error.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LARMOR_H5CHECK_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define LARMOR_H5CHECK_ASAN 1
#endif

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: larmor-h5check FILE GROUP REPETITION (started by Larmor, not by hand)\n");
    return 2;
  }
  const std::string path = argv[1], group = argv[2];
  const int repetition = std::atoi(argv[3]);
#ifndef LARMOR_H5CHECK_ASAN
  // An allocation bomb in a damaged file fails here rather than swapping the machine: room for the data
  // many times over (AddressSanitizer builds reserve terabytes of shadow space, so not there).
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  const rlim_t limit = static_cast<rlim_t>(4) * 1024 * 1024 * 1024 + (ec ? 0 : static_cast<rlim_t>(bytes) * 16);
  const rlimit rl{limit, limit};
  setrlimit(RLIMIT_AS, &rl);
#endif
  try {
    (void)larmor::io::readIsmrmrd(path, group, {}, repetition);
    return 0;
  } catch (const larmor::Error& e) {
    // After a marker: anything the libraries wrote to stderr before it is not part of the message.
    std::fflush(stderr);
    std::printf("\n%s%s", larmor::io::kH5CheckErrorMarker, e.what());
    return 3;
  } catch (const std::exception& e) {
    std::printf("%s: %s", path.c_str(), e.what());
    return 4;
  }
}
