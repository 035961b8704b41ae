#pragma once
// `larmor-cli batch`: a cohort of inputs with one settings file into one output folder, on the GPUs of
// this host (one worker per device) or the CPU, resumable through a journal; or, with --slurm, a Slurm
// job array whose tasks each take a shard of the same batch. The engine does the work
// (larmor/batch/runner.hpp); this file holds the command line, the progress line and the Slurm script.
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "larmor/batch/runner.hpp"

namespace CLI {
class App;
}

namespace larmor::cli {

struct BatchArgs {
  std::vector<std::string> inputs, manifests, formats, modules;
  std::string settings, outputDir, devices = "all", shard, status;
  std::string server;  ///< host:port of a warm `larmor-cli serve`: items reconstructed there
  int jobs = 0;
  // Slurm
  bool slurm = false, dryRun = false;
  std::string partition, time;
  int gpusPerTask = 0, cpusPerTask = 0, maxParallel = 0, shards = 0;
};

/// Adds the `batch` sub-command to `app`.
CLI::App* addBatchCommand(CLI::App& app, BatchArgs& args);

/// Exit status: 0 every item done; 2 some items failed (each reported, the others done); 1 the batch
/// could not run (bad arguments, settings, folder, device). --status: 0 all done, 1 otherwise.
int batch(const BatchArgs& args);

/// What batch::RunOptions::reconstruct takes: an item's frames reconstructed elsewhere.
using BatchReconstruct =
    std::function<std::vector<recon::ReconResult>(const batch::Item&, const batch::ItemSettings&, const io::Series&,
                                                  std::mutex&)>;
/// Items streamed to the server at `to` (batch_server.cpp); `timeoutS`: seconds it may stay silent.
BatchReconstruct serverReconstruction(const std::string& to, int timeoutS);

/// The Slurm job-array script for `args` (batch_slurm.cpp); `cli` is the larmor-cli to run.
std::string slurmScript(const BatchArgs& args, const std::string& cli, int items, int shards);

}  // namespace larmor::cli
