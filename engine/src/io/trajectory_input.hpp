#pragma once
// A non-Cartesian trajectory as the loaders take it (BART .cfl/.ra k-space, twix): checks and the
// header it implies. Shared by dataset_io.cpp and twix_reader.cpp.
#include <string>

#include "larmor/recon/dataset.hpp"

namespace larmor::io::detail {

/// Largest |k| (cycles per FOV) a trajectory may reach: it implies a recon matrix of 2 |k| pixels, and
/// beyond this the numbers are corrupt rather than high resolution.
inline constexpr float kMaxTrajectoryCycles = 32768;

/// `t` as a real trajectory [3, readout, profiles]: every imaginary part zero, every value finite and
/// within kMaxTrajectoryCycles, not all zero. Throws Error naming `name`.
RArray checkedTrajectory(const CArray& t, const std::string& name);

/// h.encoded, h.recon (matrix[i] > 0, else 2 ceil(max |k_i|), 1 for an unused axis) and h.trajectory
/// (Radial, Radial3D or Other) for the trajectory t.
void applyTrajectoryHeader(Header& h, const RArray& t, const long matrix[3]);

}  // namespace larmor::io::detail
