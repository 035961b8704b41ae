#pragma once
// Partial Fourier (pe1, pe2) and asymmetric echo (readout): k-space acquired over more than half of an
// axis but not all of it. The two classic fillers, POCS and homodyne, per coil on any backend; the maths
// and citations are at the top of engine/src/recon/partial_fourier.cpp. Zero-filling is the absence of a
// filler. Detection from the data (the acquired range of each axis) is larmor/data/partial_fourier_region.hpp,
// which the readers use too.
#include <string>

#include <nlohmann/json.hpp>

#include "larmor/backend/backend.hpp"
#include "larmor/data/dataset.hpp"
#include "larmor/data/partial_fourier_region.hpp"

namespace larmor::recon {

/// --partial-fourier: how the missing part of partial-Fourier k-space is filled (no effect on fully
/// acquired axes). POCS is the default.
enum class PartialFourierMethod { Pocs, Homodyne, ZeroFill };
std::string toString(PartialFourierMethod m);

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
