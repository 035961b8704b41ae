#pragma once
// Radial trajectories (cycles/FOV, [3, readout, profiles]; see trajectory.hpp).
//
// 2D: full-diameter spokes, sample i of `readout` at k = (i - floor(R/2)) * N/R along the spoke
// direction (cos a_p, sin a_p): R = 2N gives the scanners' 2x oversampled readout, spacing 1/2, from
// -N/2 to N/2 - 1/2, with sample R/2 at k = 0.
//  - Linear180: a_p = pi p / P, the classic 180-degree sweep (each direction once).
//  - Linear360: a_p = 2 pi p / P, a 360-degree sweep (odd P interleaves the two halves; even P repeats
//    each line with the opposite readout direction).
//  - GoldenAngle: a_p = p * 111.246... degrees = p * pi (sqrt(5) - 1)/2 (Winkelmann et al., IEEE TMI
//    26:68, 2007): any window of consecutive spokes covers k-space nearly uniformly.
// Nyquist for full spokes over 180 degrees: P = pi/2 * N (the spoke tips are 1/FOV apart on the
// circle |k| = N/2).
//
// 3D (kooshball): full spokes whose directions follow the 2D golden means of Chan et al. (MRM 61:354,
// 2009): spoke m points to (sqrt(1 - z^2) cos f, sqrt(1 - z^2) sin f, z) with z = frac(m g1), f = 2 pi
// frac(m g2), g1 = 0.4656, g2 = 0.6823 (g2 the real root of x^3 + x - 1, g1 = g2^2). z in [0, 1)
// covers a hemisphere; full spokes cover the sphere. Nyquist: P = pi/2 * N^2 spokes.
#include "larmor/traj/trajectory.hpp"

namespace larmor::traj {

enum class RadialOrder { Linear180, Linear360, GoldenAngle };

/// The golden angle in degrees: 180 (sqrt(5) - 1) / 2 = 111.246...
inline constexpr double kGoldenAngleDeg = 111.24611797498107;
inline constexpr double kGoldenMean1 = 0.46557123187676802;  ///< g1 = g2^2
inline constexpr double kGoldenMean2 = 0.68232780382801933;  ///< real root of x^3 + x - 1

/// Nyquist spoke count for full spokes: round(pi/2 * N) (2D), round(pi/2 * N^2) (3D).
index_t nyquistSpokes(index_t matrix, int dims);

/// 2D radial for an N x N matrix; fills RadialInfo (TRON) and kind Radial or GoldenAngle.
/// Errors: readout < 2, spokes < 1, matrix < 2.
Trajectory radial2D(index_t readout, index_t spokes, index_t matrix, RadialOrder order);

/// 3D radial (kooshball) for an N x N x N matrix, kind Radial3D.
Trajectory radial3D(index_t readout, index_t spokes, index_t matrix);

}  // namespace larmor::traj
