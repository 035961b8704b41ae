#pragma once
// larmor-cli's sub-commands (contract in ARCHITECTURE.md). Each returns the process exit code and
// throws larmor::Error for the one-line message main() prints.
#include <string>
#include <vector>

#include "larmor/recon/settings.hpp"

namespace larmor::cli {

struct SimulateArgs {
  std::string phantom = "shepp-logan", matrix = "256", traj = "cartesian", output, json;
  std::string accel = "1";  ///< R (pe1) or RyxRz (pe1 x pe2, 3D)
  int coils = 8, acs = 24, coilRings = 0, spokes = 0, readout = 0, interleaves = 0, slices = 1;
  float noise = 0, oversampling = 2;
  unsigned long long seed = 1;
};

struct ReconArgs {
  std::string input, traj, device = "auto", output, json;
  recon::ReconSettings settings;  ///< from the settings table's flags (settings_options.hpp)
  // Export (DICOM / NIfTI)
  bool anonymize = false, niftiComplex = false;
  std::string seriesDescription;
  std::vector<std::string> components;
  float windowCenter = 0, windowWidth = 0;
};

struct MapsArgs {
  std::string input, traj, device = "auto", output, json, coilMaps = "espirit", matrix;
  int calibrationSize = 24;
  double crop = 0.8;
};

struct CompareArgs {
  std::string ref, test, map, json;
};

/// `larmor-cli version`: the version (as --version), where the CUDA plugin was loaded from or why not,
/// and the devices found: what a bug report needs.
int version();
int devices(const std::string& json);
int info(const std::string& file, const std::string& json);
int simulate(const SimulateArgs& a);
int recon(const ReconArgs& a);
int compare(const CompareArgs& a);
/// `larmor-cli maps`: coil sensitivity maps (ESPIRiT or Walsh) of every slice, written as a BART .cfl
/// [x, y, z, coils] (slices in BART's dimension 13).
int maps(const MapsArgs& a);
int bench(const std::string& suite, const std::string& device, const std::string& json);

}  // namespace larmor::cli
