// The runner of `larmor-cli bench` (larmor/bench/bench.hpp; docs/benchmarks.md). Per workload:
//  1. peaks reset: the host's (below) and the backend's (ExecutionOps::resetPeakMemory);
//  2. prepare (sizes, data, plans), one warm-up of each run, then `reps` timed device-resident runs and `reps`
//     timed host-to-host runs, each ended by a backend synchronize; median, min and max (wall clock);
//  3. peak host memory: the process's VmHWM after the runs minus VmRSS before (freed heap memory is first
//     handed back with malloc_trim and the large blocks kept for reuse are released (array.hpp), so memory an
//     earlier workload freed is not reused unseen; Linux resets VmHWM to the
//     current RSS when "5" is written to /proc/self/clear_refs: so the peak is this workload's, not the
//     process's); where clear_refs cannot be written, a thread samples VmRSS every millisecond instead
//     (the JSON's "memory_method" says which). Peak device memory: the backend's peak of live buffer bytes
//     minus the live bytes before (MemoryStats; library workspaces outside our allocator are not in it);
//  4. the limits (the workload's floors at the device's limits, bench_limits.cpp) and the ratios time / limit,
//     the peer or paper figure (bench_references.cpp) where the workload ran at the figure's size.
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "bench_internal.hpp"
#include "larmor/backend/registry.hpp"
#include "larmor/bench/bench.hpp"
#include "larmor/util/error.hpp"
#include "larmor/util/provenance.hpp"

namespace larmor::recon {
namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

/// A field of /proc/self/status in bytes ("VmRSS", "VmHWM"); 0 when it cannot be read.
std::size_t procStatusBytes(const char* field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(f, line))
    if (line.compare(0, key.size(), key) == 0) return static_cast<std::size_t>(std::stoull(line.substr(key.size()))) * 1024;
  return 0;
}

/// The peak resident set of the process while it lives, above the RSS at its start (see the file comment).
class HostPeak {
 public:
  HostPeak() : start_(startRss()) {
    std::ofstream f("/proc/self/clear_refs");
    f << "5";
    f.flush();
    hwm_ = f.good() && procStatusBytes("VmHWM") <= start_ + (std::size_t{1} << 20);
    if (!hwm_) {
      sampler_ = std::thread([this] {
        while (!stop_.load()) {
          peak_.store(std::max(peak_.load(), procStatusBytes("VmRSS")));
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      });
    }
  }
  ~HostPeak() { finish(); }
  std::size_t finish() {
    if (hwm_) return sat(procStatusBytes("VmHWM"));
    if (sampler_.joinable()) {
      stop_.store(true);
      sampler_.join();
    }
    return sat(std::max(peak_.load(), procStatusBytes("VmRSS")));
  }
  bool usesHwm() const { return hwm_; }

 private:
  /// The RSS once freed heap memory has gone back to the system (malloc_trim): else memory a previous
  /// workload freed, still resident, would be reused without showing in this one's peak.
  static std::size_t startRss() {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    releaseKeptHostBlocks();
    return procStatusBytes("VmRSS");
  }
  std::size_t sat(std::size_t v) const { return v > start_ ? v - start_ : 0; }
  std::size_t start_;
  bool hwm_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> peak_{0};
  std::thread sampler_;
};

struct Stats {
  double median = kNaN, min = kNaN, max = kNaN;
  nlohmann::json toJson() const { return {{"median", median}, {"min", min}, {"max", max}}; }
};

Stats stats(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.front(), v.back()};
}

double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

