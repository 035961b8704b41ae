// Non-Cartesian operators on every device the registry lists, registered at static-initialisation time
// (bench_backend.cpp holds main): the workloads with the seed figure beside each (GPU.md, docs/benchmarks.md).
//  - Exact F^H d, 128^3 voxels x 284,592 samples (Stone et al. 2008: 49 s on a G80; target <= 0.2 s on the
//    H100, FMA-pipe limit about 0.1 s), each trig mode. GPU only: on the CPU it takes minutes.
//  - Adjoint NUFFT, 2D golden-angle radial, 512 readout x 512 spokes -> 256^2, 8 coils batched (TRON:
//    572 us per coil image on a Titan V; target <= 60 us per coil image), both GPU spreaders; and the
//    forward NUFFT of the same workload.
//  - Adjoint NUFFT 3D, 128^3 image (256^3 grid at sigma 2), 2 M uniform random samples (target <= 5 ms;
//    cuFINUFFT 3.84 ms on the same H100).
// Each case builds its plan outside the timing, warms up, and times each call with the backend
// synchronized (UseManualTime), on random data. Names start with the device id (--benchmark_filter=cuda).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench_support.hpp"
#include "larmor/backend/backend.hpp"
#include "larmor/backend/registry.hpp"
#include "larmor/ops/nufft.hpp"
#include "larmor/traj/radial.hpp"
#include "larmor/traj/spiral.hpp"

namespace {

using larmor::Backend;
using larmor::Buffer;
using larmor::cfloat;
using larmor::index_t;
using larmor::NufftGeometry;
using larmor::RArray;
using larmor::Shape;

std::unique_ptr<Buffer> randomComplexBuffer(Backend& be, index_t n, unsigned seed) {
  auto buf = be.allocate(static_cast<std::size_t>(n) * sizeof(cfloat));
  std::vector<cfloat> host(static_cast<std::size_t>(n));
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (auto& v : host) v = {nd(rng), nd(rng)};
  be.upload(*buf, host.data(), host.size() * sizeof(cfloat));
  return buf;
}

/// Uniform random samples in the band [-N/2, N/2) of each dimension, [3, M].
RArray uniformTrajectory(int dims, const index_t n[3], index_t m, unsigned seed) {
  RArray k(Shape{3, m}, 0.f);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  for (index_t j = 0; j < m; ++j)
    for (int d = 0; d < dims; ++d) k[3 * j + d] = static_cast<float>(u(rng) * static_cast<double>(n[d]));
  return k;
}

/// Times `op` per iteration with the backend synchronized; returns the mean seconds per call.
double timeIterations(benchmark::State& state, Backend& be, const std::function<void()>& op, int warmup) {
  for (int i = 0; i < warmup; ++i) op();
  be.synchronize();
  double total = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    op();
    be.synchronize();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    total += s;
  }
  return state.iterations() ? total / static_cast<double>(state.iterations()) : 0.0;
}

using larmor::bench::Body;

void add(const std::shared_ptr<Backend>& be, const std::string& name, Body body, benchmark::TimeUnit unit,
         double minTime) {
  larmor::bench::registerCase(be->info().id + "/" + name, be, std::move(body))->Unit(unit)->MinTime(minTime);
}

// --- the workloads -----------------------------------------------------------------------------------------

constexpr index_t kRadialReadout = 512, kRadialSpokes = 512, kRadialMatrix = 256, kRadialCoils = 8;

NufftGeometry radialGeometry() {
  const auto t = larmor::traj::radial2D(kRadialReadout, kRadialSpokes, kRadialMatrix,
                                        larmor::traj::RadialOrder::GoldenAngle);
  NufftGeometry g;
  g.dims = 2;
  g.image[0] = g.image[1] = kRadialMatrix;
  g.image[2] = 1;
  g.trajectory = t.k;
  g.radial = t.radial;
  return g;
}

/// The spiral job: variable density, 256², 32 interleaves, readout 2x oversampled.
NufftGeometry spiralGeometry() {
  larmor::traj::SpiralDesign d;
  d.matrix = kRadialMatrix;
  d.interleaves = 32;
  NufftGeometry g;
  g.dims = 2;
  g.image[0] = g.image[1] = kRadialMatrix;
  g.image[2] = 1;
  g.trajectory = larmor::traj::spiral2D(d).k;
  return g;
}

/// The radial job without its radial description: the gather's lists from the footprints (exact) instead of
/// TRON's search over the spokes (a superset: the spokes' readout ranges within reach).
NufftGeometry radialUndescribed() {
  NufftGeometry g = radialGeometry();
  g.radial.reset();
  return g;
}

const char* spreaderName(larmor::Spreader s) {
  return s == larmor::Spreader::Tron ? "tron" : s == larmor::Spreader::Sector ? "sector" : "auto";
}

/// The 8-coil adjoint (or forward) of the plan of `geometry` with `o`, per call and per coil image (the issue's
/// unit: target 40 us for the radial adjoint; TRON on a Titan V 572 us).
void planCase(const std::shared_ptr<Backend>& be, const std::string& name, NufftGeometry (*geometry)(),
              larmor::NufftOptions o, bool adjoint) {
  add(be, name,
      [geometry, o, adjoint](benchmark::State& state, Backend& b) {
        auto plan = b.makeNufftPlan(geometry(), o);
        const index_t m = plan->samples(), voxels = kRadialMatrix * kRadialMatrix;
        auto samples = randomComplexBuffer(b, m * kRadialCoils, 1);
        auto image = randomComplexBuffer(b, voxels * kRadialCoils, 2);
        const double perCall = timeIterations(
            state, b,
            [&] {
              if (adjoint) plan->adjoint(*samples, *image, kRadialCoils);
              else plan->forward(*image, *samples, kRadialCoils);
            },
            3);
        state.counters["us_per_coil_image"] = perCall * 1e6 / static_cast<double>(kRadialCoils);
        state.counters["samples"] = static_cast<double>(m);
      },
      benchmark::kMicrosecond, 0.3);
}

