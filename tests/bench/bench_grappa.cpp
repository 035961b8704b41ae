// GRAPPA on every device the registry lists: the thesis's Table 5.1 slice (512 columns, 32 coils, R = 4,
// 24 ACS lines, Nb = 4, Δs = 128, χ = 1e-4, η = 1; 256 phase-encoding lines: a 256 matrix with 2x readout
// oversampling), one slice at a time and in batches (one batched GEMM and solve for the batch), and with 64
// and 128 coils (the thesis's outlook, sec. 5.3.2). Timed: everything process() does with the k-space on the
// device: the readout FFT to hybrid space, calibration (with η = 1 the normalization runs on the device
// too), filling, inverse FFT, crop, sum of squares (no upload, no download). A last, synchronised run per case
// reports the stages as counters (calib_ms is the thesis's autocalibration: CPU 758 ms, GPU ~43 ms on an
// 8800 GTX for 32 coils). Like the thesis's standalone test (sec. 5.3.1) the k-space is random, which keeps
// every calibration system positive definite.
// Also 2D GRAPPA on a 3D volume: 128 x 128 x 64 (256 readout samples: 2x oversampling), 8 coils,
// R = 2 x 2, a 24 x 24 calibration box, the default kernel (4 x 2 sources x 5 columns: 320 unknowns); one
// volume is one problem (calibration, filling, 3D inverse FFT, crop, sum of squares).
//
// bench_backend.cpp owns main(); these cases are registered by a static initializer, which loads the GPU
// plugins itself (the registry's loadPlugins() is idempotent). Names start with the device id.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <string>

#include "larmor/backend/registry.hpp"
#include "larmor/bench/bench.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/grappa.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/traj/cartesian.hpp"

