// The CUDA backend's own kernels: elementwise complex arithmetic, reductions, the reciprocal of a Jacobi
// diagonal, centred resize and the root sum of squares (the CPU's loops: engine/src/cpu/cpu_backend.cpp). All loop over their data with grid-stride loops (any size with a grid that just
// fills the GPU) and 64-bit indices; where an array has fewer than 2^32 elements, coordinates are split
// with 32-bit multiply-shift division (device_math.hpp), which is several times cheaper.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "check.hpp"
#include "device_math.hpp"
#include "kernels.hpp"

namespace larmor::cuda {

unsigned gridFor(index_t work, const Launch& launch) {
  // Eight blocks of 256 threads per SM is 2048 resident threads, a full SM on every architecture we build.
  const index_t cap = std::max<index_t>(1, static_cast<index_t>(launch.multiprocessors) * 8);
  const index_t needed = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<index_t>(needed, 1, cap));
}

namespace {

__device__ __forceinline__ index_t firstIndex() {
  return static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ index_t gridStride() { return static_cast<index_t>(gridDim.x) * blockDim.x; }

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }
bool fitsU32(index_t n) { return n <= static_cast<index_t>(std::numeric_limits<std::uint32_t>::max()); }

// --- elementwise -------------------------------------------------------------------------------------------
// With kVec, two complex values move as one 16-byte access (buffers from cudaMalloc are 256-byte aligned);
// the odd last element, if any, is done by one thread.

template <bool kVec>
__global__ void fillKernel(float2* x, float2 v, index_t n) {
  if constexpr (kVec) {
    auto* x4 = reinterpret_cast<float4*>(x);
    const float4 v4{v.x, v.y, v.x, v.y};
    for (index_t i = firstIndex(); i < n / 2; i += gridStride()) x4[i] = v4;
    if ((n & 1) && firstIndex() == 0) x[n - 1] = v;
  } else {
    for (index_t i = firstIndex(); i < n; i += gridStride()) x[i] = v;
  }
}

/// x[i] = f(x[i])
template <bool kVec, class F>
__global__ void unaryKernel(float2* x, index_t n, F f) {
  if constexpr (kVec) {
    auto* x4 = reinterpret_cast<float4*>(x);
    for (index_t i = firstIndex(); i < n / 2; i += gridStride()) {
      const float4 v = x4[i];
      const float2 lo = f(float2{v.x, v.y}), hi = f(float2{v.z, v.w});
      x4[i] = float4{lo.x, lo.y, hi.x, hi.y};
    }
    if ((n & 1) && firstIndex() == 0) x[n - 1] = f(x[n - 1]);
  } else {
    for (index_t i = firstIndex(); i < n; i += gridStride()) x[i] = f(x[i]);
  }
}

/// y[i] = f(x[i], y[i]); x may be y (each element is read before it is written, by the same thread).
template <bool kVec, class F>
__global__ void binaryKernel(float2* y, const float2* x, index_t n, F f) {
  if constexpr (kVec) {
    auto* y4 = reinterpret_cast<float4*>(y);
    const auto* x4 = reinterpret_cast<const float4*>(x);
    for (index_t i = firstIndex(); i < n / 2; i += gridStride()) {
      const float4 a = x4[i], b = y4[i];
      const float2 lo = f(float2{a.x, a.y}, float2{b.x, b.y}), hi = f(float2{a.z, a.w}, float2{b.z, b.w});
      y4[i] = float4{lo.x, lo.y, hi.x, hi.y};
    }
    if ((n & 1) && firstIndex() == 0) y[n - 1] = f(x[n - 1], y[n - 1]);
  } else {
    for (index_t i = firstIndex(); i < n; i += gridStride()) y[i] = f(x[i], y[i]);
  }
}

struct ScaleOp {
  float2 a;
  __device__ float2 operator()(float2 v) const { return cmul(v, a); }
};

struct AxpbyOp {
  float2 a, b;
  // The CPU's a*x + b*y, term for term (no shortcut for b == 0: NaN in y propagates on both).
  __device__ float2 operator()(float2 x, float2 y) const { return cadd(cmul(a, x), cmul(b, y)); }
};

template <class U, bool kConj, bool kBroadcast>
__global__ void multiplyKernel(float2* out, const float2* a, DividerFor<U> na, const float2* b, index_t nb) {
  for (index_t i = firstIndex(); i < nb; i += gridStride()) {
    index_t j = i;
    if constexpr (kBroadcast) {
      const U iu = static_cast<U>(i);
      j = static_cast<index_t>(iu - static_cast<U>(na.div(iu)) * static_cast<U>(na.divisor));
    }
    float2 av = a[j];
    if constexpr (kConj) av.y = -av.y;
    out[i] = cmul(av, b[i]);
  }
}

template <class U, bool kConj>
void launchMultiply(const Launch& l, float2* out, const float2* a, index_t na, const float2* b, index_t nb) {
  const DividerFor<U> div(static_cast<U>(na));
  if (na == nb)
    multiplyKernel<U, kConj, false><<<gridFor(nb, l), kThreads, 0, l.stream>>>(out, a, div, b, nb);
  else
    multiplyKernel<U, kConj, true><<<gridFor(nb, l), kThreads, 0, l.stream>>>(out, a, div, b, nb);
  LARMOR_CUDA_CHECK_LAUNCH();
}

// --- reductions --------------------------------------------------------------------------------------------

/// Sums `v` over the block in a fixed tree order; thread 0 gets the total. kBlock is a power of two.
template <int kBlock>
__device__ double2 blockSum(double2 v, double2* shared) {
  const int t = threadIdx.x;
  shared[t] = v;
  __syncthreads();
#pragma unroll
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (t < s) {
      shared[t].x += shared[t + s].x;
      shared[t].y += shared[t + s].y;
    }
    __syncthreads();
  }
  return shared[0];
}

