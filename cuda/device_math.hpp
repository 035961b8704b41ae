#pragma once
// Small arithmetic shared by the GPU kernels: complex float2 helpers, the per-element factors of the
// centred FFT and the centred resize; the division by a run-time constant and the index splits, which the
// CPU shares, are in larmor/kernels/kernel_math.hpp. Everything here is __host__ __device__ so that the
// index and phase arithmetic can also be checked on a machine without a GPU.
#include <vector_types.h>

#include <cmath>
#include <cstdint>

#include "larmor/kernels/kernel_math.hpp"

namespace larmor::cuda {

// The index splits are the CPU's too (kernel_math.hpp).
using kernels::DividerFor;
using kernels::DivU64;
using kernels::FastDivU32;
using kernels::splitIndex3;

// --- complex numbers as float2 (the layout of std::complex<float> and cufftComplex) ---------------------
LARMOR_HD LARMOR_INLINE float2 cmul(float2 a, float2 b) {
  return float2{a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x};
}
/// conj(a) * b
LARMOR_HD LARMOR_INLINE float2 cmulConj(float2 a, float2 b) {
  return float2{a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x};
}
LARMOR_HD LARMOR_INLINE float2 cadd(float2 a, float2 b) { return float2{a.x + b.x, a.y + b.y}; }

/// (sin(pi x), cos(pi x)); on the device sincospif, which reduces its argument exactly.
LARMOR_HD LARMOR_INLINE void sinCosPi(float x, float* s, float* c) {
#ifdef __CUDA_ARCH__
  sincospif(x, s, c);
#else
  const double a = 3.14159265358979323846 * static_cast<double>(x);
  *s = static_cast<float>(std::sin(a));
  *c = static_cast<float>(std::cos(a));
#endif
}

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

/// The modulation factor of the element at position `pos` within one transform.
template <class U>
LARMOR_HD LARMOR_INLINE float2 modulationFactor(U pos, const Modulation<U>& m) {
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
LARMOR_HD LARMOR_INLINE std::int64_t resizeSourceIndex(U i, const ResizeGeometry<U>& g) {
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
