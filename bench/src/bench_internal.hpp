#pragma once
// Internals of `larmor-cli bench` (larmor/bench/bench.hpp), shared by its files:
//   bench.cpp             the runner: timing, memory peaks, limits, ratios, the JSON;
//   bench_limits.cpp      the physical limits of a device: GPU constants in one table, CPU probes;
//   bench_references.cpp  the peer and paper figures (docs/benchmarks.md, GPU.md) in one table;
//   bench_workloads_*.cpp the workloads; bench_report.cpp the text table; bench_chart.cpp the PNG (drawn
//                         with the engine's larmor/io/raster_text.hpp).
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "larmor/backend/backend.hpp"
#include "larmor/util/timer.hpp"

namespace larmor::recon::bench {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// What bounds a device from below (bench_limits.cpp). Bandwidths in bytes per second, rates per second.
struct DeviceLimits {
  double memoryBandwidth = 0;  ///< read + write bytes/s of the device's memory (a copy of B bytes moves 2B)
  double linkBandwidth = 0;    ///< host <-> device bytes/s, each direction (CPU: memoryBandwidth / 2)
  double fp32FmaPerSecond = 0; ///< FP32 fused multiply-adds per second, all cores
  std::string source;          ///< where the figures come from ("GPU table: NVIDIA H100 ...", "measured")
  nlohmann::json toJson() const;
};

/// The limits of the backend's device: the GPU table when the device name matches an entry, else (a CPU, an
/// unknown GPU) measured here once: copy bandwidth by the backend's copy, link bandwidth by its upload, and on
/// the CPU the FMA rate by a probe. `log` gets one line saying which.
DeviceLimits deviceLimits(Backend& be, const std::function<void(const std::string&)>& log);

/// Time floors of work items at the limits, in ms.
inline double bytesMs(double bytes, double bytesPerSecond) { return bytes / bytesPerSecond * 1e3; }
inline double fmaMs(double fmas, const DeviceLimits& l) { return fmas / l.fp32FmaPerSecond * 1e3; }
/// FP32 operations per voxel-sample pair of the exact F^H d's floor: the next phasor by the three-term
/// recurrence (2 FMA) and the complex accumulate (2); cuda/dft.cu takes it for 94 % of uniformly spread samples.
constexpr double kFhdOpsPerPair = 4;
/// An FFT of n complex float values read and written once (a memory floor: below it no FFT can run).
inline double fftBytes(double n) { return 2.0 * 8.0 * n; }

/// A peer's or the paper's figure for one workload at its full size (bench_references.cpp).
struct Reference {
  double ms = kNaN;            ///< the figure's time for the workload as we run it at full size
  std::string kind;            ///< "device" | "host_to_host" | "whole_process" (what the figure covers)
  std::string what;            ///< "cuFINUFFT 2.2, tol 1e-3, H100 (GPU.md)"
  double targetMs = kNaN;      ///< the target on the H100 for our time (NaN: none)
  std::string targetKind;      ///< "device" | "host_to_host"
  /// A target that is a multiple of a peer's time on one GPU model (e.g. 1.15 x cuFFT alone on the H100) is judged
  /// only on a device whose name holds this ("H100"); elsewhere it is shown, not judged. Empty: judged anywhere.
  std::string judgedOn;
};
/// The figure for `workload` on a GPU (gpu) or the CPU; empty `what` when none is recorded.
Reference referenceFor(const std::string& workload, bool gpu);

/// One prepared workload: sizes chosen, data made, plans built; ready to time.
struct Prepared {
  std::string size;            ///< what runs, e.g. "128^3 x 284,592 samples"
  std::string scaled;          ///< "" at full size, else "CPU: 64^2 instead of 256^2"
  int reps = 3;                ///< timed repetitions of each of device() and host()
  /// One device-resident run (inputs already in backend memory, outputs left there). Empty: the workload
  /// is a whole call only and host() returns its device-resident part.
  std::function<void()> device;
  /// One host in -> host out run (upload, compute, download, as a user waits). Returns the device-resident
  /// milliseconds inside it where the call's stage timings separate them (NaN: not separable).
  std::function<double()> host;
  double deviceLimitMs = kNaN; ///< physical floor of device()
  double hostLimitMs = kNaN;   ///< physical floor of host(): deviceLimitMs plus the transfers at the link rate
  std::string limitBasis;      ///< how the floors were derived, one line
  double hostBytesIn = 0, hostBytesOut = 0;  ///< what crosses the link per host() call
  /// Untimed, before each timed device() run (e.g. a fresh upload for work done in place).
  std::function<void()> beforeDevice;
  /// After the runs: workload-specific figures (GB/s, us per coil image, ...) from the device and host
  /// medians (ms) into `extra`.
  std::function<void(nlohmann::json& extra, double deviceMs, double hostMs)> report;
};

struct Context {
  Backend& be;
  bool gpu = false;
  bool quick = false;
  const DeviceLimits& limits;
};

struct Workload {
  std::string name, title;
  bool gpuOnly = false;
  std::function<Prepared(const Context&)> prepare;
};

/// The workloads of bench_workloads_transforms.cpp (copy, FFT, exact DFT, NUFFT) and
/// bench_workloads_recon.cpp (GRAPPA, iterative, SENSE, CS, ESPIRiT, Cartesian), in run order.
void addTransformWorkloads(std::vector<Workload>& out);
void addReconWorkloads(std::vector<Workload>& out);

// --- helpers shared by the workloads -------------------------------------------------------------------
/// Complex normal random values (never zero) from `seed`; beyond 1 Mi values a random tile repeats.
CArray randomComplex(const Shape& shape, unsigned seed);
/// "CPU: <small> instead of <full>" when they differ (quick or CPU), else "".
std::string scaledNote(bool gpu, bool quick, const std::string& small, const std::string& full);
inline std::string cube(index_t n) { return std::to_string(n) + "^3"; }
inline std::string square(index_t n) { return std::to_string(n) + "^2"; }
/// 284592 -> "284,592".
std::string grouped(long long n);
/// The device-resident milliseconds of a whole call: its stages except those that cross the host link
/// ("upload", "download") or are host-only bookkeeping ("metrics").
double deviceStageMs(const Timings& t);
/// Milliseconds by stage name (a stage that ran several times summed): where a whole call's time went.
nlohmann::json stageSums(const Timings& t);

}  // namespace larmor::recon::bench