template <bool kDot>
__global__ void __launch_bounds__(kThreads) partialSumKernel(const float2* a, const float2* b, index_t n,
                                                             double2* partials) {
  __shared__ double2 shared[kThreads];
  double re = 0, im = 0;
  for (index_t i = firstIndex(); i < n; i += gridStride()) {
    const float2 x = a[i];
    if constexpr (kDot) {
      const float2 y = b[i];
      // conj(x) y, in double, as the CPU backend does.
      re += static_cast<double>(x.x) * y.x + static_cast<double>(x.y) * y.y;
      im += static_cast<double>(x.x) * y.y - static_cast<double>(x.y) * y.x;
    } else {
      re += static_cast<double>(x.x) * x.x + static_cast<double>(x.y) * x.y;
    }
  }
  const double2 total = blockSum<kThreads>(double2{re, im}, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

constexpr int kFinishThreads = kMaxReduceBlocks;

__global__ void __launch_bounds__(kFinishThreads) finishSumKernel(const double2* partials, int count,
                                                                  double2* result) {
  __shared__ double2 shared[kFinishThreads];
  const int t = threadIdx.x;
  const double2 v = t < count ? partials[t] : double2{0.0, 0.0};
  const double2 total = blockSum<kFinishThreads>(v, shared);
  if (t == 0) *result = total;
}

/// Depends on n alone (not on the device), so results are reproducible across runs and machines of
/// the same kind. At least 2048 elements per block so that small inputs use few blocks.
int reduceBlocks(index_t n) {
  return static_cast<int>(std::clamp<index_t>((n + 2047) / 2048, 1, kMaxReduceBlocks));
}

template <bool kDot>
void launchSum(const Launch& l, const float2* a, const float2* b, index_t n, double2* partials, double2* result) {
  const int blocks = reduceBlocks(n);
  partialSumKernel<kDot><<<blocks, kThreads, 0, l.stream>>>(a, b, n, partials);
  LARMOR_CUDA_CHECK_LAUNCH();
  finishSumKernel<<<1, kFinishThreads, 0, l.stream>>>(partials, blocks, result);
  LARMOR_CUDA_CHECK_LAUNCH();
}

// --- arrays ------------------------------------------------------------------------------------------------

template <class U>
__global__ void resizeKernel(float2* dst, index_t total, const float2* src, ResizeGeometry<U> g) {
  for (index_t i = firstIndex(); i < total; i += gridStride()) {
    const std::int64_t s = resizeSourceIndex<U>(static_cast<U>(i), g);
    dst[i] = s >= 0 ? src[s] : float2{0.f, 0.f};
  }
}

template <class U>
void launchResize(const Launch& l, float2* dst, const index_t dd[4], const float2* src, const index_t sd[4],
                  index_t batch) {
  ResizeGeometry<U> g;
  index_t dstPlane = 1;
  g.srcPlane = 1;
  for (int d = 0; d < 4; ++d) {
    g.dst[d] = DividerFor<U>(static_cast<U>(dd[d]));
    g.src[d] = sd[d];
    g.offset[d] = sd[d] / 2 - dd[d] / 2;
    dstPlane *= dd[d];
    g.srcPlane *= sd[d];
  }
  const index_t total = dstPlane * batch;
  resizeKernel<U><<<gridFor(total, l), kThreads, 0, l.stream>>>(dst, total, src, g);
  LARMOR_CUDA_CHECK_LAUNCH();
}

template <class U>
__global__ void sumOfSquaresKernel(float2* out, const float2* in, DividerFor<U> voxels, index_t coils,
                                   index_t total) {
  const index_t nv = static_cast<index_t>(voxels.divisor);
  for (index_t i = firstIndex(); i < total; i += gridStride()) {
    const U iu = static_cast<U>(i);
    const index_t b = static_cast<index_t>(voxels.div(iu));
    const index_t v = i - b * nv;
    const float2* p = in + v + nv * coils * b;
    // In double, as the CPU does: the result then differs from it only by the final rounding.
    double s = 0;
    for (index_t c = 0; c < coils; ++c) {
      const float2 z = p[c * nv];
      s += static_cast<double>(z.x) * z.x + static_cast<double>(z.y) * z.y;
    }
    out[i] = float2{static_cast<float>(sqrt(s)), 0.f};
  }
}

__global__ void reciprocalKernel(float2* __restrict__ out, const float2* __restrict__ a, double alpha,
                                 const float2* __restrict__ b, double beta, index_t n) {
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<index_t>(gridDim.x) * blockDim.x) {
    // Explicitly rounded (no FMA contraction), so that every value has the CPU's bits.
    const double s = __dadd_rn(__dmul_rn(alpha, a[i].x), b ? __dmul_rn(beta, b[i].x) : beta);
    out[i] = make_float2(isfinite(s) && s > 0 ? static_cast<float>(1.0 / s) : 1.f, 0.f);
  }
}

}  // namespace

