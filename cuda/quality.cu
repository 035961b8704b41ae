// QualityOps on the GPU (larmor/backend/quality_ops.hpp): quality::compare's percent error, PSNR, SSIM and
// NRMSE on images in device memory, in double. Twin of engine/src/cpu/quality.cpp (which is
// quality/metrics.cpp, the reference: the formulas and the SSIM window are described there).
//
//   1. |t|, |r| per voxel: block partials of sum |t||r|, |t|^2, |r|^2, max |r|, min |r|; the first
//      non-finite voxel of each image by atomicMin (the smallest index, whatever the order);
//   2. one block: the least-squares scale a = sum |t||r| / sum |t|^2, SSIM's c1, c2 from the reference's
//      dynamic range (of the float magnitudes, as the CPU's);
//   3. e = (a|t| - |r|)^2 partials, and the float magnitudes a|t| and |r| SSIM reads;
//   4. SSIM's horizontal pass: the five moments (a, b, a^2, b^2, ab) under the 11-tap Gaussian of each row,
//      renormalised at the borders;
//   5. the vertical pass of the same, each voxel's SSIM term, block partials;
//   6. one block: the sums; the host reads nine doubles once.
// Sums are deterministic (a block count that depends on n alone, partials added in a fixed tree order) but
// in another order than the CPU's, so the two agree to rounding (~1e-12 relative).
#include <cfloat>
#include <climits>
#include <cmath>
#include <string>

#include "check.hpp"
#include "cuda_backend.hpp"
#include "sparsity_internal.cuh"

