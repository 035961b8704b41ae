#pragma once
// The partial-Fourier region of a Cartesian dataset: along each axis the range of k-space that was
// acquired, detected from the data (the sampled lines, the non-zero readout samples). A property of the
// data, not of a reconstruction: the readers record it in Header::acquiredFraction, and the
// reconstruction's fillers (larmor/recon/partial_fourier.hpp) fill what lies outside it.
#include <string>

#include "larmor/data/dataset.hpp"

namespace larmor {

/// The acquired part of an encoded Cartesian k-space [n0, n1, n2]: along each axis the samples lo..hi
/// (inclusive); an axis is partial when a block beyond the symmetric centre is missing at one edge.
struct PartialFourierRegion {
  index_t n[3] = {1, 1, 1};
  index_t lo[3] = {0, 0, 0};
  index_t hi[3] = {0, 0, 0};
  bool partial[3] = {false, false, false};
  bool any() const { return partial[0] || partial[1] || partial[2]; }
  /// The acquired fraction of axis a ((hi - lo + 1) / n; 1 for a full axis).
  double fraction(int a) const;
  /// "pe1 0.62 (lines 96..255 of 256), readout 0.70": the partial axes.
  std::string describe() const;
};

/// The acquired range along `n` samples of which `lo`..`hi` were acquired is partial Fourier when the
/// missing edge block is larger than `gap` (the sampling gap: acceleration) and n / 16, and the centre
/// n / 2 lies inside the range. One rule for every axis and every reader.
bool isPartialRange(index_t n, index_t lo, index_t hi, index_t gap);

/// The region of a Cartesian dataset from its data: pe1/pe2 from the sampled lines (all slices), the
/// readout from the samples that are non-zero in any sampled line. Non-Cartesian data: nothing partial.
PartialFourierRegion detectPartialFourier(const Dataset& d);

}  // namespace larmor
