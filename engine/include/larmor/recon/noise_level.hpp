#pragma once
// The noise level of a slice's k-space samples, for choosing a regularization weight from the data
// (recon/iterative.hpp, LambdaRule::Noise): the variance sigma^2 = E|n|^2 of one complex sample's noise.
//
// From the noise scans where the dataset has them (after pre-whitening too: recon/noise.hpp whitens them with
// the data): the mean of |n|^2 over every noise sample and coil.
// Otherwise from the outer k-space, where an object's spectrum has decayed and noise dominates: the samples
// whose normalised position max_i |k_i| / k_max,i is at least 0.9 (non-Cartesian: the trajectory's extent;
// Cartesian: the acquired points of the outer tenth of every encoded dimension longer than 1), every coil, and
//     sigma^2 = median |y|^2 / ln 2
// (|n|^2 of complex Gaussian noise is exponential with mean sigma^2, whose median is sigma^2 ln 2; the median
// keeps the few samples that still carry signal from counting). Noiseless data give the residual spectrum there:
// an analytic phantom's edges decay slowly, and its outer k-space reads as noise.
// Cartesian data also from the calibration matrix (the 5^D patches of the largest fully sampled centred box, side
// at most 24, every coil): an object with smooth coil maps makes that matrix nearly low rank (Uecker et al. 2014),
// noise fills its spectrum with a Marchenko-Pastur bulk (Marchenko & Pastur 1967; Gavish & Donoho 2014 use its
// median the same way), so sigma^2 = median eigenvalue of (1/m) A^H A / the law's median. It does not depend on
// where the object's spectrum has decayed: noiseless phantoms read ~0, not their edges' spectrum.
// Both estimates are raised by signal, never lowered, so the smaller one is taken.
#include <string>

#include "larmor/data/dataset.hpp"

namespace larmor::recon {

struct NoiseLevel {
  double variance = 0;   ///< sigma^2 of one complex sample
  index_t samples = 0;   ///< the samples it came from
  std::string source;    ///< "noise scans" | "outer k-space" | "calibration matrix"
};

/// The noise level of slice `slice` of `d`. Throws Error when there is no sample to estimate it from.
NoiseLevel estimateNoiseLevel(const Dataset& d, index_t slice);

}  // namespace larmor::recon
