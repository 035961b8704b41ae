#pragma once
// [GPU only] Pieces shared by cuda/sparsity.cu (TV) and cuda/wavelet.cu: coordinates of a flat index in an
// [n0, n1, n2] volume by multiply-shift division, and a deterministic double reduction (a fixed number of
// blocks that depends on n alone, each summing a fixed subsequence, then one block adding the partials in a
// fixed tree order; the scheme of kernels.cu's dot and norm2), into CudaBackend's reduction scratch.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "check.hpp"
#include "kernels.hpp"
#include "larmor/kernels/kernel_math.hpp"
#include "larmor/kernels/sparsity_math.hpp"

namespace larmor::cuda::sparsity {

using i64 = long long;

/// An [n0, n1, n2] volume whose voxel count fits 32 bits (checked by the callers).
struct Volume {
  kernels::FastDivU32 n0, n1;
  int n[3];
  unsigned voxels;
};

inline Volume volumeOf(const std::int64_t dims[3]) {
  require(dims[0] * dims[1] * dims[2] < (std::int64_t{1} << 31),
          "cuda sparsity ops: images of 2^31 voxels or more are not supported");
  Volume v;
  v.n0 = kernels::FastDivU32(static_cast<std::uint32_t>(dims[0]));
  v.n1 = kernels::FastDivU32(static_cast<std::uint32_t>(dims[1]));
  for (int d = 0; d < 3; ++d) v.n[d] = static_cast<int>(dims[d]);
  v.voxels = static_cast<unsigned>(dims[0] * dims[1] * dims[2]);
  return v;
}

__device__ __forceinline__ void split(const Volume& v, unsigned i, int c[3]) {
  const unsigned q = v.n0.div(i);
  c[0] = static_cast<int>(i - q * v.n0.divisor);
  const unsigned z = v.n1.div(q);
  c[1] = static_cast<int>(q - z * v.n1.divisor);
  c[2] = static_cast<int>(z);
}

// --- deterministic sums -------------------------------------------------------------------------------------

constexpr int kReduceThreads = 256;

/// Blocks of the partial pass for n terms: depends on n alone (as kernels.cu's reduceBlocks).
inline int reduceBlocks(std::int64_t n) {
  return static_cast<int>(std::clamp<std::int64_t>((n + 2047) / 2048, 1, kMaxReduceBlocks));
}

/// op over v of the block's threads, in a fixed tree order; valid in thread 0.
template <int kBlock, class Op>
__device__ __forceinline__ double blockReduce(double v, double* shared, Op op) {
  const int t = threadIdx.x;
  shared[t] = v;
  __syncthreads();
#pragma unroll
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (t < s) shared[t] = op(shared[t], shared[t + s]);
    __syncthreads();
  }
  return shared[0];
}

/// The sum of v over the block, in a fixed tree order; valid in thread 0.
template <int kBlock>
__device__ __forceinline__ double blockSum(double v, double* shared) {
  return blockReduce<kBlock>(v, shared, [](double a, double b) { return a + b; });
}

/// The largest v of the block (fmax: a NaN loses to a number); valid in thread 0.
template <int kBlock>
__device__ __forceinline__ double blockMax(double v, double* shared) {
  return blockReduce<kBlock>(v, shared, [](double a, double b) { return fmax(a, b); });
}

/// result->x = the sum of partials[0, count) (one block of kMaxReduceBlocks threads).
static __global__ void __launch_bounds__(kMaxReduceBlocks) finishSum(const double2* partials, int count, double2* result) {
  __shared__ double shared[kMaxReduceBlocks];
  const double v = static_cast<int>(threadIdx.x) < count ? partials[threadIdx.x].x : 0.0;
  const double total = blockSum<kMaxReduceBlocks>(v, shared);
  if (threadIdx.x == 0) *result = double2{total, 0.0};
}

}  // namespace larmor::cuda::sparsity
