#pragma once
// Shared by query (dicom_query.cpp) and retrieve (dicom_retrieve.cpp); needs DCMTK's dcmnet. An SCU whose
// C-FIND and C-GET handlers re-arm the exchange deadline for each message (so a long answer is bounded per
// message, a silent or trickling PACS by the timeout), notice a cancelled Progress between messages, and
// (C-GET) hand each received instance to a callback instead of DCMTK's own file writer.
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dicom_association.hpp"
#include "larmor/io/dicom_query.hpp"
#include "larmor/util/error.hpp"

#include <dcmtk/dcmdata/dcdatset.h>

namespace larmor::io::detail {

class QrScu : public Scu {
 public:
  QrScu(DeadlineTransportLayer& layer, const DicomNode& node, const Progress& progress)
      : layer_(layer), node_(node), progress_(progress) {}

  /// C-GET: what to do with one received instance (the dataset stays ours); returns the C-STORE status
  /// to answer (0 = success); an exception ends the session (kept, rethrown by rethrow()).
  std::function<Uint16(std::unique_ptr<DcmDataset>)> onInstance;
  /// A handler noticed the cancelled token (the session was ended; the caller aborts).
  bool cancelled = false;
  /// The last C-GET response (its counts of sub-operations).
  Uint16 getStatus = 0xFFFF;
  int getCompleted = 0, getFailed = 0, getWarnings = 0;
  /// Rethrows what onInstance threw, if anything.
  void rethrow();
  DeadlineTransportLayer& layer() { return layer_; }
  const Progress& progress() const { return progress_; }

  OFCondition handleFINDResponse(T_ASC_PresentationContextID presID, QRResponse* response, OFBool& more) override;
  OFCondition handleCGETResponse(T_ASC_PresentationContextID presID, RetrieveResponse* response,
                                 OFBool& more) override;
  OFCondition handleSTORERequest(T_ASC_PresentationContextID presID, DcmDataset* instance, OFBool& more,
                                 Uint16& status) override;

 private:
  bool stopForCancel();
  DeadlineTransportLayer& layer_;
  const DicomNode& node_;
  const Progress& progress_;
  std::exception_ptr error_;
};

/// The C-FIND identifier of a STUDY query for `f`, or of a SERIES query in study `studyUid`.
DcmDataset studyKeys(const QueryFilters& f);
DcmDataset seriesKeys(const QueryFilters& f, const std::string& studyUid);

/// C-FIND with `keys` on the association's Study Root FIND context; the rows (patient/study fields of
/// `parent` where the answer has none). Throws a one-line Error (a refusal or failure status, the network,
/// the timeout), Cancelled when the token was cancelled.
std::vector<QueryRow> find(QrScu& scu, const DicomNode& n, DcmDataset& keys, const QueryRow& parent = {});

/// Proposes the Study Root FIND context (and GET with every retrievable storage class in the SCP role).
void addQueryContexts(DcmSCU& scu, bool withGet);

/// A UID (PS3.5 9.1): 1-64 characters of digits and dots, no empty component.
bool validUid(const std::string& uid);

/// Whether `p`'s token was cancelled (without throwing).
bool cancelRequested(const Progress& p);
/// Runs `f` with the layer's waits stopping within 100 ms of a cancel; an Error after a cancel is Cancelled.
template <class F>
auto cancellable(DeadlineTransportLayer& layer, const Progress& p, F&& f) {
  layer.deadline().setStop([&p] { return cancelRequested(p); });
  try {
    return f();
  } catch (const Error&) {
    p.checkCancelled();
    throw;
  }
}

}  // namespace larmor::io::detail
