#pragma once
// Send to PACS: DICOM networking as a Storage SCU and Verification SCU (PS3.7 DIMSE-C, PS3.8 upper layer;
// DCMTK's dcmnet, built with LARMOR_IO). C-ECHO (PS3.7 9.1.5) checks that a node answers; C-STORE
// (PS3.7 9.1.1, Storage Service Class PS3.4 B) sends files one association per call, each file on a
// presentation context of its own SOP class and the transfer syntax it is stored in (no conversion).
// DicomNode::timeoutSeconds is a deadline over each whole exchange, not over each read: an echo (connect,
// association, C-ECHO, release) ends within it; a send's association, each file's C-STORE (request and
// response) and the release each end within it. A peer that trickles bytes cannot stretch it. docs/dicom.md
// ("Send to PACS") says what is negotiated and how the tests run it against Orthanc.
#include <cstddef>
#include <string>
#include <vector>

#include "larmor/util/progress.hpp"

namespace larmor::io {

/// A remote DICOM application entity (a PACS, a workstation) and how we call it.
struct DicomNode {
  std::string aeTitle;                  ///< called AE title, 1-16 characters (PS3.5 AE)
  std::string host;
  int port = 104;
  std::string callingAeTitle = "LARMOR";
  int timeoutSeconds = 10;              ///< deadline of each whole exchange (dicom_send.hpp)
};

/// "AET@host:port" (the calling AE title and timeout keep their defaults). Throws a one-line Error
/// naming the text and the expected form when it is malformed (AE title, host, port 1-65535).
DicomNode parseDicomNode(const std::string& text);
/// "AET@host:port".
std::string toString(const DicomNode& node);
/// Checks an AE title (1-16 characters of the default repertoire, no backslash, not all spaces);
/// throws Error naming `what`.
void checkAeTitle(const std::string& title, const std::string& what);

/// Whether this build can talk DICOM over the network (LARMOR_IO with DCMTK's dcmnet).
bool dicomNetworkAvailable();

/// C-ECHO on a fresh association. Throws a one-line Error when the node cannot be reached, rejects the
/// association or does not answer within the timeout, e.g.
/// "PACS ORTHANC@localhost:4242 did not answer C-ECHO within 10 s".
void echo(const DicomNode& node);

/// What happened to one file.
struct SendResult {
  std::string file;
  std::string sopInstanceUid;  ///< "" when the file could not be read
  bool ok = false;             ///< stored (status success or warning)
  int status = -1;             ///< the C-STORE response status (0 = success), -1: no response
  std::string message;         ///< "stored", "stored with warning 0xB000 ...", or why not
};

struct SendReport {
  std::string node;  ///< "AET@host:port"
  std::vector<SendResult> results;  ///< one per file, in the order given
  bool cancelled = false;           ///< the Progress token was cancelled; later files are "not sent"
  std::size_t sent() const;
  bool allSent() const { return sent() == results.size(); }
  /// "sent 12/12 instances to ORTHANC@localhost:4242" (", cancelled" when it was).
  std::string summary() const;
};

/// C-STORE of every file over one association. The files' SOP class and transfer syntax (from the meta
/// header) choose the presentation contexts proposed. A file the PACS refuses or that cannot be read
/// gets its own failed SendResult and the rest go on; a lost association marks the rest "not sent".
/// Progress: fraction = files done / files, stage names the file; a cancelled token stops between files
/// (the association is aborted, SendReport::cancelled set, no Cancelled thrown).
/// Throws a one-line Error when no file is given or the association cannot be made.
SendReport send(const DicomNode& node, const std::vector<std::string>& files, const Progress& progress = {});

/// The files to send for a command-line argument: a file as it is, a directory's regular files ending in
/// .dcm (sorted by name, not recursive). Throws Error naming the path when it is missing or holds none.
std::vector<std::string> dicomFilesToSend(const std::string& path);

}  // namespace larmor::io
