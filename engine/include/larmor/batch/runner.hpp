#pragma once
// The batch runner: reconstructs every item of a batch (manifest.hpp) with one settings file
// (settings_file.hpp) into one output folder, on several devices of one host at once.
//
//  - One worker thread per device (`cuda:0,cuda:1`, `all` = every GPU, or `cpu` with `jobs` workers that
//    divide the OpenMP threads among them). Each worker opens its backend once (registry.hpp) and reuses
//    it, with its plan caches, for every item it takes; items are dealt from one shared queue as workers
//    free up. ISMRMRD loading is serialised (libhdf5 is not thread-safe); the rest overlaps.
//  - Every output is written atomically (AtomicFile; DICOM: a folder renamed) and never over a file that
//    is not an earlier output of this batch (the journal lists ours); the batch's own files (plan, summary,
//    contact sheet, journal) only over the batch's earlier ones (ownership.hpp), checked before any work.
//  - The journal (journal.hpp) records started/done/failed with each output's content hash; a re-run skips
//    what is done and still on disk as it was written, and redoes the rest with a line that says why
//    (settings or input changed, output missing, altered or rewritten by another run, interrupted, failed).
//    One failing item is recorded and the others go on.
//  - One batch per folder at a time (BatchLock): the shards of one plan share the folder, a batch of
//    other settings is refused while one runs.
//  - Shard k of n (Slurm array task k) takes items i with i mod n = k.
//  - At the end: DIR/summary.json and DIR/contact-sheet.png over the whole plan (every shard's results).
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "larmor/batch/manifest.hpp"
#include "larmor/batch/settings_file.hpp"
#include "larmor/io/series.hpp"
#include "larmor/recon/recon.hpp"

namespace larmor::batch {

/// Output formats: cfl (BART), nii (NIfTI-1), dcm (a DICOM series folder), png.
std::string outputPath(const std::string& dir, const std::string& name, const std::string& format);
void checkFormat(const std::string& format);  ///< throws Error naming the valid formats

/// The batch as every process of it sees it: written to DIR/batch-plan.json, read by --status.
struct Plan {
  std::vector<Item> items;
  SettingsFile settings;
  std::string settingsPath;
  std::vector<std::string> formats = {"cfl"};
};
nlohmann::json toJson(const Plan& p);
Plan planFromJson(const nlohmann::json& j, const std::string& where);

/// Settings of one item (the file's, then its overrides) and their hash (settings JSON, trajectory,
/// formats). Throws Error for a bad override.
struct ItemSettings {
  recon::ReconSettings settings;
  std::string trajectory;
  std::string hash;
};
ItemSettings itemSettings(const Plan& plan, const Item& item);

struct RunOptions {
  std::string outputDir;
  std::string devices = "all";  ///< all | cpu | cuda:0,cuda:1,...
  int jobs = 0;                 ///< CPU workers when on the CPU (0: 1)
  int shardIndex = 0, shardCount = 1;
  /// Where set, every item's frames are reconstructed by this instead of on the workers' devices (larmor-cli
  /// batch --server: a warm streaming server); the workers (devices "cpu", `jobs` of them) then load, hand over
  /// and write, `jobs` items in flight. The mutex is the one ISMRMRD loading holds (libhdf5 is not thread-safe).
  /// An Error it throws is the item's failure.
  std::function<std::vector<recon::ReconResult>(const Item&, const ItemSettings&, const io::Series&, std::mutex&)>
      reconstruct;
  std::string reconstructedOn = "server";  ///< with `reconstruct`: the items' device in the journal and progress
};

/// One worker's device as resolved from RunOptions::devices.
struct WorkerDevice {
  std::string spec;  ///< "cpu" or "cuda:N"
  int ompThreads = 0;
};
/// Resolves the devices: `all` with no usable GPU falls back to the CPU and says why in *notice.
std::vector<WorkerDevice> resolveDevices(const std::string& devices, int jobs, std::string* notice);

/// Progress of the run, reported from the worker threads (serialised by the runner).
struct ProgressEvent {
  enum class Kind { Started, Done, Failed, Skipped } kind = Kind::Started;
  std::string name, device, error;
  int done = 0, failed = 0, skipped = 0, total = 0;  ///< this process's items (its shard)
  double itemSeconds = 0;
  std::string note;  ///< Started: why an item is done again, e.g. "redone: settings changed"
};

struct RunResult {
  int total = 0, done = 0, failed = 0, skipped = 0;
  double wallSeconds = 0;
  nlohmann::json summary;  ///< what DIR/summary.json holds
};

/// Runs the plan. Writes DIR/batch-plan.json, appends to DIR/journal.jsonl, writes the outputs,
/// DIR/summary.json and DIR/contact-sheet.png. Throws Error only for what stops the whole batch
/// (unwritable folder, unusable device); an item's failure is in the journal and the result.
RunResult run(const Plan& plan, const RunOptions& options, const std::function<void(const ProgressEvent&)>& onProgress);

/// Status of every item of DIR's plan from the journal: {"done": n, "failed": n, "pending": n, "items":
/// [{name, input, status, error}]}. Throws Error when DIR holds no batch.
nlohmann::json status(const std::string& dir);

/// Writes DIR/summary.json and DIR/contact-sheet.png from the plan and the journal (run() calls it).
/// `startupMs`: when this process's batch had read its journal, brought its devices up and warmed them (ms
/// since it began; null when not run here).
nlohmann::json writeSummary(const std::string& dir, const Plan& plan, double wallSeconds,
                            const nlohmann::json& startupMs = nullptr);

inline constexpr const char* kJournalFile = "journal.jsonl";
inline constexpr const char* kPlanFile = "batch-plan.json";
inline constexpr const char* kThumbDir = ".thumbs";

}  // namespace larmor::batch
