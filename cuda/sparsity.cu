// Total variation on the GPU: TV(u) and prox_{t TV} by the fast gradient projection (FGP) on the dual
// field (Beck & Teboulle, IEEE TIP 18:2419, 2009; isotropic projection as Chambolle 2004, eq. 9), complex
// images. Twin: engine/src/cpu/sparsity.cpp, the reference, which has the derivation; formulas, step size
// and the component-major dual layout: larmor/backend/sparsity_ops.hpp.
//
// One FGP step is one kernel, a coalesced pass over the volume (threads run along dim 0):
//   p' = P(r + gamma D u) with u = x - t D^H r;  r' = p' + beta (p' - p);  p = p'
// where each thread evaluates u at its voxel and its forward neighbours (the primal's 3-point backward
// stencil of r, recomputed rather than stored: the two-kernel form, a primal pass writing u and a dual pass
// reading it, cost twice the launches, ~3.5 us each at 256^2 on the H100, 20 a prox), and r is read from one
// buffer and written to the other (a neighbour may still read the old r). A last primal pass writes
// x - t D^H p over x. The momentum weights beta are computed on the host in
// double before the loop (they depend on the iteration count only), so nothing comes back from the device
// inside the prox. Workspaces u and r are device buffers kept by CudaSparsityOps. TV's sum is the
// deterministic double reduction of sparsity_internal.cuh.
#include <cmath>
#include <string>
#include <utility>

#include "check.hpp"
#include "cuda_backend.hpp"
#include "sparsity_internal.cuh"

