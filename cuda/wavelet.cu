// The Daubechies-4 wavelet prior on the GPU: the orthonormal periodic multi-level DWT, its prox with cycle
// spinning and the l1 norm of the detail bands (Daubechies, CPAM 41:909, 1988; Mallat, IEEE PAMI 11:674,
// 1989; Figueiredo & Nowak, IEEE TIP 12:906, 2003). Twin: engine/src/cpu/wavelet.cpp, the reference;
// geometry, shift and layout: larmor/backend/sparsity_ops.hpp; taps and the synthesis gather:
// larmor/kernels/sparsity_math.hpp.
//
// Every pass is a kernel whose threads run along dim 0, so loads and stores coalesce (along dim 0 itself
// the analysis reads with stride 2, still within the same cache lines). A filtering pass cannot work in
// place (a thread's inputs are other threads' outputs), so it reads the approximation block from one
// buffer and writes it to another; after the passes of a level the block is back in the first buffer (an
// even number of passes, or one copy of the block after an odd number), where the finer detail bands
// stay. The synthesis is a gather (two taps of each band per output), so no atomics and the same sums in
// the same order as the CPU. The prox is pad+shift, the levels, the soft threshold, the inverse levels and
// crop+unshift: no host round trip; waveletL1 ends in the deterministic double reduction.
#include <cmath>
#include <string>

#include "check.hpp"
#include "cuda_backend.hpp"
#include "sparsity_internal.cuh"

