// The physical limits the benchmark compares with (docs/benchmarks.md, "How limits are derived"), in one place.
//  - GPUs we have measured or whose data sheet we use: one table below. H100 figures from ../shared/GPU.md and
//    docs/benchmarks.md: device-to-device copy 3.0 TB/s read + write (probe), upload 51.7 GB/s (PCIe Gen5 x16,
//    pinned, measured), FP32 FMA rate = 132 SMs x 128 FP32 lanes x 1.98 GHz = 33.5 T FMA/s (the FMA-pipe
//    limit GPU.md quotes for F^H d follows from it).
//  - A CPU, or a GPU not in the table: measured here once per run. Memory bandwidth: the backend's copy of a
//    64 MiB buffer (read + write bytes / time, best of 3); link: on the CPU "upload" is a memcpy, so half of
//    that; on an unknown GPU the backend's upload of 64 MiB. FP32 FMA rate (CPU only): every OpenMP thread
//    runs independent 8-wide FMA chains (AVX2+FMA where the CPU has them, else 4-wide), best of 3.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_internal.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LARMOR_BENCH_X86 1
#endif

namespace larmor::recon::bench {

namespace {

using Clock = std::chrono::steady_clock;

struct GpuEntry {
  const char* nameContains;
  double memoryBandwidth, linkBandwidth, fmaPerSecond;
  const char* source;
};

// One row per GPU model; the first whose name is contained in the device name wins.
constexpr GpuEntry kGpuTable[] = {
    {"H100", 3.0e12, 51.7e9, 132.0 * 128 * 1.98e9,
     "GPU table: H100 (GPU.md: copy 3.0 TB/s read+write measured; PCIe Gen5 upload 51.7 GB/s measured; "
     "132 SMs x 128 FP32 lanes x 1.98 GHz)"},
    {"H200", 4.8e12, 51.7e9, 132.0 * 128 * 1.98e9,
     "GPU table: H200 (HBM3e 4.8 TB/s data sheet, not measured; PCIe Gen5 as measured on the H100; 132 SMs x "
     "128 FP32 lanes x 1.98 GHz)"},
};

double seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Bytes/s read + written by the backend's copy of `bytes` (best of 3 after one warm-up).
double measureCopy(Backend& be, std::size_t bytes) {
  auto a = be.allocate(bytes), b = be.allocate(bytes);
  std::vector<char> host(bytes);
  for (std::size_t i = 0; i < bytes; ++i) host[i] = static_cast<char>(i * 131u + 7u);
  be.upload(*a, host.data(), bytes);
  be.copy(*b, *a, bytes);
  be.synchronize();
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = Clock::now();
    be.copy(*b, *a, bytes);
    be.synchronize();
    best = std::min(best, seconds(t0));
  }
  return 2.0 * static_cast<double>(bytes) / best;
}

/// Bytes/s of the backend's upload of `bytes` from pageable host memory (best of 3 after one warm-up).
double measureUpload(Backend& be, std::size_t bytes) {
  auto a = be.allocate(bytes);
  std::vector<char> host(bytes, 1);
  be.upload(*a, host.data(), bytes);
  be.synchronize();
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = Clock::now();
    be.upload(*a, host.data(), bytes);
    be.synchronize();
    best = std::min(best, seconds(t0));
  }
  return static_cast<double>(bytes) / best;
}

constexpr long kFmaLoops = 4'000'000;  // per thread: 8 chains x 8 lanes x kFmaLoops FMAs

