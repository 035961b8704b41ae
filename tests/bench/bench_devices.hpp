#pragma once
// How every benchmark file reaches the devices: bench_backend.cpp owns main(), the other files register their
// cases from a static initialiser, and all of them go through registerOnEveryDevice, so the registry's devices
// (the CPU, then each CUDA device) come up one way and a device that cannot be used is said once per file.
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>

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

}  // namespace larmor::bench
