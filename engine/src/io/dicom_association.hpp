#pragma once
// One DICOM association as an SCU, shared by Send to PACS (dicom_send.cpp) and query/retrieve
// (dicom_query.cpp); needs DCMTK's dcmnet. PS3.8 (association: A-ASSOCIATE, A-RELEASE, A-ABORT). What it
// adds to DCMTK's DcmSCU: DCMTK's own log lines for dcmnet are captured (not printed) so that a failure is
// one line of ours naming the node and the reason; the TCP connection goes through a deadline-bounded
// transport layer (dicom_deadline.hpp), so that no peer, however slow or silent, stretches an exchange past
// the node's timeout; the association is released when the work ends normally and aborted otherwise.
#include <string>

#include "dicom_deadline.hpp"
#include "larmor/io/dicom_send.hpp"

#include <dcmtk/dcmnet/scu.h>

namespace larmor::io::detail {

/// Collects what dcmnet logs on this thread (e.g. "Association Rejected: ... Called AE Title Not
/// Recognized") for the lifetime of the object, instead of DCMTK's console output.
struct LogScope {
  std::string text;
  LogScope();
  ~LogScope();
  LogScope(const LogScope&) = delete;
  LogScope& operator=(const LogScope&) = delete;
  /// The captured text on one line, squeezed, cut to a sensible length.
  std::string line() const;
};

/// DcmSCU that makes its TCP connection through a transport layer of ours. DcmSCU's hook for one is the
/// protected useSecureConnection (meant for TLS: it also sets the "secure" flag, which DCMTK only passes
/// on to the layer's createConnection, and ours ignores).
class Scu : public DcmSCU {
 public:
  /// After initNetwork, before negotiateAssociation. `layer` must outlive this object.
  OFCondition useTransportLayer(DcmTransportLayer& layer) { return useSecureConnection(&layer); }
};

/// DCMTK's per-wait timeout, or the exchange's deadline cut a read or write short (DCMTK then reports a
/// closed network or an I/O error).
bool isTimeout(const OFCondition& c, DeadlineTransportLayer& layer);
/// DCMTK's text for `c`, with what dcmnet logged when that says more.
std::string reasonOf(const OFCondition& c, const LogScope& log);
/// AE titles, peer, and every DCMTK wait bounded by the node's timeout. Throws Error when a title is invalid.
void configure(DcmSCU& scu, const DicomNode& n);
/// initNetwork + negotiateAssociation over `layer` (its deadline armed by the caller), or a one-line Error
/// for `what` ("C-ECHO", "C-STORE", "C-FIND", "C-GET").
void associate(Scu& scu, DeadlineTransportLayer& layer, const DicomNode& n, const std::string& what);
/// "0x0000"-style hexadecimal of a DIMSE status.
std::string hex4(unsigned v);

/// Releases the association when the scope ends normally, aborts it on an exception or a failure. The
/// release gets `releaseSeconds` of its own (0: it stays within the deadline already armed).
struct AssociationGuard {
  DcmSCU& scu;
  DeadlineTransportLayer& layer;
  int releaseSeconds = 0;
  bool abort = false;
  ~AssociationGuard();
};

}  // namespace larmor::io::detail
