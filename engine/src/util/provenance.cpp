#include "larmor/util/provenance.hpp"

#include <unistd.h>

#include <ctime>

#include "larmor_version.hpp"

namespace larmor {

std::string versionString() { return LARMOR_VERSION; }

std::string utcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json toJson(const Timings& t) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : t.stages()) stages.push_back({{"stage", s.stage}, {"ms", s.milliseconds}, {"device", s.device}});
  return {{"stages", stages}, {"total_ms", t.totalMilliseconds()}};
}

nlohmann::json provenance(const nlohmann::json& settings, const std::string& device, const std::string& deviceName,
                          const Timings& timings, const std::string& input) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return {{"software", "Larmor"},
          {"version", versionString()},
          {"created_utc", utcNow()},
          {"host", host},
          {"input", input},
          {"device", {{"id", device}, {"name", deviceName}}},
          {"settings", settings},
          {"timings", toJson(timings)}};
}

}  // namespace larmor
