#pragma once
// The pieces of batch::run() (runner.hpp), internal to the engine. run() reads as three steps, each in its
// own file so that a reader can hold one at a time:
//  - bring_up.cpp: before any work. The devices come up on their own threads while this one checks the
//    folder (lock, journal, ownership of the batch's files) and works out what is to be done (the queue).
//  - scheduler.cpp: what runs where and when. One thread per device takes items from the shared queue and
//    overlaps one item's loading and the previous item's writing with the current item's reconstruction.
//  - job.cpp: one item: prepare (checks, "started", load), reconstruct, finish (outputs, thumbnail, "done").
// item_states.cpp says, from the journal and the disk, which items are done (run, --status and the summary).
// RunContext is what the worker threads share; its two mutexes and Progress's are the only locks of a run.
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "larmor/backend/registry.hpp"
#include "larmor/batch/journal.hpp"
#include "larmor/batch/ownership.hpp"
#include "larmor/batch/runner.hpp"
#include "larmor/io/export.hpp"
#include "larmor/io/series.hpp"
#include "larmor/recon/operator_cache.hpp"
#include "larmor/recon/recon.hpp"

namespace larmor::batch::detail {

inline double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// ---- item_states.cpp ------------------------------------------------------------------------------------

/// The state of one item of the plan, from the journal and the disk.
struct ItemState {
  std::string status = "pending";  ///< done | failed | pending | interrupted
  nlohmann::json record;           ///< the latest journal record (null when none)
  std::string key, inputHash, error;
  std::string reason;  ///< why it is to be done again although a run did it before (empty: new)
};

/// Every item's state. `hashContents`: compare each done output's content hash with the journal's (reads
/// every output).
std::vector<ItemState> itemStates(const Plan& plan, const std::vector<nlohmann::json>& records, bool hashContents = true);

// ---- bring_up.cpp ---------------------------------------------------------------------------------------

/// One device's worker: its backend, opened once and reused for every item it takes.
struct Worker {
  WorkerDevice device;
  std::shared_ptr<Backend> backend;
  /// The last item's trajectory operators for the next item of the same trajectory and settings (a cohort's
  /// slices): plan, Q and calibration gridding made once per worker, not per item. Declared after `backend`,
  /// so destroyed before it.
  std::shared_ptr<recon::OperatorCache> cache = std::make_shared<recon::OperatorCache>();
  std::string id;  ///< the backend's device id ("cpu", "cuda:0")
};

/// The devices as they came up.
struct BringUp {
  std::vector<Worker> workers;  ///< in device order
  std::string notice;           ///< e.g. why `all` runs on the CPU
  double ms = 0;                ///< when they were up, ms since the batch began
};

/// Throws Error for a bad shard or output format.
void checkRunOptions(const Plan& plan, const RunOptions& o);

/// Resolves the devices and opens every one's backend, on other threads; get() rethrows a device's error.
/// `o` must outlive the future.
std::future<BringUp> startDevices(const RunOptions& o, std::chrono::steady_clock::time_point t0);

/// The output folder, locked for this batch, with what its journal held before this run.
struct Folder {
  std::string dir;                   ///< absolute, so that the journal's paths hold from any working directory
  std::unique_ptr<BatchLock> lock;   ///< held until the run returns
  std::vector<nlohmann::json> records;
  std::unique_ptr<Journal> journal;  ///< declared after `lock`, so closed before it is released
};

/// Creates and locks the folder, checks that the batch's own files are the batch's, reads the journal and
/// writes DIR/batch-plan.json. On failure a folder made here is removed again (when no one else is at it).
Folder openFolder(const Plan& plan, const RunOptions& o);

// ---- what the worker threads share ----------------------------------------------------------------------

/// Progress events, counted and handed to the caller one at a time (the workers report concurrently).
class Progress {
 public:
  Progress(const std::function<void(const ProgressEvent&)>& onProgress, int total) : onProgress_(onProgress) {
    counts_.total = total;
  }
  /// Counts `ev` (Done, Failed, Skipped), stamps the counts on it and reports it.
  void emit(ProgressEvent ev);
  /// A message that is not an item (ev.error holds it): reported, not counted.
  void message(const std::string& text);
  ProgressEvent counts() const { return counts_; }  ///< after the workers have stopped

