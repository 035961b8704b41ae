#pragma once
// The DICOM nodes (PACS) the workstation sends to, as the settings keep them: a named list, each entry
// one line "NAME|AET@host:port|TIMEOUT|CALLING_AET" (ui/pacs_dialog.cpp stores the lines in QSettings).
// Qt-free so that the unit tests check adding, removing, parsing and the round trip without a display.
// The node itself and its checks are the engine's (larmor/io/dicom_send.hpp).
#include <optional>
#include <string>
#include <vector>

#include "larmor/io/dicom_send.hpp"

namespace larmor::model {

struct DicomNodeEntry {
  std::string name;  ///< the user's label, unique in the list ("Hospital PACS")
  io::DicomNode node;
};

class DicomNodeList {
 public:
  const std::vector<DicomNodeEntry>& entries() const { return entries_; }
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const DicomNodeEntry& at(std::size_t i) const { return entries_.at(i); }

  /// Adds (or replaces the entry of the same name) "AET@host:port" under `name` (empty: the node text).
  /// Throws a one-line Error when the text, name, timeout or calling AE title is invalid. Returns the index.
  std::size_t add(const std::string& name, const std::string& nodeText, int timeoutSeconds = 10,
                  const std::string& callingAeTitle = "LARMOR");
  void remove(std::size_t i);
  std::optional<std::size_t> find(const std::string& name) const;

  /// One line per entry, "NAME|AET@host:port|TIMEOUT|CALLING_AET".
  std::vector<std::string> toLines() const;
  /// The entries of `lines`; a line that does not parse is skipped and its problem added to `problems`.
  static DicomNodeList fromLines(const std::vector<std::string>& lines, std::vector<std::string>* problems = nullptr);

 private:
  std::vector<DicomNodeEntry> entries_;
};

/// "Hospital PACS (ORTHANC@pacs:4242)" for the list; just the node when the name is the node text.
std::string displayText(const DicomNodeEntry& e);

}  // namespace larmor::model
