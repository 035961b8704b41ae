#pragma once
// The kernel maths both backends need, written once: plain C++ that compiles as host code in the engine's
// .cpp files and as host and device code in the CUDA plugin's .cu files (LARMOR_HD), with no CUDA header,
// so the CPU twin (engine/src/cpu/) and the CUDA twin (cuda/) compute the same numbers from the same lines.
//
//  - grid sizes: G = the smallest even 2,3,5,7-smooth number >= ceil(sigma N), 1 along an unused dimension
//    (FFTW's and cuFFT's fast sizes);
//  - index splits: a flat index into coordinates by multiply-shift division by run-time constants;
//  - the neighbour stride of the finite differences and the power-iteration count of adaptive combination;
//  - the Kaiser-Bessel gridding kernel, its Fourier transform and its lookup table;
//  - a sample's footprint on the oversampled grid.
// Only what both sides use lives here; GPU-only arithmetic (float2 helpers, FFT modulation, the float
// Bessel approximation, sample packing) stays in cuda/device_math.hpp and cuda/nufft_math.hpp.
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

// LARMOR_HD marks a function for host and device; LARMOR_INLINE asks nvcc to inline it into every kernel
// (a call per voxel would cost more than the arithmetic).
#if defined(__CUDACC__)
#define LARMOR_HD __host__ __device__
#define LARMOR_INLINE __forceinline__
#else
#define LARMOR_HD
#define LARMOR_INLINE inline
#endif

namespace larmor::kernels {

// --- grid sizes ----------------------------------------------------------------------------------------------

/// Smallest even n' >= n whose prime factors are 2, 3, 5, 7 only.
inline std::int64_t smoothEven(std::int64_t n) {
  for (std::int64_t m = n < 2 ? 2 : n + (n & 1);; m += 2) {
    std::int64_t r = m;
    for (std::int64_t p : {2, 3, 5, 7})
      while (r % p == 0) r /= p;
    if (r == 1) return m;
  }
}

/// Oversampled grid length for an image length n (an unused dimension stays 1 and is not oversampled). The
/// 1e-9 keeps sigma N that is an integer in exact arithmetic from rounding up to the next one.
inline std::int64_t gridLength(std::int64_t n, double sigma, bool used) {
  if (!used) return 1;
  return smoothEven(static_cast<std::int64_t>(std::ceil(sigma * static_cast<double>(n) - 1e-9)));
}

// --- index splits --------------------------------------------------------------------------------------------

/// n / d for 32-bit n as a multiply-high, an add and a shift (Granlund & Montgomery, "Division by invariant
/// integers using multiplication", PLDI 1994, section 4, the round-up method with an N+1-bit multiplier
/// whose top bit is handled by adding n). Kernels split flat indices into coordinates with it: a hardware
/// 32-bit division costs about twenty instructions, a 64-bit one several times more.
struct FastDivU32 {
  std::uint32_t divisor = 1, multiplier = 1, shift = 0;
  FastDivU32() = default;
  /// d >= 1. shift = ceil(log2 d); multiplier = floor(2^32 (2^shift - d) / d) + 1 < 2^32.
  explicit FastDivU32(std::uint32_t d) : divisor(d) {
    shift = 0;
    while ((std::uint64_t{1} << shift) < d) ++shift;
    multiplier = static_cast<std::uint32_t>(((std::uint64_t{1} << 32) * ((std::uint64_t{1} << shift) - d)) / d + 1);
  }
  LARMOR_HD LARMOR_INLINE std::uint32_t div(std::uint32_t n) const {
#ifdef __CUDA_ARCH__
    const std::uint32_t hi = __umulhi(n, multiplier);
#else
    const std::uint32_t hi = static_cast<std::uint32_t>((static_cast<std::uint64_t>(n) * multiplier) >> 32);
#endif
    return static_cast<std::uint32_t>((static_cast<std::uint64_t>(hi) + n) >> shift);
  }
};

/// The same interface for indices that need 64 bits (arrays of 2^32 elements or more).
struct DivU64 {
  std::uint64_t divisor = 1;
  DivU64() = default;
  explicit DivU64(std::uint64_t d) : divisor(d) {}
  LARMOR_HD LARMOR_INLINE std::uint64_t div(std::uint64_t n) const { return n / divisor; }
};

template <class U>
using DividerFor = std::conditional_t<sizeof(U) == 4, FastDivU32, DivU64>;

/// The coordinates of linear index i along three extents (fastest first) into c[0..2]; returns the rest,
/// the index of the outer (batch) dimension: i = c0 + n0 (c1 + n1 (c2 + n2 rest)).
template <class D, class U>
LARMOR_HD LARMOR_INLINE U splitIndex3(U i, const D& n0, const D& n1, const D& n2, int c[3]) {
  const D* n[3] = {&n0, &n1, &n2};
  U q = i;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
  for (int d = 0; d < 3; ++d) {
    const U next = static_cast<U>(n[d]->div(q));
    c[d] = static_cast<int>(q - next * static_cast<U>(n[d]->divisor));
    q = next;
  }
  return q;
}

/// Distance in elements between neighbours along `axis` (0, 1, 2) of a volume [dims[0], dims[1], dims[2]]
/// stored with dimension 0 fastest: the e_axis of the finite differences.
LARMOR_HD LARMOR_INLINE std::int64_t axisStride(const std::int64_t dims[3], int axis) {
  return axis == 0 ? 1 : axis == 1 ? dims[0] : dims[0] * dims[1];
}

// --- adaptive coil combination ---------------------------------------------------------------------------------

/// Power-iteration steps for the dominant eigenvector of the coil covariance (Walsh et al. 2000): where there
/// is signal the covariance is nearly rank one and a handful suffice; both backends stop at the same count.
constexpr int kPowerIterations = 30;

// --- a sample's footprint ------------------------------------------------------------------------------------
// A sample at k cycles/FOV sits at u = c_G + (G/N) k on the centred grid of G points (c_G = floor(G/2));
// its footprint is the W points i0 + i, i < W, with i0 = floor(u - W/2) + 1, so the kernel argument of
// point i0 + i is (i0 - u) + i in (-W/2, W/2]. Both in double, so both backends place every sample alike.

inline double gridPosition(double k, std::int64_t n, std::int64_t g) {
  const double s = static_cast<double>(g) / static_cast<double>(n);
  return static_cast<double>(g / 2) + s * k;
}
inline double footprintStart(double u, int width) { return std::floor(u - 0.5 * width) + 1; }

}  // namespace larmor::kernels

