// One DICOM association as an SCU (dicom_association.hpp): DCMTK's dcmnet log captured into our one-line
// errors, the deadline-bounded transport layer, association set-up and tear-down.
#include "dicom_association.hpp"

#include <exception>
#include <mutex>

#include <dcmtk/oflog/oflog.h>
#include <dcmtk/oflog/spi/logevent.h>

#include "larmor/util/error.hpp"

namespace larmor::io::detail {

namespace {

// What dcmnet logs while this thread talks to a node, instead of DCMTK's default console output.
thread_local std::string* tlsCapture = nullptr;

class CaptureAppender : public dcmtk::log4cplus::Appender {
 public:
  CaptureAppender() = default;
  ~CaptureAppender() override { destructorImpl(); }
  void close() override {}

 protected:
  void append(const dcmtk::log4cplus::spi::InternalLoggingEvent& e) override {
    if (!tlsCapture) return;
    if (!tlsCapture->empty()) *tlsCapture += ' ';
    *tlsCapture += e.getMessage().c_str();
  }
};

void installCapture() {
  static std::once_flag once;
  std::call_once(once, [] {
    OFLogger l = OFLog::getLogger("dcmtk.dcmnet");
    l.setLogLevel(OFLogger::ERROR_LOG_LEVEL);
    l.setAdditivity(false);  // not to the root logger's console appender
    l.removeAllAppenders();
    l.addAppender(dcmtk::log4cplus::SharedAppenderPtr(new CaptureAppender));
  });
}

}  // namespace

LogScope::LogScope() {
  installCapture();
  tlsCapture = &text;
}

LogScope::~LogScope() { tlsCapture = nullptr; }

std::string LogScope::line() const {
  std::string out;
  for (char c : text) {
    const char d = (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    if (d == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += d;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.size() > 300 ? out.substr(0, 300) + "..." : out;
}

bool isTimeout(const OFCondition& c, DeadlineTransportLayer& layer) {
  return c == DUL_READTIMEOUT || c == DIMSE_NODATAAVAILABLE || layer.deadline().expired();
}

std::string reasonOf(const OFCondition& c, const LogScope& log) {
  std::string r = c.text();
  const std::string l = log.line();
  if (!l.empty() && l.find(r) == std::string::npos) r += ": " + l;
  return r;
}

void configure(DcmSCU& scu, const DicomNode& n) {
  checkAeTitle(n.aeTitle, "the called AE title");
  checkAeTitle(n.callingAeTitle, "the calling AE title");
  require(n.timeoutSeconds >= 1, "PACS " + toString(n) + ": the timeout must be at least 1 s");
  scu.setAETitle(n.callingAeTitle.c_str());
  scu.setPeerAETitle(n.aeTitle.c_str());
  scu.setPeerHostName(n.host.c_str());
  scu.setPeerPort(static_cast<Uint16>(n.port));
  // Every wait is bounded: TCP connect, association (ACSE) and each DIMSE response; and the exchange as a
  // whole by the deadline of the transport layer (associate()), which no trickle of bytes extends.
  scu.setConnectionTimeout(n.timeoutSeconds);
  scu.setACSETimeout(static_cast<Uint32>(n.timeoutSeconds));
  scu.setDIMSEBlockingMode(DIMSE_NONBLOCKING);
  scu.setDIMSETimeout(static_cast<Uint32>(n.timeoutSeconds));
  scu.setVerbosePCMode(OFFalse);
}

void associate(Scu& scu, DeadlineTransportLayer& layer, const DicomNode& n, const std::string& what) {
  LogScope log;
  const std::string pacs = "PACS " + toString(n);
  OFCondition c = scu.initNetwork();
  if (c.good()) c = scu.useTransportLayer(layer);
  if (c.bad()) throw Error(pacs + ": cannot start the network (" + reasonOf(c, log) + ")");
  c = scu.negotiateAssociation();
  if (c.good()) return;
  if (isTimeout(c, layer))
    throw Error(pacs + " did not answer " + what + " within " + std::to_string(n.timeoutSeconds) + " s");
  if (c == DUL_ASSOCIATIONREJECTED)
    throw Error(pacs + " rejected the association (" + reasonOf(c, log) + "; check the called AE title \"" +
                n.aeTitle + "\" and that the PACS accepts the calling AE title \"" + n.callingAeTitle + "\")");
  if (c == NET_EC_NoAcceptablePresentationContexts)
    throw Error(pacs + " accepted none of the proposed presentation contexts for " + what);
  const std::string r = reasonOf(c, log);
  // A connect() that timed out reads as a TCP error naming the timeout.
  if (r.find("imed out") != std::string::npos || r.find("imeout") != std::string::npos)
    throw Error(pacs + " did not answer " + what + " within " + std::to_string(n.timeoutSeconds) + " s (" + r + ")");
  throw Error(pacs + ": cannot connect for " + what + " (" + r + ")");
}

std::string hex4(unsigned v) {
  static const char* d = "0123456789ABCDEF";
  std::string s = "0x0000";
  for (int i = 0; i < 4; ++i) s[5 - i] = d[(v >> (4 * i)) & 0xf];
  return s;
}

AssociationGuard::~AssociationGuard() {
  if (!scu.isConnected()) return;
  LogScope quiet;
  // An abort waits for nothing beyond the deadline already armed (a dead peer's is long passed).
  if (abort || std::uncaught_exceptions() > 0) {
    scu.abortAssociation();
    return;
  }
  if (releaseSeconds > 0) layer.deadline().arm(releaseSeconds);
  if (scu.releaseAssociation().bad()) scu.abortAssociation();
}

}  // namespace larmor::io::detail
