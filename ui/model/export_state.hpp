#pragma once
// Exports: where the last one went and how it ended, the file name an export dialog proposes
// ("<data>-<method>" in the folder of the last export, else the data's folder), the patient and study
// fields of a study's DICOM series (kept per study, so its series share one study and number on), and the
// one series-description rule of Export and Send to PACS.
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

/// The patient and study fields of the DICOM series exported from one study (one raw-data file, or the
/// phantom): set by the user, kept while the session lasts; every export of the study shares its UID.
struct StudyFields {
  std::string patientName, patientId, accessionNumber, studyDescription;  ///< empty: the header's
  std::string studyUid;      ///< made at the study's first DICOM export
  int nextSeriesNumber = 1;  ///< the SeriesNumber of the study's next series
};

/// The fields an export of data with this header starts from (the header's names; no accession).
StudyFields studyFieldsFrom(const Header& header);

/// The series description of Export and Send to PACS alike: "<protocol> <method>" ("t1_se_tra GRAPPA R4";
/// the method alone when there is no protocol), then " frame 3/4" when one frame of several is written
/// (`frame` empty: every frame, or a single-frame file). At most 64 characters.
std::string seriesDescription(const std::string& protocol, const std::string& method, const std::string& frame);

/// "<folder>/<data name without extension, or phantom>[-<method of the run>]" without a suffix. The
/// folder: `lastFolder`, else `outputFolder` (Larmor's output folder: never the raw data's folder by default).
std::string defaultOutputBase(const DataSource& source, const RunRecord* run, const std::string& lastFolder,
                              const std::string& outputFolder);

}  // namespace larmor::model
