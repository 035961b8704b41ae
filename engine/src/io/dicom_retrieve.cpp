// Retrieve a series from a PACS (dicom_query.hpp): C-GET in the Study Root Query/Retrieve Information Model
// (PS3.4 C.4.3, C.6.2), on one association with the Study Root FIND context (to find the series' study and
// how many instances the PACS announces) and storage contexts in the SCP role (PS3.7 D.3.3.4, role selection)
// on which the PACS sends the instances as C-STORE sub-operations. C-GET statuses (PS3.4 C.4.3.1.4): 0xFF00
// pending, 0x0000 success, 0xB000 some sub-operations failed, 0xFE00 cancelled, 0xA701/0xA702 out of
// resources, 0xA900 identifier does not match, 0xAA00-0xAA03 none of the frames, 0xCxxx unable to process.
// Each instance is written as received (its data set in the presentation context's transfer syntax, with a
// fresh Part 10 meta header) to UID.dcm.part and renamed to UID.dcm, in a temporary folder that is renamed
// onto the target at the end: the target is absent or empty before, whole after, and nothing on failure.
#include "larmor/io/dicom_query.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "larmor/io/output_safety.hpp"
#include "larmor/util/error.hpp"
#include "larmor/util/temp_registry.hpp"

#include <dcmtk/config/osconfig.h>  // must come first: DCMTK's build configuration
#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcfilefo.h>
#include <dcmtk/dcmdata/dcuid.h>
#include <dcmtk/dcmnet/diutil.h>

#include "dicom_qr.hpp"

