// The compressed-sensing priors' kernels (SparsityOps) on every device the registry lists, registered at
// static initialisation (bench_backend.cpp's main runs them): prox_{t TV} with 10 FGP steps (warm dual, as
// FISTA calls it) and the D4 wavelet prox with a new shift each call (cycle spinning), at 256x256 and 128^3.
// One FISTA iteration calls one of them once. Timed around a backend synchronize after a warm-up, on random
// data; where no CUDA device exists the cuda cases are listed and skipped with the reason.
#include <benchmark/benchmark.h>

#include <array>
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

using namespace larmor;

std::unique_ptr<Buffer> randomImage(Backend& be, index_t n, unsigned seed) {
  std::vector<cfloat> host(static_cast<std::size_t>(n));
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (auto& v : host) v = {nd(rng), nd(rng)};
  auto b = be.allocate(host.size() * sizeof(cfloat));
  be.upload(*b, host.data(), host.size() * sizeof(cfloat));
  return b;
}

void timeIt(benchmark::State& state, Backend& be, const std::function<void()>& op) {
  bench::timeSynchronized(state, be, 1, op);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void add(const std::string& device, const std::shared_ptr<Backend>& be, const std::string& name, bench::Body body,
         const std::string& skip = {}) {
  bench::registerCase(device + "/sparsity/" + name, be, std::move(body), skip)
      ->Unit(benchmark::kMillisecond)
      ->MinTime(0.3);
}

const std::array<std::pair<const char*, Shape>, 2> kSizes = {
    {{"256x256", Shape{256, 256, 1}}, {"128^3", Shape{128, 128, 128}}}};

void registerFor(const std::string& device, const std::shared_ptr<Backend>& be, const std::string& skip = {}) {
  for (const auto& [label, shape] : kSizes) {
    const Shape s = shape;
    add(device, be, std::string("tv-prox-10/") + label,
        [s](benchmark::State& state, Backend& b) {
          auto x = randomImage(b, s.size(), 1);
          auto dual = b.allocate(static_cast<std::size_t>(SparsityOps::tvDualElements(s)) * sizeof(cfloat));
          b.fill(*dual, cfloat(0.f, 0.f), SparsityOps::tvDualElements(s));
          timeIt(state, b, [&] { b.sparsityOps().tvProx(*x, s, 0.05, 10, *dual); });
        },
        skip);
    add(device, be, std::string("wavelet-prox/") + label,
        [s](benchmark::State& state, Backend& b) {
          auto x = randomImage(b, s.size(), 2);
          std::mt19937 rng(3);
          timeIt(state, b, [&] {
            std::array<index_t, 3> shift{};
            for (int d = 0; d < 3; ++d) shift[static_cast<std::size_t>(d)] = static_cast<index_t>(rng() % s[static_cast<std::size_t>(d)]);
            b.sparsityOps().waveletProx(*x, s, 0.05, shift);
          });
        },
        skip);
  }
}

const bool registered = [] {
  bench::registerOnEveryDevice("sparsity", [](const DeviceInfo& d, const std::shared_ptr<Backend>& be) {
    registerFor(d.id, be);
  });
  const std::string why = BackendRegistry::instance().whyNoGpu();
  if (!why.empty()) registerFor("cuda", nullptr, "no CUDA device: " + why);
  return true;
}();

}  // namespace
