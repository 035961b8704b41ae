#pragma once
// Benchmark suites behind `larmor-cli bench` (docs/benchmarks.md): the seed workloads of the
// papers (Stone et al. 2008's exact F^H d and iterative reconstruction, TRON / Gregerson's radial NUFFT, the
// 3D NUFFT, Schneider 2008's GRAPPA Table 5.1) and the newer methods (CG-SENSE, CS-TV / wavelet FISTA,
// ESPIRiT), plus the centred FFT and copy bandwidth. Each workload is timed on a chosen backend after a
// warm-up, on random or simulated (never zero) data: device-resident (median, min, max over repetitions) and
// host in -> host out, with its peak host and device memory, the physical limit beside it and the ratio to
// it, and a peer or paper figure where one is recorded. On a CPU the sizes scale down and the result says so.
// Built as bench/'s static liblarmor_bench_suite, outside liblarmor_engine (larmor-cli, the unit tests and
// larmor_bench link it); its names stay in larmor::recon.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "larmor/data/dataset.hpp"

namespace larmor::recon {

/// The version of the JSON written by runBenchSuite (field "schema_version"; docs/benchmarks.md documents it).
inline constexpr int kBenchSchemaVersion = 1;

struct BenchOptions {
  std::string suite = "seeds";
  std::string device = "auto";      ///< auto | cpu | cuda[:N]
  bool quick = false;               ///< fewer repetitions, smaller sizes: the whole suite in about a minute
  std::vector<std::string> only;    ///< workload names to run (empty: all that apply to the device)
  std::function<void(const std::string&)> log;  ///< progress and notices, one line each (may be empty)
};

struct BenchWorkloadInfo {
  std::string name;   ///< what --workload accepts, e.g. "nufft2d-adjoint"
  std::string title;  ///< one line: the workload and its source
  bool gpuOnly = false;
};

/// Every workload of `suite` in run order; throws Error for an unknown suite.
std::vector<BenchWorkloadInfo> benchWorkloads(const std::string& suite);

/// Runs the suite; throws Error (one line) for an unknown suite, device or workload name. The returned JSON
/// follows docs/benchmarks.md's schema (version kBenchSchemaVersion): {"schema", "schema_version", "suite", "quick",
/// "device", "limits", "memory_method", "results": [...], "not_applicable": [...]}.
nlohmann::json runBenchSuite(const BenchOptions& options);

/// The target for a GPU workload at full size, judged on our medians: {"ms", "kind", "met"}, or null where the
/// workload has none. A target that is a ratio to a peer measured on one GPU model (the FFTs: 1.15 x cuFFT alone on
/// an H100) is judged on that model only; on another device "met" is null and "not_judged" says why.
nlohmann::json benchTarget(const std::string& workload, double deviceMs, double hostToHostMs, const std::string& deviceName);

/// The plain-text table of a runBenchSuite result (one row per workload, notes under it).
std::string formatBenchTable(const nlohmann::json& result);

/// A PNG bar chart of a runBenchSuite result: per workload, log-scale time, device-resident and host-to-host
/// bars, the device limit as a mark. Written atomically; throws Error naming the file.
void writeBenchChart(const std::string& path, const nlohmann::json& result);

/// Schneider 2008's Table 5.1 acquisition (512 x 256 encoded, `coils` coils, `slices` slices, R = `accel` with
/// a 24-line ACS block): random samples on the acquired lines (a random 1 Mi tile repeated: the values do not
/// change the work). The GRAPPA workloads of the suite and of larmor_bench use it.
Dataset grappaTable51(int coils, index_t slices, int accel = 4);

}  // namespace larmor::recon