namespace {

using larmor::Backend;
using larmor::cfloat;
using larmor::Dataset;
using larmor::index_t;
using larmor::Shape;
namespace recon = larmor::recon;

/// A 3D volume accelerated ry x rz along pe1 x pe2 with an acs x acs box, random samples where acquired.
Dataset volume2D(int coils, index_t n0, index_t n1, index_t n2, int ry, int rz, int acs) {
  Dataset d;
  d.source = "bench";
  auto& h = d.header;
  h.encoded[0] = n0, h.encoded[1] = n1, h.encoded[2] = n2;
  h.recon[0] = n0 / 2, h.recon[1] = n1, h.recon[2] = n2;
  h.encodedFovMm[0] = 512, h.encodedFovMm[1] = 256, h.encodedFovMm[2] = 256;
  h.reconFovMm[0] = 256, h.reconFovMm[1] = 256, h.reconFovMm[2] = 256;
  h.coils = coils;
  h.slices = 1;
  h.accelerationPe1 = ry;
  h.accelerationPe2 = rz;
  h.calibrationLines = acs;
  larmor::Array<std::uint8_t> cal;
  const auto mask = larmor::traj::cartesianMask(n1, n2, ry, rz, acs, acs, &cal);
  d.sampled = larmor::Array<std::uint8_t>(Shape{n1, n2, 1});
  d.calibration = larmor::Array<std::uint8_t>(Shape{n1, n2, 1});
  std::copy_n(mask.data(), mask.size(), d.sampled.data());
  std::copy_n(cal.data(), cal.size(), d.calibration.data());
  d.kspace = larmor::CArray(Shape{n0, n1, n2, coils, 1}, cfloat(0));
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (index_t c = 0; c < coils; ++c)
    for (index_t z = 0; z < n2; ++z)
      for (index_t y = 0; y < n1; ++y)
        if (mask(y, z))
          for (index_t x = 0; x < n0; ++x) d.kspace(x, y, z, c, 0) = {nd(rng), nd(rng)};
  return d;
}

recon::ReconSettings table51Settings(bool improved) {
  recon::ReconSettings s;
  s.method = recon::Method::Grappa;
  s.keepCoilImages = false;
  s.grappa.calibration = improved ? recon::GrappaCalibration::Improved : recon::GrappaCalibration::Basic;
  s.grappa.blocks = 4;
  s.grappa.segment = 128;
  s.grappa.chi = 1e-4;
  s.grappa.eta = 1.0;
  return s;
}

void runCase(benchmark::State& state, const std::string& device, const Dataset& d, const recon::ReconSettings& s,
             index_t batch) {
  auto backend = larmor::BackendRegistry::instance().select(device).backend;
  Backend& be = *backend;
  recon::grappa::Pipeline pipeline(be, d, s, batch);
  if (pipeline.slicesPerBatch() != batch) {
    state.SkipWithError("the batch does not fit the device's memory");
    return;
  }
  // process() works in place on the uploaded k-space, so every run gets a fresh upload (not timed).
  for (int i = 0; i < 2; ++i) {  // plans, caches, clocks
    pipeline.upload(d, 0, batch);
    pipeline.process(d, 0, batch);
  }
  be.synchronize();
  double total = 0;
  for (auto _ : state) {
    pipeline.upload(d, 0, batch);
    be.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    pipeline.process(d, 0, batch);
    be.synchronize();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    total += s;
  }
  const double perSlice = total / static_cast<double>(state.iterations()) / static_cast<double>(batch);
  state.counters["ms/slice"] = 1e3 * perSlice;
  state.counters["slices/s"] = 1.0 / perSlice;
  // One run with the stages timed (each synchronised, so they add up to a little more than the above).
  larmor::Timings t;
  pipeline.upload(d, 0, batch);
  pipeline.process(d, 0, batch, &t);
  std::map<std::string, double> ms;
  for (const auto& st : t.stages()) ms[st.stage] += st.milliseconds;
  auto counter = [&](const char* name, const char* stage) {
    state.counters[name] = ms.count(stage) ? ms[stage] / static_cast<double>(batch) : 0.0;
  };
  counter("host_ms", "calibration scales (host)");
  counter("fft_hybrid_ms", "fft to calibration domain");
  counter("calib_ms", "calibration");
  counter("fill_ms", "fill");
  counter("ifft_ms", "ifft");
  counter("crop_ms", "crop oversampling");
  counter("combine_ms", "combine sos");
}

void registerFor(const larmor::DeviceInfo& info) {
  const std::string id = info.id;
  // Batches that fit comfortably: the pipeline needs ~0.1 GB per 32-coil slice, ~0.7 GB per 128-coil one.
  const index_t batch32 = info.gpu ? 32 : 4, batchBig = info.gpu ? 8 : 2;
  struct Case {
    int coils;
    index_t batch;
    bool improved;
  };
  const Case cases[] = {{32, 1, false}, {32, batch32, false}, {64, 1, false}, {64, batchBig, false},
                        {128, 1, false}, {128, batchBig, false}, {32, 1, true}};
  for (const Case& c : cases) {
    const std::string name = id + "/grappa/table5.1/" + std::to_string(c.coils) + "coils/" +
                             (c.improved ? "improved4x5/" : "basic/") +
                             (c.batch == 1 ? std::string("slice") : "batch" + std::to_string(c.batch));
    benchmark::RegisterBenchmark(name.c_str(),
                                 [id, c](benchmark::State& state) {
                                   try {
                                     runCase(state, id, recon::grappaTable51(c.coils, c.batch), table51Settings(c.improved),
                                             c.batch);
                                   } catch (const std::exception& e) {
                                     state.SkipWithError(e.what());
                                   }
                                 })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->MinTime(info.gpu ? 0.5 : 0.2);
  }
  benchmark::RegisterBenchmark((id + "/grappa/3d2x2/128x128x64/8coils/volume").c_str(),
                               [id](benchmark::State& state) {
                                 try {
                                   recon::ReconSettings s;
                                   s.method = recon::Method::Grappa;
                                   s.keepCoilImages = false;
                                   runCase(state, id, volume2D(8, 256, 128, 64, 2, 2, 24), s, 1);
                                 } catch (const std::exception& e) {
                                   state.SkipWithError(e.what());
                                 }
                               })
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(info.gpu ? 0.5 : 0.2);
}

bool registerAll() {
  try {
    auto& reg = larmor::BackendRegistry::instance();
    reg.loadPlugins();
    for (const auto& d : reg.devices()) registerFor(d);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "larmor: GRAPPA benchmarks not registered: %s\n", e.what());
  }
  return true;
}

[[maybe_unused]] const bool registered = registerAll();

}  // namespace
