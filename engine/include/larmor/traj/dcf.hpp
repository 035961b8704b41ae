#pragma once
// Density compensation weights w_j for non-Cartesian samples, in units of k-space area (volume in
// 3D) per sample, (cycles/FOV)^d: with them sum_j w_j F(k_j) exp(2 pi i k_j r) is a Riemann sum of the
// inverse Fourier integral, so a gridding reconstruction N^{-1/2} F^H (w d) of data scaled as
// d = F(k) sqrt(N) (docs/conventions.md) returns the object's intensities.
//
//  - Ramp (Ram-Lak, as TRON uses): exact for radial lines. A sample at |k| > 0 owns its ray's sector of
//    the ring of width dk around |k| (2D): w = |k| dk s, where s is the ray's angular share (half the
//    angular gaps to the neighbouring rays; a full spoke has two rays, at a and a + pi). For P evenly
//    spaced full spokes s = pi / P, the textbook ramp pi |k| dk / P; golden-angle spokes, whose gaps
//    vary up to 1.6x, get their own sectors. 3D: the shell's share (4 pi |k|^2 dk + pi dk^3 / 3) / rays,
//    rays taken as evenly spread. The samples at k = 0 share the central disc (ball) of radius dk/2 in
//    the same proportions. dk: the spoke's sample spacing.
//  - Pipe-Menon (MRM 41:179, 1999): w <- w / (C * (C * w)), the samples' weights spread onto the grid and
//    interpolated back with the NUFFT plan's kernel (NufftPlan::spreadInterpolate), from w = 1; the
//    fixed point makes the kernel-smoothed sample density flat, for any trajectory. Its scale follows
//    from the same operation on a fine uniform lattice (spacing 1/4 cycle/FOV, weight 1/4^d: unit weight
//    per (cycles/FOV)^d): c = spreadInterpolate at a lattice sample; w = c * w_fixed point. So the scale
//    does not depend on how a backend normalises its kernel or sizes its grid. (A unit-spacing lattice
//    would not do: the grid-sampled kernel aliases at that spacing, about +9% for W = 4, sigma = 2.)
//    Pipe-Menon's weights follow the actual local density, so for golden-angle radial they differ from
//    the ramp where successive spokes leave uneven angular gaps.
//
// Stacks of 2D trajectories (stack of spirals, stack of stars; traj::detectStack) are weighted
// separably by densityCompensation: the plane's 2D weights (ramp or Pipe-Menon) times the kz spacing.
//
// Results are cached in memory, keyed by a hash of the trajectory, the image size and the options.
#include <cstdint>

#include "larmor/backend/backend.hpp"
#include "larmor/ops/nufft.hpp"
#include "larmor/util/progress.hpp"

namespace larmor::traj {

enum class DcfMethod { Ramp, PipeMenon };

struct DcfOptions {
  DcfMethod method = DcfMethod::PipeMenon;
  int iterations = 10;   ///< Pipe-Menon iterations (Pipe & Menon: about 10 converge)
  NufftOptions nufft;    ///< kernel of the Pipe-Menon plan (width, oversampling, table/direct)
};

/// Ramp weights [M] for radial lines (2D or 3D). Errors: not radial lines ("ramp needs radial
/// spokes ..."), fewer than 2 samples per spoke.
RArray rampWeights(const RArray& k, int dims);

/// Pipe-Menon weights [M] on `backend` (plans made there); the per-iteration division happens on the
/// host (M values each way per iteration), which the cache makes a one-off cost. Reports (it / iterations,
/// "iteration it/iterations") after each iteration (cancellable there).
RArray pipeMenonWeights(Backend& backend, const NufftGeometry& g, int iterations, const NufftOptions& nufft,
                        const Progress& progress = {});

/// Cached front: the weights [M] for the geometry's trajectory ([3, readout, profiles], the shape the
/// ramp and the stack detection need). Progress: Pipe-Menon's per iteration, then 1 (a cache hit: 1 at once).
RArray densityCompensation(Backend& backend, const NufftGeometry& g, const DcfOptions& options,
                           const Progress& progress = {});

/// Entries held by the cache (tests), and emptying it.
std::size_t dcfCacheEntries();
void clearDcfCache();

}  // namespace larmor::traj
