// The set-up ops of the iterative reconstruction's priors on the GPU (PriorOps::neighbourDifferences,
// edgeWeights, addDifferenceDiagonal; formulas in larmor/backend/prior_ops.hpp). Twin:
// engine/src/cpu/prior.cpp, the reference, which gives the same bits; with finite_difference.cu these are
// CudaPriorOps. They run once per reconstruction, so that the reference image goes to the device once and
// the weights, their squares and the Jacobi diagonal are made there instead of on the host (at 128^3:
// 29-101 ms of host work and 48 MB of uploads before, measured 2026-11-22).
//
// The median of the neighbour differences (the edge scale) is a radix select over their float bits, as on
// the CPU: three histogram passes (11 + 11 + 10 bits) of the differences computed on the fly from a
// magnitude image, each restricted to the prefix chosen so far; per-block shared histograms, added into
// 64-bit global counters. Counts are integers, so the result is exact and does not depend on the order.
// The magnitudes, weights and differences are computed with the same float/double steps as the CPU's, so
// both backends give the same bits.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "check.hpp"
#include "cuda_backend.hpp"
#include "larmor/kernels/kernel_math.hpp"

namespace larmor::cuda {
namespace {

using i64 = long long;
constexpr int kBucketsMax = 1 << 11;

struct Geometry {
  i64 n0, n1, n2, voxels;
};

Geometry geometryOf(const index_t dims[3]) {
  return {static_cast<i64>(dims[0]), static_cast<i64>(dims[1]), static_cast<i64>(dims[2]),
          static_cast<i64>(dims[0] * dims[1] * dims[2])};
}

// Explicitly rounded products and sums (no FMA contraction), so that every value has the CPU's bits.
__device__ __forceinline__ float magnitude(float2 z) {
  const double re = z.x, im = z.y;
  return static_cast<float>(sqrt(__dadd_rn(__dmul_rn(re, re), __dmul_rn(im, im))));
}

__device__ __forceinline__ void coordinates(const Geometry& g, i64 i, i64& x, i64& y, i64& z) {
  x = i % g.n0;
  const i64 r = i / g.n0;
  y = r % g.n1;
  z = r / g.n1;
}

__global__ void magnitudeKernel(float* __restrict__ mag, const float2* __restrict__ in, i64 n,
                                unsigned* __restrict__ nonFinite) {
  bool bad = false;
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<i64>(gridDim.x) * blockDim.x) {
    const float m = magnitude(in[i]);
    mag[i] = m;
    bad = bad || !isfinite(m);
  }
  if (__syncthreads_or(bad) && threadIdx.x == 0) atomicOr(nonFinite, 1u);
}

/// The differences of voxel i to its next neighbour along each axis inside the volume.
template <class F>
__device__ __forceinline__ void forDifferences(const Geometry& g, const float* __restrict__ mag, i64 i, F&& f) {
  i64 x, y, z;
  coordinates(g, i, x, y, z);
  const float m = mag[i];
  if (x + 1 < g.n0) f(fabsf(mag[i + 1] - m));
  if (y + 1 < g.n1) f(fabsf(mag[i + g.n0] - m));
  if (z + 1 < g.n2) f(fabsf(mag[i + g.n0 * g.n1] - m));
}

__global__ void maximumKernel(const float* __restrict__ mag, Geometry g, unsigned* __restrict__ maxBits) {
  float mx = 0.f;
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.voxels;
       i += static_cast<i64>(gridDim.x) * blockDim.x)
    forDifferences(g, mag, i, [&](float d) { mx = fmaxf(mx, d); });
  for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_down_sync(0xffffffffu, mx, off));
  // Non-negative floats order as their bits.
  if ((threadIdx.x & 31) == 0) atomicMax(maxBits, __float_as_uint(mx));
}

__global__ void histogramKernel(const float* __restrict__ mag, Geometry g, unsigned prefix, unsigned prefixMask,
                                int shift, unsigned mask, unsigned long long* __restrict__ hist) {
  __shared__ unsigned local[kBucketsMax];
  for (unsigned j = threadIdx.x; j <= mask; j += blockDim.x) local[j] = 0;
  __syncthreads();
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.voxels;
       i += static_cast<i64>(gridDim.x) * blockDim.x)
    forDifferences(g, mag, i, [&](float d) {
      const unsigned bits = __float_as_uint(d);
      if ((bits & prefixMask) == prefix) atomicAdd(&local[(bits >> shift) & mask], 1u);
    });
  __syncthreads();
  for (unsigned j = threadIdx.x; j <= mask; j += blockDim.x)
    if (local[j]) atomicAdd(&hist[j], static_cast<unsigned long long>(local[j]));
}

__global__ void edgeWeightsKernel(float2* __restrict__ w, const float2* __restrict__ ref, Geometry g, int axis,
                                  i64 stride, double delta) {
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.voxels;
       i += static_cast<i64>(gridDim.x) * blockDim.x) {
    i64 c[3];
    coordinates(g, i, c[0], c[1], c[2]);
    const i64 len = axis == 0 ? g.n0 : axis == 1 ? g.n1 : g.n2;
    float v = 1.f;
    if (c[axis] < len - 1) {
      const double t = (static_cast<double>(magnitude(ref[i + stride])) - magnitude(ref[i])) / delta;
      v = static_cast<float>(1.0 / sqrt(__dadd_rn(1.0, __dmul_rn(t, t))));
    }
    w[i] = make_float2(v, 0.f);
  }
}

