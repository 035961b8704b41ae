// The batch runner (larmor/batch/runner.hpp): the plan and its JSON, each item's settings, the devices,
// --status and the summary, and run(), which reads as its three steps: bring-up (bring_up.cpp), the
// scheduler (scheduler.cpp) and one item's job (job.cpp); run_parts.hpp says how they fit together.
#include "larmor/batch/runner.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <sstream>

#include "larmor/backend/registry.hpp"
#include "larmor/batch/contact_sheet.hpp"
#include "larmor/batch/journal.hpp"
#include "larmor/batch/ownership.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/util/error.hpp"
#include "larmor/util/provenance.hpp"
#include "run_parts.hpp"

namespace larmor::batch {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::vector<std::string> kFormats = {"cfl", "nii", "dcm", "png"};

std::string hostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

json readJsonFile(const std::string& path) {
  std::ifstream in(path);
  require(static_cast<bool>(in), path + ": cannot read");
  std::stringstream text;
  text << in.rdbuf();
  json j = json::parse(text.str(), nullptr, false);
  require(!j.is_discarded(), path + ": not valid JSON");
  return j;
}

}  // namespace

void checkFormat(const std::string& format) {
  require(std::find(kFormats.begin(), kFormats.end(), format) != kFormats.end(),
          "--format " + format + ": expected cfl, nii, dcm or png");
}

std::string outputPath(const std::string& dir, const std::string& name, const std::string& format) {
  checkFormat(format);
  const fs::path p = fs::path(dir) / name;
  if (format == "dcm") return p.string() + "/";
  return p.string() + "." + format;
}

json toJson(const Plan& p) {
  json items = json::array();
  for (const auto& it : p.items)
    items.push_back({{"input", it.input}, {"name", it.name}, {"overrides", it.overrides}, {"origin", it.origin}});
  return {{"larmor_batch_plan", 1},
          {"settings_file", p.settingsPath},
          {"settings", settingsFileJson(p.settings.settings, p.settings.trajectory)},
          {"formats", p.formats},
          {"items", items}};
}

Plan planFromJson(const json& j, const std::string& where) {
  require(j.is_object() && j.contains("larmor_batch_plan") && j.contains("items") && j["items"].is_array(),
          where + ": not a Larmor batch plan");
  Plan p;
  try {
    p.settingsPath = j.value("settings_file", "");
    p.settings = settingsFromJson(j.at("settings"), where);
    p.formats = j.at("formats").get<std::vector<std::string>>();
    for (const auto& it : j["items"])
      p.items.push_back({it.at("input").get<std::string>(), it.at("overrides").get<std::vector<std::string>>(),
                         it.at("name").get<std::string>(), it.value("origin", "")});
  } catch (const json::exception& e) {
    throw Error(where + ": malformed batch plan (" + e.what() + ")");
  }
  return p;
}

ItemSettings itemSettings(const Plan& plan, const Item& item) {
  ItemSettings s{plan.settings.settings, plan.settings.trajectory, {}};
  applyOverrides(s.settings, s.trajectory, item.overrides, item.origin.empty() ? item.input : item.origin);
  s.settings.keepCoilImages = false;  // only the combined image is written
  try {
    recon::settings::validate(s.settings);
  } catch (const Error& e) {
    throw Error(item.input + ": " + e.what());
  }
  std::string text = recon::settings::toJson(s.settings).dump();
  text.push_back('\0');
  text += s.trajectory;
  for (const auto& f : plan.formats) {
    text.push_back('\0');
    text += f;
  }
  s.hash = hex64(fnv1a(text));
  return s;
}

std::vector<WorkerDevice> resolveDevices(const std::string& devices, int jobs, std::string* notice) {
  const int threads = std::max(1, omp_get_max_threads());
  auto cpuWorkers = [&](int n) {
    n = std::max(1, n);
    std::vector<WorkerDevice> w(static_cast<std::size_t>(n));
    for (auto& d : w) d = {"cpu", std::max(1, threads / n)};
    return w;
  };
  if (devices == "cpu") return cpuWorkers(jobs);
  auto& reg = BackendRegistry::instance();
  std::vector<WorkerDevice> w;
  if (devices == "all" || devices == "auto") {
    for (const auto& d : reg.devices())
      if (d.gpu) w.push_back({d.id, 0});
    if (w.empty()) {
      const int n = std::max(1, jobs);
      if (notice)
        *notice = "no GPU (" + reg.whyNoGpu() + "): running on the CPU with " + std::to_string(n) + " worker" +
                  (n == 1 ? "" : "s");
      return cpuWorkers(n);
    }
  } else {
    std::stringstream list(devices);
    std::string spec;
    while (std::getline(list, spec, ','))
      if (!spec.empty()) w.push_back({spec, 0});
    require(!w.empty(), "--devices " + devices + ": expected all, cpu or a list like cuda:0,cuda:1");
    std::set<std::string> seen;
    for (const auto& d : w) require(seen.insert(d.spec).second, "--devices " + devices + ": " + d.spec + " is listed twice");
  }
  for (auto& d : w) d.ompThreads = std::max(1, threads / static_cast<int>(w.size()));
  return w;
}

