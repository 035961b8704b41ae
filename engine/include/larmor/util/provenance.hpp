#pragma once
// Provenance JSON: what produced an image (settings, version, device, timings, input), written by
// --json, stored with exported images.
#include <string>

#include <nlohmann/json.hpp>

#include "larmor/util/timer.hpp"

namespace larmor {

std::string versionString();  ///< "0.1.0"
/// ISO 8601 UTC time now, e.g. "2026-11-22T14:03:00Z".
std::string utcNow();
nlohmann::json toJson(const Timings& t);
nlohmann::json provenance(const nlohmann::json& settings, const std::string& device, const std::string& deviceName,
                          const Timings& timings, const std::string& input);

}  // namespace larmor
