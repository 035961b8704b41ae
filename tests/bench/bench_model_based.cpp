// Benchmarks of the model-based methods (issue targets in docs/iterative.md), each a whole recon::run call on
// a backend already selected (host k-space in, host image out; plan, coil maps, E^H d and the solve inside):
//   - CS-TV, 100 FISTA iterations, golden-angle radial 256^2 x 8 coils, 101 spokes (4x under Nyquist);
//   - CS-wavelet, the same data;
//   - Cartesian SENSE, 30 CG iterations, 256^2 x 8 coils, R = 2 along pe1 with 24 calibration lines;
//   - 3D Cartesian SENSE, 30 CG iterations, 128^3 x 8 coils, R = 2 along pe1 (GPU only);
//   - ESPIRiT maps alone are in bench_espirit.cpp.
// Coil maps by ESPIRiT (the default) in every case; the first call (warm-up) is not timed.
#include <benchmark/benchmark.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "bench_support.hpp"
#include "larmor/backend/registry.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/recon/settings_table.hpp"

using namespace larmor;

namespace {

const Dataset& data(const std::string& key) {
  static std::mutex m;
  static std::map<std::string, std::unique_ptr<Dataset>> cache;
  std::lock_guard lock(m);
  auto& slot = cache[key];
  if (!slot) {
    phantom::SimulateSettings s;
    s.coils = 8;
    s.noiseSigma = 0.002f;
    if (key == "radial256") {
      s.matrix[0] = s.matrix[1] = 256;
      s.trajectory = TrajectoryKind::GoldenAngle;
      s.spokes = 101;
    } else if (key == "cart256") {
      s.matrix[0] = s.matrix[1] = 256;
      s.accel = 2;
    } else {
      s.matrix[0] = s.matrix[1] = s.matrix[2] = 128;
      s.accel = 2;
    }
    slot = std::make_unique<Dataset>(phantom::simulate(s));
  }
  return *slot;
}

void add(const std::shared_ptr<Backend>& be, const std::string& name, const std::string& key,
         const std::function<void(recon::ReconSettings&)>& configure) {
  auto body = [be, key, configure](benchmark::State& state, Backend&) {
    recon::ReconRequest req;
    req.dataset = &data(key);
    req.backend = be;
    configure(req.settings);
    req.settings.keepCoilImages = false;
    req.settings.iterative.cacheDirectory = "none";
    recon::run(req);  // warm-up: plans, cuFFT handles
    std::map<std::string, double> stageMs;  // the stage timers of the timed calls (where the time goes)
    for (auto _ : state) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto r = recon::run(req);
      benchmark::DoNotOptimize(r.image.data());
      state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      for (const auto& st : r.timings.stages()) stageMs[st.stage] += st.milliseconds;
    }
    for (const auto& [stage, ms] : stageMs)
      state.counters["ms:" + stage] = benchmark::Counter(ms / static_cast<double>(state.iterations()));
  };
  bench::registerCase(be->info().id + "/model-based/" + name, be, body)
      ->Unit(benchmark::kMillisecond)
      ->Iterations(be->isGpu() ? 10 : 2);
}

void cs(recon::ReconSettings& s, ops::RegularizerKind prior) {
  s.method = recon::Method::Cs;
  recon::settings::applyMethodDefaults(s);
  s.iterative.regularizer = prior;
  s.iterative.iterations = 100;
  s.iterative.tolerance = 0;  // all 100 iterations
}

void sense(recon::ReconSettings& s) {
  s.method = recon::Method::Cg;
  recon::settings::applyMethodDefaults(s);
  s.iterative.iterations = 30;
}

void registerFor(const std::shared_ptr<Backend>& be) {
  add(be, "cs-tv-100/radial-256^2x8", "radial256", [](auto& s) { cs(s, ops::RegularizerKind::Tv); });
  add(be, "cs-wavelet-100/radial-256^2x8", "radial256", [](auto& s) { cs(s, ops::RegularizerKind::Wavelet); });
  add(be, "sense-30/cartesian-R2-256^2x8", "cart256", sense);
  if (be->isGpu()) add(be, "sense-30/cartesian-R2-128^3x8", "cart128cube", sense);
}

const bool registered = bench::registerOnEveryDevice(
    "model-based", [](const DeviceInfo&, const std::shared_ptr<Backend>& be) { registerFor(be); });

}  // namespace
