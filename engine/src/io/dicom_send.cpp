// Send to PACS (dicom_send.hpp): C-ECHO and C-STORE as an SCU with DCMTK's DcmSCU (dcmnet). PS3.7 9.1.1
// (C-STORE), 9.1.5 (C-ECHO), PS3.8 (association: one presentation context per SOP class and transfer
// syntax), PS3.4 B.2.3 (C-STORE statuses: 0000 success, B000/B006/B007 warnings, A7xx/A9xx/Cxxx failures).
// The association, the captured DCMTK log and the one-line errors are dicom_association.hpp's; the node's
// timeout bounds each whole exchange, not each read (dicom_deadline.hpp).
// Built with and without LARMOR_IO: the text parts always, the networking only with DCMTK.
#include "larmor/io/dicom_send.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "larmor/util/error.hpp"

#ifdef LARMOR_HAVE_IO
#include <dcmtk/config/osconfig.h>  // must come first: DCMTK's build configuration
#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcfilefo.h>
#include <dcmtk/dcmdata/dcuid.h>
#include <dcmtk/dcmdata/dcxfer.h>
#include <dcmtk/dcmnet/diutil.h>
#include <dcmtk/dcmnet/scu.h>

#include "dicom_association.hpp"
#endif

namespace larmor::io {
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------- text

void checkAeTitle(const std::string& t, const std::string& what) {
  require(!t.empty() && t.size() <= 16, what + ": an AE title has 1 to 16 characters (got \"" + t + "\")");
  for (unsigned char c : t)
    require(c >= 0x20 && c < 0x7f && c != '\\',
            what + ": an AE title holds printable ASCII characters other than '\\' (got \"" + t + "\")");
  require(t.find_first_not_of(' ') != std::string::npos, what + ": an AE title cannot be all spaces");
}

DicomNode parseDicomNode(const std::string& text) {
  const std::string form = "\"" + text + "\": a DICOM node is AET@host:port (e.g. ORTHANC@localhost:4242)";
  const auto at = text.find('@');
  const auto colon = text.rfind(':');
  require(at != std::string::npos && colon != std::string::npos && colon > at, form);
  DicomNode n;
  n.aeTitle = text.substr(0, at);
  n.host = text.substr(at + 1, colon - at - 1);
  if (n.host.size() > 2 && n.host.front() == '[' && n.host.back() == ']') n.host = n.host.substr(1, n.host.size() - 2);
  const std::string port = text.substr(colon + 1);
  checkAeTitle(n.aeTitle, form);
  require(!n.host.empty() && n.host.find_first_of(" @/\\") == std::string::npos, form + " (no host)");
  require(!port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos,
          form + " (port \"" + port + "\")");
  n.port = std::stoi(port);
  require(n.port >= 1 && n.port <= 65535, form + " (port " + port + " is not in 1-65535)");
  return n;
}

std::string toString(const DicomNode& n) {
  const bool v6 = n.host.find(':') != std::string::npos;
  return n.aeTitle + "@" + (v6 ? "[" + n.host + "]" : n.host) + ":" + std::to_string(n.port);
}

std::size_t SendReport::sent() const {
  return static_cast<std::size_t>(std::count_if(results.begin(), results.end(), [](const SendResult& r) { return r.ok; }));
}

std::string SendReport::summary() const {
  std::ostringstream s;
  s << "sent " << sent() << "/" << results.size() << " instance" << (results.size() == 1 ? "" : "s") << " to " << node;
  if (cancelled) s << ", cancelled";
  return s.str();
}

std::vector<std::string> dicomFilesToSend(const std::string& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  require(!ec && fs::exists(st), path + ": no such file or directory");
  if (!fs::is_directory(st)) return {path};
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(path, ec))
    if (e.is_regular_file() && e.path().extension() == ".dcm") files.push_back(e.path().string());
  require(!ec, path + ": cannot list the directory (" + ec.message() + ")");
  require(!files.empty(), path + ": the directory holds no .dcm files");
  std::sort(files.begin(), files.end());
  return files;
}

#ifndef LARMOR_HAVE_IO

bool dicomNetworkAvailable() { return false; }
void echo(const DicomNode&) { throw Error("DICOM networking is not in this build (built without LARMOR_IO)"); }
SendReport send(const DicomNode&, const std::vector<std::string>&, const Progress&) {
  throw Error("DICOM networking is not in this build (built without LARMOR_IO)");
}

#else

bool dicomNetworkAvailable() { return true; }

