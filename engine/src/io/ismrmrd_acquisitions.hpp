#pragma once
// ISMRMRD acquisitions into a Dataset (internal to the engine's ISMRMRD reader): Cartesian lines placed
// and averaged into k-space, non-Cartesian profiles with their trajectory, the slice geometry.
#include <string>

#include "ismrmrd_header.hpp"
#include "larmor/recon/dataset.hpp"
#include "larmor/util/progress.hpp"

namespace larmor::io::detail {

/// Reads /group/data of `path` into `d`, whose header headerFromXml filled: sets the coils, slices,
/// geometry and calibration lines of d.header, and d.kspace, d.sampled, d.calibration, d.trajectory,
/// d.acquisitions and d.noiseScans. `repetition` >= 0 keeps only that repetition.
void readAcquisitions(const std::string& path, const std::string& group, const EncodingFacts& facts,
                      int repetition, const Progress& progress, Dataset& d);

}  // namespace larmor::io::detail