/// W 4 (relative error 5.5e-4 on this job) against cuFINUFFT at tol 1e-3; W 6 (6.6e-6) against tol 1e-5.
void radialCase(const std::shared_ptr<Backend>& be, larmor::Spreader spreader, bool adjoint, int width = 4) {
  larmor::NufftOptions o;  // sigma = 2, table
  o.width = width;
  o.spreader = spreader;
  planCase(be,
           std::string("nufft2d/") + (adjoint ? "adjoint" : "forward") + "/golden512x512->256^2x8coils/" +
               spreaderName(spreader) + (width == 4 ? "" : "/W" + std::to_string(width)),
           radialGeometry, o, adjoint);
}

/// Making the plan (its spreader's lists and sorts, the samples' codes; no cuFFT plan yet): what a one-shot
/// reconstruction pays before its first adjoint. `what`: tron, footprints (the radial job undescribed) or sector.
void radialPlanCase(const std::shared_ptr<Backend>& be, const std::string& what) {
  add(be, "nufft2d/plan/golden512x512->256^2/" + what,
      [what](benchmark::State& state, Backend& b) {
        const NufftGeometry g = what == "footprints" ? radialUndescribed() : radialGeometry();
        larmor::NufftOptions o;
        if (what == "tron") o.spreader = larmor::Spreader::Tron;
        if (what == "sector") o.spreader = larmor::Spreader::Sector;
        timeIterations(state, b, [&] { auto plan = b.makeNufftPlan(g, o); }, 1);
      },
      benchmark::kMillisecond, 0.3);
}

void nufft3dCase(const std::shared_ptr<Backend>& be) {
  add(be, "nufft3d/adjoint/128^3/2M-random",
      [](benchmark::State& state, Backend& b) {
        NufftGeometry g;
        g.dims = 3;
        g.image[0] = g.image[1] = g.image[2] = 128;
        const index_t m = 2'000'000;
        g.trajectory = uniformTrajectory(3, g.image, m, 3);
        auto plan = b.makeNufftPlan(g, larmor::NufftOptions{});  // W = 4, sigma = 2: grid 256^3
        auto samples = randomComplexBuffer(b, m, 4);
        auto image = b.allocate(static_cast<std::size_t>(128 * 128 * 128) * sizeof(cfloat));
        timeIterations(state, b, [&] { plan->adjoint(*samples, *image, 1); }, 2);
        state.counters["samples"] = static_cast<double>(m);
      },
      benchmark::kMillisecond, 0.3);
}

void fhdCase(const std::shared_ptr<Backend>& be, larmor::TrigMode mode) {
  const char* mname = mode == larmor::TrigMode::Accurate ? "accurate" : mode == larmor::TrigMode::Fast ? "fast" : "recurrence";
  add(be, std::string("dft/FHd/128^3x284592/") + mname,
      [mode](benchmark::State& state, Backend& b) {
        NufftGeometry g;
        g.dims = 3;
        g.image[0] = g.image[1] = g.image[2] = 128;
        const index_t m = 284'592;
        g.trajectory = uniformTrajectory(3, g.image, m, 5);
        larmor::DftOptions o;
        o.trig = mode;
        auto plan = b.makeDftPlan(g, o);
        auto samples = randomComplexBuffer(b, m, 6);
        const index_t voxels = index_t{128} * 128 * 128;
        auto image = b.allocate(static_cast<std::size_t>(voxels) * sizeof(cfloat));
        const double perCall = timeIterations(state, b, [&] { plan->adjoint(*samples, *image, 1); }, 1);
        // Stone et al.'s seed: 49 s on a G80; the H100 target 0.2 s.
        state.counters["Gpairs_per_s"] =
            perCall > 0 ? static_cast<double>(voxels) * static_cast<double>(m) / perCall * 1e-9 : 0.0;
      },
      benchmark::kMillisecond, 0.5);
}

void registerFor(const std::shared_ptr<Backend>& be) {
  const bool gpu = be->info().gpu;
  if (gpu) {
    radialCase(be, larmor::Spreader::Tron, true);
    radialCase(be, larmor::Spreader::Tron, true, 6);
    radialCase(be, larmor::Spreader::Sector, true);
    planCase(be, "nufft2d/adjoint/golden512x512->256^2x8coils/footprints", radialUndescribed, {}, true);
    for (const char* what : {"tron", "footprints", "sector"}) radialPlanCase(be, what);
    for (larmor::Spreader sp : {larmor::Spreader::Auto, larmor::Spreader::Sector}) {
      larmor::NufftOptions o;
      o.spreader = sp;
      planCase(be, std::string("nufft2d/adjoint/spiral256x32->256^2x8coils/") + spreaderName(sp), spiralGeometry, o, true);
    }
  } else {
    radialCase(be, larmor::Spreader::Auto, true);  // the CPU has one (binned) spreader
  }
  radialCase(be, larmor::Spreader::Auto, false);
  nufft3dCase(be);
  if (gpu)  // about 6e11 sample-voxel pairs: minutes on a CPU
    for (larmor::TrigMode m : {larmor::TrigMode::Recurrence, larmor::TrigMode::Fast, larmor::TrigMode::Accurate})
      fhdCase(be, m);
}

/// Registers the cases before main runs (bench_backend.cpp's main runs every registered benchmark).
[[maybe_unused]] const bool registered = larmor::bench::registerOnEveryDevice(
    "non-Cartesian", [](const larmor::DeviceInfo&, const std::shared_ptr<Backend>& be) { registerFor(be); });

}  // namespace