namespace {

using detail::AssociationGuard;
using detail::DeadlineTransportLayer;
using detail::LogScope;
using detail::Scu;
using detail::associate;
using detail::configure;
using detail::hex4;
using detail::isTimeout;
using detail::reasonOf;

/// PS3.4 B.2.3 and Annex C: what a C-STORE response status means.
std::string statusText(Uint16 s) {
  if (s == 0) return "stored";
  if (s == 0xB000) return "stored with warning " + hex4(s) + " (coercion of data elements)";
  if (s == 0xB006) return "stored with warning " + hex4(s) + " (elements discarded)";
  if (s == 0xB007) return "stored with warning " + hex4(s) + " (data set does not match SOP class)";
  if ((s & 0xFF00) == 0xA700) return "refused " + hex4(s) + " (out of resources)";
  if ((s & 0xFF00) == 0xA900) return "refused " + hex4(s) + " (data set does not match SOP class)";
  if ((s & 0xF000) == 0xC000) return "refused " + hex4(s) + " (cannot understand)";
  if (s == 0x0122) return "refused " + hex4(s) + " (SOP class not supported)";
  if (s == 0x0124) return "refused " + hex4(s) + " (not authorized)";
  return "refused " + hex4(s);
}

bool statusOk(Uint16 s) { return s == 0 || s == 0xB000 || s == 0xB006 || s == 0xB007; }

/// What a file needs for its presentation context: SOP class, instance, transfer syntax (meta header).
struct FileInfo {
  std::string sopClass, sopInstance, transferSyntax, error;
};

FileInfo inspect(const std::string& path) {
  FileInfo fi;
  DcmFileFormat ff;
  // The meta header and the dataset up to the UIDs; the pixel data are read again when sent.
  const OFCondition c = ff.loadFile(path.c_str(), EXS_Unknown, EGL_noChange, 4096);
  if (c.bad()) {
    fi.error = "cannot read as DICOM (" + std::string(c.text()) + ")";
    return fi;
  }
  OFString cls, inst, ts;
  ff.getMetaInfo()->findAndGetOFString(DCM_TransferSyntaxUID, ts);
  if (ff.getDataset()->findAndGetOFString(DCM_SOPClassUID, cls).bad() || cls.empty())
    ff.getMetaInfo()->findAndGetOFString(DCM_MediaStorageSOPClassUID, cls);
  if (ff.getDataset()->findAndGetOFString(DCM_SOPInstanceUID, inst).bad() || inst.empty())
    ff.getMetaInfo()->findAndGetOFString(DCM_MediaStorageSOPInstanceUID, inst);
  if (ts.empty()) ts = DcmXfer(ff.getDataset()->getOriginalXfer()).getXferID();
  if (cls.empty() || inst.empty()) fi.error = "no SOP Class UID or SOP Instance UID";
  else if (ts.empty()) fi.error = "unknown transfer syntax";
  fi.sopClass = cls.c_str(), fi.sopInstance = inst.c_str(), fi.transferSyntax = ts.c_str();
  return fi;
}

using Contexts = std::map<std::pair<std::string, std::string>, bool>;  ///< (SOP class, transfer syntax)

/// Every file's UIDs, or why it cannot be sent, into report.results (each "not sent" until it is); into
/// `contexts` one presentation context per (SOP class, transfer syntax) of the readable ones.
std::vector<FileInfo> inspectFiles(const std::vector<std::string>& files, SendReport& report, Contexts& contexts) {
  std::vector<FileInfo> info;
  for (const auto& f : files) {
    info.push_back(inspect(f));
    if (info.back().error.empty()) contexts[{info.back().sopClass, info.back().transferSyntax}] = true;
  }
  report.results.resize(files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    report.results[i].file = files[i];
    report.results[i].sopInstanceUid = info[i].sopInstance;
    report.results[i].message = info[i].error.empty() ? "not sent" : info[i].error;
  }
  return info;
}

/// One file's C-STORE on the open association, with the whole timeout; its status, or why not, into r. Returns
/// false when the association is gone or in an unknown state.
bool storeFile(Scu& scu, DeadlineTransportLayer& layer, const DicomNode& n, const FileInfo& info,
               const std::string& file, SendResult& r) {
  const T_ASC_PresentationContextID pc =
      scu.findPresentationContextID(info.sopClass.c_str(), info.transferSyntax.c_str());
  if (pc == 0) {
    const char* name = dcmFindNameOfUID(info.sopClass.c_str(), nullptr);
    r.message = "the PACS did not accept " + std::string(name ? name : info.sopClass) + " in transfer syntax " +
                info.transferSyntax;
    return true;
  }
  LogScope log;
  Uint16 status = 0xFFFF;
  layer.deadline().arm(n.timeoutSeconds);
  const OFCondition c = scu.sendSTORERequest(pc, file.c_str(), nullptr, status);
  if (c.good()) {
    r.status = status;
    r.ok = statusOk(status);
    r.message = statusText(status);
    return true;
  }
  const bool timedOut = isTimeout(c, layer);
  r.message = timedOut ? "no C-STORE response within " + std::to_string(n.timeoutSeconds) + " s"
                       : "C-STORE failed (" + reasonOf(c, log) + ")";
  return !timedOut && scu.isConnected();
}

}  // namespace

