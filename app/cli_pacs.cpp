// larmor-cli echo / send / recon --send / query / retrieve (cli_pacs.hpp): thin wrappers over io::echo,
// io::send, io::query and io::retrieve that print one line per file or match and a summary, and turn any file
// not stored into a non-zero exit.
#include "cli_pacs.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "larmor/io/export.hpp"
#include "larmor/io/output_safety.hpp"
#include "larmor/util/atomic_file.hpp"
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

namespace {

nlohmann::json toJson(const io::QueryRow& r) {
  nlohmann::json j = {{"patient_name", r.patientName},  {"patient_id", r.patientId},
                      {"patient_birth_date", r.patientBirthDate}, {"study_uid", r.studyUid},
                      {"study_date", r.studyDate},      {"study_time", r.studyTime},
                      {"study_description", r.studyDescription}, {"accession", r.accession},
                      {"modality", r.modality},         {"instances", r.instances}};
  if (r.seriesUid.empty()) {
    j["series"] = r.series;
  } else {
    j["series_uid"] = r.seriesUid;
    j["series_number"] = r.seriesNumber;
    j["series_description"] = r.seriesDescription;
  }
  return j;
}

std::string count(int n) { return n < 0 ? "?" : std::to_string(n); }

void printRows(const std::vector<io::QueryRow>& rows, bool series) {
  for (const auto& r : rows) {
    std::cout << r.patientId << "  " << r.patientName << "  " << r.studyDate << "  ";
    if (series)
      std::cout << r.modality << " #" << r.seriesNumber << " \"" << r.seriesDescription << "\"  " << count(r.instances)
                << " instances  " << r.seriesUid << "  (study " << r.studyUid << ")\n";
    else
      std::cout << "\"" << r.studyDescription << "\"  " << r.modality << "  " << count(r.series) << " series, "
                << count(r.instances) << " instances  " << r.studyUid << "\n";
  }
}

}  // namespace

int queryCommand(const PacsArgs& p, QueryArgs q) {
  const io::DicomNode n = pacsNode(p.node, p.callingAet, p.timeout);
  require(q.level == "study" || q.level == "series", "--level " + q.level + ": give study or series");
  q.filters.level = q.level == "study" ? io::QueryLevel::Study : io::QueryLevel::Series;
  io::checkQueryFilters(q.filters);
  if (!q.json.empty() && q.json != "-") {
    io::PlannedOutput out;
    out.path = q.json;
    out.role = io::OutputRole::Json;
    io::checkOutputs({out}, {});
  }
  const auto rows = io::query(n, q.filters);
  const bool series = q.filters.level == io::QueryLevel::Series;
  if (q.json != "-") {
    printRows(rows, series);
    std::cout << rows.size() << (series ? " series" : (rows.size() == 1 ? " study" : " studies")) << " found on "
              << io::toString(n) << "\n";
  }
  if (q.json.empty()) return 0;
  nlohmann::json j = io::withProvenance({{"pacs", io::toString(n)}, {"level", q.level}, {"rows", nlohmann::json::array()}});
  for (const auto& r : rows) j["rows"].push_back(toJson(r));
  if (q.json == "-") {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  AtomicFile file(q.json);
  std::ofstream f(file.tempPath());
  f << j.dump(2) << "\n";
  f.close();
  require(f.good(), q.json + ": could not write the JSON file");
  file.commit();
  return 0;
}

int retrieveCommand(const PacsArgs& p, const QueryArgs& q) {
  const io::DicomNode n = pacsNode(p.node, p.callingAet, p.timeout);
  const io::RetrieveReport r = io::retrieve(n, q.series, q.outputDir, q.study);
  std::cout << r.summary() << "\n";
  return 0;
}

}  // namespace larmor::cli
