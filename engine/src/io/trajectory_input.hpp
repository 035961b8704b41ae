#pragma once
// A non-Cartesian trajectory as the loaders take it (BART .cfl/.ra k-space, twix): checks and the
// header it implies. Shared by dataset_io.cpp and twix_reader.cpp.
#include <string>
#include <vector>

#include "larmor/data/dataset.hpp"

namespace larmor::io::detail {

/// Largest |k| (cycles per FOV) a trajectory may reach: it implies a recon matrix of 2 |k| pixels, and
/// beyond this the numbers are corrupt rather than high resolution.
inline constexpr float kMaxTrajectoryCycles = 32768;

/// Below this largest |k| (cycles per FOV) a trajectory is effectively all zero (denormal or tiny values).
inline constexpr float kMinTrajectoryExtent = 1e-3f;

/// `t` as a real trajectory [3, readout, profiles]: every imaginary part zero, every value finite and
/// within kMaxTrajectoryCycles, plausible (requirePlausibleTrajectory). A trajectory whose largest |k| is
/// 0.5 is in normalised units ([-0.5, 0.5] of the grid): it is scaled to cycles per FOV by matrix[i]
/// (where > 0) or else by the readout's samples (BART's convention: a readout of n samples spans n / 2),
/// with one line in `warnings`; any other largest |k| below 1 is refused (it implies a 2x2 image).
/// Throws Error naming `name`.
RArray checkedTrajectory(const CArray& t, const std::string& name, const long matrix[3],
                         std::vector<std::string>& warnings);

/// Refuses (Error naming `name`) a trajectory [3, n, profiles] in cycles per FOV that is effectively all
/// zero (largest |k| below kMinTrajectoryExtent: zeros, denormals) or that has a coordinate outside the
/// k-space extent of the others (beyond 1.5 times the 99th percentile of max(|kx|, |ky|, |kz|) plus one
/// cycle: a corrupt coordinate, which would set the matrix).
void requirePlausibleTrajectory(const RArray& t, const std::string& name);

/// h.encoded, h.recon (matrix[i] > 0, else 2 ceil(max |k_i|), 1 for an unused axis) and h.trajectory
/// (Radial, Radial3D or Other) for the trajectory t.
void applyTrajectoryHeader(Header& h, const RArray& t, const long matrix[3]);

}  // namespace larmor::io::detail