void echo(const DicomNode& n) {
  DeadlineTransportLayer layer;  // outlives scu, which uses it
  Scu scu;
  configure(scu, n);
  OFList<OFString> ts;
  ts.push_back(UID_LittleEndianExplicitTransferSyntax);
  ts.push_back(UID_LittleEndianImplicitTransferSyntax);
  scu.addPresentationContext(UID_VerificationSOPClass, ts);
  // One deadline for all of it: connect, association, C-ECHO and release.
  layer.deadline().arm(n.timeoutSeconds);
  associate(scu, layer, n, "C-ECHO");
  AssociationGuard guard{scu, layer};
  LogScope log;
  const OFCondition c = scu.sendECHORequest(0);
  if (c.good()) return;
  guard.abort = true;
  const std::string pacs = "PACS " + toString(n);
  if (isTimeout(c, layer))
    throw Error(pacs + " did not answer C-ECHO within " + std::to_string(n.timeoutSeconds) + " s");
  throw Error(pacs + ": C-ECHO failed (" + reasonOf(c, log) + ")");
}

SendReport send(const DicomNode& n, const std::vector<std::string>& files, const Progress& progress) {
  SendReport report;
  report.node = toString(n);
  require(!files.empty(), "PACS " + report.node + ": no files to send");

  // Read every file's UIDs first; propose one presentation context per (SOP class, transfer syntax).
  Contexts contexts;
  const std::vector<FileInfo> info = inspectFiles(files, report, contexts);
  if (contexts.empty()) return report;  // nothing readable: every file says why
  const auto cancelFrom = [&](std::size_t first) {
    report.cancelled = true;
    for (std::size_t j = first; j < files.size(); ++j)
      if (info[j].error.empty()) report.results[j].message = "not sent (cancelled)";
  };
  try {
    progress.checkCancelled();
  } catch (const Cancelled&) {
    cancelFrom(0);
    return report;
  }
  // PS3.8 9.3.2.2: at most 128 presentation contexts (odd IDs 1-255).
  require(contexts.size() <= 128, "PACS " + report.node + ": the files need " + std::to_string(contexts.size()) +
                                      " presentation contexts (SOP class x transfer syntax), more than 128");

  DeadlineTransportLayer layer;  // outlives scu, which uses it
  Scu scu;
  configure(scu, n);
  for (const auto& [key, unused] : contexts) {
    OFList<OFString> ts;
    ts.push_back(key.second.c_str());
    scu.addPresentationContext(key.first.c_str(), ts);
  }
  // Each exchange has the whole timeout: the association, every file's C-STORE, the release.
  layer.deadline().arm(n.timeoutSeconds);
  associate(scu, layer, n, "C-STORE");
  AssociationGuard guard{scu, layer, n.timeoutSeconds};

  const std::size_t total = files.size();
  for (std::size_t i = 0; i < total; ++i) {
    SendResult& r = report.results[i];
    if (!info[i].error.empty()) continue;
    try {
      progress.report(static_cast<double>(i) / static_cast<double>(total),
                      "sending " + fs::path(files[i]).filename().string() + " (" + std::to_string(i + 1) + "/" +
                          std::to_string(total) + ")");
    } catch (const Cancelled&) {
      cancelFrom(i);
      guard.abort = true;
      return report;
    }
    if (!storeFile(scu, layer, n, info[i], files[i], r)) {  // the association is gone or in an unknown state
      for (std::size_t j = i + 1; j < total; ++j)
        if (info[j].error.empty()) report.results[j].message = "not sent (the association was lost)";
      guard.abort = true;
      break;
    }
  }
  if (!report.cancelled) {
    try {
      progress.report(1.0, report.summary());
    } catch (const Cancelled&) {  // everything went already
    }
  }
  return report;
}

#endif  // LARMOR_HAVE_IO

}  // namespace larmor::io
