// The image-quality metrics that recon::run computes when the dataset carries a reference (quality/metrics.hpp:
// percent error, PSNR, SSIM): `metrics` is a stage of every benchmarked whole call on simulated data (15 ms
// of the 38 ms Cartesian SENSE 256² call on the H100 machine before the fused SSIM). Host only.
#include <benchmark/benchmark.h>

#include <cmath>

#include "larmor/quality/metrics.hpp"

namespace {

using namespace larmor;

void BM_QualityCompare(benchmark::State& state) {
  const index_t n = state.range(0), nz = state.range(1);
  CArray ref(Shape{n, n, nz}), test(Shape{n, n, nz});
  for (index_t i = 0; i < ref.size(); ++i) {
    const double x = static_cast<double>(i % n) / n - 0.5, y = static_cast<double>((i / n) % n) / n - 0.5;
    ref[i] = cfloat(x * x + y * y < 0.16 ? 1.f : 0.f, 0.f);
    test[i] = ref[i] + cfloat(0.05f * std::sin(0.37f * static_cast<float>(i)), 0.f);
  }
  for (auto _ : state) benchmark::DoNotOptimize(quality::compare(test, ref));
  state.SetLabel(std::to_string(n) + "x" + std::to_string(n) + "x" + std::to_string(nz));
}
BENCHMARK(BM_QualityCompare)->Name("cpu/quality/compare")->Args({256, 1})->Args({128, 128})->Unit(benchmark::kMillisecond);

}  // namespace
