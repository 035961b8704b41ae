// Comparing two sessions (session_settings.hpp).
#include "session_settings.hpp"

namespace larmor::model {

bool sameSession(const SessionSettings& a, const SessionSettings& b) {
  // The settings' JSON holds every setting of the table (and whether a warm start is attached).
  return a.device == b.device && a.trajectoryPath == b.trajectoryPath && recon::toJson(a.settings) == recon::toJson(b.settings);
}

}  // namespace larmor::model
