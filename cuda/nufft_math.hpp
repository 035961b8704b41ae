#pragma once
// Arithmetic shared by the CUDA NUFFT (nufft.cu, nufft_sector.cu, nufft_tron.cu) and the exact DFT
// (dft.cu): the Kaiser-Bessel weight in float (table or direct), the per-sample footprint encoding and the
// radial geometry of TRON. Plain C++ with __host__ __device__ where nvcc compiles it (LARMOR_HD), no
// CUDA header, so that the index and phase arithmetic can be checked on a machine without a GPU.
//
// Conventions, matched with the CPU plan (engine/src/cpu/nufft.cpp) so both compute the same sums; the
// grid size and the footprint rules are shared code (larmor/kernels/kernel_math.hpp):
//  - grid size G = smallest even 2,3,5,7-smooth number >= ceil(sigma N) (1 along an unused dimension);
//  - a sample k (cycles/FOV) sits at u = c_G + (G/N) k on the centred grid; its footprint is the W points
//    i0 + i, i < W, with i0 = floor(u - W/2) + 1, kernel argument (i0 - u) + i in (-W/2, W/2];
//  - the kernel is scaled to a peak of 1 (divided by I0(beta)), its transform alike;
//  - the table holds kTableResolution samples per grid unit, read with linear interpolation.
// The GPU keeps the grid in FFT order (k = 0 at index 0, i.e. centred index - c_G, modulo G), so a plain
// cuFFT needs no fftshift: the centred DFT of the CPU, e^{2 pi i (q - c_G)(n' - c_G)/G}, is the plain DFT
// of the shifted indices (q - c_G) mod G and (n' - c_G) mod G, and image pixel n lies at (n - c_N) mod G.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "larmor/kernels/kernel_math.hpp"

