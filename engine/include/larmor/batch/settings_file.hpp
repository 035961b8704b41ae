#pragma once
// The settings file of a batch. Two producers, one reader:
//   larmor-cli recon ... --save-settings S.json  {"larmor_settings": 1, "settings": {...}, "trajectory": ...}
//   the GUI's saved session (File > Save session: DATA.larmor.json, ui/session.cpp)
//                                                {"larmor_session": 1, "settings": {...}, "device": ...,
//                                                 "trajectory": ...}
// "settings" is the settings table's JSON (larmor/recon/settings_table.hpp, toJson/fromJson) in both, so
// what was tuned in the GUI or checked on one file with `recon` is exactly what the batch runs.
#include <string>

#include <nlohmann/json.hpp>

#include "larmor/recon/settings.hpp"

namespace larmor::batch {

struct SettingsFile {
  recon::ReconSettings settings;
  std::string trajectory;  ///< BART trajectory for .cfl k-space (empty: none)
  std::string kind;        ///< "larmor_settings" or "larmor_session"
};

/// The JSON that `recon --save-settings` writes.
nlohmann::json settingsFileJson(const recon::ReconSettings& settings, const std::string& trajectory);

/// Reads either form; throws Error("FILE: ...") for anything else, for a bad value (naming the setting)
/// and for settings that do not validate.
SettingsFile readSettingsFile(const std::string& path);
/// The same from parsed JSON (`where` names it in messages).
SettingsFile settingsFromJson(const nlohmann::json& j, const std::string& where);

}  // namespace larmor::batch
