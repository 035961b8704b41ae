#pragma once
// Query/retrieve from a PACS as an SCU (DCMTK's dcmnet, built with LARMOR_IO): C-FIND (PS3.7 9.1.2) and C-GET
// (PS3.7 9.1.3) in the Study Root Query/Retrieve Information Model (PS3.4 C.6.2). A query is hierarchical
// (PS3.4 C.4.1.3.1): STUDY level with the patient and study filters; SERIES level is that study query and
// then, for each study found, a SERIES query with its StudyInstanceUID (and the modality filter). A retrieve
// finds the series' study first (a SERIES C-FIND with the SeriesInstanceUID), then C-GETs the series on the
// same association: the PACS sends every instance back as C-STORE sub-operations on that association (no
// second port to open), on presentation contexts we propose for MR, Enhanced MR and secondary capture
// storage with the SCP role (PS3.7 D.3.3.4). The instances go into a new folder that appears whole: written
// into a temporary folder beside it (larmor/util/temp_registry.hpp) and renamed onto the target, which must
// be absent or an empty folder (a user's files are never replaced). The node's timeout bounds the
// association, the C-FIND, and each message of the C-GET (each instance, each response): a PACS that goes
// silent, trickles or vanishes is one Error line, never a hang. docs/dicom.md ("Query/retrieve").
#include <cstddef>
#include <string>
#include <vector>

#include "larmor/io/dicom_send.hpp"
#include "larmor/util/progress.hpp"

namespace larmor::io {

enum class QueryLevel { Study, Series };

/// What to look for. Empty fields match everything; PatientName may hold the wildcards * and ?.
struct QueryFilters {
  QueryLevel level = QueryLevel::Series;
  std::string patientId, patientName;
  std::string studyDate;  ///< YYYYMMDD, or a range YYYYMMDD-YYYYMMDD, -YYYYMMDD or YYYYMMDD-
  std::string modality;   ///< e.g. MR (series: Modality; study: ModalitiesInStudy)
  std::string accession;  ///< AccessionNumber
  std::string studyUid;   ///< restrict to one study
  std::string seriesUid;  ///< series level: restrict to one series
};

/// One study (STUDY level: the series fields empty) or one series of a study, as the PACS answered.
struct QueryRow {
  std::string patientName, patientId, patientBirthDate;
  std::string studyUid, studyDate, studyTime, studyDescription, accession;
  std::string seriesUid, seriesNumber, seriesDescription, modality;  ///< study level: modality = ModalitiesInStudy
  int instances = -1;  ///< NumberOfSeriesRelatedInstances (study: NumberOfStudyRelatedInstances), -1: not given
  int series = -1;     ///< study level: NumberOfStudyRelatedSeries, -1: not given
};

/// Checks the filters (date form, no backslash, lengths); throws Error naming the field.
void checkQueryFilters(const QueryFilters& f);

/// C-FIND at the filters' level. Rows in the order the PACS answered (series: study by study). Throws a
/// one-line Error when the node cannot be reached, rejects the association or the query (status), answers
/// nothing within the timeout, or breaks the association. A cancelled Progress throws Cancelled.
std::vector<QueryRow> query(const DicomNode& node, const QueryFilters& filters, const Progress& progress = {});

struct RetrieveReport {
  std::string node;                ///< "AET@host:port"
  std::string folder;              ///< where the series now is
  std::string seriesUid, studyUid;
  std::vector<std::string> files;  ///< the instances written, sorted by name
  int announced = -1;              ///< the PACS's NumberOfSeriesRelatedInstances (-1: not given)
  int warnings = 0;                ///< C-GET sub-operations the PACS counted as warnings
  /// "retrieved 8 instances of series UID from ORTHANC@localhost:4242 into DIR".
  std::string summary() const;
};

/// C-GET of one series into `folder` (absent, or an empty folder; its parent must exist). `studyUid` may be
/// empty: it is then looked up with a SERIES C-FIND. All or nothing: on any failure or cancellation nothing
/// is left at `folder`. Each instance's file is named after its SOP Instance UID ("UID.dcm") and holds the
/// data set as received (the transfer syntax of its presentation context). Progress: instances received /
/// instances announced. Throws a one-line Error when the series is unknown to the PACS, the PACS refuses or
/// fails the C-GET, sends fewer instances than it announced, an instance has no valid SOP Instance UID,
/// or the network fails or times out; Cancelled when the token is cancelled (between messages).
RetrieveReport retrieve(const DicomNode& node, const std::string& seriesUid, const std::string& folder,
                        const std::string& studyUid = {}, const Progress& progress = {});

/// The storage SOP classes a retrieve accepts (MR, Enhanced MR, secondary capture...), for the docs and tests.
std::vector<std::string> retrievableSopClasses();

}  // namespace larmor::io