// --- launchers ---------------------------------------------------------------------------------------------

void fill(const Launch& l, float2* x, float2 value, index_t n) {
  if (n <= 0) return;
  if (aligned16(x))
    fillKernel<true><<<gridFor(n / 2 + 1, l), kThreads, 0, l.stream>>>(x, value, n);
  else
    fillKernel<false><<<gridFor(n, l), kThreads, 0, l.stream>>>(x, value, n);
  LARMOR_CUDA_CHECK_LAUNCH();
}

void scale(const Launch& l, float2* x, float2 a, index_t n) {
  if (n <= 0) return;
  if (aligned16(x))
    unaryKernel<true><<<gridFor(n / 2 + 1, l), kThreads, 0, l.stream>>>(x, n, ScaleOp{a});
  else
    unaryKernel<false><<<gridFor(n, l), kThreads, 0, l.stream>>>(x, n, ScaleOp{a});
  LARMOR_CUDA_CHECK_LAUNCH();
}

void axpby(const Launch& l, float2* y, float2 a, const float2* x, float2 b, index_t n) {
  if (n <= 0) return;
  if (aligned16(x) && aligned16(y))
    binaryKernel<true><<<gridFor(n / 2 + 1, l), kThreads, 0, l.stream>>>(y, x, n, AxpbyOp{a, b});
  else
    binaryKernel<false><<<gridFor(n, l), kThreads, 0, l.stream>>>(y, x, n, AxpbyOp{a, b});
  LARMOR_CUDA_CHECK_LAUNCH();
}

void multiply(const Launch& l, float2* out, const float2* a, index_t na, const float2* b, index_t nb, bool conjA) {
  if (nb <= 0) return;
  if (fitsU32(nb)) {
    conjA ? launchMultiply<std::uint32_t, true>(l, out, a, na, b, nb)
          : launchMultiply<std::uint32_t, false>(l, out, a, na, b, nb);
  } else {
    conjA ? launchMultiply<std::uint64_t, true>(l, out, a, na, b, nb)
          : launchMultiply<std::uint64_t, false>(l, out, a, na, b, nb);
  }
}

