#pragma once
// Partial Fourier (pe1, pe2) and asymmetric echo (readout): k-space acquired over more than half of an
// axis but not all of it. Detection from the data (the acquired range of each axis) and the two classic
// fillers, POCS and homodyne, per coil on any backend; the maths and citations are at the top of
// engine/src/recon/partial_fourier.cpp. Zero-filling is the absence of a filler.
#include <string>

#include <nlohmann/json.hpp>

#include "larmor/backend/backend.hpp"
#include "larmor/recon/dataset.hpp"

namespace larmor::recon {

/// --partial-fourier: how the missing part of partial-Fourier k-space is filled (no effect on fully
/// acquired axes). POCS is the default.
enum class PartialFourierMethod { Pocs, Homodyne, ZeroFill };
std::string toString(PartialFourierMethod m);

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

/// What fillPartialFourier did, for the provenance.
struct PartialFourierReport {
  PartialFourierMethod method = PartialFourierMethod::ZeroFill;
  PartialFourierRegion region;
  int iterations = 0;          ///< POCS iterations run
  double lastChange = 0;       ///< POCS: relative change of the filled region in the last iteration
  nlohmann::json toJson() const;
  std::string line() const;    ///< one line for the log
};

/// POCS stops when the filled samples change by less than this (relative to the k-space norm), or after
/// kPocsMaxIterations.
constexpr double kPocsTolerance = 1e-3;
constexpr int kPocsMaxIterations = 10;

/// Fills the missing region of `kspace` ([n0, n1, n2, 1, batch] with n = region.n, batch = coils x slices,
/// on `backend`, zeros outside the acquired box) in place by `method` (ZeroFill: nothing). The result is
/// k-space again, so that any Cartesian pipeline's inverse FFT follows unchanged. `rank` 2 or 3: the
/// transform rank of the pipeline (2: n2 must be 1). Temporaries: about four copies of the k-space.
PartialFourierReport fillPartialFourier(Backend& backend, Buffer& kspace, index_t batch, int rank,
                                        const PartialFourierRegion& region, PartialFourierMethod method);

}  // namespace larmor::recon
