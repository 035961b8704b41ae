#pragma once
// The session between its Qt persistence (SessionState, session.hpp: QSettings, sidecars, the settings
// panel) and the Qt-free model (model::SessionSettings): the same three members.
#include "session.hpp"
#include "session_settings.hpp"

namespace larmor::ui {

inline model::SessionSettings toModel(const SessionState& s) { return {s.settings, s.device, s.trajectoryPath}; }
inline SessionState toSessionState(const model::SessionSettings& s) { return {s.settings, s.device, s.trajectoryPath}; }

}  // namespace larmor::ui