#ifdef LARMOR_BENCH_X86
__attribute__((target("avx2,fma"))) double fmaChainsAvx2(float seed) {
  __m256 acc[8];
  for (int i = 0; i < 8; ++i) acc[i] = _mm256_set1_ps(seed + 0.001f * static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long k = 0; k < kFmaLoops; ++k)
    for (int i = 0; i < 8; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  float out[8];
  __m256 s = acc[0];
  for (int i = 1; i < 8; ++i) s = _mm256_add_ps(s, acc[i]);
  _mm256_storeu_ps(out, s);
  return 8.0 * 8.0 * static_cast<double>(kFmaLoops) + 0.0 * out[0];
}
#endif

/// The generic chain: 8 independent accumulators of 4 floats (a multiply and an add each; counted as one
/// FMA, so the rate is an upper bound of what plain code reaches).
double fmaChainsGeneric(float seed) {
  float acc[8][4];
  for (int i = 0; i < 8; ++i)
    for (int l = 0; l < 4; ++l) acc[i][l] = seed + 0.001f * static_cast<float>(i + l);
  for (long k = 0; k < kFmaLoops; ++k)
    for (int i = 0; i < 8; ++i)
      for (int l = 0; l < 4; ++l) acc[i][l] = acc[i][l] * 0.999999f + 1e-7f;
  volatile float sink = acc[0][0] + acc[7][3];
  (void)sink;
  return 8.0 * 4.0 * static_cast<double>(kFmaLoops);
}

/// FP32 FMAs per second of all OpenMP threads together (best of 3).
double measureCpuFmaRate(bool& avx2) {
#ifdef LARMOR_BENCH_X86
  avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  avx2 = false;
#endif
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    double fmas = 0;
    const auto t0 = Clock::now();
#pragma omp parallel reduction(+ : fmas)
    {
      const float seed = 1.0f + 0.01f * static_cast<float>(omp_get_thread_num());
#ifdef LARMOR_BENCH_X86
      fmas += avx2 ? fmaChainsAvx2(seed) : fmaChainsGeneric(seed);
#else
      fmas += fmaChainsGeneric(seed);
#endif
    }
    best = std::max(best, fmas / seconds(t0));
  }
  return best;
}

}  // namespace

nlohmann::json DeviceLimits::toJson() const {
  auto finiteOrNull = [](double v) { return std::isfinite(v) && v > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"memory_bandwidth_bytes_per_s", finiteOrNull(memoryBandwidth)},
          {"link_bandwidth_bytes_per_s", finiteOrNull(linkBandwidth)},
          {"fp32_fma_per_s", finiteOrNull(fp32FmaPerSecond)},
          {"source", source}};
}

DeviceLimits deviceLimits(Backend& be, const std::function<void(const std::string&)>& log) {
  const DeviceInfo info = be.info();
  DeviceLimits l;
  if (info.gpu) {
    for (const GpuEntry& e : kGpuTable) {
      if (info.name.find(e.nameContains) == std::string::npos) continue;
      l.memoryBandwidth = e.memoryBandwidth;
      l.linkBandwidth = e.linkBandwidth;
      l.fp32FmaPerSecond = e.fmaPerSecond;
      l.source = e.source;
      if (log) log("limits: " + l.source);
      return l;
    }
    const std::size_t bytes = std::size_t{64} << 20;
    l.memoryBandwidth = measureCopy(be, bytes);
    l.linkBandwidth = measureUpload(be, bytes);
    l.fp32FmaPerSecond = kNaN;  // no table entry: compute-bound floors are not given
    l.source = "measured: " + info.name + " is not in the GPU table (bench_limits.cpp): copy and upload of 64 MiB; "
               "no FMA rate, so compute-bound limits are left out";
  } else {
    const std::size_t bytes = std::size_t{64} << 20;
    l.memoryBandwidth = measureCopy(be, bytes);
    l.linkBandwidth = l.memoryBandwidth / 2;  // an upload is a memcpy: B bytes moved cost 2B of traffic
    bool avx2 = false;
    l.fp32FmaPerSecond = measureCpuFmaRate(avx2);
    l.source = "measured on this CPU (" + std::to_string(omp_get_max_threads()) + " threads): copy of 64 MiB, " +
               (avx2 ? "AVX2 FMA chains" : "4-wide multiply-add chains") + "; upload = memcpy at half the copy rate";
  }
  char line[256];
  std::snprintf(line, sizeof line, "limits: memory %.1f GB/s read+write, link %.1f GB/s, FP32 %.1f GFMA/s (%s)",
                l.memoryBandwidth / 1e9, l.linkBandwidth / 1e9, l.fp32FmaPerSecond / 1e9,
                info.gpu ? "measured" : "measured on this CPU");
  if (log) log(line);
  return l;
}

}  // namespace larmor::recon::bench