namespace larmor::cuda::nc {

using i64 = std::int64_t;

constexpr int kMaxWidth = 16;

// The grid size rule and the kernel's table resolution are the CPU plan's (kernel_math.hpp).
using kb::kTableResolution;
using kernels::gridLength;

// --- the kernel --------------------------------------------------------------------------------------------

/// What a device function needs to evaluate the scaled kernel C(x) / C(0), x in grid units.
struct KernelParams {
  int width = 4;
  float beta = 0;
  float twoOverWidth = 0.5f;
  float invPeak = 1;           ///< 1 / I0(beta)
  float expBetaOverPeak = 1;   ///< e^beta / I0(beta): the large-argument branch scaled without overflow
  float tableLimit = 0;        ///< last valid table position (entries - 2), as the CPU clamps
  const float* table = nullptr;  ///< device pointer; null when evaluating directly
};

/// I0(x) / I0(beta) in float from Abramowitz & Stegun 9.8.1 (|x| <= 3.75, |error| < 1.6e-7) and 9.8.2
/// (x >= 3.75, x^{1/2} e^{-x} I0(x) to 1.9e-7): about 5e-7 relative, no overflow for any beta because
/// the exponential is taken of x - beta <= 0.
LARMOR_HD LARMOR_INLINE float besselI0Scaled(float x, const KernelParams& k) {
  if (x < 3.75f) {
    const float y = (x * (1.f / 3.75f)) * (x * (1.f / 3.75f));
    const float p =
        1.f + y * (3.5156229f + y * (3.0899424f + y * (1.2067492f + y * (0.2659732f + y * (0.0360768f + y * 0.0045813f)))));
    return p * k.invPeak;
  }
  const float y = 3.75f / x;
  const float p =
      0.39894228f +
      y * (0.01328592f +
           y * (0.00225319f +
                y * (-0.00157565f +
                     y * (0.00916281f + y * (-0.02057706f + y * (0.02635537f + y * (-0.01647633f + y * 0.00392377f)))))));
#ifdef __CUDA_ARCH__
  return p * rsqrtf(x) * expf(x - k.beta) * k.expBetaOverPeak;
#else
  return p / std::sqrt(x) * std::exp(x - k.beta) * k.expBetaOverPeak;
#endif
}

/// The scaled kernel at argument x (grid units, |x| <= W/2): direct evaluation or the CPU's table.
LARMOR_HD LARMOR_INLINE float kernelWeight(float x, const KernelParams& k) {
  if (k.table) {
    const float t = fminf(fabsf(x) * static_cast<float>(kTableResolution), k.tableLimit);
    const int i = static_cast<int>(t);
    const float f = t - static_cast<float>(i);
#ifdef __CUDA_ARCH__
    const float a = __ldg(k.table + i), b = __ldg(k.table + i + 1);
#else
    const float a = k.table[i], b = k.table[i + 1];
#endif
    return a + f * (b - a);
  }
  const float t = x * k.twoOverWidth;
  const float r = 1.f - t * t;
  if (r <= 0.f) return r == 0.f ? k.invPeak : 0.f;  // I0(0) / I0(beta) at the edge, as kb::kernel
#ifdef __CUDA_ARCH__
  return besselI0Scaled(k.beta * sqrtf(r), k);
#else
  return besselI0Scaled(k.beta * std::sqrt(r), k);
#endif
}

// --- per-sample footprint ---------------------------------------------------------------------------------
// Each sample is one float4: x, y, z = the kernel offset i0 - u of its first footprint point per dimension
// (in (-W/2, -W/2 + 1]; the argument of point i is offset + i), w = the footprint's first grid index per
// dimension, packed as 32 bits:
//   2D: (b_d + G_d) in 16 bits each, b_d = i0_d - c_G the UNWRAPPED first index in FFT order, so TRON can
//       tell the periodic images of a sample apart (G_d <= kMax2dGrid);
//   3D: the first index wrapped into [0, G_d): 11 + 11 + 10 bits (G0, G1 <= 2048, G2 <= 1024).

constexpr i64 kMax2dGrid = 16384;
constexpr i64 kMax3dGrid01 = 2048, kMax3dGrid2 = 1024;

LARMOR_HD LARMOR_INLINE std::uint32_t packBase2(int sx, int sy) {
  return static_cast<std::uint32_t>(sx) | (static_cast<std::uint32_t>(sy) << 16);
}
LARMOR_HD LARMOR_INLINE std::uint32_t packBase3(int bx, int by, int bz) {
  return static_cast<std::uint32_t>(bx) | (static_cast<std::uint32_t>(by) << 11) | (static_cast<std::uint32_t>(bz) << 22);
}
/// The stored 2D value (b + G) of dimension d (0 or 1).
LARMOR_HD LARMOR_INLINE int storedBase2(std::uint32_t packed, int d) { return static_cast<int>((packed >> (16 * d)) & 0xffffu); }
LARMOR_HD LARMOR_INLINE int base3(std::uint32_t packed, int d) {
  return d == 0 ? static_cast<int>(packed & 0x7ffu) : d == 1 ? static_cast<int>((packed >> 11) & 0x7ffu)
                                                             : static_cast<int>(packed >> 22);
}

/// b mod g for b in (-2g, 2g) (the range footprints can reach; see encodeSample).
LARMOR_HD LARMOR_INLINE int wrapIndex(int b, int g) {
  b += b < 0 ? g : 0;
  b += b < 0 ? g : 0;
  b -= b >= g ? g : 0;
  return b;
}

/// Footprint of one coordinate (host, double, kernel_math.hpp's rule, as the CPU places it): k (cycles/FOV),
/// image length n, grid length g -> first index b = i0 - c_G (unwrapped, FFT order) and kernel offset i0 - u.
inline void footprint(double k, i64 n, i64 g, int width, i64* b, float* offset) {
  const double u = kernels::gridPosition(k, n, g);
  const double i0 = kernels::footprintStart(u, width);
  *b = static_cast<i64>(i0) - g / 2;
  *offset = static_cast<float>(i0 - u);
}

inline float bitsAsFloat(std::uint32_t v) {
  float f;
  std::memcpy(&f, &v, sizeof f);
  return f;
}
inline std::uint32_t floatBits(float f) {
  std::uint32_t v;
  std::memcpy(&v, &f, sizeof v);
  return v;
}

// --- TRON's radial geometry -----------------------------------------------------------------------------
// Sample i of spoke p sits (ideally) at t_i (e_x, e_y) in grid units, t_i = kStart + i kStep cycles/FOV,
// e = (G0/N0 cos a_p, G1/N1 sin a_p). The samples a grid point (or a box of them) can receive are those
// whose t lies where the spoke crosses the box widened by the half width h: an interval in t per axis,
// intersected, then mapped to readout indices. The plan checks that every sample lies within `margin` of
// its ideal place and widens h by it, so the range is a superset; the exact footprint test on the stored
// sample decides (tron: nufft_tron.cu).

struct alignas(16) SpokeDir {  // one 16-byte load
  float ex, ey;        ///< direction in grid units per cycle/FOV
  float invEx, invEy;  ///< 1/e, or +1e30 where |e| is ~0 (the axis does not constrain t)
};

inline SpokeDir makeSpokeDir(double angle, double sx, double sy) {
  SpokeDir s;
  const double ex = sx * std::cos(angle), ey = sy * std::sin(angle);
  s.ex = static_cast<float>(ex);
  s.ey = static_cast<float>(ey);
  s.invEx = std::fabs(ex) > 1e-12 ? static_cast<float>(1.0 / ex) : 1e30f;
  s.invEy = std::fabs(ey) > 1e-12 ? static_cast<float>(1.0 / ey) : 1e30f;
  return s;
}

struct RadialParams {
  int readout = 0, spokes = 0;
  float kStart = 0, kStep = 1, invStep = 1;
  float reach = 2;  ///< W/2 + margin (grid units)
};

/// Readout indices [*i0, *i1] of spoke s whose ideal position lies in the box [xlo, xhi] x [ylo, yhi]
/// widened by rp.reach; returns false when there are none.
LARMOR_HD LARMOR_INLINE bool readoutRange(const SpokeDir& s, const RadialParams& rp, float xlo, float xhi, float ylo, float yhi, int* i0,
                        int* i1) {
  // t interval per axis; with invE = 1e30 a box that contains 0 gives (-huge, +huge), otherwise an
  // interval far outside the readout.
  float ax = (xlo - rp.reach) * s.invEx, bx = (xhi + rp.reach) * s.invEx;
  float ay = (ylo - rp.reach) * s.invEy, by = (yhi + rp.reach) * s.invEy;
  const float tlo = fmaxf(fminf(ax, bx), fminf(ay, by));
  const float thi = fminf(fmaxf(ax, bx), fmaxf(ay, by));
  if (!(tlo <= thi)) return false;
  float ra = (tlo - rp.kStart) * rp.invStep, rb = (thi - rp.kStart) * rp.invStep;
  const float lo = fmaxf(fminf(ra, rb), -1.f), hi = fminf(fmaxf(ra, rb), static_cast<float>(rp.readout));
  // One index of slack each side for float rounding of t (the reach already covers the geometry).
  const int a = static_cast<int>(ceilf(lo)) - 1, b = static_cast<int>(floorf(hi)) + 1;
  *i0 = a < 0 ? 0 : a;
  *i1 = b > rp.readout - 1 ? rp.readout - 1 : b;
  return *i0 <= *i1;
}

// --- exact DFT phases ---------------------------------------------------------------------------------------
// The phase k.r_n in cycles, r_n = (n - c)/N, is computed as q.X with q_d = k_d/N_d and integer X = n - c.
// q is split into a fixed-point part qhi (a multiple of 2^-e, e chosen so that every |qhi . X| < 2^(24-e)
// exactly: float products and sums of it are then exact) and the rest qlo (|qlo| <= 2^-(e+1)). The
// fraction of qhi.X is exact, qlo.X is tiny, so the phase keeps ~3e-8 cycles whatever |k r|: the float
// rounding of a phase of ~100 cycles (7.6e-6) would otherwise dominate the error.

/// Exponent e for phases bounded by `bound` cycles (sum of |q_d| max|X_d|).
inline int phaseExponent(double bound) {
  const int bits = static_cast<int>(std::ceil(std::log2(bound + 2.0)));
  return 21 - bits;
}

inline void splitPhase(double q, int e, float* hi, float* lo) {
  const double scale = std::ldexp(1.0, e);
  const double h = std::nearbyint(q * scale) / scale;
  *hi = static_cast<float>(h);
  *lo = static_cast<float>(q - h);
}

/// frac(hi) + lo in cycles, in [-0.5 - |lo|, 0.5 + |lo|]; hi must be exact (see above).
LARMOR_HD LARMOR_INLINE float reducedPhase(float hi, float lo) {
#ifdef __CUDA_ARCH__
  return (hi - rintf(hi)) + lo;
#else
  return (hi - std::nearbyint(hi)) + lo;
#endif
}

}  // namespace larmor::cuda::nc
