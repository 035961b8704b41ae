#pragma once
// What every benchmark file shares: bench_backend.cpp owns main(), the other files register their cases from a
// static initialiser. registerOnEveryDevice brings up the registry's devices (the CPU, then each CUDA device)
// one way and says once per file when one cannot be used; registerCase registers a case with manual time whose
// exceptions skip it with their message; timeSynchronized times an operation with the backend synchronised, so
// that queued GPU work counts.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "larmor/backend/registry.hpp"

namespace larmor::bench {

/// Calls registerFor(device, its backend) for every device the registry lists (loading the plugins first; the
/// registry does that once). A device whose backend cannot be made is skipped with a line on stderr naming
/// `what`. Returns true, for `const bool registered = registerOnEveryDevice(...)`.
inline bool registerOnEveryDevice(const char* what,
                                  const std::function<void(const DeviceInfo&, const std::shared_ptr<Backend>&)>& registerFor) {
  try {
    auto& reg = BackendRegistry::instance();
    reg.loadPlugins();
    for (const auto& d : reg.devices()) {
      try {
        registerFor(d, reg.select(d.id).backend);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "larmor: %s benchmarks on %s skipped: %s\n", what, d.id.c_str(), e.what());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "larmor: %s benchmarks not registered: %s\n", what, e.what());
  }
  return true;
}

/// A case's body: the benchmark's state and the backend it runs on.
using Body = std::function<void(benchmark::State&, Backend&)>;

/// Registers `name` (manual time) running `body` on `be`; an exception skips the case with its message. With a
/// `skip` reason (or no backend) the case is listed and skipped with that reason.
inline benchmark::internal::Benchmark* registerCase(const std::string& name, const std::shared_ptr<Backend>& be,
                                                    Body body, const std::string& skip = {}) {
  return benchmark::RegisterBenchmark(name.c_str(),
                                      [be, body, skip](benchmark::State& state) {
                                        if (!skip.empty() || !be) {
                                          state.SkipWithError(skip.empty() ? "no backend" : skip.c_str());
                                          return;
                                        }
                                        try {
                                          body(state, *be);
                                        } catch (const std::exception& e) {
                                          state.SkipWithError(e.what());
                                        }
                                      })
      ->UseManualTime();
}

/// Runs `op` `warmup` times, then times it once per iteration of `state`, synchronising `be` after each call.
inline void timeSynchronized(benchmark::State& state, Backend& be, int warmup, const std::function<void()>& op) {
  for (int i = 0; i < warmup; ++i) op();
  be.synchronize();
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    op();
    be.synchronize();
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
}

}  // namespace larmor::bench
