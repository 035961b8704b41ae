// The Slurm job-array script of `larmor-cli batch --slurm` (batch.hpp). Slurm's own mechanisms only:
// `#SBATCH --array=0-(S-1)%K` runs S tasks, at most K at once (sbatch(1), "--array"); each task reads
// SLURM_ARRAY_TASK_ID and runs its shard of the one batch in the shared output folder, appending to the
// one journal (larmor/batch/journal.hpp: O_APPEND + flock, safe across processes and hosts).
#include <filesystem>
#include <sstream>

#include "batch.hpp"
#include "larmor/util/provenance.hpp"

namespace larmor::cli {
namespace fs = std::filesystem;

namespace {

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::string slurmScript(const BatchArgs& a, const std::string& cli, int items, int shards) {
  const std::string dir = fs::absolute(a.outputDir).lexically_normal().string();
  std::ostringstream s;
  // A login shell where modules are loaded: sites define `module` in the login profile.
  s << (a.modules.empty() ? "#!/bin/bash\n" : "#!/bin/bash -l\n")
    << "# Written by larmor-cli " << versionString() << " (batch --slurm) on " << utcNow() << ".\n"
    << "# " << items << " inputs in " << shards << " array tasks; task K reconstructs the inputs i with\n"
    << "# i mod " << shards << " = K into the shared folder below, all tasks appending to its journal.jsonl.\n"
    << "# Progress: larmor-cli batch --status " << dir << "\n"
    << "# Resubmit this script to retry what failed or was interrupted (what is done is skipped).\n"
    << "#SBATCH --job-name=larmor-batch\n"
    << "#SBATCH --array=0-" << (shards - 1);
  if (a.maxParallel > 0) s << "%" << a.maxParallel;
  s << "\n#SBATCH --output=" << dir << "/slurm-logs/%A_%a.out\n"
    << "#SBATCH --ntasks=1\n";
  if (a.cpusPerTask > 0) s << "#SBATCH --cpus-per-task=" << a.cpusPerTask << "\n";
  if (a.gpusPerTask > 0) s << "#SBATCH --gpus-per-task=" << a.gpusPerTask << "\n";
  if (!a.partition.empty()) s << "#SBATCH --partition=" << a.partition << "\n";
  if (!a.time.empty()) s << "#SBATCH --time=" << a.time << "\n";
  // Modules before `set -e`: some sites' module functions return non-zero on warnings.
  for (const auto& m : a.modules) s << "module load " << m << "\n";
  s << "set -eo pipefail\n";
  // OpenMP threads = the task's CPUs (else each worker would see the whole node's cores).
  s << "export OMP_NUM_THREADS=\"${SLURM_CPUS_PER_TASK:-1}\"\n"
    << "SHARDS=" << shards << "\n"
    << "exec " << quote(cli) << " batch --manifest " << quote(dir + "/manifest.txt") << " --settings "
    << quote(dir + "/settings.json") << " --output-dir " << quote(dir);
  for (const auto& f : a.formats) s << " --format " << f;
  // GPUs: Slurm sets CUDA_VISIBLE_DEVICES to the task's GPUs, so `all` is exactly those. CPU tasks: one
  // worker per allocated CPU.
  if (a.gpusPerTask > 0) s << " --devices all";
  else s << " --devices cpu --jobs \"${SLURM_CPUS_PER_TASK:-1}\"";
  s << " --shard \"$SLURM_ARRAY_TASK_ID/$SHARDS\"\n";
  return s.str();
}

}  // namespace larmor::cli
