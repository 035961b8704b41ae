// Which items of a batch are done, from the journal and the disk (run_parts.hpp). A "done" record counts only
// while the disk agrees with it: every output it lists exists, no later "done" record of another key wrote
// it, and its content is the one the record hashed. run() uses this to build its queue, --status to report,
// and the summary to list every item.
#include <filesystem>
#include <map>

#include "larmor/batch/journal.hpp"
#include "larmor/batch/ownership.hpp"
#include "run_parts.hpp"

namespace larmor::batch::detail {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string fileName(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return fs::path(p).filename().string();
}

// Why a "done" record no longer describes the disk (empty: it does). `lastWriter`: for each output path,
// the latest "done" record that wrote it, of any key.
std::string whyNotDone(const json& record, const std::map<std::string, const json*>& lastWriter, bool hashContents) {
  const json hashes = record.value("output_hashes", json::object());
  for (const auto& f : record.value("outputs", json::array())) {
    if (!f.is_string()) continue;
    const std::string path = f.get<std::string>();
    std::error_code ec;
    if (!fs::exists(path, ec)) return "output missing (" + fileName(path) + ")";
    const auto w = lastWriter.find(path);
    if (w != lastWriter.end() && w->second->value("key", "") != record.value("key", "")) {
      const json& other = *w->second;
      if (other.value("settings_hash", "") != record.value("settings_hash", "")) return "settings changed";
      if (other.value("input_hash", "") != record.value("input_hash", "")) return "input changed";
      return "output rewritten by another run (" + fileName(path) + ")";
    }
    if (hashContents && hashes.contains(path) && hashes[path].is_string() && contentHash(path) != hashes[path].get<std::string>())
      return "output altered since it was written (" + fileName(path) + ")";
  }
  return {};
}

}  // namespace

std::vector<ItemState> itemStates(const Plan& plan, const std::vector<json>& records, bool hashContents) {
  const auto latest = latestByKey(records);
  std::map<std::string, const json*> lastWriter, lastDoneByName;
  for (const auto& r : records) {
    if (r.value("event", "") != "done") continue;
    if (r.contains("name") && r["name"].is_string()) lastDoneByName[r["name"].get<std::string>()] = &r;
    for (const auto& f : r.value("outputs", json::array()))
      if (f.is_string()) lastWriter[f.get<std::string>()] = &r;
  }
  std::vector<ItemState> states(plan.items.size());
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    ItemState& s = states[i];
    const Item& item = plan.items[i];
    std::string settingsHash;
    try {
      settingsHash = itemSettings(plan, item).hash;
    } catch (const std::exception& e) {
      s.status = "failed";
      s.error = e.what();
      continue;
    }
    s.inputHash = inputHash(item.input);
    s.key = itemKey(item.name, s.inputHash, settingsHash);
    const auto it = latest.find(s.key);
    if (it == latest.end()) {
      const auto before = lastDoneByName.find(item.name);
      if (before != lastDoneByName.end())
        s.reason = before->second->value("settings_hash", "") != settingsHash ? "settings changed" : "input changed";
      continue;
    }
    s.record = it->second;
    const std::string ev = s.record.value("event", "");
    if (ev == "done") {
      s.reason = whyNotDone(s.record, lastWriter, hashContents);
      s.status = s.reason.empty() ? "done" : "pending";
    } else if (ev == "failed") {
      s.status = "failed";
      s.error = s.record.value("error", "");
    } else if (ev == "started") {
      s.status = "interrupted";
    }
  }
  return states;
}

}  // namespace larmor::batch::detail
