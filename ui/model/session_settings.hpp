#pragma once
// The session as the model keeps it: the engine's reconstruction settings, the device that runs them and
// the trajectory file of BART k-space. Plain data; ui/session.* keeps it between runs (QSettings, the
// sidecar next to the data) under the name SessionState.
#include <string>

#include "larmor/recon/settings.hpp"

namespace larmor::model {

struct SessionSettings {
  recon::ReconSettings settings;
  std::string device = "auto";
  std::string trajectoryPath;  ///< BART trajectory for .cfl k-space
};

/// Same settings, device and trajectory (the settings compared through the settings table's JSON).
bool sameSession(const SessionSettings& a, const SessionSettings& b);

}  // namespace larmor::model
