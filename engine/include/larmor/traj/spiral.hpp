#pragma once
// Variable-density Archimedean spirals (cycles/FOV, [3, readout, profiles]; see trajectory.hpp).
//
// Design (a k-space design only; gradient amplitude and slew are not modelled). With I interleaves,
// an Archimedean spiral whose successive turns of one interleave are I / F(r) apart supports an
// alias-free FOV F(r) at radius r (Ahn, Kim, Cho, IEEE TMI 5:2, 1986; the variable-density form of
// Tsai & Nishimura, MRM 43:452, 2000). Here the supported FOV falls linearly from `fovCentre` at k = 0
// to `fovEdge` at kmax = N/2:
//     F(r) = Fe + (Fc - Fe)(1 - r / kmax),   dtheta/dr = 2 pi F(r) / I
//     theta(r) = (2 pi / I) (Fc r - (Fc - Fe) r^2 / (2 kmax))       (closed form)
// Defaults Fc = 2, Fe = 1: twice Nyquist at the centre (where the energy is, and where a gridding
// reconstruction is most sensitive to density errors), Nyquist at the edge. Interleave i is rotated by
// 2 pi i / I. Samples are equally spaced in arc length (constant |dk/dt|, a readout at constant
// gradient amplitude), from k = 0 to kmax exactly. With `readout` = 0 the spacing is
// 1 / readoutOversampling cycles/FOV (1/2 by default, the 2x oversampled readout of scanners).
//
// Stack of spirals (3D): the same spiral in every kz partition, kz = p - floor(Nz/2) for p < Nz
// (Cartesian along z); profile index = interleave + I * partition.
#include "larmor/traj/trajectory.hpp"

namespace larmor::traj {

struct SpiralDesign {
  index_t matrix = 256;      ///< N (in-plane): kmax = N/2
  index_t interleaves = 16;  ///< I
  index_t readout = 0;       ///< samples per interleave; 0: from readoutOversampling
  double readoutOversampling = 2;
  double fovCentre = 2;      ///< Fc, in units of the FOV
  double fovEdge = 1;        ///< Fe
};

/// Arc length of one interleave (cycles/FOV), from the design's theta(r).
double spiralArcLength(const SpiralDesign& d);
/// The samples per interleave `readout` resolves to.
index_t spiralReadout(const SpiralDesign& d);

/// 2D variable-density spiral, kind Spiral. Errors: matrix < 2, interleaves < 1, readout < 2,
/// non-positive or non-finite FOV factors.
Trajectory spiral2D(const SpiralDesign& d);

/// Stack of spirals over `partitions` kz planes, kind StackOfSpirals, dims 3.
Trajectory stackOfSpirals(const SpiralDesign& d, index_t partitions);

}  // namespace larmor::traj
