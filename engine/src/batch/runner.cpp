// The batch runner (larmor/batch/runner.hpp): a shared queue of items, one worker thread per device,
// each with its own backend reused across items; the journal records every item's start and end.
#include "larmor/batch/runner.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "larmor/backend/registry.hpp"
#include "larmor/batch/contact_sheet.hpp"
#include "larmor/batch/journal.hpp"
#include "larmor/batch/ownership.hpp"
#include "larmor/io/dataset_io.hpp"
#include "larmor/io/export.hpp"
#include "larmor/io/output_safety.hpp"
#include "larmor/io/png.hpp"
#include "larmor/io/series.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/util/atomic_file.hpp"
#include "larmor/util/error.hpp"
#include "larmor/util/provenance.hpp"

namespace larmor::batch {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::vector<std::string> kFormats = {"cfl", "nii", "dcm", "png"};
constexpr int kThumbSize = 96;

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

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

/// The files an output path stands for (a .cfl its pair; a DICOM folder itself).
std::vector<std::string> members(const std::string& out) { return io::pathMembers(out); }

/// The state of one item of the plan, from the journal and the disk.
struct ItemState {
  std::string status = "pending";  ///< done | failed | pending | interrupted
  json record;                     ///< the latest journal record (null when none)
  std::string key, inputHash, error;
  std::string reason;  ///< why it is to be done again although a run did it before (empty: new)
};

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

// `hashContents`: compare each done output's content hash with the journal's (reads every output).
std::vector<ItemState> itemStates(const Plan& plan, const std::vector<json>& records, bool hashContents = true) {
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

/// ISMRMRD files are read through libhdf5, which Debian builds without its thread-safe option: one at a
/// time. The other readers (.cfl, .ra, twix) are plain C++ and run in parallel.
bool needsLoadLock(const std::string& path) {
  std::string e = fs::path(path).extension().string();
  for (auto& ch : e) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return e != ".cfl" && e != ".hdr" && e != ".ra" && e != ".dat";
}

struct Worker {
  WorkerDevice device;
  std::shared_ptr<Backend> backend;
  /// The last item's trajectory operators for the next item of the same trajectory and settings (a cohort's
  /// slices): plan, Q and calibration gridding made once per worker, not per item. Declared after `backend`,
  /// so destroyed before it.
  std::shared_ptr<recon::OperatorCache> cache = std::make_shared<recon::OperatorCache>();
  std::string id;  ///< the backend's device id ("cpu", "cuda:0")
};

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
  const auto states = itemStates(plan, records, false);  // run() has compared the contents

  json items = json::array();
  int done = 0, failed = 0, pending = 0;
  std::vector<Tile> tiles;
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    const Item& it = plan.items[i];
    const ItemState& s = states[i];
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
  const auto states = itemStates(plan, records);
  json items = json::array();
  int done = 0, failed = 0, pending = 0, interrupted = 0;
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    const ItemState& s = states[i];
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
  const auto t0 = std::chrono::steady_clock::now();
  require(o.shardCount >= 1 && o.shardIndex >= 0 && o.shardIndex < o.shardCount,
          "--shard " + std::to_string(o.shardIndex) + "/" + std::to_string(o.shardCount) + ": expected K/N with 0 <= K < N");
  for (const auto& f : plan.formats) checkFormat(f);
  require(!plan.formats.empty(), "batch: no output format");

  // The devices come up while this thread reads the journal and hashes the inputs (creating a CUDA context
  // takes 0.2-0.35 s on the H100; hashing a cohort of large files takes longer). No warm-up reconstruction
  // here: measured, recon::warmUp took 0.40 s cold against the 0.19 s that the first item loses by being
  // cold, and nothing else would run beside it.
  struct BringUp {
    std::vector<Worker> workers;
    std::string notice;
    double ms = 0;
  };
  std::future<BringUp> bringUp;
  if (!plan.items.empty())
    bringUp = std::async(std::launch::async, [&]() {
      BringUp b;
      const auto devs = resolveDevices(o.devices, o.jobs, &b.notice);
      // Every device's context at the same time (0.2-0.35 s each on the H100; one after the other they added
      // up on a machine of several GPUs), in device order in the result. The plugin is loaded first, once:
      // the registry's provider list must not change while the threads read it.
      BackendRegistry::instance().loadPlugins();
      std::vector<std::future<Worker>> up;
      for (const auto& d : devs)
        up.push_back(std::async(std::launch::async, [&o, d]() {
          Worker w;
          w.device = d;
          try {
            w.backend = d.spec == "cpu" ? makeCpuBackend() : BackendRegistry::instance().select(d.spec).backend;
          } catch (const Error& e) {
            std::string why = e.what();
            if (const std::string own = "--device " + d.spec + ": "; why.rfind(own, 0) == 0) why = why.substr(own.size());
            throw Error("--devices " + o.devices + ": " + d.spec + ": " + why);
          }
          w.id = w.backend->info().id;
          return w;
        }));
      for (auto& f : up) b.workers.push_back(f.get());
      b.ms = msSince(t0);
      return b;
    });
  // Absolute: the journal's output paths must name the same files from any working directory.
  const std::string dir = fs::absolute(o.outputDir).lexically_normal().string();
  std::error_code ec;
  const bool madeDir = !fs::exists(dir, ec);
  fs::create_directories(dir, ec);
  require(!ec, dir + ": cannot create the output folder (" + ec.message() + ")");
  // Before any work: one batch at a time (shards of this plan excepted); the batch's own files are the
  // batch's; what the journal says before this run: the outputs that are ours, what is done.
  std::optional<BatchLock> folderLock;
  std::vector<json> records;
  try {
    io::requireWritableFolder(dir, dir);
    folderLock.emplace(dir, hex64(fnv1a(toJson(plan).dump())));
    const std::string journalPath = (fs::path(dir) / kJournalFile).string();
    requireBatchJournal(journalPath);
    records = Journal::read(journalPath);
    for (const char* own : {kPlanFile, "summary.json", "contact-sheet.png"}) requireBatchFile(dir, own, records);
  } catch (const Error&) {
    folderLock.reset();
    if (madeDir) BatchLock::removeIfUnused(dir);  // made a moment ago: not left behind empty
    throw;
  }
  Journal journal((fs::path(dir) / kJournalFile).string());
  writeBatchFile((fs::path(dir) / kPlanFile).string(), toJson(plan).dump(2) + "\n");

  std::set<std::string> owned;
  for (const auto& r : records)
    for (const auto& f : r.value("outputs", json::array()))
      if (f.is_string()) owned.insert(f.get<std::string>());
  const auto states = itemStates(plan, records);

  RunResult result;
  std::vector<std::size_t> queue;
  std::mutex eventMutex;
  ProgressEvent counts;
  auto emit = [&](ProgressEvent ev) {
    std::lock_guard lock(eventMutex);
    if (ev.kind == ProgressEvent::Kind::Done) ++counts.done;
    if (ev.kind == ProgressEvent::Kind::Failed) ++counts.failed;
    if (ev.kind == ProgressEvent::Kind::Skipped) ++counts.skipped;
    ev.done = counts.done, ev.failed = counts.failed, ev.skipped = counts.skipped, ev.total = counts.total;
    if (onProgress) onProgress(ev);
  };
  for (std::size_t i = 0; i < plan.items.size(); ++i)
    if (static_cast<int>(i % static_cast<std::size_t>(o.shardCount)) == o.shardIndex) ++counts.total;
  result.total = counts.total;
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    if (static_cast<int>(i % static_cast<std::size_t>(o.shardCount)) != o.shardIndex) continue;
    if (states[i].status == "done") {
      emit({ProgressEvent::Kind::Skipped, plan.items[i].name, "", "", 0, 0, 0, 0, 0, ""});
      continue;
    }
    queue.push_back(i);
  }
  // Why an item that a run did before is done again.
  std::vector<std::string> notes(plan.items.size());
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    const ItemState& s = states[i];
    if (s.status == "interrupted") notes[i] = "redone: interrupted before it finished";
    else if (s.status == "failed") notes[i] = "retried: it failed before";
    else if (s.status == "pending" && !s.reason.empty()) notes[i] = "redone: " + s.reason;
  }

  std::vector<Worker> workers;
  const double atPlanned = msSince(t0);
  double atDevicesUp = 0;
  if (!queue.empty()) {
    BringUp b = bringUp.get();  // rethrows the devices' errors
    atDevicesUp = b.ms;
    if (!b.notice.empty() && onProgress) {
      ProgressEvent ev;
      ev.kind = ProgressEvent::Kind::Started;
      ev.error = b.notice;  // a message, not an item
      onProgress(ev);
    }
    workers = std::move(b.workers);
    workers.resize(std::min(workers.size(), queue.size()));
  }

  std::atomic<std::size_t> next{0};
  std::mutex loadMutex;   // libhdf5 (ISMRMRD) is not thread-safe: needsLoadLock
  std::mutex ownedMutex;  // the outputs of this run join `owned`
  const std::string host = hostName();
  const std::string shard = std::to_string(o.shardIndex) + "/" + std::to_string(o.shardCount);

  // Each item passes three stages: prepare (checks, "started", load), reconstruct (the worker's device),
  // finish (outputs, thumbnail, "done"). A worker loads the next item and writes the previous one while
  // its device reconstructs the current one, so the device is not idle during file I/O.
  struct Job {
    std::size_t index = 0;
    std::chrono::steady_clock::time_point start;
    json rec;
    ItemSettings is;
    std::vector<std::string> outs;
    io::Series series;  ///< every frame of the input (a series is reconstructed whole, as `recon` does)
    double loadMs = 0, reconMs = 0;
    double atStart = 0, atRecon = 0, atReconEnd = 0;  ///< ms since the batch began: the journal's timeline
    std::string error;  ///< non-empty: the item failed (at the stage that set it)
  };
  io::ExportOptions eo;
  eo.printWarnings = false;

  auto fail = [&](Job& job, const std::string& device) {
    const Item& item = plan.items[job.index];
    json failed = job.rec;
    failed["event"] = "failed";
    failed["error"] = job.error;
    failed["timings_ms"] = {{"total", msSince(job.start)}};
    failed["time_utc"] = utcNow();
    try {
      journal.append(failed);
    } catch (const std::exception&) {
      // the journal itself failed: the item is reported and, unrecorded, retried next time
    }
    emit({ProgressEvent::Kind::Failed, item.name, device, job.error, 0, 0, 0, 0, msSince(job.start) / 1e3, ""});
  };

  auto prepare = [&](const Worker& w, std::size_t index) {
    Job job;
    job.index = index;
    job.start = std::chrono::steady_clock::now();
    job.atStart = msSince(t0);
    const Item& item = plan.items[index];
    job.rec = {{"name", item.name}, {"input", item.input}, {"device", w.id}, {"host", host},
               {"pid", static_cast<long>(::getpid())}, {"shard", shard},
               {"key", states[index].key.empty() ? itemKey(item.name, "", "") : states[index].key},
               {"input_hash", states[index].inputHash}};
    emit({ProgressEvent::Kind::Started, item.name, w.id, "", 0, 0, 0, 0, 0, notes[index]});
    try {
      if (w.device.ompThreads > 0) omp_set_num_threads(w.device.ompThreads);
      job.is = itemSettings(plan, item);
      std::vector<std::string> planned;
      for (const auto& f : plan.formats) job.outs.push_back(outputPath(dir, item.name, f));
      for (std::size_t k = 0; k < job.outs.size(); ++k) {
        if (plan.formats[k] == "dcm") {
          planned.push_back(job.outs[k]);
          continue;  // a DICOM folder: io's rule (absent, empty or a Larmor export)
        }
        for (const auto& m : members(job.outs[k])) {
          planned.push_back(m);
          std::lock_guard lock(ownedMutex);
          require(!fs::exists(m) || owned.count(m) > 0,
                  m + ": exists and is not an output of this batch; not overwritten (move it or use another --output-dir)");
        }
      }
      {
        std::lock_guard lock(ownedMutex);
        owned.insert(planned.begin(), planned.end());
      }
      // The rules of io's output check that a batch needs: no output is an input; a DICOM folder is new,
      // empty or only Larmor's export. What may be replaced is the journal's to say (above).
      std::vector<std::string> inputs = {item.input};
      if (!job.is.trajectory.empty()) inputs.push_back(job.is.trajectory);
      for (const auto& out : job.outs) {
        io::requireNotAnInput(out, io::OutputRole::Image, inputs);
        io::checkOutputPath(out, eo);
      }
      json started = job.rec;
      started["event"] = "started";
      started["settings_hash"] = job.is.hash;
      started["outputs"] = planned;
      started["time_utc"] = utcNow();
      journal.append(started);

      io::LoadOptions lo;
      lo.trajectoryPath = job.is.trajectory;
      for (int i = 0; i < 3; ++i) lo.matrix[i] = job.is.settings.matrix[i];
      const auto tLoad = std::chrono::steady_clock::now();
      if (needsLoadLock(item.input)) {
        std::lock_guard lock(loadMutex);
        job.series = io::loadSeries(item.input, lo);
      } else {
        job.series = io::loadSeries(item.input, lo);
      }
      job.loadMs = msSince(tLoad);
    } catch (const std::exception& e) {
      job.error = e.what();
    }
    return job;
  };

  auto finish = [&](const Worker& w, Job job, std::vector<recon::ReconResult> results) {
    const recon::ReconResult& r = results.front();
    const Item& item = plan.items[job.index];
    try {
      if (w.device.ompThreads > 0) omp_set_num_threads(w.device.ompThreads);
      const auto tWrite = std::chrono::steady_clock::now();
      std::vector<std::string> files, warnings = job.series.frames.front().warnings;
      for (const auto& fr : results)
        for (const auto& wn : fr.warnings)
          if (std::find(warnings.begin(), warnings.end(), wn) == warnings.end()) warnings.push_back(wn);
      for (const auto& out : job.outs) {
        const io::ExportReport rep = io::writeSeriesOutput(out, results, job.series, eo);
        files.insert(files.end(), rep.files.begin(), rep.files.end());
        warnings.insert(warnings.end(), rep.warnings.begin(), rep.warnings.end());
      }
      // The thumbnail of the contact sheet: the middle slice (partition) of the magnitude.
      const Shape& sh = r.image.shape();
      RArray mag(sh);
      for (index_t i = 0; i < mag.size(); ++i) mag[i] = std::abs(r.image[i]);
      const index_t nz = std::max<index_t>(1, sh[2]), ns = std::max<index_t>(1, sh[4]);
      std::error_code dirEc;
      fs::create_directories(fs::path(dir) / kThumbDir, dirEc);  // made with the first thumbnail, not before
      writePgm((fs::path(dir) / kThumbDir / (item.name + ".pgm")).string(),
               thumbnail(io::render(mag, nz / 2 + nz * (ns / 2)), kThumbSize));
      const double writeMs = msSince(tWrite);
      json done = job.rec;
      done["event"] = "done";
      done["settings_hash"] = job.is.hash;
      if (std::find(plan.formats.begin(), plan.formats.end(), "dcm") != plan.formats.end())
        files.push_back(outputPath(dir, item.name, "dcm"));
      done["outputs"] = files;
      json hashes = json::object();  // what resume compares with the disk
      for (const auto& f : files) hashes[f] = contentHash(f);
      done["output_hashes"] = hashes;
      done["timings_ms"] = {{"load", job.loadMs}, {"recon", job.reconMs}, {"write", writeMs}, {"total", msSince(job.start)}};
      // recon::run's stages summed over the frames: where an item's time went (e.g. with two workers).
      json stages = json::object();
      for (const auto& fr : results)
        for (const auto& st : fr.timings.stages()) stages[st.stage] = stages.value(st.stage, 0.0) + st.milliseconds;
      done["timings_ms"]["stages"] = stages;
      done["at_ms"] = {{"start", job.atStart}, {"recon", job.atRecon}, {"recon_end", job.atReconEnd}, {"end", msSince(t0)}};
      if (!warnings.empty()) done["warnings"] = warnings;
      done["time_utc"] = utcNow();
      journal.append(done);
      {
        std::lock_guard lock(ownedMutex);
        owned.insert(files.begin(), files.end());
      }
      emit({ProgressEvent::Kind::Done, item.name, w.id, "", 0, 0, 0, 0, msSince(job.start) / 1e3, ""});
    } catch (const std::exception& e) {
      job.error = e.what();
      fail(job, w.id);
    }
  };

  auto workerLoop = [&](Worker& w) {
    if (w.device.ompThreads > 0) omp_set_num_threads(w.device.ompThreads);
    auto fetch = [&]() -> std::future<Job> {
      const std::size_t k = next++;
      if (k >= queue.size()) return {};
      return std::async(std::launch::async, prepare, std::cref(w), queue[k]);
    };
    std::future<Job> pending = fetch();
    std::future<void> writing;
    while (pending.valid()) {
      Job job = pending.get();
      pending = fetch();  // the next item loads while this one reconstructs
      if (!job.error.empty()) {
        fail(job, w.id);
        continue;
      }
      std::vector<recon::ReconResult> r;
      try {
        recon::ReconRequest req;
        req.settings = job.is.settings;
        // Each worker owns its device: an item's slices (or GPU.Multi's slabs) stay there.
        if (workers.size() > 1) req.settings.iterative.multiGpu = false;
        req.backend = w.backend;
        req.cache = w.cache;
        const auto tRecon = std::chrono::steady_clock::now();
        job.atRecon = msSince(t0);
        for (const Dataset& frame : job.series.frames) {  // every frame with the same settings
          req.dataset = &frame;
          r.push_back(recon::run(req));
        }
        job.reconMs = msSince(tRecon);
        job.atReconEnd = msSince(t0);
      } catch (const std::exception& e) {
        job.error = e.what();
        fail(job, w.id);
        continue;
      }
      if (writing.valid()) writing.get();  // one item being written at a time per worker
      writing = std::async(std::launch::async, finish, std::cref(w), std::move(job), std::move(r));
    }
    if (writing.valid()) writing.get();
  };

  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back([&, wp = &w] { workerLoop(*wp); });
  for (auto& t : threads) t.join();

  result.done = counts.done;
  result.failed = counts.failed;
  result.skipped = counts.skipped;
  result.wallSeconds = msSince(t0) / 1e3;
  result.summary = writeSummary(dir, plan, result.wallSeconds,
                                {{"journal_and_inputs", atPlanned}, {"devices", atDevicesUp}});
  return result;
}

}  // namespace larmor::batch
