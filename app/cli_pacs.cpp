// larmor-cli echo / send / recon --send (cli_pacs.hpp): thin wrappers over io::echo and io::send that print
// one line per file and a summary, and turn any file not stored into a non-zero exit.
#include "cli_pacs.hpp"

#include <chrono>
#include <filesystem>
#include <iostream>

#include "larmor/io/export.hpp"
#include "larmor/util/error.hpp"

namespace larmor::cli {

io::DicomNode pacsNode(const std::string& text, const std::string& callingAet, int timeout) {
  io::DicomNode n = io::parseDicomNode(text);
  io::checkAeTitle(callingAet, "--calling-aet");
  require(timeout >= 1 && timeout <= 3600, "timeout " + std::to_string(timeout) + " s: give 1 to 3600 seconds");
  n.callingAeTitle = callingAet;
  n.timeoutSeconds = timeout;
  return n;
}

int echoCommand(const PacsArgs& a) {
  const io::DicomNode n = pacsNode(a.node, a.callingAet, a.timeout);
  const auto t0 = std::chrono::steady_clock::now();
  io::echo(n);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "PACS " << io::toString(n) << " answered C-ECHO in " << ms << " ms\n";
  return 0;
}

int sendSeries(const io::DicomNode& node, const std::vector<std::string>& files, bool everyFile) {
  const io::SendReport rep = io::send(node, files);
  for (const auto& r : rep.results)
    if (everyFile || !r.ok)
      std::cout << "  " << std::filesystem::path(r.file).filename().string() << ": " << r.message << "\n";
  std::cout << rep.summary() << "\n";
  if (!rep.allSent()) {
    std::cerr << "larmor-cli: " << (rep.results.size() - rep.sent()) << " of " << rep.results.size()
              << " instances were not stored by " << rep.node << "\n";
    return 1;
  }
  return 0;
}

int sendCommand(const PacsArgs& a) {
  const io::DicomNode n = pacsNode(a.node, a.callingAet, a.timeout);
  require(!a.paths.empty(), "send: name the DICOM files or series directories to send");
  std::vector<std::string> files;
  for (const auto& p : a.paths) {
    const auto f = io::dicomFilesToSend(p);
    files.insert(files.end(), f.begin(), f.end());
  }
  return sendSeries(n, files, true);
}

void checkSendTarget(const io::DicomNode& node, const std::string& output) {
  require(io::outputKind(output) == io::OutputKind::Dicom,
          "--send " + io::toString(node) + ": --output must be a DICOM series directory (DIR/), not " + output);
  io::echo(node);
}

}  // namespace larmor::cli
