#pragma once
// Reconstruction settings from Python keyword arguments, through the engine's settings table as larmor-cli's flags
// (recon.cpp says how).
#include <pybind11/pybind11.h>

#include <string>

#include "larmor/recon/settings.hpp"

namespace larmor::python {

/// The CLI's SettingsOptions::apply over keyword arguments: `method` and its defaults, then each argument (named as
/// a flag with _ for -, or a JSON key; lam = lambda). Throws Error with the CLI's one-line messages.
recon::ReconSettings settingsFrom(const std::string& method, const pybind11::dict& kwargs);

}  // namespace larmor::python
