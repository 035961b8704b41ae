// Comparing two sessions (session_settings.hpp).
#include "session_settings.hpp"

namespace larmor::model {

bool sameSession(const SessionSettings& a, const SessionSettings& b) {
  // The engine's JSON of the settings leaves out the density compensation and keepCoilImages.
  return a.device == b.device && a.trajectoryPath == b.trajectoryPath && a.settings.nufft.dcf == b.settings.nufft.dcf &&
         a.settings.keepCoilImages == b.settings.keepCoilImages && recon::toJson(a.settings) == recon::toJson(b.settings);
}

}  // namespace larmor::model