nlohmann::json numberOrNull(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

/// Runs one prepared workload and returns its JSON record.
nlohmann::json measure(const Workload& w, const Context& ctx, const std::function<void(const std::string&)>& log,
                       std::string& memoryMethod) {
  Backend& be = ctx.be;
  be.synchronize();
  const MemoryStats devBefore = be.executionOps().memoryStats();
  be.executionOps().resetPeakMemory();
  HostPeak hostPeak;
  memoryMethod = hostPeak.usesHwm() ? "VmHWM after clear_refs" : "VmRSS sampled every 1 ms";

  Prepared p = w.prepare(ctx);
  if (ctx.quick) p.reps = std::min(p.reps, 3);  // --quick: at most 3 timed runs of each kind
  std::vector<double> dev, h2h, devInside;
  // Warm-up: plans, caches, clocks, the allocator's cache.
  if (p.device) {
    if (p.beforeDevice) p.beforeDevice();
    p.device();
  }
  p.host();
  be.synchronize();
  if (p.device) {
    for (int i = 0; i < p.reps; ++i) {
      if (p.beforeDevice) p.beforeDevice();
      be.synchronize();
      const auto t0 = Clock::now();
      p.device();
      be.synchronize();
      dev.push_back(msSince(t0));
    }
  }
  for (int i = 0; i < p.reps; ++i) {
    const auto t0 = Clock::now();
    const double inside = p.host();
    be.synchronize();
    h2h.push_back(msSince(t0));
    devInside.push_back(inside);
  }
  const std::size_t hostBytes = hostPeak.finish();
  be.synchronize();
  const MemoryStats devAfter = be.executionOps().memoryStats();

  std::string deviceHow = "measured";
  Stats d = stats(dev);
  if (!p.device) {
    d = stats(devInside);
    deviceHow = "stage timings of the whole call (upload and download stages left out)";
    if (!std::isfinite(d.median)) {
      d = stats(h2h);
      deviceHow = "whole call (the API takes host data; device-resident part not separable)";
    }
  }
  const Stats h = stats(h2h);
  const auto ratio = [](double t, double limit) { return limit > 0 && std::isfinite(limit) ? t / limit : kNaN; };

  nlohmann::json r = {{"name", w.name},
                      {"title", w.title},
                      {"size", p.size},
                      {"scaled", p.scaled.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.scaled)},
                      {"reps", p.reps},
                      {"device_ms", d.toJson()},
                      {"device_resident", deviceHow},
                      {"host_to_host_ms", h.toJson()},
                      {"transfer_bytes", {{"in", p.hostBytesIn}, {"out", p.hostBytesOut}}},
                      {"peak_host_bytes", hostBytes},
                      {"peak_device_bytes", devAfter.tracked && devAfter.peakLiveBytes >= devBefore.liveBytes
                                                ? nlohmann::json(devAfter.peakLiveBytes - devBefore.liveBytes)
                                                : nlohmann::json(nullptr)},
                      {"peak_device_reserved_bytes", devAfter.tracked ? nlohmann::json(devAfter.peakReservedBytes)
                                                                     : nlohmann::json(nullptr)},
                      {"limit",
                       {{"device_ms", numberOrNull(p.deviceLimitMs)},
                        {"host_to_host_ms", numberOrNull(p.hostLimitMs)},
                        {"basis", p.limitBasis}}},
                      {"ratio",
                       {{"device", numberOrNull(ratio(d.median, p.deviceLimitMs))},
                        {"host_to_host", numberOrNull(ratio(h.median, p.hostLimitMs))}}},
                      {"extra", nlohmann::json::object()}};
  if (p.report) p.report(r["extra"], d.median, h.median);
  const Reference ref = referenceFor(w.name, ctx.gpu);
  r["reference"] = nullptr;
  r["target"] = nullptr;
  if (p.scaled.empty()) {  // figures are for the full size only
    if (!ref.what.empty() && std::isfinite(ref.ms)) {
      const double ours = ref.kind == "device" ? d.median : h.median;
      r["reference"] = {{"ms", ref.ms}, {"kind", ref.kind}, {"what", ref.what}, {"ours_over_reference", ours / ref.ms}};
    }
    if (ctx.gpu) r["target"] = benchTarget(w.name, d.median, h.median, ctx.be.info().name);
  }
  if (log) {
    char line[320];
    std::snprintf(line, sizeof line, "%-24s device %10.3f ms  host-to-host %10.3f ms  limit %9.3f ms  %s", w.name.c_str(),
                  d.median, h.median, p.deviceLimitMs, p.size.c_str());
    log(line);
  }
  return r;
}

std::vector<Workload> allWorkloads(const std::string& suite) {
  require(suite == "seeds", "--suite " + suite + ": unknown suite; expected seeds");
  std::vector<Workload> w;
  addTransformWorkloads(w);
  addReconWorkloads(w);
  return w;
}

}  // namespace

// --- helpers shared by the workloads -------------------------------------------------------------------

