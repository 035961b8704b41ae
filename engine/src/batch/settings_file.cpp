// Reading and writing a batch's settings file (larmor/batch/settings_file.hpp): the CLI's
// `--save-settings` JSON or the GUI's saved session, both holding the settings table's JSON.
#include "larmor/batch/settings_file.hpp"

#include <fstream>
#include <sstream>

#include "larmor/recon/settings_table.hpp"
#include "larmor/util/error.hpp"
#include "larmor/util/provenance.hpp"

namespace larmor::batch {

nlohmann::json settingsFileJson(const recon::ReconSettings& settings, const std::string& trajectory) {
  return {{"larmor_settings", 1},
          {"settings", recon::settings::toJson(settings)},
          {"trajectory", trajectory},
          {"cli", recon::settings::toCliArguments(settings)},
          {"version", versionString()}};
}

SettingsFile settingsFromJson(const nlohmann::json& j, const std::string& where) {
  require(j.is_object(), where + ": expected a JSON object (a settings file or a saved GUI session)");
  SettingsFile f;
  if (j.contains("larmor_settings")) f.kind = "larmor_settings";
  else if (j.contains("larmor_session")) f.kind = "larmor_session";
  require(!f.kind.empty(), where +
                               ": not a Larmor settings file (expected \"larmor_settings\" from `larmor-cli recon "
                               "--save-settings` or \"larmor_session\" from the GUI's saved session)");
  require(j.contains("settings") && j["settings"].is_object(), where + ": has no \"settings\" object");
  std::vector<std::string> problems;
  f.settings = recon::settings::fromJson(j["settings"], {}, &problems);
  require(problems.empty(), where + ": " + (problems.empty() ? std::string() : problems.front()));
  if (j.contains("trajectory")) {
    require(j["trajectory"].is_string(), where + ": \"trajectory\" must be a path (a string)");
    f.trajectory = j["trajectory"].get<std::string>();
  }
  try {
    recon::settings::validate(f.settings);
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
  return f;
}

SettingsFile readSettingsFile(const std::string& path) {
  std::ifstream in(path);
  require(static_cast<bool>(in), path + ": cannot read the settings file");
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  require(!j.is_discarded(), path + ": not valid JSON");
  return settingsFromJson(j, path);
}

}  // namespace larmor::batch