namespace larmor::cuda {
namespace {

using sparsity::Volume;

struct Stencil {
  Volume v;
  unsigned stride[3];
  bool active[3];
  float weight[3];
  double weightSquares;  ///< sum of w_d^2 over the differenced dims
};

/// A dim is differenced when it is longer than 1 and its weight is > 0 (weighted TV: sparsity_ops.hpp).
Stencil stencilOf(const std::array<index_t, 3>& d, const SparsityOps::TvWeights& w) {
  Stencil s{};
  s.v = sparsity::volumeOf(d.data());
  s.weightSquares = 0;
  for (int a = 0; a < 3; ++a) {
    s.stride[a] = static_cast<unsigned>(kernels::axisStride(d.data(), a));
    s.active[a] = d[a] > 1 && w[a] > 0.f;
    s.weight[a] = w[a];
    if (s.active[a]) s.weightSquares += double(w[a]) * w[a];
  }
  return s;
}

__device__ __forceinline__ unsigned firstIndex() { return blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ unsigned gridStride() { return gridDim.x * blockDim.x; }

/// u = x - t D_w^H r at voxel j (coordinates c), the stencil sum along dims 0, 1, 2
/// (backward neighbour added, own value subtracted, each times w_d). Shared by the FGP step and the last primal pass.
__device__ __forceinline__ float2 primalAt(const float2* x, const float2* __restrict__ r, const Stencil& s,
                                           unsigned j, const int c[3], float t) {
  float re = 0.f, im = 0.f;
#pragma unroll
  for (int d = 0; d < 3; ++d) {
    if (!s.active[d]) continue;
    const float2* rd = r + static_cast<size_t>(d) * s.v.voxels;
    if (c[d] > 0) {
      const float2 w = rd[j - s.stride[d]];
      re += s.weight[d] * w.x;
      im += s.weight[d] * w.y;
    }
    if (c[d] < s.v.n[d] - 1) {
      const float2 w = rd[j];
      re -= s.weight[d] * w.x;
      im -= s.weight[d] * w.y;
    }
  }
  const float2 xj = x[j];
  return make_float2(xj.x - t * re, xj.y - t * im);
}

/// out = x - t D^H q (out may be x: each thread reads x only at its own voxel).
__global__ void primalKernel(float2* out, const float2* x, const float2* __restrict__ q, Stencil s, float t) {
  for (unsigned i = firstIndex(); i < s.v.voxels; i += gridStride()) {
    int c[3];
    sparsity::split(s.v, i, c);
    out[i] = primalAt(x, q, s, i, c, t);
  }
}

/// One FGP step: p' = P(rIn + gamma D u), u = x - t D^H rIn; rOut = p' + beta (p' - p); p = p'.
__global__ void fgpStepKernel(float2* __restrict__ p, float2* __restrict__ rOut, const float2* __restrict__ rIn,
                              const float2* __restrict__ x, Stencil s, float t, float gamma, float beta) {
  for (unsigned i = firstIndex(); i < s.v.voxels; i += gridStride()) {
    int c[3];
    sparsity::split(s.v, i, c);
    const float2 ui = primalAt(x, rIn, s, i, c, t);
    float2 q[3];
    float norm2 = 0.f;
#pragma unroll
    for (int d = 0; d < 3; ++d) {
      if (!s.active[d]) continue;
      float gx = 0.f, gy = 0.f;
      if (c[d] < s.v.n[d] - 1) {
        int cn[3] = {c[0], c[1], c[2]};
        ++cn[d];
        const float2 un = primalAt(x, rIn, s, i + s.stride[d], cn, t);
        gx = s.weight[d] * (un.x - ui.x);
        gy = s.weight[d] * (un.y - ui.y);
      }
      const float2 rd = rIn[static_cast<size_t>(d) * s.v.voxels + i];
      q[d] = make_float2(rd.x + gamma * gx, rd.y + gamma * gy);
      norm2 += q[d].x * q[d].x + q[d].y * q[d].y;
    }
    const float f = kernels::unitBallFactor(norm2);
#pragma unroll
    for (int d = 0; d < 3; ++d) {
      if (!s.active[d]) continue;
      const size_t j = static_cast<size_t>(d) * s.v.voxels + i;
      const float2 next = make_float2(f * q[d].x, f * q[d].y);
      const float2 old = p[j];
      rOut[j] = make_float2(next.x + beta * (next.x - old.x), next.y + beta * (next.y - old.y));
      p[j] = next;
    }
  }
}

/// partials[block].x = the block's share of sum_v sqrt(sum_d |D_d u(v)|^2), in double.
__global__ void __launch_bounds__(sparsity::kReduceThreads) tvPartialKernel(const float2* __restrict__ u, Stencil s,
                                                                            double2* partials) {
  __shared__ double shared[sparsity::kReduceThreads];
  double sum = 0;
  for (unsigned i = firstIndex(); i < s.v.voxels; i += gridStride()) {
    int c[3];
    sparsity::split(s.v, i, c);
    const float2 ui = u[i];
    double s2 = 0;
    for (int d = 0; d < 3; ++d) {
      if (!s.active[d] || c[d] == s.v.n[d] - 1) continue;
      const float2 un = u[i + s.stride[d]];
      const float dx = s.weight[d] * (un.x - ui.x), dy = s.weight[d] * (un.y - ui.y);
      s2 += static_cast<double>(dx) * dx + static_cast<double>(dy) * dy;
    }
    sum += sqrt(s2);
  }
  const double total = sparsity::blockSum<sparsity::kReduceThreads>(sum, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = double2{total, 0.0};
}

}  // namespace

float2* CudaSparsityOps::workspace(int which, index_t elements) {
  const std::size_t bytes = static_cast<std::size_t>(elements) * sizeof(float2);
  auto& w = work_[which];
  if (!w || w->bytes() < bytes) {
    w.reset();  // back to the allocator's cache first, so a larger image reuses its memory
    w = be_.allocate(bytes);
  }
  return static_cast<float2*>(w->ptr());
}

void CudaSparsityOps::tvProx(Buffer& x, const Shape& image, double t, int iterations, Buffer& dual,
                             const TvWeights& w) {
  checkWeights(w, "tv prox");
  const Stencil s = stencilOf(imageDims(image, "tv prox"), w);
  require(iterations >= 1, "tv prox: iterations must be >= 1, got " + std::to_string(iterations));
  require(t >= 0 && std::isfinite(t), "tv prox: t must be finite and >= 0");
  float2* px = be_.elements(x, s.v.voxels, "tv prox");
  float2* pp = be_.elements(dual, tvDualElements(image), "tv prox dual");
  require(static_cast<void*>(px) != static_cast<void*>(pp), "tv prox: the dual field cannot be the image");
  if (t == 0 || s.weightSquares == 0) return;
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  const cudaStream_t stream = be_.stream_.handle;
  // The momentum field r, read from one buffer and written to the other each step.
  float2* r = workspace(1, 3 * static_cast<index_t>(s.v.voxels));
  float2* rNext = workspace(0, 3 * static_cast<index_t>(s.v.voxels));
  for (int d = 0; d < 3; ++d)
    if (s.active[d])
      LARMOR_CUDA_CHECK(cudaMemcpyAsync(r + static_cast<size_t>(d) * s.v.voxels, pp + static_cast<size_t>(d) * s.v.voxels,
                                        s.v.voxels * sizeof(float2), cudaMemcpyDeviceToDevice, stream));
  const unsigned grid = gridFor(s.v.voxels, be_.launch_);
  const auto ts = static_cast<float>(t);
  const auto gamma = static_cast<float>(kernels::fgpStep(s.weightSquares, t));
  double tk = 1.0;
  for (int k = 0; k < iterations; ++k) {
    const double tNext = 0.5 * (1.0 + std::sqrt(1.0 + 4.0 * tk * tk));
    fgpStepKernel<<<grid, kThreads, 0, stream>>>(pp, rNext, r, px, s, ts, gamma, static_cast<float>((tk - 1.0) / tNext));
    LARMOR_CUDA_CHECK_LAUNCH();
    std::swap(r, rNext);
    tk = tNext;
  }
  primalKernel<<<grid, kThreads, 0, stream>>>(px, px, pp, s, ts);
  LARMOR_CUDA_CHECK_LAUNCH();
}

double CudaSparsityOps::totalVariation(const Buffer& x, const Shape& image, const TvWeights& w) {
  checkWeights(w, "total variation");
  const Stencil s = stencilOf(imageDims(image, "total variation"), w);
  const float2* pu = be_.elements(x, s.v.voxels, "total variation");
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  const cudaStream_t stream = be_.stream_.handle;
  auto* partials = static_cast<double2*>(be_.scratch_.ptr);
  const int blocks = sparsity::reduceBlocks(s.v.voxels);
  tvPartialKernel<<<blocks, sparsity::kReduceThreads, 0, stream>>>(pu, s, partials);
  LARMOR_CUDA_CHECK_LAUNCH();
  sparsity::finishSum<<<1, kMaxReduceBlocks, 0, stream>>>(partials, blocks, partials + kMaxReduceBlocks);
  LARMOR_CUDA_CHECK_LAUNCH();
  return be_.readResult().x;
}

}  // namespace larmor::cuda
