#pragma once
// Image quality against a reference (the phantom's truth, a fully sampled reconstruction).
//  - percent error (Stone et al. 2008, sec. 5): RMS of the voxel error / RMS of the true voxels x 100,
//    on magnitudes, after least-squares scaling of the test magnitude (as they did for gridding, whose
//    output has an arbitrary scale);
//  - PSNR (Kirk & Hwu, fig. 14.18): 20 log10(max |ref| / sqrt(MSE)), MSE of the same scaled magnitudes;
//  - SSIM (Wang et al. 2004): 11x11 Gaussian window (sigma 1.5), K1 = 0.01, K2 = 0.03, dynamic range
//    L = max |ref| - min |ref|, per 2D slice, averaged over slices;
//  - error map |a*|test| - |ref||, and a local PSNR map over a sliding window.
// Arrays are compared voxel for voxel: dims [x, y, z, ...] of equal size; slices are 2D planes (x, y).
#include "larmor/array/array.hpp"

#include <nlohmann/json.hpp>

namespace larmor {
class Backend;
template <class T>
class DeviceArray;
}

namespace larmor::quality {

struct Metrics {
  double percentError = 0;  ///< %
  double psnrDb = 0;
  double ssim = 0;
  double nrmse = 0;         ///< ||a|t| - |r|||_2 / ||r||_2 (percentError / 100)
  double scale = 1;         ///< the least-squares factor a applied to |test|
  index_t voxels = 0;
};

struct CompareOptions {
  bool leastSquaresScale = true;
};

Metrics compare(const CArray& test, const CArray& reference, const CompareOptions& opt = {});
/// The same on two images of `shape` given by their elements (a backend's host buffers: QualityOps).
Metrics compare(const cfloat* test, const cfloat* reference, const Shape& shape, const CompareOptions& opt = {});
/// compare() on `backend` (QualityOps): both images are uploaded there and the metrics computed there.
Metrics compareOn(larmor::Backend& backend, const CArray& test, const CArray& reference, const CompareOptions& opt = {});
/// The same against a reference already on `backend` (comparisonTruthOn).
Metrics compareOn(larmor::Backend& backend, const CArray& test, const larmor::DeviceArray<cfloat>& reference,
                  const CompareOptions& opt = {});
nlohmann::json toJson(const Metrics& m);

/// |scale*|test| - |ref||, same shape as the reference.
RArray errorMap(const CArray& test, const CArray& reference, double scale);
/// PSNR of each voxel's window x window neighbourhood (in-plane), peak = global max |ref|; capped at 100 dB.
RArray localPsnrMap(const CArray& test, const CArray& reference, double scale, int window = 8);
/// Mean SSIM over all 2D slices of magnitude images (shape [x, y, rest...]).
double ssim(const RArray& test, const RArray& reference);

RArray magnitude(const CArray& a);

}  // namespace larmor::quality
