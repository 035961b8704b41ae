#pragma once
// What the GUI remembers: the reconstruction settings (the engine's own structs), the device and the
// trajectory file, as JSON — in QSettings between runs and in a sidecar next to the data
// ("scan.h5.larmor.json") so a data set reopens with the settings it was reconstructed with.
// Recent files live in QSettings.
#include <QString>
#include <QStringList>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "larmor/recon/settings.hpp"
#include "session_settings.hpp"

namespace larmor::ui {

/// The model's session (ui/model/session_settings.hpp): one struct, kept here as JSON.
using SessionState = model::SessionSettings;

nlohmann::json toJson(const SessionState& s);
/// Reads what it recognises over `base`; unknown keys and bad values are ignored (an old or hand-edited
/// file must never stop the program from starting).
SessionState sessionFromJson(const nlohmann::json& j, SessionState base = {});

QString sidecarPath(const QString& dataFile);
/// Writes the sidecar; false with *error set when it cannot.
bool saveSidecar(const QString& dataFile, const SessionState& s, QString* error = nullptr);
std::optional<SessionState> loadSidecar(const QString& dataFile);

/// The session of the last run of the program (QSettings), and saving it.
SessionState lastSession();
void saveLastSession(const SessionState& s);

QStringList recentFiles();
void addRecentFile(const QString& path);
void clearRecentFiles();

}  // namespace larmor::ui
