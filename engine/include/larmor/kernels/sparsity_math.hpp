#pragma once
// The maths of the sparsity priors (larmor/backend/sparsity_ops.hpp) that both twins compute alike, written
// once: engine/src/cpu/sparsity.cpp + wavelet.cpp and cuda/sparsity.cu + wavelet.cu include it.
//
//  - the Daubechies-4 taps (Daubechies, Ten Lectures on Wavelets, 1992, table 6.1, N = 2), as a correlation:
//      a[k] = sum_j h[j] x[(2k + j) mod m],   d[k] = sum_j g[j] x[(2k + j) mod m],   g[j] = (-1)^j h[3 - j];
//    pywt's 'db2' dec_lo is the same filter reversed (it convolves), so the coefficients agree up to a
//    circular shift of the band;
//  - the synthesis as a gather: x[n] = sum_{j = p, p + 2} h[j] a[k_j] + g[j] d[k_j], p = n mod 2,
//    k_j = ((n - j) / 2) mod (m / 2): the adjoint of the analysis above, so no scatter or atomics;
//  - the wavelet geometry (levels, transformed dims, padded lengths; rule in sparsity_ops.hpp);
//  - the complex soft threshold and the projection onto the unit ball of the TV dual field.
#include <cmath>
#include <cstdint>

#include "larmor/kernels/kernel_math.hpp"

namespace larmor::kernels {

// --- Daubechies-4 ----------------------------------------------------------------------------------------------

/// h[j] = (1 + sqrt3, 3 + sqrt3, 3 - sqrt3, 1 - sqrt3) / (4 sqrt2); sum h = sqrt2, sum h^2 = 1.
LARMOR_HD LARMOR_INLINE double d4Low(int j) {
  constexpr double h[4] = {0.48296291314453414337487159986, 0.83651630373780790557529378092,
                           0.22414386804201338102597276224, -0.12940952255126038117444941881};
  return h[j];
}
/// g[j] = (-1)^j h[3 - j]: two vanishing moments (annihilates constants and linear ramps).
LARMOR_HD LARMOR_INLINE double d4High(int j) { return (j & 1) ? -d4Low(3 - j) : d4Low(3 - j); }

/// The coarsest band keeps at least this many samples along every transformed dimension.
constexpr std::int64_t kWaveletMinCoarse = 8;
/// More levels than this buy nothing at image sizes (a 2^20-long dimension would still be within it).
constexpr int kWaveletMaxLevels = 16;

/// Where the DWT of an image [n0, n1, n2] acts (sparsity_ops.hpp): dims with n >= 2 kWaveletMinCoarse are
/// transformed; levels = the largest L <= kWaveletMaxLevels with ceil(n / 2^L) >= kWaveletMinCoarse on every
/// transformed dim (0 when none is); a transformed dim is zero-padded to padded = ceil(n / 2^L) 2^L.
struct WaveletGeometry {
  std::int64_t dims[3] = {1, 1, 1};
  std::int64_t padded[3] = {1, 1, 1};
  bool transformed[3] = {false, false, false};
  int levels = 0;
  std::int64_t voxels() const { return dims[0] * dims[1] * dims[2]; }
  std::int64_t paddedVoxels() const { return padded[0] * padded[1] * padded[2]; }
  /// Extent of the approximation block after `level` levels (level 0: the padded array).
  LARMOR_HD LARMOR_INLINE std::int64_t block(int d, int level) const {
    return transformed[d] ? padded[d] >> level : padded[d];
  }
};

inline std::int64_t ceilDivPow2(std::int64_t n, int l) { return (n + (std::int64_t{1} << l) - 1) >> l; }

inline WaveletGeometry waveletGeometry(const std::int64_t dims[3]) {
  WaveletGeometry g;
  bool any = false;
  for (int d = 0; d < 3; ++d) {
    g.dims[d] = g.padded[d] = dims[d];
    g.transformed[d] = dims[d] >= 2 * kWaveletMinCoarse;
    any = any || g.transformed[d];
  }
  if (!any) return g;
  int levels = 0;
  for (int l = 1; l <= kWaveletMaxLevels; ++l) {
    bool ok = true;
    for (int d = 0; d < 3; ++d)
      if (g.transformed[d] && ceilDivPow2(dims[d], l) < kWaveletMinCoarse) ok = false;
    if (!ok) break;
    levels = l;
  }
  g.levels = levels;
  for (int d = 0; d < 3; ++d)
    if (g.transformed[d]) g.padded[d] = ceilDivPow2(dims[d], levels) << levels;
  return g;
}

/// Whether padded-array coordinate c lies in the coarsest approximation band (not penalised).
LARMOR_HD LARMOR_INLINE bool inCoarseBand(const WaveletGeometry& g, std::int64_t c0, std::int64_t c1,
                                          std::int64_t c2) {
  return c0 < g.block(0, g.levels) && c1 < g.block(1, g.levels) && c2 < g.block(2, g.levels);
}

// --- proximal pieces -------------------------------------------------------------------------------------------

/// The factor of the complex soft threshold soft_t(c) = c max(0, 1 - t / |c|), |c| = sqrt(re^2 + im^2) in
/// float: 0 where |c| <= t.
LARMOR_HD LARMOR_INLINE float softFactor(float re, float im, float t) {
  const float mag = sqrtf(re * re + im * im);
  return mag > t ? 1.f - t / mag : 0.f;
}

/// The factor that projects a dual vector of squared norm `norm2` onto the unit ball: 1 / max(1, |q|).
LARMOR_HD LARMOR_INLINE float unitBallFactor(float norm2) { return norm2 > 1.f ? 1.f / sqrtf(norm2) : 1.f; }

/// FGP's step 1 / (L t) for the dual of prox_{t TV_w}: L = 4 sum_d w_d^2 bounds ||D_w||^2 (each 1-D forward
/// difference with a Neumann end has norm^2 < 4, and the weighted blocks stack), so 1/(4 t sum_d w_d^2); with
/// unit weights, 1/(4 d t) for d differenced dims.
inline double fgpStep(double weightSquares, double t) { return 1.0 / (4.0 * weightSquares * t); }

}  // namespace larmor::kernels