void dot(const Launch& l, const float2* a, const float2* b, index_t n, double2* partials, double2* result) {
  launchSum<true>(l, a, b, n, partials, result);
}

void sumSquares(const Launch& l, const float2* x, index_t n, double2* partials, double2* result) {
  launchSum<false>(l, x, x, n, partials, result);
}

namespace {
constexpr int kTransposeTile = 32, kTransposeRows = 8;

/// One 32 x 32 tile of planes blockIdx.z, blockIdx.z + gridDim.z, ...: read along the source's rows into shared
/// memory, written along the destination's rows (the padding column keeps the column reads off one bank).
__global__ void transposeKernel(float2* dst, const float2* src, index_t n0, index_t n1, index_t batch) {
  __shared__ float2 tile[kTransposeTile][kTransposeTile + 1];
  const index_t i0 = static_cast<index_t>(blockIdx.x) * kTransposeTile, j0 = static_cast<index_t>(blockIdx.y) * kTransposeTile;
  for (index_t b = blockIdx.z; b < batch; b += gridDim.z) {
    const float2* s = src + n0 * n1 * b;
    float2* d = dst + n0 * n1 * b;
    for (int r = threadIdx.y; r < kTransposeTile; r += kTransposeRows) {
      const index_t i = i0 + threadIdx.x, j = j0 + r;
      if (i < n0 && j < n1) tile[r][threadIdx.x] = s[i + n0 * j];
    }
    __syncthreads();
    for (int r = threadIdx.y; r < kTransposeTile; r += kTransposeRows) {
      const index_t j = j0 + threadIdx.x, i = i0 + r;
      if (i < n0 && j < n1) d[j + n1 * i] = tile[threadIdx.x][r];
    }
    __syncthreads();
  }
}
}  // namespace

void transpose(const Launch& l, float2* dst, const float2* src, index_t n0, index_t n1, index_t batch) {
  if (n0 <= 0 || n1 <= 0 || batch <= 0) return;
  const index_t tilesY = (n1 + kTransposeTile - 1) / kTransposeTile;
  require(tilesY <= 65535, "cuda backend: transpose: a plane of " + std::to_string(n1) + " rows is too tall");
  const dim3 grid(static_cast<unsigned>((n0 + kTransposeTile - 1) / kTransposeTile), static_cast<unsigned>(tilesY),
                  static_cast<unsigned>(std::min<index_t>(batch, 65535)));
  transposeKernel<<<grid, dim3(kTransposeTile, kTransposeRows), 0, l.stream>>>(dst, src, n0, n1, batch);
  LARMOR_CUDA_CHECK_LAUNCH();
}

void resizeCentred(const Launch& l, float2* dst, const index_t dstDims[4], const float2* src,
                   const index_t srcDims[4], index_t batch) {
  const index_t total = dstDims[0] * dstDims[1] * dstDims[2] * dstDims[3] * batch;
  if (total <= 0) return;
  if (fitsU32(total))
    launchResize<std::uint32_t>(l, dst, dstDims, src, srcDims, batch);
  else
    launchResize<std::uint64_t>(l, dst, dstDims, src, srcDims, batch);
}

void sumOfSquares(const Launch& l, float2* out, const float2* in, index_t voxels, index_t coils, index_t batch) {
  const index_t total = voxels * batch;
  if (total <= 0) return;
  if (fitsU32(total)) {
    sumOfSquaresKernel<std::uint32_t><<<gridFor(total, l), kThreads, 0, l.stream>>>(
        out, in, FastDivU32(static_cast<std::uint32_t>(voxels)), coils, total);
  } else {
    sumOfSquaresKernel<std::uint64_t><<<gridFor(total, l), kThreads, 0, l.stream>>>(
        out, in, DivU64(static_cast<std::uint64_t>(voxels)), coils, total);
  }
  LARMOR_CUDA_CHECK_LAUNCH();
}

void reciprocalDiagonal(const Launch& l, float2* out, const float2* a, double alpha, const float2* b, double beta,
                        index_t n) {
  if (n <= 0) return;
  reciprocalKernel<<<gridFor(n, l), kThreads, 0, l.stream>>>(out, a, alpha, b, beta, n);
  LARMOR_CUDA_CHECK_LAUNCH();
}

}  // namespace larmor::cuda
