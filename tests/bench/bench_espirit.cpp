// ESPIRiT maps of a 256 x 256 slice with 8 coils on every device the registry lists: calibration region
// (24 x 24, BART ecalib -r 24) to maps (kernel 6, threshold 0.001, crop 0.8), everything
// recon::coilMapsForSlice does after loading: calibration box, calibration matrix and its Gram matrix,
// the host eigen-decomposition, the kernel images and the pointwise eigenvectors, with the upload of the
// box and the download of the maps. Data: the simulated Shepp-Logan phantom with smooth coil maps
// (readout not oversampled, so the grid is 256 x 256). Target on an H100: <= 20 ms.
//
// bench_backend.cpp owns main(); these cases are registered by a static initializer.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>

#include "larmor/backend/registry.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/coil_maps.hpp"
#include "larmor/recon/iterative.hpp"

namespace {

const larmor::Dataset& phantom256() {
  static const larmor::Dataset d = [] {
    larmor::phantom::SimulateSettings s;
    s.matrix[0] = s.matrix[1] = 256;
    s.coils = 8;
    s.readoutOversampling = 1;
    s.noiseSigma = 0.002f;
    return larmor::phantom::simulate(s);
  }();
  return d;
}

void runCase(benchmark::State& state, const std::string& device) {
  auto backend = larmor::BackendRegistry::instance().select(device).backend;
  const larmor::Dataset& d = phantom256();
  larmor::recon::ReconSettings s;
  s.method = larmor::recon::Method::Cg;
  s.iterative.coilMaps = larmor::recon::CoilMapSource::Espirit;
  const larmor::index_t out[3] = {256, 256, 1};
  larmor::recon::coilMapsForSlice(*backend, d, 0, out, s);  // warm-up: plans, allocator
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const larmor::CArray maps = larmor::recon::coilMapsForSlice(*backend, d, 0, out, s);
    benchmark::DoNotOptimize(maps.data());
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
}

bool registerAll() {
  try {
    auto& reg = larmor::BackendRegistry::instance();
    reg.loadPlugins();
    for (const auto& info : reg.devices()) {
      const std::string id = info.id;
      benchmark::RegisterBenchmark((id + "/espirit/256x256/8coils").c_str(),
                                   [id](benchmark::State& state) {
                                     try {
                                       runCase(state, id);
                                     } catch (const std::exception& e) {
                                       state.SkipWithError(e.what());
                                     }
                                   })
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->MinTime(info.gpu ? 0.5 : 1.0);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "larmor: ESPIRiT benchmarks not registered: %s\n", e.what());
  }
  return true;
}

[[maybe_unused]] const bool registered = registerAll();

}  // namespace
