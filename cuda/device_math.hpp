#pragma once
// Small arithmetic shared by the kernels: complex float2 helpers, division by a run-time constant, and the
// per-element factors of the centred FFT. Everything here is __host__ __device__ so that the index and
// phase arithmetic can also be checked on a machine without a GPU.
#include <vector_types.h>

#include <cstdint>
#include <type_traits>

#ifdef __CUDACC__
#define LARMOR_HD __host__ __device__ __forceinline__
#else
#include <cmath>
#define LARMOR_HD inline
#endif

namespace larmor::cuda {

// --- complex numbers as float2 (the layout of std::complex<float> and cufftComplex) ---------------------
LARMOR_HD float2 cmul(float2 a, float2 b) { return float2{a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x}; }
/// conj(a) * b
LARMOR_HD float2 cmulConj(float2 a, float2 b) { return float2{a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x}; }
LARMOR_HD float2 cadd(float2 a, float2 b) { return float2{a.x + b.x, a.y + b.y}; }

/// (sin(pi x), cos(pi x)); on the device sincospif, which reduces its argument exactly.
LARMOR_HD void sinCosPi(float x, float* s, float* c) {
#ifdef __CUDA_ARCH__
  sincospif(x, s, c);
#else
  const double a = 3.14159265358979323846 * static_cast<double>(x);
  *s = static_cast<float>(std::sin(a));
  *c = static_cast<float>(std::cos(a));
#endif
}

// --- division by a run-time constant ---------------------------------------------------------------------
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
  LARMOR_HD std::uint32_t div(std::uint32_t n) const {
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
  LARMOR_HD std::uint64_t div(std::uint64_t n) const { return n / divisor; }
};

template <class U>
using DividerFor = std::conditional_t<sizeof(U) == 4, FastDivU32, DivU64>;

// --- centred FFT as modulation * plain DFT * modulation --------------------------------------------------
// The convention (backend.hpp): X[k] = N^{-1/2} sum_n x[n] exp(-2 pi i s (k - c)(n - c) / N), c = floor(N/2),
// s = +1 forward, -1 inverse. Expanding (k - c)(n - c) = kn - kc - cn + c^2:
//   X[k] = N^{-1/2} e^{-2 pi i s c^2/N} e^{2 pi i s c k/N} sum_n [e^{2 pi i s c n/N} x[n]] e^{-2 pi i s k n/N},
// a plain (cuFFT) DFT between two diagonal modulations by the same sequence e^{2 pi i s c m/N}, m = n or k.
//   N even, c = N/2:      e^{2 pi i s c m/N} = e^{i pi s m} = (-1)^m                 (the chessboard),
//                         e^{-2 pi i s c^2/N} = e^{-i pi s N/2} = (-1)^{N/2}.
//   N odd, c = (N-1)/2:   e^{2 pi i s c m/N} = e^{i pi s m (N-1)/N} = (-1)^m e^{-i pi s m/N},
//                         e^{-2 pi i s c^2/N} is a general phase, computed once on the host.
// So for every length the per-element factor is (-1)^m, times e^{-i pi s m/N} when N is odd; over several
// dimensions the factors multiply. This replaces the fftshift/ifftshift copies of the CPU backend by two
// in-place passes and needs no second buffer. The argument m/N lies in [0, 1), where sincospif is accurate
// to about one ulp, and for even lengths no trigonometry is done at all.
constexpr int kMaxFftRank = 3;

template <class U>
struct Modulation {
  int rank = 0;                   ///< transformed dimensions of length > 1, fastest first
  DividerFor<U> dims[kMaxFftRank];  ///< their lengths
  std::uint32_t oddMask = 0;      ///< bit d set: dims[d] has odd length
  float sign = 1.f;               ///< s: +1 forward, -1 inverse
  float2 constant{1.f, 0.f};      ///< multiplies every factor: 1 before; global phase * N^{-1/2} after
  DividerFor<U> plane;            ///< elements per transform (batches follow one another)
};

/// The coordinates of linear index i along three extents (fastest first) into c[0..2]; returns the rest,
/// the index of the outer (batch) dimension: i = c0 + n0 (c1 + n1 (c2 + n2 rest)).
template <class D, class U>
LARMOR_HD U splitIndex3(U i, const D& n0, const D& n1, const D& n2, int c[3]) {
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

/// The modulation factor of the element at position `pos` within one transform.
template <class U>
LARMOR_HD float2 modulationFactor(U pos, const Modulation<U>& m) {
  unsigned parity = 0;
  float2 f = m.constant;
  U q = pos;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
  for (int d = 0; d < kMaxFftRank; ++d) {
    if (d < m.rank) {
      const U next = static_cast<U>(m.dims[d].div(q));
      const U n = q - next * static_cast<U>(m.dims[d].divisor);
      q = next;
      parity ^= static_cast<unsigned>(n & 1u);
      if ((m.oddMask >> d) & 1u) {
        float s, c;
        sinCosPi(static_cast<float>(n) / static_cast<float>(m.dims[d].divisor), &s, &c);
        f = cmul(f, float2{c, -m.sign * s});  // e^{-i pi s n/N}
      }
    }
  }
  return parity ? float2{-f.x, -f.y} : f;
}

// --- centred crop / zero-pad -------------------------------------------------------------------------------
template <class U>
struct ResizeGeometry {
  DividerFor<U> dst[4];       ///< destination extents of dims 0..3
  std::int64_t src[4];        ///< source extents of dims 0..3
  std::int64_t offset[4];     ///< source index = destination index + offset (floor(Ns/2) - floor(Nd/2))
  std::int64_t srcPlane;      ///< source elements per batch (product of dims 0..3)
};

/// Source index of destination element i, or -1 where it lies outside the source (zero fill).
template <class U>
LARMOR_HD std::int64_t resizeSourceIndex(U i, const ResizeGeometry<U>& g) {
  std::int64_t srcIndex = 0, stride = 1;
  U q = i;
  bool inside = true;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
  for (int d = 0; d < 4; ++d) {
    const U next = static_cast<U>(g.dst[d].div(q));
    const std::int64_t n = static_cast<std::int64_t>(q - next * static_cast<U>(g.dst[d].divisor));
    q = next;
    const std::int64_t s = n + g.offset[d];
    inside = inside && s >= 0 && s < g.src[d];
    srcIndex += s * stride;
    stride *= g.src[d];
  }
  // After dims 0..3, q is the batch index.
  return inside ? srcIndex + static_cast<std::int64_t>(q) * g.srcPlane : -1;
}

}  // namespace larmor::cuda
