// Query a PACS (dicom_query.hpp): C-FIND in the Study Root Query/Retrieve Information Model, PS3.4 C.6.2.1
// (the keys of each level: C.6.2.1.2, Table C.6-5 and C.6-6), PS3.7 9.1.2 (C-FIND: pending responses 0xFF00 /
// 0xFF01 carry one match each, the final one its status: 0x0000 success, 0xFE00 cancelled, 0xA700 out of
// resources, 0xA900 identifier does not match the SOP class, 0xCxxx unable to process). Dates: PS3.4
// C.2.2.2.5 (range matching). Built with and without LARMOR_IO: the text parts always, the networking only
// with DCMTK.
#include "larmor/io/dicom_query.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "larmor/util/error.hpp"

#ifdef LARMOR_HAVE_IO
#include <dcmtk/config/osconfig.h>  // must come first: DCMTK's build configuration
#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcuid.h>
#include <dcmtk/dcmnet/diutil.h>

#include "dicom_qr.hpp"
#endif

namespace larmor::io {

// ---------------------------------------------------------------------------------------------- text

namespace {

bool isDate(const std::string& d) {
  return d.size() == 8 && std::all_of(d.begin(), d.end(), [](unsigned char c) { return std::isdigit(c); });
}

void checkText(const std::string& v, const std::string& what, std::size_t most) {
  require(v.size() <= most, what + " \"" + v + "\": at most " + std::to_string(most) + " characters");
  for (unsigned char c : v)
    require(c >= 0x20 && c != 0x7f && c != '\\', what + " \"" + v + "\": no backslash or control characters");
}

}  // namespace

void checkQueryFilters(const QueryFilters& f) {
  checkText(f.patientId, "--patient-id", 64);
  checkText(f.patientName, "--patient-name", 64 * 5);
  checkText(f.modality, "--modality", 16);
  checkText(f.accession, "--accession", 16);
  checkText(f.studyUid, "the study UID", 64);
  checkText(f.seriesUid, "the series UID", 64);
  const std::string& d = f.studyDate;
  if (d.empty()) return;
  const auto dash = d.find('-');
  const bool ok = dash == std::string::npos
                      ? isDate(d)
                      : d.size() > 1 && (dash == 0 || isDate(d.substr(0, dash))) &&
                            (dash + 1 == d.size() || isDate(d.substr(dash + 1)));
  require(ok, "--study-date \"" + d + "\": give YYYYMMDD or a range YYYYMMDD-YYYYMMDD (either end may be left open)");
}

std::string RetrieveReport::summary() const {
  std::ostringstream s;
  s << "retrieved " << files.size() << " instance" << (files.size() == 1 ? "" : "s") << " of series " << seriesUid
    << " from " << node << " into " << folder;
  if (warnings > 0) s << " (" << warnings << " with warnings)";
  return s.str();
}

#ifndef LARMOR_HAVE_IO

std::vector<QueryRow> query(const DicomNode&, const QueryFilters&, const Progress&) {
  throw Error("DICOM networking is not in this build (built without LARMOR_IO)");
}
RetrieveReport retrieve(const DicomNode&, const std::string&, const std::string&, const std::string&, const Progress&) {
  throw Error("DICOM networking is not in this build (built without LARMOR_IO)");
}
std::vector<std::string> retrievableSopClasses() { return {}; }

#else

namespace detail {

// ------------------------------------------------------------------------------ the SCU's handlers

bool cancelRequested(const Progress& p) {
  try {
    p.checkCancelled();
    return false;
  } catch (const Cancelled&) {
    return true;
  }
}

bool QrScu::stopForCancel() {
  if (cancelRequested(progress_)) cancelled = true;
  return cancelled;
}

void QrScu::rethrow() {
  if (error_) std::rethrow_exception(error_);
}

OFCondition QrScu::handleFINDResponse(T_ASC_PresentationContextID presID, QRResponse* response, OFBool& more) {
  layer_.deadline().arm(node_.timeoutSeconds);  // the next response has the whole timeout
  const OFCondition c = DcmSCU::handleFINDResponse(presID, response, more);
  if (more && stopForCancel()) more = OFFalse;
  return c;
}

OFCondition QrScu::handleCGETResponse(T_ASC_PresentationContextID presID, RetrieveResponse* response, OFBool& more) {
  layer_.deadline().arm(node_.timeoutSeconds);
  if (response) {
    getStatus = response->m_status;
    getCompleted = response->m_numberOfCompletedSubops;
    getFailed = response->m_numberOfFailedSubops;
    getWarnings = response->m_numberOfWarningSubops;
  }
  const OFCondition c = DcmSCU::handleCGETResponse(presID, response, more);
  if (more && stopForCancel()) more = OFFalse;
  return c;
}

OFCondition QrScu::handleSTORERequest(T_ASC_PresentationContextID, DcmDataset* instance, OFBool& more, Uint16& status) {
  std::unique_ptr<DcmDataset> owned(instance);  // ours to delete (DcmSCU's contract)
  status = 0xA700;                             // refused: out of resources, unless written
  if (!owned) return DIMSE_NULLKEY;
  if (stopForCancel() || error_) {
    more = OFFalse;
    return EC_Normal;
  }
  try {
    if (onInstance) status = onInstance(std::move(owned));
  } catch (...) {
    error_ = std::current_exception();
    more = OFFalse;
  }
  layer_.deadline().arm(node_.timeoutSeconds);  // the next instance or response has the whole timeout
  return EC_Normal;
}

// ------------------------------------------------------------------------------------- keys, rows

namespace {

void put(DcmDataset& d, const DcmTagKey& tag, const std::string& v = {}) { d.putAndInsertString(tag, v.c_str()); }

std::string text(DcmDataset& d, const DcmTagKey& tag) {
  OFString s;
  if (d.findAndGetOFStringArray(tag, s).bad()) return {};
  std::string v = s.c_str();
  while (!v.empty() && (v.back() == ' ' || v.back() == '\0')) v.pop_back();
  return v;
}

int number(DcmDataset& d, const DcmTagKey& tag) {
  const std::string v = text(d, tag);
  if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789 ") != std::string::npos) return -1;
  return std::stoi(v);
}

QueryRow rowOf(DcmDataset& d, const QueryRow& parent) {
  QueryRow r = parent;
  const auto keep = [&](std::string& field, const DcmTagKey& tag) {
    const std::string v = text(d, tag);
    if (!v.empty()) field = v;
  };
  keep(r.patientName, DCM_PatientName);
  keep(r.patientId, DCM_PatientID);
  keep(r.patientBirthDate, DCM_PatientBirthDate);
  keep(r.studyUid, DCM_StudyInstanceUID);
  keep(r.studyDate, DCM_StudyDate);
  keep(r.studyTime, DCM_StudyTime);
  keep(r.studyDescription, DCM_StudyDescription);
  keep(r.accession, DCM_AccessionNumber);
  r.seriesUid = text(d, DCM_SeriesInstanceUID);
  if (!r.seriesUid.empty()) {
    r.seriesNumber = text(d, DCM_SeriesNumber);
    r.seriesDescription = text(d, DCM_SeriesDescription);
    r.modality = text(d, DCM_Modality);
    r.instances = number(d, DCM_NumberOfSeriesRelatedInstances);
    r.series = -1;
  } else {
    r.modality = text(d, DCM_ModalitiesInStudy);
    r.instances = number(d, DCM_NumberOfStudyRelatedInstances);
    r.series = number(d, DCM_NumberOfStudyRelatedSeries);
  }
  return r;
}

/// The final C-FIND status as words.
std::string findStatus(Uint16 s) { return hex4(s) + " " + DU_cfindStatusString(s); }

}  // namespace

DcmDataset studyKeys(const QueryFilters& f) {
  DcmDataset k;
  put(k, DCM_QueryRetrieveLevel, "STUDY");
  put(k, DCM_PatientName, f.patientName);
  put(k, DCM_PatientID, f.patientId);
  put(k, DCM_PatientBirthDate);
  put(k, DCM_StudyInstanceUID, f.studyUid);
  put(k, DCM_StudyDate, f.studyDate);
  put(k, DCM_StudyTime);
  put(k, DCM_StudyDescription);
  put(k, DCM_AccessionNumber, f.accession);
  put(k, DCM_ModalitiesInStudy, f.level == QueryLevel::Study ? f.modality : std::string());
  put(k, DCM_NumberOfStudyRelatedSeries);
  put(k, DCM_NumberOfStudyRelatedInstances);
  return k;
}

DcmDataset seriesKeys(const QueryFilters& f, const std::string& studyUid) {
  DcmDataset k;
  put(k, DCM_QueryRetrieveLevel, "SERIES");
  put(k, DCM_StudyInstanceUID, studyUid);
  put(k, DCM_SeriesInstanceUID, f.seriesUid);
  put(k, DCM_SeriesNumber);
  put(k, DCM_SeriesDescription);
  put(k, DCM_Modality, f.modality);
  put(k, DCM_NumberOfSeriesRelatedInstances);
  return k;
}

std::vector<QueryRow> find(QrScu& scu, const DicomNode& n, DcmDataset& keys, const QueryRow& parent) {
  const std::string pacs = "PACS " + toString(n);
  const T_ASC_PresentationContextID pc =
      scu.findPresentationContextID(UID_FINDStudyRootQueryRetrieveInformationModel, "");
  if (pc == 0) throw Error(pacs + " does not accept C-FIND in the Study Root information model");
  LogScope log;
  scu.layer().deadline().arm(n.timeoutSeconds);
  OFList<QRResponse*> responses;
  const OFCondition c = scu.sendFINDRequest(pc, &keys, &responses);
  std::vector<QueryRow> rows;
  Uint16 last = 0xFFFF;
  for (QRResponse* r : responses) {
    if (r->m_dataset && DICOM_PENDING_STATUS(r->m_status)) rows.push_back(rowOf(*r->m_dataset, parent));
    last = r->m_status;
    delete r;
  }
  if (scu.cancelled) throw Cancelled();
  if (c.bad()) {
    if (isTimeout(c, scu.layer()))
      throw Error(pacs + " did not answer C-FIND within " + std::to_string(n.timeoutSeconds) + " s");
    if (c == DUL_PEERABORTEDASSOCIATION)
      throw Error(pacs + " aborted the association on the C-FIND (does it allow queries from the calling AE title \"" +
                  n.callingAeTitle + "\"?)");
    throw Error(pacs + ": C-FIND failed (" + reasonOf(c, log) + ")");
  }
  if (last != 0x0000)
    throw Error(pacs + " refused the C-FIND (status " + findStatus(last) + "; does it allow queries from \"" +
                n.callingAeTitle + "\"?)");
  return rows;
}

std::vector<std::string> storageClasses() {
  return {UID_MRImageStorage,
          UID_EnhancedMRImageStorage,
          UID_EnhancedMRColorImageStorage,
          UID_LegacyConvertedEnhancedMRImageStorage,
          UID_SecondaryCaptureImageStorage,
          UID_MultiframeGrayscaleByteSecondaryCaptureImageStorage,
          UID_MultiframeGrayscaleWordSecondaryCaptureImageStorage,
          UID_MultiframeTrueColorSecondaryCaptureImageStorage};
}

void addQueryContexts(DcmSCU& scu, bool withGet) {
  OFList<OFString> ts;
  ts.push_back(UID_LittleEndianExplicitTransferSyntax);
  ts.push_back(UID_LittleEndianImplicitTransferSyntax);
  scu.addPresentationContext(UID_FINDStudyRootQueryRetrieveInformationModel, ts);
  if (!withGet) return;
  scu.addPresentationContext(UID_GETStudyRootQueryRetrieveInformationModel, ts);
  // The instances come back as C-STORE requests on this association: we are their storage SCP.
  for (const auto& cls : storageClasses()) scu.addPresentationContext(cls.c_str(), ts, ASC_SC_ROLE_SCP);
}

bool validUid(const std::string& u) {
  if (u.empty() || u.size() > 64 || u.front() == '.' || u.back() == '.') return false;
  for (std::size_t i = 0; i < u.size(); ++i) {
    if (u[i] == '.' && u[i + 1] == '.') return false;
    if (u[i] != '.' && !std::isdigit(static_cast<unsigned char>(u[i]))) return false;
  }
  return true;
}

}  // namespace detail

std::vector<std::string> retrievableSopClasses() { return detail::storageClasses(); }

std::vector<QueryRow> query(const DicomNode& n, const QueryFilters& f, const Progress& progress) {
  checkQueryFilters(f);
  progress.checkCancelled();
  detail::DeadlineTransportLayer layer;  // outlives scu, which uses it
  detail::QrScu scu(layer, n, progress);
  detail::configure(scu, n);
  detail::addQueryContexts(scu, false);
  return detail::cancellable(layer, progress, [&] {
    layer.deadline().arm(n.timeoutSeconds);
    detail::associate(scu, layer, n, "C-FIND");
    detail::AssociationGuard guard{scu, layer, n.timeoutSeconds};
    DcmDataset studies = detail::studyKeys(f);
    const std::vector<QueryRow> found = detail::find(scu, n, studies);
    if (f.level == QueryLevel::Study) return found;
    std::vector<QueryRow> rows;
    for (std::size_t i = 0; i < found.size(); ++i) {
      if (!detail::validUid(found[i].studyUid)) continue;  // no study to ask about (an empty UID matches all)
      progress.report(static_cast<double>(i) / static_cast<double>(found.size()),
                      "series of study " + std::to_string(i + 1) + "/" + std::to_string(found.size()));
      DcmDataset keys = detail::seriesKeys(f, found[i].studyUid);
      for (auto& r : detail::find(scu, n, keys, found[i])) rows.push_back(std::move(r));
    }
    return rows;
  });
}

#endif  // LARMOR_HAVE_IO

}  // namespace larmor::io
