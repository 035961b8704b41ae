#pragma once
// Noise pre-whitening (Roemer et al., "The NMR phased array", MRM 16:192, 1990; Pruessmann et al., SENSE,
// MRM 42:952, 1999, sec. "noise"): receive coils share noise, so the coil vector η of one sample has a
// covariance Ψ = E[η ηᴴ] that is not the identity. Estimated from the noise-scan samples N [n, coils]
// (row i = the coil vector of sample i, no signal):
//     Ψ = Nᵀ N̄ / (n − 1)    (Ψ_ab = Σ_i N_ia conj(N_ib) / (n − 1); the conjugate of NᴴN / (n − 1), which
//                             is the same matrix written for row vectors),
//     Ψ = L Lᴴ               (Cholesky, L lower triangular with a positive diagonal),
//     W = L⁻¹ · sqrt(β)      (β: the receiver bandwidth ratio),
// and every sample's coil vector becomes W η, whose noise covariance is β I. β scales the noise scan to
// the data's sampling: Gadgetron's NoiseAdjustGadget multiplies its prewhitener by
// sqrt(2 · acquisition dwell / noise dwell · relative receiver noise bandwidth); the caller passes that
// product (or 1, which leaves unit noise variance per complex sample). The mean is not subtracted (noise
// is zero-mean; n − 1 as in the sample covariance). Computed in double.
//
// Coil maps estimated after whitening (ESPIRiT, Walsh, GRAPPA's weights) are in the whitened coil space;
// a dataset's true maps (simulated data) are not whitened and so no longer describe the coils (see
// docs/data.md). The SNR-optimal combination of whitened coils is the plain sum of squares / the
// adaptive combination without a noise matrix.
#include <string>

#include "larmor/array/array.hpp"
#include "larmor/data/dataset.hpp"

namespace larmor::recon {

/// The `--noise-whitening` setting: auto = whiten when the dataset has noise samples.
enum class NoiseWhiteningMode { Auto, Off };

struct NoiseWhitening {
  index_t coils = 0;
  index_t samples = 0;       ///< noise samples the estimate used
  CArray covariance;         ///< Ψ [coils, coils]
  CArray whitener;           ///< W = L⁻¹ sqrt(β) [coils, coils], lower triangular
  float bandwidthRatio = 1;  ///< β
  double conditionNumber = 1;  ///< of Ψ (largest / smallest eigenvalue)
  /// "noise whitening: 8 coils, 256 samples, condition number 3.2, bandwidth ratio 1"
  std::string report() const;
};

/// The smallest number of noise samples per coil estimateNoiseWhitening accepts: with n samples the
/// smallest eigenvalue of Ψ's estimate is biased low by about (1 − sqrt(coils / n))² (Marchenko-Pastur),
/// 1/4 at this bound.
constexpr index_t kNoiseSamplesPerCoil = 4;

/// Ψ, its Cholesky factor and W from noise samples [samples, coils]. Throws one-line Errors (prefixed by
/// `source` when given) for: not [samples, coils], fewer than kNoiseSamplesPerCoil × coils samples,
/// non-finite samples, a covariance that is not Hermitian positive definite (a silent coil, coils that are
/// copies of each other), a bandwidth ratio that is not finite and positive.
NoiseWhitening estimateNoiseWhitening(const CArray& noise, float receiverBandwidthRatio = 1,
                                      const std::string& source = {});

/// k-space [readout, pe1, pe2, coils, slices] (non-Cartesian [readout, profiles, 1, coils, slices]):
/// every sample's coil vector η ← W η. Zeros (unsampled points) stay zero.
void applyNoiseWhitening(CArray& kspace, const NoiseWhitening& w);

/// The dataset's k-space and its noise samples whitened with w (the noise then has covariance β I).
void applyNoiseWhitening(Dataset& d, const NoiseWhitening& w);

/// What the reconstruction does for `mode`: when d has noise samples and mode is Auto, estimates W from
/// them and whitens d; returns the estimate (coils = 0 when nothing was done).
NoiseWhitening whitenIfRequested(Dataset& d, NoiseWhiteningMode mode);

}  // namespace larmor::recon
