#pragma once
// larmor-cli's DICOM network commands: `echo AET@host:port` (C-ECHO), `send FILES_OR_DIR --to AET@host:port`
// (C-STORE), what `recon --send` adds to a reconstruction (engine: larmor/io/dicom_send.hpp), and
// `query --pacs AET@host:port [filters]` (C-FIND) and `retrieve --pacs ... --series UID --output-dir DIR`
// (C-GET; engine: larmor/io/dicom_query.hpp).
#include <optional>  // recon --send keeps an optional node
#include <string>
#include <vector>

#include "larmor/io/dicom_query.hpp"
#include "larmor/io/dicom_send.hpp"

namespace larmor::cli {

struct PacsArgs {
  std::string node;                ///< "AET@host:port"
  std::vector<std::string> paths;  ///< send: files or series directories
  std::string callingAet = "LARMOR";
  int timeout = 10;                ///< seconds: connect, association, each response
};

/// `query` and `retrieve` (their node, calling AE title and timeout are PacsArgs').
struct QueryArgs {
  io::QueryFilters filters;
  std::string level = "series";  ///< study|series
  std::string json;              ///< query: write the rows as JSON ("-": standard output)
  std::string series, study;     ///< retrieve: the series (and optionally its study) UID
  std::string outputDir;         ///< retrieve: a new or empty folder
};

/// The node of `text` with our calling AE title and timeout; a one-line Error when malformed.
io::DicomNode pacsNode(const std::string& text, const std::string& callingAet, int timeout);
/// `larmor-cli echo`: "PACS ORTHANC@localhost:4242 answered C-ECHO in 12 ms"; Error otherwise.
int echoCommand(const PacsArgs& a);
/// `larmor-cli send`: one line per file and the summary; exit 1 when any file was not stored.
int sendCommand(const PacsArgs& a);
/// `larmor-cli query`: a table of the studies or series found (or JSON); exit 0 also when none matched.
int queryCommand(const PacsArgs& p, QueryArgs q);
/// `larmor-cli retrieve`: the series into a new folder, then the summary; Error otherwise.
int retrieveCommand(const PacsArgs& p, const QueryArgs& q);
/// `recon --send`, before the work: the output must be a DICOM series directory and the node must answer
/// C-ECHO, so that a wrong node fails in seconds, not after the reconstruction.
void checkSendTarget(const io::DicomNode& node, const std::string& output);
/// `recon --send`, after the export: sends `files`, prints failures and the summary; the exit code.
int sendSeries(const io::DicomNode& node, const std::vector<std::string>& files, bool everyFile);

}  // namespace larmor::cli
