#pragma once
// Output safety: the rules every writer of Larmor (larmor-cli's recon, compare --map, simulate, --json;
// the GUI's export) checks BEFORE any reconstruction work, so that a user's data are never destroyed and
// a run never fails after hours of work for a reason known at the start (docs/reliability.md).
//  1. No output may be an input: compared by device and inode (stat, so hard links and symlinks are
//     caught) and by canonical path (for outputs not there yet). A .cfl/.hdr path stands for both members
//     of its pair, on either side; a DICOM output folder may not hold an input.
//  2. Outputs may not collide with each other (an image k.cfl and a JSON k.hdr).
//  3. A non-empty folder is replaced only when it is a previous Larmor DICOM export: every entry in it is
//     Larmor's (larmor/io/series_folder.hpp): the marker file .larmor-export, and .dcm files that the
//     marker lists and that carry the private creator "LARMOR" in (0019,0010); for a marker without a list
//     or no marker (older exports), every file a .dcm with that private creator. Else one error naming the
//     file; nothing in the folder is touched.
//  4. Every output's parent folder exists and is writable; the planned image fits the format (DICOM Rows
//     and Columns <= 65535, NIfTI-1 dimensions <= 32767, PNG width/height <= 2^31-1 and one IDAT chunk);
//     the file system has room for the estimated size (statvfs, f_bavail).
//  5. An existing file is replaced only when it is empty or Larmor's own earlier output of the same kind,
//     recognised by the provenance its writer puts inside it: JSON, a top-level "software": "Larmor" (or a
//     settings file's "larmor_settings" / a GUI session's "larmor_session"); a BART pair, the header's
//     "# Creator" section naming Larmor; NIfTI, descrip beginning "Larmor"; PNG, a tEXt "Software" chunk
//     beginning "Larmor"; ISMRMRD, Larmor's user parameter larmor_trajectory in the XML header. A file is
//     read only when it is a regular file (a FIFO would block), and only a bounded prefix of it.
// Every failure is one larmor::Error line naming the path and the reason.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "larmor/array/array.hpp"
#include "larmor/io/export.hpp"

namespace larmor::io {

/// The marker file in every DICOM series folder Larmor writes.
inline constexpr const char* kExportMarker = ".larmor-export";
/// The provenance inside Larmor's files (rule 5): the value of a JSON report's "software" key, the first word
/// of a BART header's "# Creator" section, of a NIfTI descrip and of a PNG's tEXt "Software" chunk.
inline constexpr const char* kSoftwareName = "Larmor";
/// "Larmor VERSION": what the writers put after those keys.
std::string softwareText();
/// `j` with the JSON marker (a top-level "software": "Larmor", and "version" when absent), for every JSON
/// file Larmor writes; a non-object is returned as it is.
nlohmann::json withProvenance(nlohmann::json j);

/// What an output holds: an image (writeImageOutput: DICOM, NIfTI, .cfl, PNG), a JSON report, a PNG
/// error map (or chart), or an array that is not an image: `simulate`'s k-space (.h5 or .cfl) and
/// trajectory, `maps`' coil maps (.cfl; a path without an extension stands for its .cfl/.hdr pair).
enum class OutputRole { Image, Json, Map, Kspace };

struct PlannedOutput {
  std::string path;
  OutputRole role = OutputRole::Image;
  /// Image: the planned image [x, y, z, 1, slices] (empty shape: unknown, limits and size not checked);
  /// Map: [x, y, planes] of the map.
  Shape image;
  /// Image: the export options (components, window) that writeImageOutput will get.
  ExportOptions options;
  /// Estimated bytes; 0 = estimate from `image` (or a small file for JSON).
  std::uintmax_t bytes = 0;
};

/// The files `path` stands for: FILE.cfl and FILE.hdr for a .cfl/.hdr path (or a path without an
/// extension, which readCfl completes), else `path` itself.
std::vector<std::string> pathMembers(const std::string& path);

/// The files an output writes: a .cfl/.hdr path (and for k-space, a path without an extension, which
/// writeCfl completes) writes both members of the pair; anything else the path itself.
std::vector<std::string> outputMembers(const std::string& path, OutputRole role);

/// Empty when `file` is absent, empty, or Larmor's own earlier output of the kind `role` and the file's
/// name give (rule 5); else the reason it is not, e.g. "is not JSON written by Larmor".
std::string whyNotReplaceable(const std::string& file, OutputRole role);

/// Throws Error("OUT: exists and REASON; ...") unless every member of `output` may be replaced (rule 5).
/// DICOM folders have their own rule (exportFolderState).
void requireReplaceable(const std::string& output, OutputRole role);

/// True when `a` and `b` are the same file: same device and inode, or the same canonical path.
bool sameFile(const std::string& a, const std::string& b);

/// Throws Error("OUT: is the input IN; ...") when any member of `output` is any member of an input, or
/// when a DICOM output folder holds an input.
void requireNotAnInput(const std::string& output, OutputRole role, const std::vector<std::string>& inputs);

/// The state of a DICOM output folder. Throws Error naming the folder when it is neither absent, empty,
/// nor a previous Larmor export (the folder's files are left as they are).
enum class FolderState { Absent, Empty, PreviousExport };
FolderState exportFolderState(const std::string& folder, const std::string& pathForMessages);

/// True when `file` is a DICOM file Larmor wrote: (0019,0010) LO "LARMOR" in its first 64 KiB.
bool isLarmorDicomFile(const std::string& file);

/// Throws unless `dir` exists, is a directory and is writable by us.
void requireWritableFolder(const std::string& dir, const std::string& pathForMessages);

/// Throws unless the file system holding `dir` has at least `bytes` free for us.
void requireFreeSpace(const std::string& dir, std::uintmax_t bytes, const std::string& pathForMessages);

/// Throws when an image of `shape` ([x, y, z, 1, slices]) cannot be stored as `kind`.
void checkFormatLimits(OutputKind kind, const Shape& shape, const std::string& path, int components = 1);

/// A generous estimate of the bytes written for an image of `shape`.
std::uintmax_t estimateImageBytes(OutputKind kind, const Shape& shape, int components, bool niftiComplex);

/// All the rules above, for every output against every input and every other output: every path the
/// command reads (data, trajectory, reference, coil maps, settings, manifest) belongs in `inputs`. Writes,
/// removes and renames nothing (the temporaries of killed runs are cleaned up from their run records:
/// larmor/util/temp_registry.hpp).
void checkOutputs(const std::vector<PlannedOutput>& outputs, const std::vector<std::string>& inputs);

}  // namespace larmor::io
