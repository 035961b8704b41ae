// The DICOM node list of the settings (dicom_nodes.hpp): a named list with a one-line text form per entry.
#include "dicom_nodes.hpp"

#include <sstream>

#include "larmor/util/error.hpp"

namespace larmor::model {

std::size_t DicomNodeList::add(const std::string& name, const std::string& nodeText, int timeoutSeconds,
                               const std::string& callingAeTitle) {
  DicomNodeEntry e;
  e.node = io::parseDicomNode(nodeText);
  e.name = name.empty() ? io::toString(e.node) : name;
  require(e.name.find_first_of("|\n\r") == std::string::npos, "node name \"" + e.name + "\": no '|' or line breaks");
  require(timeoutSeconds >= 1 && timeoutSeconds <= 3600,
          e.name + ": timeout " + std::to_string(timeoutSeconds) + " s is not in 1-3600 s");
  io::checkAeTitle(callingAeTitle, e.name + ": the calling AE title");
  e.node.timeoutSeconds = timeoutSeconds;
  e.node.callingAeTitle = callingAeTitle;
  if (const auto i = find(e.name)) {
    entries_[*i] = e;
    return *i;
  }
  entries_.push_back(e);
  return entries_.size() - 1;
}

void DicomNodeList::remove(std::size_t i) {
  require(i < entries_.size(), "no DICOM node number " + std::to_string(i + 1));
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
}

std::optional<std::size_t> DicomNodeList::find(const std::string& name) const {
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].name == name) return i;
  return std::nullopt;
}

std::vector<std::string> DicomNodeList::toLines() const {
  std::vector<std::string> lines;
  for (const auto& e : entries_)
    lines.push_back(e.name + "|" + io::toString(e.node) + "|" + std::to_string(e.node.timeoutSeconds) + "|" +
                    e.node.callingAeTitle);
  return lines;
}

DicomNodeList DicomNodeList::fromLines(const std::vector<std::string>& lines, std::vector<std::string>* problems) {
  DicomNodeList l;
  for (const auto& line : lines) {
    std::vector<std::string> f;
    std::stringstream s(line);
    for (std::string part; std::getline(s, part, '|');) f.push_back(part);
    try {
      require(f.size() == 4, "\"" + line + "\": a stored DICOM node is NAME|AET@host:port|TIMEOUT|CALLING_AET");
      int timeout = 0;
      try {
        timeout = std::stoi(f[2]);
      } catch (const std::exception&) {
        throw Error("\"" + line + "\": the timeout \"" + f[2] + "\" is not a number");
      }
      l.add(f[0], f[1], timeout, f[3]);
    } catch (const Error& e) {
      if (problems) problems->push_back(e.what());
    }
  }
  return l;
}

std::string displayText(const DicomNodeEntry& e) {
  const std::string node = io::toString(e.node);
  return e.name == node ? node : e.name + " (" + node + ")";
}

}  // namespace larmor::model