// --- the Kaiser-Bessel gridding kernel ---------------------------------------------------------------------------
// Shared by the CPU and CUDA NUFFTs (host and device code), so both deapodize identically (TRON's analytic
// deapodization):
//   kernel  C(u) = I0(beta sqrt(1 - (2u/W)^2)) for |u| <= W/2, u in oversampled-grid units (Jackson 1991)
//   FT      c(x) = int C(u) exp(-2 pi i u x) du = W sinh(sqrt(beta^2 - (pi W x)^2)) / sqrt(beta^2 - (pi W x)^2)
//           (sin/sqrt with the argument's sign flipped where pi W x > beta), x in cycles per grid point.
// beta: NufftOptions::beta() (Beatty et al. 2005).
namespace larmor::kb {

/// Kernel samples per grid unit of the lookup table; linear interpolation error ~1e-7 of the peak.
constexpr int kTableResolution = 4096;

/// Modified Bessel function I0 by its power series (converges for the beta range used, < 40).
LARMOR_HD inline double besselI0(double x) {
  const double q = 0.25 * x * x;
  double term = 1.0, sum = 1.0;
  for (int k = 1; k < 64; ++k) {
    term *= q / (double(k) * double(k));
    sum += term;
    if (term < 1e-17 * sum) break;
  }
  return sum;
}

LARMOR_HD inline double kernel(double u, double width, double beta) {
  const double t = 2.0 * u / width;
  const double r = 1.0 - t * t;
  return r < 0.0 ? 0.0 : besselI0(beta * sqrt(r));
}

LARMOR_HD inline double transform(double x, double width, double beta) {
  const double a = M_PI * width * x;
  const double d = beta * beta - a * a;
  if (d > 1e-12) {
    const double s = sqrt(d);
    return width * sinh(s) / s;
  }
  if (d < -1e-12) {
    const double s = sqrt(-d);
    return width * sin(s) / s;
  }
  return width;
}

/// The kernel scaled to a peak of 1 (divided by I0(beta) = `peak`) at kTableResolution points per grid
/// unit from 0 to W/2, plus two entries so that interpolation at the last position reads inside.
inline std::vector<float> kernelTable(int width, double beta, double peak) {
  const int n = kTableResolution * width / 2 + 2;
  std::vector<float> table(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    table[static_cast<std::size_t>(i)] =
        static_cast<float>(kernel(static_cast<double>(i) / kTableResolution, width, beta) / peak);
  return table;
}

}  // namespace larmor::kb