namespace larmor::cuda {
namespace {

using kernels::WaveletGeometry;
using sparsity::Volume;

__device__ __forceinline__ unsigned firstIndex() { return blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ unsigned gridStride() { return gridDim.x * blockDim.x; }

struct Taps {
  float h[4], g[4];
};

Taps taps() {
  Taps f;
  for (int j = 0; j < 4; ++j) {
    f.h[j] = static_cast<float>(kernels::d4Low(j));
    f.g[j] = static_cast<float>(kernels::d4High(j));
  }
  return f;
}

struct Strides {
  unsigned s[3];  // of the padded array
};

Strides stridesOf(const WaveletGeometry& geo) {
  return {{1u, static_cast<unsigned>(geo.padded[0]), static_cast<unsigned>(geo.padded[0] * geo.padded[1])}};
}

__device__ __forceinline__ unsigned offset(const Strides& st, const int c[3]) {
  return c[0] * st.s[0] + c[1] * st.s[1] + c[2] * st.s[2];
}

/// One analysis level along dim d of the block: threads over the block with extent m/2 along d.
__global__ void analysisKernel(float2* __restrict__ out, const float2* __restrict__ in, Volume work, Strides st,
                               int d, int m, Taps f) {
  const int half = m / 2;
  for (unsigned i = firstIndex(); i < work.voxels; i += gridStride()) {
    int c[3];
    sparsity::split(work, i, c);
    const int k = c[d];
    float2 a = make_float2(0.f, 0.f), det = make_float2(0.f, 0.f);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      c[d] = (2 * k + j) % m;
      const float2 v = in[offset(st, c)];
      a.x += f.h[j] * v.x;
      a.y += f.h[j] * v.y;
      det.x += f.g[j] * v.x;
      det.y += f.g[j] * v.y;
    }
    c[d] = k;
    out[offset(st, c)] = a;
    c[d] = half + k;
    out[offset(st, c)] = det;
  }
}

/// One synthesis level along dim d: threads over the whole block, each gathers its two taps of each band.
__global__ void synthesisKernel(float2* __restrict__ out, const float2* __restrict__ in, Volume work, Strides st,
                                int d, int m, Taps f) {
  const int half = m / 2;
  for (unsigned i = firstIndex(); i < work.voxels; i += gridStride()) {
    int c[3];
    sparsity::split(work, i, c);
    const int n = c[d];
    float2 s = make_float2(0.f, 0.f);
    for (int j = n & 1; j < 4; j += 2) {
      const int k = ((n - j + m) / 2) % half;
      c[d] = k;
      const float2 a = in[offset(st, c)];
      c[d] = half + k;
      const float2 det = in[offset(st, c)];
      s.x += f.h[j] * a.x;
      s.y += f.h[j] * a.y;
      s.x += f.g[j] * det.x;
      s.y += f.g[j] * det.y;
    }
    c[d] = n;
    out[offset(st, c)] = s;
  }
}

__global__ void copyBlockKernel(float2* __restrict__ out, const float2* __restrict__ in, Volume block, Strides st) {
  for (unsigned i = firstIndex(); i < block.voxels; i += gridStride()) {
    int c[3];
    sparsity::split(block, i, c);
    const unsigned o = offset(st, c);
    out[o] = in[o];
  }
}

__device__ __forceinline__ int wrapBack(int c, int s, int n) { return c >= s ? c - s : c - s + n; }

/// w = pad(S x): w[c] = x[(c - s) mod N] inside the image, 0 in the padding.
__global__ void padShiftKernel(float2* __restrict__ w, const float2* __restrict__ x, Volume padded,
                               WaveletGeometry geo, int s0, int s1, int s2) {
  const int s[3] = {s0, s1, s2};
  for (unsigned i = firstIndex(); i < padded.voxels; i += gridStride()) {
    int c[3];
    sparsity::split(padded, i, c);
    bool inside = true;
    int src[3];
#pragma unroll
    for (int d = 0; d < 3; ++d) {
      const int n = static_cast<int>(geo.dims[d]);
      inside = inside && c[d] < n;
      src[d] = c[d] < n ? wrapBack(c[d], s[d], n) : 0;
    }
    w[i] = inside ? x[src[0] + geo.dims[0] * (src[1] + geo.dims[1] * src[2])] : make_float2(0.f, 0.f);
  }
}

/// x = S^-1 crop(w): x[v] = w[(v + s) mod N].
__global__ void cropUnshiftKernel(float2* __restrict__ x, const float2* __restrict__ w, Volume image,
                                  WaveletGeometry geo, int s0, int s1, int s2) {
  const int s[3] = {s0, s1, s2};
  for (unsigned i = firstIndex(); i < image.voxels; i += gridStride()) {
    int c[3];
    sparsity::split(image, i, c);
    int src[3];
#pragma unroll
    for (int d = 0; d < 3; ++d) src[d] = (c[d] + s[d]) % image.n[d];
    x[i] = w[src[0] + geo.padded[0] * (src[1] + geo.padded[1] * src[2])];
  }
}

__global__ void softThresholdKernel(float2* __restrict__ w, Volume padded, WaveletGeometry geo, float t) {
  for (unsigned i = firstIndex(); i < padded.voxels; i += gridStride()) {
    int c[3];
    sparsity::split(padded, i, c);
    if (kernels::inCoarseBand(geo, c[0], c[1], c[2])) continue;
    const float2 v = w[i];
    const float k = kernels::softFactor(v.x, v.y, t);
    w[i] = make_float2(k * v.x, k * v.y);
  }
}

__global__ void __launch_bounds__(sparsity::kReduceThreads) l1PartialKernel(const float2* __restrict__ w,
                                                                            Volume padded, WaveletGeometry geo,
                                                                            double2* partials) {
  __shared__ double shared[sparsity::kReduceThreads];
  double sum = 0;
  for (unsigned i = firstIndex(); i < padded.voxels; i += gridStride()) {
    int c[3];
    sparsity::split(padded, i, c);
    if (kernels::inCoarseBand(geo, c[0], c[1], c[2])) continue;
    const float2 v = w[i];
    sum += sqrt(static_cast<double>(v.x) * v.x + static_cast<double>(v.y) * v.y);
  }
  const double total = sparsity::blockSum<sparsity::kReduceThreads>(sum, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = double2{total, 0.0};
}

/// The levels of Psi (or Psi^H) on `data` (the padded array), with `other` (same size) as the ping-pong
/// partner; the result is in `data`. Queued on the backend's stream.
void transformLevels(float2* data, float2* other, const WaveletGeometry& geo, bool inverse, const Launch& launch) {
  const Strides st = stridesOf(geo);
  const Taps f = taps();
  for (int step = 0; step < geo.levels; ++step) {
    const int level = inverse ? geo.levels - 1 - step : step;
    const std::int64_t ext[3] = {geo.block(0, level), geo.block(1, level), geo.block(2, level)};
    float2* cur = data;
    float2* next = other;
    int passes = 0;
    for (int k = 0; k < 3; ++k) {
      const int d = inverse ? 2 - k : k;
      if (!geo.transformed[d]) continue;
      std::int64_t work[3] = {ext[0], ext[1], ext[2]};
      if (!inverse) work[d] /= 2;
      const Volume wv = sparsity::volumeOf(work);
      const unsigned grid = gridFor(wv.voxels, launch);
      if (inverse)
        synthesisKernel<<<grid, kThreads, 0, launch.stream>>>(next, cur, wv, st, d, static_cast<int>(ext[d]), f);
      else
        analysisKernel<<<grid, kThreads, 0, launch.stream>>>(next, cur, wv, st, d, static_cast<int>(ext[d]), f);
      LARMOR_CUDA_CHECK_LAUNCH();
      std::swap(cur, next);
      ++passes;
    }
    if (passes % 2 == 1) {  // the block is in `other`: back to `data`, next to the finer bands
      const Volume bv = sparsity::volumeOf(ext);
      copyBlockKernel<<<gridFor(bv.voxels, launch), kThreads, 0, launch.stream>>>(data, other, bv, st);
      LARMOR_CUDA_CHECK_LAUNCH();
    }
  }
}

}  // namespace

void CudaSparsityOps::waveletTransform(Buffer& data, const Shape& image, bool inverse) {
  const WaveletGeometry geo = waveletGeometry(image);
  (void)sparsity::volumeOf(geo.padded);
  float2* pd = be_.elements(data, geo.paddedVoxels(), "wavelet transform");
  if (geo.levels == 0) return;
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  transformLevels(pd, workspace(3, geo.paddedVoxels()), geo, inverse, be_.launch_);
}

void CudaSparsityOps::waveletProx(Buffer& x, const Shape& image, double t, const std::array<index_t, 3>& shift) {
  const WaveletGeometry geo = waveletGeometry(image);
  require(t >= 0 && std::isfinite(t), "wavelet prox: t must be finite and >= 0");
  int s[3];
  for (int d = 0; d < 3; ++d) {
    require(shift[static_cast<std::size_t>(d)] >= 0 && shift[static_cast<std::size_t>(d)] < geo.dims[d],
            "wavelet prox: shift " + std::to_string(shift[static_cast<std::size_t>(d)]) + " along dim " +
                std::to_string(d) + " is outside [0, " + std::to_string(geo.dims[d]) + ")");
    s[d] = geo.transformed[d] ? static_cast<int>(shift[static_cast<std::size_t>(d)]) : 0;
  }
  const Volume padded = sparsity::volumeOf(geo.padded), img = sparsity::volumeOf(geo.dims);
  float2* px = be_.elements(x, geo.voxels(), "wavelet prox");
  if (t == 0 || geo.levels == 0) return;
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  const Launch& l = be_.launch_;
  float2* a = workspace(2, geo.paddedVoxels());
  float2* b = workspace(3, geo.paddedVoxels());
  padShiftKernel<<<gridFor(padded.voxels, l), kThreads, 0, l.stream>>>(a, px, padded, geo, s[0], s[1], s[2]);
  LARMOR_CUDA_CHECK_LAUNCH();
  transformLevels(a, b, geo, false, l);
  softThresholdKernel<<<gridFor(padded.voxels, l), kThreads, 0, l.stream>>>(a, padded, geo, static_cast<float>(t));
  LARMOR_CUDA_CHECK_LAUNCH();
  transformLevels(a, b, geo, true, l);
  cropUnshiftKernel<<<gridFor(img.voxels, l), kThreads, 0, l.stream>>>(px, a, img, geo, s[0], s[1], s[2]);
  LARMOR_CUDA_CHECK_LAUNCH();
}

double CudaSparsityOps::waveletL1(const Buffer& x, const Shape& image) {
  const WaveletGeometry geo = waveletGeometry(image);
  const Volume padded = sparsity::volumeOf(geo.padded);
  const float2* px = be_.elements(x, geo.voxels(), "wavelet l1");
  if (geo.levels == 0) return 0.0;
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  const Launch& l = be_.launch_;
  float2* a = workspace(2, geo.paddedVoxels());
  float2* b = workspace(3, geo.paddedVoxels());
  padShiftKernel<<<gridFor(padded.voxels, l), kThreads, 0, l.stream>>>(a, px, padded, geo, 0, 0, 0);
  LARMOR_CUDA_CHECK_LAUNCH();
  transformLevels(a, b, geo, false, l);
  auto* partials = static_cast<double2*>(be_.scratch_.ptr);
  const int blocks = sparsity::reduceBlocks(padded.voxels);
  l1PartialKernel<<<blocks, sparsity::kReduceThreads, 0, l.stream>>>(a, padded, geo, partials);
  LARMOR_CUDA_CHECK_LAUNCH();
  sparsity::finishSum<<<1, kMaxReduceBlocks, 0, l.stream>>>(partials, blocks, partials + kMaxReduceBlocks);
  LARMOR_CUDA_CHECK_LAUNCH();
  return be_.readResult().x;
}

}  // namespace larmor::cuda
