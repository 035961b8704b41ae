#pragma once
// What a Cartesian frame's sampling mask says about its acceleration (internal to the readers). A file's
// header states one acceleration for the whole scan; each frame of a series is judged by its own lines
// (the ISMRMRD generator's -a R file: every repetition is R-fold undersampled with shifted lines, together
// fully sampled).
#include "larmor/data/dataset.hpp"

namespace larmor::io::detail {

/// The most common gap between consecutive sampled lines that are not calibration lines (the smallest
/// of equally common ones), along pe1 (at the centre
/// pe2) or pe2 (at the centre pe1), of slice 0. 1 when the axis is fully sampled (or has one line).
/// `support` (when given) receives how many gaps have that size.
int maskAcceleration(const Dataset& d, bool alongPe1, int* support = nullptr);

/// header.accelerationPe1/Pe2 of a Cartesian frame from its mask: 1 where the axis is fully sampled,
/// the common gap where it is undersampled (the header's value is kept when the mask shows no regular
/// gap, or a different one only once). Non-Cartesian data are left alone.
void setAccelerationFromMask(Dataset& d);

/// header.acquiredFraction of a Cartesian frame from its data (detectPartialFourier in
/// larmor/data/partial_fourier_region.hpp: the acquired range of the sampled lines and of the non-zero
/// readout samples); 1 on axes acquired in full.
void setPartialFourierFromData(Dataset& d);

/// Slices reordered so that header.geometry.slicePositions increase (ISMRMRD numbers slices in
/// acquisition order, interleaved or descending); k-space, masks, reference and coil maps move with
/// them. Returns true when anything moved.
bool sortSlicesByPosition(Dataset& d);

}  // namespace larmor::io::detail