namespace larmor::cuda {
namespace {

using sparsity::blockMax;
using sparsity::blockSum;
using sparsity::kReduceThreads;
constexpr int kRadius = 5;  ///< window 11, sigma 1.5 (quality/metrics.cpp)

/// Result slots (doubles).
enum Slot : int { kTr, kTt, kRr, kPeak, kMin, kScale, kErr, kSsim, kC1, kC2, kSlots };
/// Slots of the first non-finite voxel (unsigned long long, ULLONG_MAX: none) after the doubles.
constexpr int kBadTest = 0, kBadRef = 1;

struct Window {
  double w[2 * kRadius + 1];
};

__device__ __forceinline__ long long firstIndex() { return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ long long gridStride() { return static_cast<long long>(gridDim.x) * blockDim.x; }

__device__ __forceinline__ double magnitude(float2 z) {
  return sqrt(static_cast<double>(z.x) * z.x + static_cast<double>(z.y) * z.y);
}

__global__ void __launch_bounds__(kReduceThreads) sumsKernel(const float2* __restrict__ test,
                                                             const float2* __restrict__ ref, long long n,
                                                             double* partials, unsigned long long* bad) {
  __shared__ double shared[5][kReduceThreads];
  double tr = 0, tt = 0, rr = 0, peak = 0, low = DBL_MAX;
  for (long long i = firstIndex(); i < n; i += gridStride()) {
    const double t = magnitude(test[i]), r = magnitude(ref[i]);
    if (!isfinite(t)) atomicMin(bad + kBadTest, static_cast<unsigned long long>(i));
    if (!isfinite(r)) atomicMin(bad + kBadRef, static_cast<unsigned long long>(i));
    tr += t * r;
    tt += t * t;
    rr += r * r;
    peak = fmax(peak, r);
    low = fmin(low, r);
  }
  const double s0 = blockSum<kReduceThreads>(tr, shared[0]);
  const double s1 = blockSum<kReduceThreads>(tt, shared[1]);
  const double s2 = blockSum<kReduceThreads>(rr, shared[2]);
  const double s3 = blockMax<kReduceThreads>(peak, shared[3]);
  const double s4 = -blockMax<kReduceThreads>(-low, shared[4]);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = s0;
    partials[kMaxReduceBlocks + blockIdx.x] = s1;
    partials[2 * kMaxReduceBlocks + blockIdx.x] = s2;
    partials[3 * kMaxReduceBlocks + blockIdx.x] = s3;
    partials[4 * kMaxReduceBlocks + blockIdx.x] = s4;
  }
}

__global__ void __launch_bounds__(kMaxReduceBlocks) finishSumsKernel(const double* partials, int count, double* out,
                                                                     bool leastSquares) {
  __shared__ double shared[5][kMaxReduceBlocks];
  const int t = threadIdx.x;
  const bool in = t < count;
  const double tr = blockSum<kMaxReduceBlocks>(in ? partials[t] : 0.0, shared[0]);
  const double tt = blockSum<kMaxReduceBlocks>(in ? partials[kMaxReduceBlocks + t] : 0.0, shared[1]);
  const double rr = blockSum<kMaxReduceBlocks>(in ? partials[2 * kMaxReduceBlocks + t] : 0.0, shared[2]);
  const double peak = blockMax<kMaxReduceBlocks>(in ? partials[3 * kMaxReduceBlocks + t] : 0.0, shared[3]);
  const double low = -blockMax<kMaxReduceBlocks>(in ? -partials[4 * kMaxReduceBlocks + t] : -DBL_MAX, shared[4]);
  if (t != 0) return;
  out[kTr] = tr;
  out[kTt] = tt;
  out[kRr] = rr;
  out[kPeak] = peak;
  out[kMin] = low;
  out[kScale] = (leastSquares && tt > 0) ? tr / tt : 1.0;
  // SSIM's dynamic range of the float magnitudes |r| (rounding is monotonic: float(max) = max of floats).
  const double L = fmax(static_cast<double>(static_cast<float>(peak)) - static_cast<double>(static_cast<float>(low)), 1e-30);
  out[kC1] = (0.01 * L) * (0.01 * L);
  out[kC2] = (0.03 * L) * (0.03 * L);
}

__global__ void __launch_bounds__(kReduceThreads) errorKernel(const float2* __restrict__ test,
                                                              const float2* __restrict__ ref, long long n,
                                                              const double* out, float* ts, float* rs,
                                                              double* partials) {
  __shared__ double shared[kReduceThreads];
  const double scale = out[kScale];
  double e = 0;
  for (long long i = firstIndex(); i < n; i += gridStride()) {
    const double t = scale * magnitude(test[i]), r = magnitude(ref[i]);
    e += (t - r) * (t - r);
    ts[i] = static_cast<float>(t);
    rs[i] = static_cast<float>(r);
  }
  const double s = blockSum<kReduceThreads>(e, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

/// 1 / (the window's weight inside [0, len)) at position p.
__device__ __forceinline__ double inverseWeightSum(const Window& win, long long p, long long len) {
  double ws = 0;
  for (int i = -kRadius; i <= kRadius; ++i)
    if (p + i >= 0 && p + i < len) ws += win.w[i + kRadius];
  return 1.0 / ws;
}

/// h[k * n + i]: the horizontal Gaussian pass of moment k (0 a, 1 b, 2 a^2, 3 b^2, 4 ab) at voxel i.
__global__ void horizontalKernel(const float* __restrict__ a, const float* __restrict__ b, long long nx, long long n,
                                 Window win, double* h) {
  for (long long i = firstIndex(); i < n; i += gridStride()) {
    const long long x = i % nx, row = i - x;
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0;
    const long long lo = max(-static_cast<long long>(kRadius), -x), hi = min(static_cast<long long>(kRadius), nx - 1 - x);
    for (long long t = lo; t <= hi; ++t) {
      const double va = a[row + x + t], vb = b[row + x + t], wt = win.w[t + kRadius];
      s0 += wt * va;
      s1 += wt * vb;
      s2 += wt * (va * va);
      s3 += wt * (vb * vb);
      s4 += wt * (va * vb);
    }
    const double inv = inverseWeightSum(win, x, nx);
    h[i] = s0 * inv;
    h[n + i] = s1 * inv;
    h[2 * n + i] = s2 * inv;
    h[3 * n + i] = s3 * inv;
    h[4 * n + i] = s4 * inv;
  }
}

__global__ void __launch_bounds__(kReduceThreads) verticalKernel(const double* __restrict__ h, long long nx,
                                                                 long long ny, long long n, Window win,
                                                                 const double* out, double* partials) {
  __shared__ double shared[kReduceThreads];
  const double c1 = out[kC1], c2 = out[kC2];
  double sum = 0;
  for (long long i = firstIndex(); i < n; i += gridStride()) {
    const long long x = i % nx, y = (i / nx) % ny, plane = i - x - y * nx;
    double m[5] = {0, 0, 0, 0, 0};
    for (int t = -kRadius; t <= kRadius; ++t) {
      if (y + t < 0 || y + t >= ny) continue;
      const long long j = plane + (y + t) * nx + x;
      const double wt = win.w[t + kRadius];
#pragma unroll
      for (int k = 0; k < 5; ++k) m[k] += wt * h[k * n + j];
    }
    const double inv = inverseWeightSum(win, y, ny);
    const double ma = m[0] * inv, mb = m[1] * inv;
    const double va = m[2] * inv - ma * ma, vb = m[3] * inv - mb * mb, cov = m[4] * inv - ma * mb;
    sum += ((2 * ma * mb + c1) * (2 * cov + c2)) / ((ma * ma + mb * mb + c1) * (va + vb + c2));
  }
  const double s = blockSum<kReduceThreads>(sum, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

__global__ void __launch_bounds__(kMaxReduceBlocks) finishOneKernel(const double* partials, int count, double* out,
                                                                    int slot) {
  __shared__ double shared[kMaxReduceBlocks];
  const double s = blockSum<kMaxReduceBlocks>(static_cast<int>(threadIdx.x) < count ? partials[threadIdx.x] : 0.0, shared);
  if (threadIdx.x == 0) out[slot] = s;
}

}  // namespace

quality::Metrics CudaQualityOps::compare(const Buffer& test, const Buffer& reference, const Shape& shape,
                                         const quality::CompareOptions& options) {
  const index_t n = shape.size();
  require(n > 0, "compare: the images are empty");
  const float2* pt = be_.elements(test, n, "compare");
  const float2* pr = be_.elements(reference, n, "compare");
  const index_t nx = shape[0], ny = shape[1];
  // Results (kSlots doubles, then two unsigned long long), block partials (5 sums), the float magnitudes
  // and SSIM's horizontal moments.
  auto results = be_.allocate(kSlots * sizeof(double) + 2 * sizeof(unsigned long long));
  auto partials = be_.allocate(5 * kMaxReduceBlocks * sizeof(double));
  auto mags = be_.allocate(2 * static_cast<std::size_t>(n) * sizeof(float));
  auto moments = be_.allocate(5 * static_cast<std::size_t>(n) * sizeof(double));
  auto* out = static_cast<double*>(results->ptr());
  auto* bad = reinterpret_cast<unsigned long long*>(out + kSlots);
  auto* part = static_cast<double*>(partials->ptr());
  auto* ts = static_cast<float*>(mags->ptr());
  float* rs = ts + n;
  auto* h = static_cast<double*>(moments->ptr());
  Window win;
  for (int i = -kRadius; i <= kRadius; ++i) win.w[i + kRadius] = std::exp(-(i * i) / (2 * 1.5 * 1.5));

  double host[kSlots];
  unsigned long long hostBad[2];
  {
    std::lock_guard lock(be_.mutex_);
    be_.activate();
    const cudaStream_t st = be_.stream_.handle;
    const int blocks = sparsity::reduceBlocks(n);
    LARMOR_CUDA_CHECK(cudaMemsetAsync(bad, 0xff, 2 * sizeof(unsigned long long), st));
    sumsKernel<<<blocks, kReduceThreads, 0, st>>>(pt, pr, n, part, bad);
    LARMOR_CUDA_CHECK_LAUNCH();
    finishSumsKernel<<<1, kMaxReduceBlocks, 0, st>>>(part, blocks, out, options.leastSquaresScale);
    LARMOR_CUDA_CHECK_LAUNCH();
    errorKernel<<<blocks, kReduceThreads, 0, st>>>(pt, pr, n, out, ts, rs, part);
    LARMOR_CUDA_CHECK_LAUNCH();
    finishOneKernel<<<1, kMaxReduceBlocks, 0, st>>>(part, blocks, out, kErr);
    LARMOR_CUDA_CHECK_LAUNCH();
    horizontalKernel<<<gridFor(n, be_.launch_), kThreads, 0, st>>>(ts, rs, nx, n, win, h);
    LARMOR_CUDA_CHECK_LAUNCH();
    verticalKernel<<<blocks, kReduceThreads, 0, st>>>(h, nx, ny, n, win, out, part);
    LARMOR_CUDA_CHECK_LAUNCH();
    finishOneKernel<<<1, kMaxReduceBlocks, 0, st>>>(part, blocks, out, kSsim);
    LARMOR_CUDA_CHECK_LAUNCH();
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(host, out, sizeof(host), cudaMemcpyDeviceToHost, st));
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(hostBad, bad, sizeof(hostBad), cudaMemcpyDeviceToHost, st));
    LARMOR_CUDA_CHECK(cudaStreamSynchronize(st));
  }
  require(hostBad[kBadTest] == ULLONG_MAX,
          [&] { return "compare: the test image has a non-finite value at voxel " + std::to_string(hostBad[kBadTest]); });
  require(hostBad[kBadRef] == ULLONG_MAX,
          [&] { return "compare: the reference has a non-finite value at voxel " + std::to_string(hostBad[kBadRef]); });
  require(host[kRr] > 0, "compare: the reference image is all zero");
  quality::Metrics m;
  m.voxels = n;
  m.scale = host[kScale];
  m.nrmse = std::sqrt(host[kErr] / host[kRr]);
  m.percentError = 100.0 * m.nrmse;
  const double mse = host[kErr] / static_cast<double>(n);
  m.psnrDb = mse > 0 ? 20.0 * std::log10(host[kPeak] / std::sqrt(mse)) : std::numeric_limits<double>::infinity();
  m.ssim = host[kSsim] / static_cast<double>(n);
  return m;
}

}  // namespace larmor::cuda
