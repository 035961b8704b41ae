#pragma once
// A dynamic phantom: a time series of 2D Shepp-Logan acquisitions, for the joint (dynamic) reconstructions,
// their tests and comparisons with BART. Time is counted in frames (frame f spans [f, f + 1)); the object
// is held constant within a frame. Against the static phantom (sheppLogan2DEllipses) it has
//  (a) a beating ellipse: the larger ventricle (index 3) with both half-axes scaled by
//      1 + beatAmplitude sin(2 pi f / beatPeriod);
//  (b) breathing: every ellipse shifted along y by breathShiftPixels sin(2 pi f / breathPeriod) pixels of
//      the matrix's y (matrix[1]);
//  (c) a contrast wash-in in the upper ellipse (index 4): its value 0.1 + washInPeak w(f), with
//      w(f) = 1 - exp(-(f - washInDelay) / washInTau) after the delay, 0 before.
// With the defaults frame 0 is the static phantom. k-space is the analytic transform of each frame's ellipses
// times the same coil sensitivities (phantom/coils.hpp) as the static simulator, with its scaling.
//
// Sampling (SimulateSettings.trajectory):
//  - golden: one continuous golden-angle sequence; frame f holds spokes f K ... f K + K - 1 of it (K = spokes
//    per frame), so the angles continue across frames and any window of consecutive spokes is near uniform;
//  - radial: interleaved linear spokes, frame f's spoke p at pi (p + f / F) / K (all frames together are the
//    uniform set of F K spokes);
//  - cartesian: frame f samples the lines (j - floor(m1/2) - f) mod R = 0 (the lattice shifted by one line a
//    frame) plus the centred ACS block.
// Each frame is a Dataset of its own: its sampling, its reference (the frame's rasterised object) and the
// shared true coil maps. 2D single-slice only.
#include <vector>

#include <nlohmann/json.hpp>

#include "larmor/data/dataset.hpp"
#include "larmor/phantom/phantom.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/util/progress.hpp"

namespace larmor::phantom {

/// The motion and contrast of the dynamic phantom (times in frames).
/// The defaults are a real-time cine's time scale: a frame of 21 spokes at a TR of 3 ms lasts ~63 ms, so a heart
/// at 60 beats a minute beats every 16 frames and a breath of 4 s lasts 64 frames; the contrast of a first pass
/// rises over about half a second.
struct DynamicModel {
  double beatPeriod = 16;        ///< frames per beat
  double beatAmplitude = 0.2;    ///< relative change of the beating ellipse's half-axes
  double breathPeriod = 64;      ///< frames per breath
  double breathShiftPixels = 3;  ///< peak shift along y, in pixels of matrix[1]
  double washInDelay = 2;        ///< frames before the contrast arrives
  double washInTau = 8;          ///< rise time constant, frames
  double washInPeak = 0.5;       ///< intensity added at full wash-in
};

nlohmann::json toJson(const DynamicModel& m);

/// Index of the beating ellipse and of the wash-in ellipse in sheppLogan2DEllipses().
inline constexpr std::size_t kBeatingEllipse = 3, kWashInEllipse = 4;

/// Default spokes per frame of a radial/golden series.
inline constexpr index_t kDefaultSpokesPerFrame = 21;

/// w(f) in [0, 1): 0 up to the delay, then 1 - exp(-(f - delay) / tau).
double washIn(const DynamicModel& m, double frame);
/// Breathing shift of frame f in FOV units along y (matrixY: pixels across the FOV).
double breathShift(const DynamicModel& m, double frame, index_t matrixY);
/// The ellipses of frame f (FOV units, as sheppLogan2DEllipses).
std::vector<Ellipse> dynamicEllipses(const DynamicModel& m, double frame, index_t matrixY);

/// Spokes per frame K of radial/golden settings: spokesPerFrame, else spokes / frames when spokes is given,
/// else kDefaultSpokesPerFrame. Throws Error when spokes and spokesPerFrame disagree (spokes != K frames)
/// or spokes / frames < 1.
index_t resolvedSpokesPerFrame(const SimulateSettings& s);

/// One Dataset per frame (settings.frames >= 1; 2D, one slice; cartesian, radial or golden). Noise as the
/// settings say, seeded per frame and coil (or line). Reports progress per frame and stops with Cancelled
/// between frames. Throws Error (one line) on invalid settings.
std::vector<Dataset> simulateSeries(const SimulateSettings& settings, const DynamicModel& model = {},
                                    const Progress& progress = {});

}  // namespace larmor::phantom
