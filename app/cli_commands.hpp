#pragma once
// larmor-cli's sub-commands (contract in ARCHITECTURE.md). Each returns the process exit code and
// throws larmor::Error for the one-line message main() prints.
#include <string>
#include <vector>

#include "larmor/recon/settings.hpp"

namespace larmor::cli {

struct SimulateArgs {
  std::string phantom = "shepp-logan", matrix = "256", traj = "cartesian", output, json;
  std::string trajOutput;  ///< --traj-output: the non-Cartesian trajectory as a BART .cfl (for .cfl k-space)
  std::string accel = "1";  ///< R (pe1) or RyxRz (pe1 x pe2, 3D)
  int coils = 8, acs = 24, coilRings = 0, spokes = 0, readout = 0, interleaves = 0, slices = 1;
  int frames = 1, spokesPerFrame = 0;  ///< --frames N: a dynamic series (phantom/dynamic.hpp)
  float noise = 0, oversampling = 2;
  unsigned long long seed = 1;
};

/// --contrast/--phase/--repetition/--set N|all: which frames of a series (io/series.hpp) to read.
struct FrameArgs {
  std::string contrast = "all", phase = "all", repetition = "all", set = "all";
};

/// --frames N / --spokes-per-frame K [--frame-overlap V]: a continuous non-Cartesian acquisition cut into frames
/// in acquisition order (data/frames.hpp); 0: not cut.
struct BinArgs {
  int frames = 0, spokesPerFrame = 0, overlap = 0;
  bool any() const { return frames > 0 || spokesPerFrame > 0; }
};

struct ReconArgs {
  FrameArgs frames;
  BinArgs bin;
  std::string input, traj, device = "auto", output, json;
  std::string saveSettings;  ///< --save-settings: the settings as JSON for `batch --settings`
  recon::ReconSettings settings;  ///< from the settings table's flags (settings_options.hpp)
  // Export (DICOM / NIfTI)
  bool anonymize = false, niftiComplex = false;
  std::string seriesDescription;
  std::string patientName, patientId, accession, studyDescription, studyUid;  ///< DICOM patient and study
  int seriesNumber = 0;  ///< DICOM SeriesNumber (0: 1 + component)
  std::vector<std::string> components;
  float windowCenter = 0, windowWidth = 0;
  // --send AET@host:port: C-STORE the DICOM series after the export (cli_pacs.hpp)
  std::string send, callingAet = "LARMOR";
  int sendTimeout = 10;
  bool noWarmUp = false;  ///< --no-warm-up: no warm-up beside the read (timing a cold start)
};

struct MapsArgs {
  std::string input, traj, device = "auto", output, json, coilMaps = "espirit", matrix;
  int calibrationSize = 24;
  double crop = 0.8;
  FrameArgs frames;  ///< which frame of a multi-frame ISMRMRD file (as info's)
};

struct CompareArgs {
  std::string ref, test, map, json;
};

/// `larmor-cli version`: the version (as --version), where the CUDA plugin was loaded from or why not,
/// and the devices found: what a bug report needs.
int version();
int devices(const std::string& json);
int info(const std::string& file, const std::string& json, const FrameArgs& frames = {});
int simulate(const SimulateArgs& a);
int recon(const ReconArgs& a);
int compare(const CompareArgs& a);
/// `larmor-cli maps`: coil sensitivity maps (ESPIRiT or Walsh) of every slice, written as a BART .cfl
/// [x, y, z, coils] (slices in BART's dimension 13).
int maps(const MapsArgs& a);
struct BenchArgs {
  std::string suite = "seeds", device = "auto", json, chart;
  bool quick = false, list = false;
  std::vector<std::string> workloads;
};
/// `larmor-cli bench`: the benchmark suite (docs/benchmarks.md, "What runs in larmor-cli bench"): a table on stdout, optionally
/// JSON and a PNG chart; exit 1 when a workload failed (the outputs are still written).
int bench(const BenchArgs& a);

}  // namespace larmor::cli
