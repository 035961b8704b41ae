// larmor-h5check FILE GROUP REPETITION: reads an ISMRMRD file's structure the way Larmor does (header and
// its heap collection, array shapes and types, the acquisition dataset's layout, every chunk's place and
// its first and last records: not the samples, which would double the memory and time of a large file;
// io::checkIsmrmrdStructure), in a process of its own,
// so that a crash inside libhdf5 (1.10, Debian 12: several found by fuzz_ismrmrd, docs/dicom.md) ends
// this process and not the workstation. The engine starts it through the crash sandbox
// (larmor/util/subprocess_sandbox.hpp) before reading a file in-process (engine/src/io/ismrmrd_reader.cpp):
// exit 0 = the file reads; exit kSandboxErrorExit = larmor::Error, its text on stdout after
// kH5CheckErrorMarker; a signal = libhdf5 crashed. Not meant to be run by hand.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "larmor/io/ismrmrd.hpp"
#include "larmor/util/error.hpp"
#include "larmor/util/subprocess_sandbox.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: larmor-h5check FILE GROUP REPETITION (started by Larmor, not by hand)\n");
    return 2;
  }
  const std::string path = argv[1], group = argv[2];
  const int repetition = std::atoi(argv[3]);
  larmor::applySandboxLimits();
  try {
    (void)repetition;  // kept in the command line: the structure does not depend on it
    larmor::io::checkIsmrmrdStructure(path, group);
    return 0;
  } catch (const larmor::Error& e) {
    return larmor::reportSandboxError(larmor::io::kH5CheckErrorMarker, e.what());
  } catch (const std::exception& e) {
    std::printf("%s: %s", path.c_str(), e.what());
    return 4;
  }
}
