// Names of the method and combination enums and the settings' JSON: all read from the settings table
// (settings_table.cpp), the one place that spells them.
#include "larmor/recon/settings.hpp"

#include "larmor/recon/settings_table.hpp"

namespace larmor::recon {

std::string toString(Method m) { return settings::choiceName("method", static_cast<int>(m)); }

Method methodFromString(const std::string& s) { return static_cast<Method>(settings::choiceIndex("method", s)); }

std::string toString(Combine c) { return settings::choiceName("combine", static_cast<int>(c)); }

Combine combineFromString(const std::string& s) { return static_cast<Combine>(settings::choiceIndex("combine", s)); }

nlohmann::json toJson(const ReconSettings& s) {
  nlohmann::json j = settings::toJson(s);
  // Session state, not a setting: whether this solve started from a previous image.
  j["iterative"]["warm_start"] = static_cast<bool>(s.iterative.warmStart);
  return j;
}

}  // namespace larmor::recon