CArray randomComplex(const Shape& shape, unsigned seed) {
  // Beyond 1 Mi values a random tile repeats (drawing gigabytes of normal numbers would take longer than the
  // benchmark; the values do not change the work).
  CArray a(shape);
  const index_t tile = std::min<index_t>(a.size(), index_t{1} << 20);
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.f, 1.f);
  for (index_t i = 0; i < tile; ++i) a[i] = {n(rng), n(rng)};
  for (index_t i = tile; i < a.size(); ++i) a[i] = a[i % tile];
  return a;
}

std::string scaledNote(bool gpu, bool quick, const std::string& small, const std::string& full) {
  if (small == full) return "";
  return std::string(quick ? "quick" : "") + (quick && !gpu ? ", " : "") + (gpu ? "" : "CPU") + ": " + small +
         " instead of " + full;
}

std::string grouped(long long n) {
  const std::string digits = std::to_string(n);
  std::string s;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

double deviceStageMs(const Timings& t) {
  double ms = 0;
  for (const auto& s : t.stages())
    if (s.stage != "upload" && s.stage != "download" && s.stage != "metrics") ms += s.milliseconds;
  return ms;
}

nlohmann::json stageSums(const Timings& t) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& s : t.stages()) out[s.stage] = out.value(s.stage, 0.0) + s.milliseconds;
  return out;
}

}  // namespace bench

std::vector<BenchWorkloadInfo> benchWorkloads(const std::string& suite) {
  std::vector<BenchWorkloadInfo> out;
  for (const auto& w : bench::allWorkloads(suite)) out.push_back({w.name, w.title, w.gpuOnly});
  return out;
}

nlohmann::json runBenchSuite(const BenchOptions& o) {
  using namespace bench;
  const std::vector<Workload> all = allWorkloads(o.suite);
  for (const auto& name : o.only) {
    const bool known = std::any_of(all.begin(), all.end(), [&](const Workload& w) { return w.name == name; });
    if (!known) {
      std::string names;
      for (const auto& w : all) names += (names.empty() ? "" : ", ") + w.name;
      throw Error("--workload " + name + ": unknown workload; expected one of " + names);
    }
  }
  Selection sel = BackendRegistry::instance().select(o.device);
  Backend& be = *sel.backend;
  const DeviceInfo info = be.info();
  if (!sel.notice.empty() && o.log) o.log(sel.notice);
  if (o.log) o.log("bench: suite " + o.suite + (o.quick ? " (quick)" : "") + " on " + info.id + " (" + info.name + ")");
  const DeviceLimits limits = deviceLimits(be, o.log);
  const Context ctx{be, info.gpu, o.quick, limits};

  nlohmann::json results = nlohmann::json::array(), notApplicable = nlohmann::json::array(),
                 errors = nlohmann::json::array();
  std::string memoryMethod;
  const auto t0 = Clock::now();
  for (const Workload& w : all) {
    if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), w.name) == o.only.end()) continue;
    if (w.gpuOnly && !info.gpu) {
      notApplicable.push_back({{"name", w.name}, {"why", "GPU only"}});
      continue;
    }
    try {
      results.push_back(measure(w, ctx, o.log, memoryMethod));
    } catch (const std::exception& e) {
      errors.push_back({{"name", w.name}, {"error", e.what()}});
      if (o.log) o.log(w.name + ": FAILED: " + e.what());
    }
  }
  return {{"schema", "larmor-bench"},
          {"schema_version", kBenchSchemaVersion},
          {"suite", o.suite},
          {"quick", o.quick},
          {"version", versionString()},
          {"date_utc", utcNow()},
          {"device",
           {{"id", info.id},
            {"name", info.name},
            {"library", info.library},
            {"gpu", info.gpu},
            {"memory_bytes", info.memoryBytes},
            {"multiprocessors", info.multiprocessors}}},
          {"limits", limits.toJson()},
          {"memory_method",
           {{"host", "peak resident set per workload: " + memoryMethod + ", minus VmRSS before it"},
            {"device", "the backend's peak of live buffer bytes per workload, minus the live bytes before it"}}},
          {"total_seconds", msSince(t0) / 1e3},
          {"results", results},
          {"not_applicable", notApplicable},
          {"errors", errors}};
}

}  // namespace larmor::recon
