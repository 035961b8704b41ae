#pragma once
// Cartesian undersampling masks: regular undersampling by R along each phase-encoding direction plus a
// fully sampled centred calibration (ACS) block, the sampling that GRAPPA (Griswold et al., MRM 47:1202,
// 2002) and SENSE with auto-calibration expect.
#include <cstdint>

#include "larmor/array/array.hpp"

namespace larmor::traj {

/// Mask [pe1, pe2]: 1 on acquired lines. Along each direction of N lines every R-th line is sampled,
/// counted from the k-space centre line c = floor(N/2) (lines n with (n - c) mod R = 0), so k = 0 is
/// always acquired. The ACS block is the centred acsPe1 × acsPe2 block, lines c - floor(acs/2) ...
/// c - floor(acs/2) + acs - 1 along each direction; its lines are sampled too and are marked in
/// *calibration (same shape) when that is given. acsPe1 and acsPe2 are both 0 (no calibration) or both
/// positive (for 2D, pe2 = 1, pass acsPe2 = 1).
/// Errors: N < 1; R < 1; R > 1 with R ≥ N (nothing but the centre would be left); acs < 0 or acs > N.
Array<std::uint8_t> cartesianMask(index_t pe1, index_t pe2, int accelPe1, int accelPe2, int acsPe1, int acsPe2,
                                  Array<std::uint8_t>* calibration = nullptr);

/// Number of non-zero entries.
index_t countLines(const Array<std::uint8_t>& mask);

}  // namespace larmor::traj
