// What Larmor wrote in a DICOM series folder (larmor/io/series_folder.hpp): the marker lists the files,
// a .dcm must also carry Larmor's private creator (isLarmorDicomFile, output_safety.hpp).
#include "larmor/io/series_folder.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <system_error>

#include "larmor/io/output_safety.hpp"
#include "larmor/util/error.hpp"
#include "larmor/util/provenance.hpp"

namespace fs = std::filesystem;

namespace larmor::io {

namespace {

constexpr const char* kFilesLine = "files:";

bool isDcm(const std::string& name) {
  std::string e = fs::path(name).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return std::tolower(c); });
  return e == ".dcm";
}

// The names the marker lists; *hasList false for a marker without a list (or none).
std::set<std::string> listedNames(const fs::path& dir, bool* hasList) {
  std::set<std::string> names;
  *hasList = false;
  std::ifstream in(dir / kExportMarker);
  std::string line;
  while (std::getline(in, line)) {
    if (*hasList && !line.empty()) names.insert(line);
    if (line == kFilesLine) *hasList = true;
  }
  return names;
}

// Empty when `name` in `dir` is Larmor's; else why not.
std::string whyForeign(const fs::path& dir, const std::string& name, bool hasList, const std::set<std::string>& listed) {
  std::error_code ec;
  const fs::path p = dir / name;
  if (name == kExportMarker) return fs::is_regular_file(fs::symlink_status(p, ec)) ? "" : "not a file";
  if (!fs::is_regular_file(fs::symlink_status(p, ec))) return "not a regular file";
  if (hasList && listed.count(name) == 0) return "not listed in " + std::string(kExportMarker);
  if (!isDcm(name)) return "not a DICOM file";
  if (!isLarmorDicomFile(p.string())) return "no Larmor private creator";
  return {};
}

std::vector<std::string> sortedEntries(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

std::string exportMarkerText(const std::vector<std::string>& names) {
  std::string text = "Larmor " + versionString() + " DICOM export; a later export may replace this folder.\n" +
                     kFilesLine + "\n";
  for (const auto& n : names) text += fs::path(n).filename().string() + "\n";
  return text;
}

void requireOnlyLarmorFiles(const std::string& folder, const std::string& path) {
  std::string f = folder;
  while (f.size() > 1 && f.back() == '/') f.pop_back();
  const fs::path dir(f);
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return;
  bool hasList = false;
  const auto listed = listedNames(dir, &hasList);
  for (const auto& name : sortedEntries(dir))
    if (const std::string why = whyForeign(dir, name, hasList, listed); !why.empty())
      throw Error(path + ": the folder holds '" + name + "', which Larmor did not write (" + why +
                  "); only a previous Larmor export is replaced, choose a new or empty folder");
}

std::vector<std::string> removeLarmorSeries(const std::string& folder) {
  const fs::path dir(folder);
  bool hasList = false;
  const auto listed = listedNames(dir, &hasList);
  std::vector<std::string> left;
  std::error_code ec;
  for (const auto& name : sortedEntries(dir)) {
    if (name == kExportMarker) continue;
    if (whyForeign(dir, name, hasList, listed).empty()) fs::remove(dir / name, ec);
    else left.push_back(name);
  }
  if (left.empty()) {
    fs::remove(dir / kExportMarker, ec);
    fs::remove(dir, ec);
  }
  return left;
}

}  // namespace larmor::io