__global__ void differenceDiagonalKernel(float2* __restrict__ d, const float2* __restrict__ w, Geometry g, int axis,
                                         i64 stride) {
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.voxels;
       i += static_cast<i64>(gridDim.x) * blockDim.x) {
    i64 c[3];
    coordinates(g, i, c[0], c[1], c[2]);
    const i64 len = axis == 0 ? g.n0 : axis == 1 ? g.n1 : g.n2;
    float v = d[i].x;
    if (c[axis] < len - 1) v += w ? w[i].x : 1.f;
    if (c[axis] > 0) v += w ? w[i - stride].x : 1.f;
    d[i] = make_float2(v, 0.f);
  }
}

}  // namespace

PriorOps::NeighbourDifferences CudaPriorOps::neighbourDifferences(const Buffer& image, const index_t dims[3],
                                                                std::uint64_t k) {
  checkImage(dims, "neighbour differences");
  const Geometry g = geometryOf(dims);
  const float2* pi = be_.elements(image, g.voxels, "neighbour differences");
  const std::uint64_t count = neighbourPairs(dims);
  require(count == 0 || k < count, "neighbour differences: rank " + std::to_string(k) + " of " +
                                       std::to_string(count) + " differences");
  // The magnitudes, then [2048 histogram counts][max bits, non-finite flag] in one scratch buffer.
  auto mag = be_.allocate(static_cast<std::size_t>(g.voxels) * sizeof(float));
  auto scratch = be_.allocate(kBucketsMax * sizeof(unsigned long long) + 2 * sizeof(unsigned));
  auto* hist = static_cast<unsigned long long*>(scratch->ptr());
  auto* flags = reinterpret_cast<unsigned*>(hist + kBucketsMax);  // [0] max bits, [1] non-finite
  auto* pm = static_cast<float*>(mag->ptr());
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  const cudaStream_t s = be_.stream_.handle;
  const unsigned grid = gridFor(g.voxels, be_.launch_);
  LARMOR_CUDA_CHECK(cudaMemsetAsync(flags, 0, 2 * sizeof(unsigned), s));
  magnitudeKernel<<<grid, kThreads, 0, s>>>(pm, pi, g.voxels, flags + 1);
  LARMOR_CUDA_CHECK_LAUNCH();
  maximumKernel<<<grid, kThreads, 0, s>>>(pm, g, flags);
  LARMOR_CUDA_CHECK_LAUNCH();
  unsigned host[2];
  LARMOR_CUDA_CHECK(cudaMemcpyAsync(host, flags, sizeof host, cudaMemcpyDeviceToHost, s));
  LARMOR_CUDA_CHECK(cudaStreamSynchronize(s));
  NeighbourDifferences out;
  out.finite = host[1] == 0;
  if (!out.finite || count == 0) return out;
  std::memcpy(&out.maximum, &host[0], sizeof(float));

  std::uint32_t prefix = 0, prefixMask = 0;
  const int shifts[3] = {21, 10, 0}, widths[3] = {11, 11, 10};
  std::vector<unsigned long long> counts(kBucketsMax);
  for (int pass = 0; pass < 3; ++pass) {
    const int buckets = 1 << widths[pass];
    const auto mask = static_cast<std::uint32_t>(buckets - 1);
    LARMOR_CUDA_CHECK(cudaMemsetAsync(hist, 0, buckets * sizeof(unsigned long long), s));
    histogramKernel<<<grid, kThreads, 0, s>>>(pm, g, prefix, prefixMask, shifts[pass], mask, hist);
    LARMOR_CUDA_CHECK_LAUNCH();
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(counts.data(), hist, buckets * sizeof(unsigned long long),
                                      cudaMemcpyDeviceToHost, s));
    LARMOR_CUDA_CHECK(cudaStreamSynchronize(s));
    int j = 0;
    while (j < buckets - 1 && k >= counts[static_cast<std::size_t>(j)]) k -= counts[static_cast<std::size_t>(j++)];
    prefix |= static_cast<std::uint32_t>(j) << shifts[pass];
    prefixMask |= mask << shifts[pass];
  }
  std::memcpy(&out.kth, &prefix, sizeof(float));
  return out;
}

void CudaPriorOps::edgeWeights(Buffer& out, const Buffer& image, const index_t dims[3], int axis, double delta) {
  checkImage(dims, "edge weights");
  checkAxis(axis, "edge weights");
  require(delta > 0 && std::isfinite(delta), "edge weights: the edge scale must be > 0");
  const Geometry g = geometryOf(dims);
  float2* pw = be_.elements(out, g.voxels, "edge weights");
  const float2* pi = be_.elements(image, g.voxels, "edge weights");
  require(static_cast<const void*>(pw) != static_cast<const void*>(pi) || g.voxels == 0,
          "edge weights cannot run in place");
  if (g.voxels == 0) return;
  const i64 stride = kernels::axisStride(dims, axis);
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  edgeWeightsKernel<<<gridFor(g.voxels, be_.launch_), kThreads, 0, be_.stream_.handle>>>(pw, pi, g, axis, stride,
                                                                                         delta);
  LARMOR_CUDA_CHECK_LAUNCH();
}

void CudaPriorOps::addDifferenceDiagonal(Buffer& out, const Buffer* w, const index_t dims[3], int axis) {
  checkImage(dims, "difference diagonal");
  checkAxis(axis, "difference diagonal");
  const Geometry g = geometryOf(dims);
  float2* pd = be_.elements(out, g.voxels, "difference diagonal");
  const float2* pw = w ? be_.elements(*w, g.voxels, "difference diagonal") : nullptr;
  if (g.voxels == 0) return;
  const i64 stride = kernels::axisStride(dims, axis);
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  differenceDiagonalKernel<<<gridFor(g.voxels, be_.launch_), kThreads, 0, be_.stream_.handle>>>(pd, pw, g, axis,
                                                                                                stride);
  LARMOR_CUDA_CHECK_LAUNCH();
}

}  // namespace larmor::cuda
