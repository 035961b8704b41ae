#pragma once
// The simulator: an analytic Shepp-Logan acquisition with coil sensitivities, Cartesian undersampling
// and noise, returned as a Dataset like one read from a file (what `larmor-cli simulate` writes).
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "larmor/data/dataset.hpp"
#include "larmor/util/progress.hpp"

namespace larmor::phantom {

struct SimulateSettings {
  std::string phantom = "shepp-logan";
  /// Recon matrix [x (readout), y (pe1), z (pe2)]; z = 1 is 2D (single- or multi-slice), z > 1 is 3D.
  index_t matrix[3] = {256, 256, 1};
  /// 2D only: slices > 1 image cross-sections of the 3D phantom at z spread over [-0.35, 0.35] FOV.
  index_t slices = 1;
  int coils = 8;
  TrajectoryKind trajectory = TrajectoryKind::Cartesian;
  /// Cartesian acceleration along pe1.
  int accel = 1;
  /// 3D only: acceleration along pe2 (the lattice of every accel-th line and accelPe2-th partition).
  int accelPe2 = 1;
  /// Calibration (ACS) lines along pe1 when accel x accelPe2 > 1. 3D: the block spans all of pe2 when
  /// accelPe2 = 1, else it is acs x min(acs, pe2) (a centre box).
  int acs = 24;
  /// 3D: rings of coils along z (phantom/coils.hpp); 0 = auto: 2 when accelPe2 > 1 (pe2 acceleration needs
  /// coils that differ along z), else 1.
  int coilRings = 0;
  float readoutOversampling = 2;
  /// Noise standard deviation per real and imaginary part, in image intensity units (the phantom's
  /// largest value is 1; the unitary inverse FFT leaves white noise's sigma unchanged).
  float noiseSigma = 0;
  std::uint64_t seed = 1;
  float fovMm = 256;
  float sliceThicknessMm = 5;
  // Non-Cartesian (0 = a default derived from the matrix): radial/golden/radial3d spokes, samples per
  // readout, spiral interleaves (also per partition for stack-of-spirals).
  index_t spokes = 0;
  index_t readout = 0;
  index_t interleaves = 0;
  /// Dynamic imaging (phantom/dynamic.hpp, simulateSeries): the number of frames; 1 is a single static
  /// acquisition (simulate()).
  index_t frames = 1;
  /// Radial/golden with frames > 1: spokes per frame (0 = spokes / frames when spokes is given, else 21).
  index_t spokesPerFrame = 0;
};

/// The settings as JSON (frames and spokesPerFrame only when frames > 1, so a single-frame file's
/// larmor_simulator parameter is what it always was).
nlohmann::json toJson(const SimulateSettings& s);

/// Throws Error (one line) for invalid settings; simulate() and simulateSeries() call it.
void validateSettings(const SimulateSettings& s);

/// The phantom's z (FOV units) imaged by slice `slice` of `slices` in multi-slice 2D: evenly spread
/// over [-0.35, 0.35] (0 for a single slice, which images the 2D phantom instead).
double simulatedSliceZ(index_t slice, index_t slices);

/// Simulates an acquisition of any trajectory kind (Cartesian with acceleration and ACS, radial, golden angle,
/// spiral, stack of spirals, 3D radial).
/// 2D, slices = 1: the 2D phantom, coils from makeCoilModel(coils, 2). Multi-slice 2D: the 3D
/// phantom's cross-section at simulatedSliceZ, coils from sliceCoilModel(makeCoilModel(coils, 3), z).
/// 3D: the 3D phantom, makeCoilModel(coils, 3). k-space is exact (analytic transform of s_c·ρ), zero on
/// unsampled lines, plus noise (seeded, on sampled lines only). `reference` holds the rasterised
/// phantom (not coil-weighted), `coilMaps` the true sensitivities on the recon raster (all ones for a
/// single coil). Reports progress per slice (2D) or pe2 plane (3D) and stops with Cancelled between
/// them. Throws Error on invalid settings, and for frames > 1 (simulateSeries in phantom/dynamic.hpp).
Dataset simulate(const SimulateSettings& settings, const Progress& progress = {});

}  // namespace larmor::phantom
