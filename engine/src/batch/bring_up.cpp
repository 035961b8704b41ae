// Bring-up of a batch run (run_parts.hpp): everything that happens before the first item starts.
//  - The devices come up on their own threads (creating a CUDA context takes 0.2-0.35 s on the H100)
//    while the calling thread checks the folder and hashes the inputs (a cohort of large files takes
//    longer), so neither waits for the other.
//  - The folder: one batch at a time (shards of this plan excepted: BatchLock); the batch's own files
//    (plan, summary, contact sheet, journal) are the batch's (ownership.hpp); all checked before any work.
//  - The work: from the journal, which outputs are ours and which items are done; the rest is the queue.
#include <filesystem>

#include "larmor/io/output_safety.hpp"
#include "larmor/util/error.hpp"
#include "run_parts.hpp"

namespace larmor::batch::detail {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// Opens one device's backend; an error names the --devices list and the device.
Worker openWorker(const RunOptions& o, const WorkerDevice& d) {
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
}

}  // namespace

void checkRunOptions(const Plan& plan, const RunOptions& o) {
  require(o.shardCount >= 1 && o.shardIndex >= 0 && o.shardIndex < o.shardCount,
          "--shard " + std::to_string(o.shardIndex) + "/" + std::to_string(o.shardCount) + ": expected K/N with 0 <= K < N");
  for (const auto& f : plan.formats) checkFormat(f);
  require(!plan.formats.empty(), "batch: no output format");
}

// No warm-up reconstruction here: measured, recon::warmUp took 0.40 s cold against the 0.19 s that the first
// item loses by being cold, and nothing else would run beside it.
std::future<BringUp> startDevices(const RunOptions& o, std::chrono::steady_clock::time_point t0) {
  return std::async(std::launch::async, [&o, t0]() {
    BringUp b;
    const auto devs = resolveDevices(o.devices, o.jobs, &b.notice);
    // Every device's context at the same time (0.2-0.35 s each on the H100; one after the other they added
    // up on a machine of several GPUs), in device order in the result. The plugin is loaded first, once:
    // the registry's provider list must not change while the threads read it.
    BackendRegistry::instance().loadPlugins();
    std::vector<std::future<Worker>> up;
    for (const auto& d : devs) up.push_back(std::async(std::launch::async, [&o, d]() { return openWorker(o, d); }));
    for (auto& f : up) b.workers.push_back(f.get());
    b.ms = msSince(t0);
    return b;
  });
}

Folder openFolder(const Plan& plan, const RunOptions& o) {
  Folder f;
  f.dir = fs::absolute(o.outputDir).lexically_normal().string();
  std::error_code ec;
  const bool madeDir = !fs::exists(f.dir, ec);
  fs::create_directories(f.dir, ec);
  require(!ec, f.dir + ": cannot create the output folder (" + ec.message() + ")");
  try {
    io::requireWritableFolder(f.dir, f.dir);
    f.lock = std::make_unique<BatchLock>(f.dir, hex64(fnv1a(toJson(plan).dump())));
    const std::string journalPath = (fs::path(f.dir) / kJournalFile).string();
    requireBatchJournal(journalPath);
    f.records = Journal::read(journalPath);
    for (const char* own : {kPlanFile, "summary.json", "contact-sheet.png"}) requireBatchFile(f.dir, own, f.records);
  } catch (const Error&) {
    f.lock.reset();
    if (madeDir) BatchLock::removeIfUnused(f.dir);  // made a moment ago: not left behind empty
    throw;
  }
  f.journal = std::make_unique<Journal>((fs::path(f.dir) / kJournalFile).string());
  writeBatchFile((fs::path(f.dir) / kPlanFile).string(), toJson(plan).dump(2) + "\n");
  return f;
}

int shardSize(const Plan& plan, const RunOptions& o) {
  int n = 0;
  for (std::size_t i = 0; i < plan.items.size(); ++i)
    if (static_cast<int>(i % static_cast<std::size_t>(o.shardCount)) == o.shardIndex) ++n;
  return n;
}

std::vector<std::size_t> planWork(RunContext& ctx, const std::vector<json>& records, const RunOptions& o) {
  const Plan& plan = ctx.plan;
  for (const auto& r : records)
    for (const auto& f : r.value("outputs", json::array()))
      if (f.is_string()) ctx.owned.insert(f.get<std::string>());
  ctx.states = itemStates(plan, records);

  std::vector<std::size_t> queue;
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    if (static_cast<int>(i % static_cast<std::size_t>(o.shardCount)) != o.shardIndex) continue;
    if (ctx.states[i].status == "done") {
      ctx.progress.emit({ProgressEvent::Kind::Skipped, plan.items[i].name, "", "", 0, 0, 0, 0, 0, ""});
      continue;
    }
    queue.push_back(i);
  }
  ctx.notes.assign(plan.items.size(), "");
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    const ItemState& s = ctx.states[i];
    if (s.status == "interrupted") ctx.notes[i] = "redone: interrupted before it finished";
    else if (s.status == "failed") ctx.notes[i] = "retried: it failed before";
    else if (s.status == "pending" && !s.reason.empty()) ctx.notes[i] = "redone: " + s.reason;
  }
  return queue;
}

void Progress::emit(ProgressEvent ev) {
  std::lock_guard lock(mutex_);
  if (ev.kind == ProgressEvent::Kind::Done) ++counts_.done;
  if (ev.kind == ProgressEvent::Kind::Failed) ++counts_.failed;
  if (ev.kind == ProgressEvent::Kind::Skipped) ++counts_.skipped;
  ev.done = counts_.done, ev.failed = counts_.failed, ev.skipped = counts_.skipped, ev.total = counts_.total;
  if (onProgress_) onProgress_(ev);
}

void Progress::message(const std::string& text) {
  std::lock_guard lock(mutex_);
  if (text.empty() || !onProgress_) return;
  ProgressEvent ev;
  ev.kind = ProgressEvent::Kind::Started;
  ev.error = text;  // a message, not an item
  onProgress_(ev);
}

}  // namespace larmor::batch::detail