 private:
  const std::function<void(const ProgressEvent&)>& onProgress_;
  std::mutex mutex_;
  ProgressEvent counts_;
};

struct RunContext {
  RunContext(const Plan& p, const std::string& d, Journal& j, Progress& pr, std::chrono::steady_clock::time_point t)
      : plan(p), dir(d), journal(j), progress(pr), t0(t) {}

  const Plan& plan;
  const std::string& dir;
  Journal& journal;
  Progress& progress;
  std::chrono::steady_clock::time_point t0;  ///< when the batch began: the journal's timeline
  std::vector<ItemState> states;             ///< every item of the plan, before this run
  std::vector<std::string> notes;            ///< why an item that a run did before is done again
  std::string host, shard;                   ///< for the journal's records
  io::ExportOptions exportOptions;
  /// RunOptions::reconstruct: where set, items are reconstructed by it, not on the workers' devices.
  std::function<std::vector<recon::ReconResult>(const Item&, const ItemSettings&, const io::Series&, std::mutex&)>
      reconstruct;

  std::mutex ownedMutex;        ///< guards `owned`
  std::set<std::string> owned;  ///< outputs this batch may replace: the journal's, then this run's
  std::mutex loadMutex;         ///< libhdf5 (ISMRMRD) is not thread-safe: job.cpp's needsLoadLock
};

/// Fills ctx.states, ctx.owned and ctx.notes from the folder's journal, reports every item of this shard
/// that is done (Skipped) and returns the others, in plan order: the queue.
std::vector<std::size_t> planWork(RunContext& ctx, const std::vector<nlohmann::json>& records, const RunOptions& o);

/// This shard's items of the plan (i mod n = k).
int shardSize(const Plan& plan, const RunOptions& o);

// ---- job.cpp --------------------------------------------------------------------------------------------

/// One item on its way through a worker.
struct Job {
  std::size_t index = 0;
  std::chrono::steady_clock::time_point start;
  nlohmann::json rec;  ///< the fields every journal record of the item repeats
  ItemSettings is;
  std::vector<std::string> outs;
  io::Series series;  ///< every frame of the input (a series is reconstructed whole, as `recon` does)
  double loadMs = 0, reconMs = 0;
  double atStart = 0, atRecon = 0, atReconEnd = 0;  ///< ms since the batch began: the journal's timeline
  std::string error;  ///< non-empty: the item failed (at the stage that set it)
};

/// Checks the item's outputs, records "started" and loads the input. A failure is in job.error.
Job prepareJob(RunContext& ctx, const Worker& w, std::size_t index);
/// Reconstructs every frame on the worker's device. False (and the item recorded as failed) on failure.
/// `severalWorkers`: each worker keeps an item on its own device (no multi-GPU split).
bool reconstructJob(RunContext& ctx, const Worker& w, Job& job, bool severalWorkers,
                    std::vector<recon::ReconResult>& results);
/// Writes the outputs and the thumbnail, records "done" (or, on failure, "failed").
void finishJob(RunContext& ctx, const Worker& w, Job& job, std::vector<recon::ReconResult>& results);
/// Records job.error as the item's failure and reports it.
void failJob(RunContext& ctx, const Job& job, const std::string& device);

// ---- scheduler.cpp --------------------------------------------------------------------------------------

/// Runs the queue on the workers, one thread each; returns when every item is finished.
void runWorkers(RunContext& ctx, std::vector<Worker>& workers, const std::vector<std::size_t>& queue);

}  // namespace larmor::batch::detail