namespace larmor::io {

namespace fs = std::filesystem;

namespace {

/// The target folder as an absolute path; Error unless it is absent or an empty folder whose parent we
/// may write into.
fs::path checkTarget(const std::string& folder) {
  require(!folder.empty(), "retrieve: name the folder to write the series into");
  fs::path t = fs::absolute(fs::path(folder)).lexically_normal();
  if (!t.has_filename()) t = t.parent_path();  // "dir/" -> "dir"
  std::error_code ec;
  const auto st = fs::symlink_status(t, ec);
  if (fs::exists(st)) {
    require(fs::is_directory(st), folder + ": exists and is not a folder; retrieve writes into a new or empty folder");
    require(fs::is_empty(t, ec) && !ec, folder + ": exists and is not empty; retrieve writes only into a new or empty "
                                                 "folder (nothing in it was touched)");
  }
  requireWritableFolder(t.parent_path().string(), folder);
  return t;
}

/// The temporary folder the series is written into; removed unless renamed into place.
struct TempFolder {
  Temporary t;
  bool kept = false;
  TempFolder(const fs::path& target, const std::string& folder) : t(reserveTemporary(target.string(), TempKind::Directory)) {
    std::error_code ec;
    if (!fs::create_directory(t.path, ec)) {
      releaseTemporary(t);
      throw Error(folder + ": cannot create a temporary folder next to it (" + ec.message() + ")");
    }
  }
  ~TempFolder() {
    if (!kept) {
      std::error_code ec;
      fs::remove_all(t.path, ec);
    }
    releaseTemporary(t);
  }
};

/// Writes one received instance into `dir`; returns its path. Error when its SOP Instance UID is missing or
/// invalid, it came twice, or it cannot be written.
std::string writeInstance(std::unique_ptr<DcmDataset> d, const fs::path& dir, const std::string& pacs) {
  OFString uid;
  d->findAndGetOFString(DCM_SOPInstanceUID, uid);
  require(detail::validUid(uid.c_str()), pacs + " sent an instance without a valid SOP Instance UID (\"" +
                                             std::string(uid.c_str()).substr(0, 80) + "\")");
  const fs::path file = dir / (std::string(uid.c_str()) + ".dcm");
  const fs::path part = dir / (std::string(uid.c_str()) + ".dcm.part");
  require(!fs::exists(file), pacs + " sent the instance " + uid.c_str() + " twice");
  E_TransferSyntax xfer = d->getOriginalXfer();
  if (xfer == EXS_Unknown) xfer = EXS_LittleEndianExplicit;
  DcmFileFormat ff(d.release(), OFFalse);  // takes the data set over
  const OFCondition c = ff.saveFile(part.c_str(), xfer);
  if (c.bad() || std::rename(part.c_str(), file.c_str()) != 0) {
    const std::string why = c.bad() ? std::string(c.text()) : std::strerror(errno);
    std::error_code ec;
    fs::remove(part, ec);
    throw Error(file.string() + ": cannot write the retrieved instance (" + why + ")");
  }
  return file.string();
}

/// The series' study and announced instance count (a SERIES C-FIND with its UID); Error when unknown.
QueryRow lookUpSeries(detail::QrScu& scu, const DicomNode& n, const std::string& seriesUid, const std::string& studyUid) {
  QueryFilters f;
  f.seriesUid = seriesUid;
  DcmDataset keys = detail::seriesKeys(f, studyUid);
  const std::vector<QueryRow> rows = detail::find(scu, n, keys);
  for (const auto& r : rows)
    if (r.seriesUid == seriesUid && detail::validUid(r.studyUid)) return r;
  throw Error("PACS " + toString(n) + " has no series " + seriesUid + (studyUid.empty() ? "" : " in study " + studyUid) +
              " (C-FIND found " + (rows.empty() ? "nothing" : "no match with a study UID") + ")");
}

/// After the C-GET: one Error line for whatever went wrong (the network, a status, missing instances).
void checkGet(detail::QrScu& scu, const OFCondition& c, const detail::LogScope& log, const DicomNode& n,
              const QueryRow& series, std::size_t received) {
  const std::string pacs = "PACS " + toString(n);
  scu.rethrow();
  if (scu.cancelled) throw Cancelled();
  if (c.bad()) {
    if (detail::isTimeout(c, scu.layer()))
      throw Error(pacs + " did not answer C-GET within " + std::to_string(n.timeoutSeconds) + " s (after " +
                  std::to_string(received) + " instances)");
    if (c == DUL_PEERABORTEDASSOCIATION)
      throw Error(pacs + " aborted the association on the C-GET after " + std::to_string(received) +
                  " instances (does it allow retrieves from the calling AE title \"" + n.callingAeTitle + "\"?)");
    throw Error(pacs + ": C-GET failed after " + std::to_string(received) + " instances (" + detail::reasonOf(c, log) + ")");
  }
  const Uint16 s = scu.getStatus;
  if (scu.getFailed > 0 || s == 0xB000)
    throw Error(pacs + " could not send " + std::to_string(scu.getFailed) + " instance(s) of series " + series.seriesUid +
                " (status " + detail::hex4(s) + "; their SOP class or transfer syntax may not be among those accepted)");
  if (s != 0x0000)
    throw Error(pacs + " failed the C-GET of series " + series.seriesUid + " (status " + detail::hex4(s) + " " +
                DU_cgetStatusString(s) + ")");
  if (received == 0) throw Error(pacs + " sent no instance of series " + series.seriesUid);
  if (series.instances > 0 && received < static_cast<std::size_t>(series.instances))
    throw Error(pacs + " sent " + std::to_string(received) + " of the " + std::to_string(series.instances) +
                " instances it announced for series " + series.seriesUid);
}

/// The association, the series' look-up, the C-GET into a temporary folder renamed onto `target`; the
/// files written (named as in the temporary folder) into `files`. Returns the series' row.
QueryRow getSeries(detail::QrScu& scu, detail::DeadlineTransportLayer& layer, const DicomNode& n,
                   const std::string& seriesUid, const std::string& studyUid, const fs::path& target,
                   const std::string& folder, std::vector<std::string>& files) {
  const std::string pacs = "PACS " + toString(n);
  layer.deadline().arm(n.timeoutSeconds);
  detail::associate(scu, layer, n, "C-GET");
  detail::AssociationGuard guard{scu, layer, n.timeoutSeconds};
  const QueryRow series = lookUpSeries(scu, n, seriesUid, studyUid);
  const T_ASC_PresentationContextID pc = scu.findPresentationContextID(UID_GETStudyRootQueryRetrieveInformationModel, "");
  if (pc == 0) throw Error(pacs + " does not accept C-GET in the Study Root information model");

  TempFolder temp(target, folder);
  scu.onInstance = [&](std::unique_ptr<DcmDataset> d) -> Uint16 {
    files.push_back(writeInstance(std::move(d), temp.t.path, pacs));
    const int total = std::max<int>(series.instances, static_cast<int>(files.size()));
    scu.progress().report(static_cast<double>(files.size()) / total,
                          "received " + std::to_string(files.size()) + "/" + std::to_string(total) + " instances");
    return 0x0000;
  };
  DcmDataset keys;
  keys.putAndInsertString(DCM_QueryRetrieveLevel, "SERIES");
  keys.putAndInsertString(DCM_StudyInstanceUID, series.studyUid.c_str());
  keys.putAndInsertString(DCM_SeriesInstanceUID, seriesUid.c_str());
  detail::LogScope log;
  layer.deadline().arm(n.timeoutSeconds);
  const OFCondition c = scu.sendCGETRequest(pc, &keys, nullptr);
  checkGet(scu, c, log, n, series, files.size());
  if (std::rename(temp.t.path.c_str(), target.c_str()) != 0)
    throw Error(folder + ": cannot rename the retrieved series into place (" + std::strerror(errno) + ")");
  temp.kept = true;
  return series;
}

}  // namespace

RetrieveReport retrieve(const DicomNode& n, const std::string& seriesUid, const std::string& folder,
                        const std::string& studyUid, const Progress& progress) {
  require(detail::validUid(seriesUid), "retrieve: \"" + seriesUid + "\" is not a series UID (digits and dots, at most 64)");
  require(studyUid.empty() || detail::validUid(studyUid), "retrieve: \"" + studyUid + "\" is not a study UID");
  const fs::path target = checkTarget(folder);
  progress.checkCancelled();

  detail::DeadlineTransportLayer layer;  // outlives scu, which uses it
  detail::QrScu scu(layer, n, progress);
  detail::configure(scu, n);
  detail::addQueryContexts(scu, true);
  std::vector<std::string> files;
  const QueryRow series = detail::cancellable(layer, progress, [&] {
    return getSeries(scu, layer, n, seriesUid, studyUid, target, folder, files);
  });
  RetrieveReport r;
  r.node = toString(n);
  r.folder = target.string();
  r.seriesUid = seriesUid;
  r.studyUid = series.studyUid;
  r.announced = series.instances;
  r.warnings = scu.getWarnings;
  for (const auto& f : files) r.files.push_back((target / fs::path(f).filename()).string());
  std::sort(r.files.begin(), r.files.end());
  return r;
}

}  // namespace larmor::io