json writeSummary(const std::string& dir, const Plan& plan, double wallSeconds, const json& startupMs) {
  Journal journal((fs::path(dir) / kJournalFile).string());
  const auto records = Journal::read(journal.path());
  const auto states = detail::itemStates(plan, records, false);  // run() has compared the contents

  json items = json::array();
  int done = 0, failed = 0, pending = 0;
  std::vector<Tile> tiles;
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    const Item& it = plan.items[i];
    const detail::ItemState& s = states[i];
    json e = {{"name", it.name}, {"input", it.input}, {"status", s.status}};
    if (!it.overrides.empty()) e["overrides"] = it.overrides;
    if (!s.record.is_null()) {
      for (const char* k : {"outputs", "device", "host", "timings_ms", "warnings", "time_utc"})
        if (s.record.contains(k)) e[k] = s.record[k];
    }
    if (!s.error.empty()) e["error"] = s.error;
    if (s.status != "done" && !s.reason.empty()) e["reason"] = s.reason;
    items.push_back(e);
    if (s.status == "done") {
      ++done;
      Tile t{it.name, {}};
      try {
        t.thumbnail = readPgm((fs::path(dir) / kThumbDir / (it.name + ".pgm")).string());
      } catch (const std::exception&) {
        // no thumbnail (removed): an empty tile
      }
      tiles.push_back(std::move(t));
    } else if (s.status == "failed") {
      ++failed;
      tiles.push_back({it.name, {}});
    } else {
      ++pending;
    }
  }
  const json summary = {{"larmor_batch_summary", 1},
                        {"output_dir", fs::absolute(dir).lexically_normal().string()},
                        {"settings_file", plan.settingsPath},
                        {"formats", plan.formats},
                        {"total", plan.items.size()},
                        {"done", done},
                        {"failed", failed},
                        {"pending", pending},
                        {"wall_seconds_this_process", wallSeconds},
                        {"startup_ms", startupMs},
                        {"written_utc", utcNow()},
                        {"version", versionString()},
                        {"items", items}};
  writeBatchFile((fs::path(dir) / "summary.json").string(), summary.dump(2) + "\n");
  // Cells shrink for large cohorts so that the sheet stays near 4096 pixels wide (96 to 32 pixels a cell).
  const int cols = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(std::max<std::size_t>(1, tiles.size())))));
  const int cell = std::clamp(4096 / cols - 8, 32, 96);
  writeBatchPng(journal, records, (fs::path(dir) / "contact-sheet.png").string(), contactSheet(tiles, cell));
  return summary;
}

json status(const std::string& dir) {
  const std::string planPath = (fs::path(dir) / kPlanFile).string();
  require(fs::exists(planPath), dir + ": no batch here (no " + std::string(kPlanFile) + ")");
  const Plan plan = planFromJson(readJsonFile(planPath), planPath);
  int skipped = 0;
  const auto records = Journal::read((fs::path(dir) / kJournalFile).string(), &skipped);
  const auto states = detail::itemStates(plan, records);
  json items = json::array();
  int done = 0, failed = 0, pending = 0, interrupted = 0;
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    const detail::ItemState& s = states[i];
    json e = {{"name", plan.items[i].name}, {"input", plan.items[i].input}, {"status", s.status}};
    if (!s.error.empty()) e["error"] = s.error;
    if (s.status != "done" && !s.reason.empty()) e["reason"] = s.reason;
    if (!s.record.is_null() && s.record.contains("host")) e["host"] = s.record["host"];
    items.push_back(e);
    if (s.status == "done") ++done;
    else if (s.status == "failed") ++failed;
    else if (s.status == "interrupted") ++interrupted;
    else ++pending;
  }
  return {{"total", plan.items.size()}, {"done", done}, {"failed", failed}, {"pending", pending},
          {"started_not_finished", interrupted}, {"torn_journal_lines", skipped}, {"items", items}};
}

RunResult run(const Plan& plan, const RunOptions& o, const std::function<void(const ProgressEvent&)>& onProgress) {
  using namespace detail;
  const auto t0 = std::chrono::steady_clock::now();
  checkRunOptions(plan, o);
  // Bring-up (bring_up.cpp): the devices come up while this thread checks the folder and works out the queue.
  std::future<BringUp> devices;
  if (!plan.items.empty()) devices = startDevices(o, t0);
  const Folder folder = openFolder(plan, o);
  Progress progress(onProgress, shardSize(plan, o));
  RunContext ctx(plan, folder.dir, *folder.journal, progress, t0);
  const std::vector<std::size_t> queue = planWork(ctx, folder.records, o);
  ctx.host = hostName();
  ctx.shard = std::to_string(o.shardIndex) + "/" + std::to_string(o.shardCount);
  ctx.exportOptions.printWarnings = false;
  ctx.reconstruct = o.reconstruct;

  std::vector<Worker> workers;
  const double atPlanned = msSince(t0);
  double atDevicesUp = 0;
  if (!queue.empty()) {
    BringUp b = devices.get();  // rethrows the devices' errors
    atDevicesUp = b.ms;
    progress.message(b.notice);
    workers = std::move(b.workers);
    workers.resize(std::min(workers.size(), queue.size()));
    if (o.reconstruct)
      for (auto& w : workers) w.id = o.reconstructedOn;  // the journal and progress name where it ran
  }
  runWorkers(ctx, workers, queue);  // scheduler.cpp; each item: job.cpp

  RunResult result;
  const ProgressEvent counts = progress.counts();
  result.total = counts.total;
  result.done = counts.done;
  result.failed = counts.failed;
  result.skipped = counts.skipped;
  result.wallSeconds = msSince(t0) / 1e3;
  result.summary = writeSummary(folder.dir, plan, result.wallSeconds,
                                {{"journal_and_inputs", atPlanned}, {"devices", atDevicesUp}});
  return result;
}

}  // namespace larmor::batch
