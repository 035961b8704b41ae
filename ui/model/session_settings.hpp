#pragma once
// The session as the model keeps it: the engine's reconstruction settings, the device that runs them and
// the trajectory file of BART k-space. Plain data; ui/session.* keeps it between runs (QSettings, the
// sidecar next to the data) as SessionState, which has the same three members.
#include <string>

#include "larmor/recon/settings.hpp"

namespace larmor::model {

struct SessionSettings {
  recon::ReconSettings settings;
  std::string device = "auto";
  std::string trajectoryPath;  ///< BART trajectory for .cfl k-space
};

/// Same settings, device and trajectory (compared through the engine's JSON of the settings).
bool sameSession(const SessionSettings& a, const SessionSettings& b);

}  // namespace larmor::model
