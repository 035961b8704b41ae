#pragma once
// Benchmark suites behind `larmor-cli bench`: workloads timed on a chosen backend after a warm-up,
// median of several runs, on random (never zero) data, each with the physical limit beside it.
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace larmor::recon {

/// suite: "seeds" (the foundation workloads: FFTs, copy bandwidth, Cartesian recon). `log` gets one
/// line per result. Returns {"device", "suite", "results": [{name, median_ms, ..., limit_ms}]}.
nlohmann::json runBenchSuite(const std::string& suite, const std::string& device,
                             const std::function<void(const std::string&)>& log);

}  // namespace larmor::recon
