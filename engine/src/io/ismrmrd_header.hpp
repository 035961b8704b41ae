#pragma once
// The ISMRMRD file and its XML header (internal to the engine's ISMRMRD reader): opening the file
// read-only after structural checks, reading /group/xml, and turning the header into Larmor's Header.
#include <ismrmrd/xml.h>

#include <string>
#include <vector>

#include "hdf5_guards.hpp"
#include "larmor/data/dataset.hpp"

namespace larmor::io::detail {

/// Error("PATH: WHAT"), the form of every reader error.
[[noreturn]] inline void failFile(const std::string& path, const std::string& what) {
  throw Error(path + ": " + what);
}

/// `path` opened read-only with HDF5, after checking that it is an HDF5 file holding /group/xml. The global
/// heaps are checked where they are read: the XML header's collection (requireStringLengthFits) and the
/// acquisitions' (ismrmrd_records.cpp).
H5Id openIsmrmrdFile(const std::string& path, const std::string& group);

/// /group/xml of an open file, parsed.
ISMRMRD::IsmrmrdHeader parseHeader(hid_t file, const std::string& path, const std::string& group);

/// /group/xml of an open file as text (what the streaming client sends as the HEADER message).
std::string headerText(hid_t file, const std::string& path, const std::string& group);

/// XML header text parsed, with the same checks as a file's (`path` names it in errors: a file or a stream).
ISMRMRD::IsmrmrdHeader parseHeaderText(const std::string& xml, const std::string& path);

/// The value of string user parameter `name`, or nullptr.
const std::string* findStringParameter(const ISMRMRD::IsmrmrdHeader& h, const std::string& name);

/// What places the acquisitions, besides the Header.
struct EncodingFacts {
  index_t center1 = 0, center2 = 0;  ///< the k-space centre lines (encoding limits, else the middle)
  index_t slices = 1;                ///< the slices the encoding limits announce
  bool slicesDeclared = false;       ///< the encoding limits have a <slice> entry (indices are checked)
  bool trajectoryInCycles = false;   ///< the file says its trajectory is in cycles per FOV
  /// The encoding limits' maximum of contrast, phase, repetition, set, average (-1: not declared): every
  /// acquisition's index is checked against them.
  int maxContrast = -1, maxPhase = -1, maxRepetition = -1, maxSet = -1, maxAverage = -1;
  std::vector<float> echoTimesMs;    ///< sequenceParameters TE (ms), by contrast; empty when absent
  /// pe1/pe2 encoding limits that claim partial Fourier (the centre not in the middle of minimum..maximum):
  /// their maximum, which every acquisition's step must respect (-1: no claim).
  int partialMax1 = -1, partialMax2 = -1;
};

/// Larmor's Header from the first encoding and the descriptive sections (coils and slices are left to
/// the acquisitions).
Header headerFromXml(const ISMRMRD::IsmrmrdHeader& xml, const std::string& path, EncodingFacts& facts);

}  // namespace larmor::io::detail
