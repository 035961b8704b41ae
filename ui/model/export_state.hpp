#pragma once
// Exports: where the last one went and how it ended, and the file name an export dialog proposes
// ("<data>-<method>" in the folder of the last export, else the data's folder).
#include <optional>
#include <string>

#include "dataset_state.hpp"
#include "run_history.hpp"

namespace larmor::model {

struct ExportOutcome {
  std::string kind;  ///< "png", "cfl", "dicom", "nifti", "screenshot"
  std::string path;
  bool ok = false;
  std::string message;  ///< the error, or what was written
};

struct ExportState {
  std::string lastFolder;  ///< of the last successful export of these data; empty: none yet
  std::optional<ExportOutcome> last;
};

/// "<folder>/<data name without extension, or phantom>[-<method of the run>]" without a suffix. The
/// folder: `lastFolder`, else `outputFolder` (Larmor's output folder: never the raw data's folder by default).
std::string defaultOutputBase(const DataSource& source, const RunRecord* run, const std::string& lastFolder,
                              const std::string& outputFolder);

}  // namespace larmor::model
