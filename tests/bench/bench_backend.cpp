// Backend operations on every device the registry lists (the CPU, then each CUDA device), registered at
// run time. Each iteration is timed by hand around the operation and a backend synchronize, so a GPU's
// queued work is counted in full (UseManualTime); each case warms up first (plans, caches, clocks) and
// works on random data, never on zeros. Names start with the device id: --benchmark_filter=cuda runs
// only the GPU cases.
#include <benchmark/benchmark.h>

#include <algorithm>
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

namespace {

using larmor::Backend;
using larmor::Buffer;
using larmor::cfloat;
using larmor::FftDirection;
using larmor::index_t;
using larmor::Shape;
using larmor::bench::timeSynchronized;

/// Backend memory of n complex values filled with random normal values (a 1 Mi-element random tile repeated:
/// generating gigabytes of random numbers on the host would take longer than the benchmarks).
std::unique_ptr<Buffer> randomBuffer(Backend& be, index_t n, unsigned seed) {
  auto buf = be.allocate(static_cast<std::size_t>(n) * sizeof(cfloat));
  const index_t tile = std::min<index_t>(n, index_t{1} << 20);
  std::vector<cfloat> host(static_cast<std::size_t>(tile));
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (auto& v : host) v = {nd(rng), nd(rng)};
  for (index_t off = 0; off < n; off += tile) {
    const index_t len = std::min(tile, n - off);
    be.upload(*buf, host.data(), static_cast<std::size_t>(len) * sizeof(cfloat),
              static_cast<std::size_t>(off) * sizeof(cfloat));
  }
  return buf;
}

using Case = larmor::bench::Body;

void add(const std::shared_ptr<Backend>& be, const std::string& name, Case body, benchmark::TimeUnit unit) {
  larmor::bench::registerCase(be->info().id + "/" + name, be, std::move(body))->Unit(unit)->MinTime(0.2);
}

void fftCase(const std::shared_ptr<Backend>& be, const std::string& name, Shape shape, int rank) {
  add(be, name,
      [shape, rank](benchmark::State& state, Backend& b) {
        auto x = randomBuffer(b, shape.size(), 1);
        timeSynchronized(state, b, 2, [&] { b.fft(*x, shape, rank, FftDirection::Forward); });
        // Read and written once: the floor of a memory-bound transform.
        state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * 2 * shape.size() *
                                static_cast<std::int64_t>(sizeof(cfloat)));
        state.counters["transforms"] = static_cast<double>(shape.size() / shape.span(0, rank));
      },
      benchmark::kMillisecond);
}

void registerFor(const std::shared_ptr<Backend>& be) {
  const larmor::DeviceInfo info = be->info();
  benchmark::AddCustomContext(info.id, info.name + "; " + info.library);

  fftCase(be, "fft2d/256x256x8", Shape{256, 256, 8}, 2);
  fftCase(be, "fft3d/128^3", Shape{128, 128, 128}, 3);
  fftCase(be, "fft3d/256^3", Shape{256, 256, 256}, 3);

  const index_t nVec = index_t{32} << 20;  // 32 Mi complex = 256 MiB per vector
  add(be, "copy/256MiB",
      [nVec](benchmark::State& state, Backend& b) {
        auto src = randomBuffer(b, nVec, 2);
        auto dst = b.allocate(src->bytes());
        timeSynchronized(state, b, 2, [&] { b.copy(*dst, *src, src->bytes()); });
        // Read + write, as the copy bandwidth in GPU.md is quoted.
        state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * 2 *
                                static_cast<std::int64_t>(src->bytes()));
      },
      benchmark::kMicrosecond);
  add(be, "axpby/32Mi",
      [nVec](benchmark::State& state, Backend& b) {
        auto x = randomBuffer(b, nVec, 3), y = randomBuffer(b, nVec, 4);
        // |a| + |b| < 1 keeps y bounded over any number of iterations.
        timeSynchronized(state, b, 2, [&] { b.axpby(*y, cfloat(0.5f, 0.1f), *x, cfloat(0.3f, -0.2f), nVec); });
        state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * 3 * nVec *
                                static_cast<std::int64_t>(sizeof(cfloat)));
      },
      benchmark::kMicrosecond);
  add(be, "dot/32Mi",
      [nVec](benchmark::State& state, Backend& b) {
        auto x = randomBuffer(b, nVec, 5), y = randomBuffer(b, nVec, 6);
        larmor::cdouble sink = 0;
        timeSynchronized(state, b, 2, [&] { sink += b.dot(*x, *y, nVec); });
        benchmark::DoNotOptimize(sink);
        state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * 2 * nVec *
                                static_cast<std::int64_t>(sizeof(cfloat)));
      },
      benchmark::kMicrosecond);

  // Cartesian pipeline pieces at 256^2 x 32 coils x 64 slices (2048 images, 1 GiB), where it fits
  // (data, cuFFT's work area and the cropped input with room to spare).
  const index_t coils = 32, slices = 64, images = coils * slices;
  const bool fits = !info.gpu || info.memoryBytes >= (std::size_t{6} << 30);
  if (!fits) return;
  fftCase(be, "pipeline/fft2d/256x256x2048", Shape{256, 256, images}, 2);
  add(be, "pipeline/crop/512x256->256x256x2048",
      [images](benchmark::State& state, Backend& b) {
        const Shape src{512, 256, 1, 1, images}, dst{256, 256, 1, 1, images};
        auto s = randomBuffer(b, src.size(), 7);
        auto d = b.allocate(static_cast<std::size_t>(dst.size()) * sizeof(cfloat));
        timeSynchronized(state, b, 2, [&] { b.resizeCentred(*d, dst, *s, src); });
        state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * 2 * dst.size() *
                                static_cast<std::int64_t>(sizeof(cfloat)));
      },
      benchmark::kMillisecond);
  add(be, "pipeline/sos/256x256x32coils-x64",
      [coils, slices](benchmark::State& state, Backend& b) {
        const index_t voxels = 256 * 256;
        auto in = randomBuffer(b, voxels * coils * slices, 8);
        auto out = b.allocate(static_cast<std::size_t>(voxels * slices) * sizeof(cfloat));
        timeSynchronized(state, b, 2, [&] { b.sumOfSquares(*out, *in, voxels, coils, slices); });
        state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * (coils + 1) * voxels * slices *
                                static_cast<std::int64_t>(sizeof(cfloat)));
      },
      benchmark::kMillisecond);
  add(be, "pipeline/multiply-conj/256x256-over-32coils",
      [coils](benchmark::State& state, Backend& b) {
        const index_t voxels = 256 * 256;
        auto image = randomBuffer(b, voxels, 9), coilImages = randomBuffer(b, voxels * coils, 10);
        auto out = b.allocate(coilImages->bytes());
        timeSynchronized(state, b, 2, [&] { b.multiply(*out, *image, voxels, *coilImages, voxels * coils, true); });
        state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * (2 * coils + 1) * voxels *
                                static_cast<std::int64_t>(sizeof(cfloat)));
      },
      benchmark::kMicrosecond);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  auto& reg = larmor::BackendRegistry::instance();
  reg.loadPlugins();
  for (const auto& m : reg.pluginMessages()) std::fprintf(stderr, "larmor: %s\n", m.c_str());
  if (const std::string why = reg.whyNoGpu(); !why.empty()) std::fprintf(stderr, "larmor: no GPU benchmarks: %s\n", why.c_str());
  // The backends live until the end of main: every registered case holds one.
  larmor::bench::registerOnEveryDevice(
      "backend", [](const larmor::DeviceInfo&, const std::shared_ptr<Backend>& be) { registerFor(be); });
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
