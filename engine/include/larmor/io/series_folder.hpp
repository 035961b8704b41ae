#pragma once
// A DICOM series folder that Larmor wrote, and only what Larmor wrote in it. The marker file
// .larmor-export (output_safety.hpp, kExportMarker) lists, after a line "files:", every file the export
// put into the folder. An update (a later export into the same folder) replaces the folder only when
// every entry in it is Larmor's: listed in the marker and, for a .dcm, carrying Larmor's private creator
// (a user's file renamed over one of ours is not ours); a marker from before the list, or a folder
// without one, counts a .dcm as Larmor's by the private creator alone. Anything else (a scanner's
// IM_0001.dcm, a text file named notes.dcm, a subfolder) is refused before any work, naming the file,
// and after the swap only the files Larmor wrote are removed from the previous series.
#include <string>
#include <vector>

namespace larmor::io {

/// The marker's text for a series of `names` (file names in the folder).
std::string exportMarkerText(const std::vector<std::string>& names);

/// Throws Error("PATH: the folder holds 'NAME', which Larmor did not write; ...") unless every entry of
/// the existing `folder` is Larmor's (see above). An absent or empty folder passes.
void requireOnlyLarmorFiles(const std::string& folder, const std::string& pathForMessages);

/// Removes from a previous series (moved aside during an update) the files Larmor wrote, its marker, and
/// the folder when nothing else is left. Returns the names of what was left (an entry that appeared
/// after the check; empty normally).
std::vector<std::string> removeLarmorSeries(const std::string& folder);

}  // namespace larmor::io
