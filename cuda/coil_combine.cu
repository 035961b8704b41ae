// Adaptive coil combination on the GPU (Walsh, Gmitro, Marcellin, MRM 43:682, 2000): per voxel the coil
// covariance R = sum_{window} x x^H (C x C, Hermitian), its dominant eigenvector v by power iteration, and
// out = v^H x at the voxel, with the phase of v fixed so that the first coil's component is real and
// positive (larmor/backend/coil_combine_ops.hpp). Twin: engine/src/cpu/coil_combine.cpp. The window spans
// offsets -h .. h, h = floor(window / 2), along each dimension (along x and y only in 2D, dims[2] == 1),
// clipped at the image border: the CPU's box (an even window is widened by one), so both backends combine
// over the same voxels.
//
// A group of GS = next power of two >= C threads serves one voxel; thread b owns column b of R in
// registers (R[a][b] for every a: 2 GS floats), so the covariance is formed without any shared writes
// (for each window voxel the group's C values are exchanged through shared memory and each thread adds
// x_a conj(x_b) to its column) and R v is a column-wise product: (R v)_b = sum_a R[b][a] v_a =
// sum_a conj(R[a][b]) v_a with v broadcast from shared memory. Up to 64 coils (128 registers for a
// column); each block holds 256 / GS voxels. Loops have the same trip count in every group (window voxels
// outside the image contribute zeros; iterations stop when every voxel of the block has converged), so
// the block-wide barriers are safe.
#include <algorithm>
#include <cmath>
#include <mutex>

#include "check.hpp"
#include "cuda_backend.hpp"
#include "larmor/kernels/kernel_math.hpp"

namespace larmor::cuda {

namespace {

constexpr int kCombineThreads = 256;
constexpr int kMaxIterations = kernels::kPowerIterations;  // the CPU's count (kernel_math.hpp)
constexpr float kTolerance2 = 1e-12f;  // squared change of the unit eigenvector (CPU: 1e-14 in double)

struct CombineArgs {
  int n[3];
  long long voxels;
  int coils;
  int window;
  const float2* in;  ///< [voxels, coils, batch]
  float2* out;       ///< [voxels, batch]
};

// Long because: correlation, power iteration and phase share the exchange arrays and a barrier at every step.
template <int GS>
__global__ void __launch_bounds__(kCombineThreads) adaptiveCombineKernel(CombineArgs a) {
  constexpr int kGroups = kCombineThreads / GS;
  __shared__ float2 xs[kGroups][GS];   // exchanged coil values / the eigenvector
  __shared__ float red[kGroups][GS];   // reductions
  const int group = threadIdx.x / GS, b = threadIdx.x % GS;
  const long long voxel = static_cast<long long>(blockIdx.x) * kGroups + group;
  const bool valid = voxel < a.voxels;
  const bool lane = valid && b < a.coils;
  const long long batch = blockIdx.y;
  const float2* images = a.in + batch * a.coils * a.voxels;
  int x = 0, y = 0, z = 0;
  if (valid) {
    x = static_cast<int>(voxel % a.n[0]);
    y = static_cast<int>((voxel / a.n[0]) % a.n[1]);
    z = static_cast<int>(voxel / (static_cast<long long>(a.n[0]) * a.n[1]));
  }
  const int h = a.window / 2, span = 2 * h + 1;
  const int hz = a.n[2] > 1 ? h : 0, spanZ = 2 * hz + 1;

  float2 col[GS];
#pragma unroll
  for (int q = 0; q < GS; ++q) col[q] = make_float2(0.f, 0.f);

  for (int dz = 0; dz < spanZ; ++dz)
    for (int dy = 0; dy < span; ++dy)
      for (int dx = 0; dx < span; ++dx) {
        const int ux = x + dx - h, uy = y + dy - h, uz = z + dz - hz;
        const bool inside = ux >= 0 && ux < a.n[0] && uy >= 0 && uy < a.n[1] && uz >= 0 && uz < a.n[2];
        float2 mine = make_float2(0.f, 0.f);
        if (lane && inside)
          mine = images[static_cast<long long>(b) * a.voxels + (static_cast<long long>(uz) * a.n[1] + uy) * a.n[0] + ux];
        xs[group][b] = mine;
        __syncthreads();
#pragma unroll
        for (int q = 0; q < GS; ++q) {
          const float2 xa = xs[group][q];
          // R[q][b] += x_q conj(x_b)
          col[q].x += xa.x * mine.x + xa.y * mine.y;
          col[q].y += xa.y * mine.x - xa.x * mine.y;
        }
        __syncthreads();
      }

  // Power iteration as the CPU does it (engine/src/cpu/coil_combine.cpp): from the column of R with the
  // largest diagonal entry (the first such), at most kMaxIterations steps. Where R has a clear dominant
  // eigenvector (the object) any start converges to it; in noise-only windows the eigenvalues are close and
  // the vector reached depends on the start and the step count, so both backends use the same ones.
  float diag = 0.f;
#pragma unroll
  for (int q = 0; q < GS; ++q)
    if (q == b) diag = col[q].x;
  red[group][b] = lane ? diag : -1.f;
  __syncthreads();
  int best = 0;
  for (int q = 1; q < GS; ++q)
    if (red[group][q] > red[group][best]) best = q;
  __syncthreads();
  if (b == best) {
#pragma unroll
    for (int q = 0; q < GS; ++q) xs[group][q] = col[q];  // R[q][best]
  }
  __syncthreads();
  float2 v = lane ? xs[group][b] : make_float2(0.f, 0.f);
  red[group][b] = v.x * v.x + v.y * v.y;
  __syncthreads();
  {
    float norm2 = 0.f;
    for (int q = 0; q < GS; ++q) norm2 += red[group][q];
    if (norm2 > 0.f) {
      const float inv = rsqrtf(norm2);
      v = make_float2(v.x * inv, v.y * inv);
    } else {
      v = make_float2(b == 0 && lane ? 1.f : 0.f, 0.f);  // R = 0: e_0, as the CPU
    }
  }
  __syncthreads();
  for (int it = 0; it < kMaxIterations; ++it) {
    xs[group][b] = v;
    __syncthreads();
    float2 yb = make_float2(0.f, 0.f);
#pragma unroll
    for (int q = 0; q < GS; ++q) {
      const float2 vq = xs[group][q];
      // conj(R[q][b]) v_q
      yb.x += col[q].x * vq.x + col[q].y * vq.y;
      yb.y += col[q].x * vq.y - col[q].y * vq.x;
    }
    red[group][b] = lane ? yb.x * yb.x + yb.y * yb.y : 0.f;
    __syncthreads();
    float norm2 = 0.f;
    for (int q = 0; q < GS; ++q) norm2 += red[group][q];
    const float inv = norm2 > 0.f ? rsqrtf(norm2) : 0.f;
    const float2 next = norm2 > 0.f ? make_float2(yb.x * inv, yb.y * inv) : v;  // R v = 0: stop where it is
    __syncthreads();
    red[group][b] = (next.x - v.x) * (next.x - v.x) + (next.y - v.y) * (next.y - v.y);
    __syncthreads();
    float change = 0.f;
    for (int q = 0; q < GS; ++q) change += red[group][q];
    v = lane ? next : make_float2(0.f, 0.f);
    if (__syncthreads_and(change <= kTolerance2)) break;
  }

  // Phase: the first coil's component real and positive; then out = v^H x at the voxel.
  xs[group][b] = v;
  __syncthreads();
  const float2 v0 = xs[group][0];
  const float m0 = sqrtf(v0.x * v0.x + v0.y * v0.y);
  const float2 ph = m0 > 0.f ? make_float2(v0.x / m0, -v0.y / m0) : make_float2(1.f, 0.f);  // conj(v0)/|v0|
  const float2 vb = make_float2(v.x * ph.x - v.y * ph.y, v.x * ph.y + v.y * ph.x);
  float2 xb = make_float2(0.f, 0.f);
  if (lane) xb = images[static_cast<long long>(b) * a.voxels + voxel];
  __syncthreads();
  // conj(v_b) x_b, summed over the group in a fixed order.
  xs[group][b] = make_float2(vb.x * xb.x + vb.y * xb.y, vb.x * xb.y - vb.y * xb.x);
  __syncthreads();
  if (valid && b == 0) {
    float2 s = make_float2(0.f, 0.f);
    for (int q = 0; q < GS; ++q) {
      s.x += xs[group][q].x;
      s.y += xs[group][q].y;
    }
    a.out[batch * a.voxels + voxel] = s;
  }
}

template <int GS>
void launchCombine(const CombineArgs& a, long long batch, cudaStream_t s) {
  constexpr int groups = kCombineThreads / GS;
  const dim3 grid(static_cast<unsigned>((a.voxels + groups - 1) / groups), static_cast<unsigned>(batch));
  adaptiveCombineKernel<GS><<<grid, kCombineThreads, 0, s>>>(a);
  LARMOR_CUDA_CHECK_LAUNCH();
}

}  // namespace

void CudaCoilCombineOps::adaptiveCombine(Buffer& out, const Buffer& in, const index_t dims[3], index_t coils, index_t batch,
                                  int window) {
  require(dims[0] >= 1 && dims[1] >= 1 && dims[2] >= 1, "adaptive combine: image dimensions must be positive");
  require(coils >= 1 && coils <= 64, "adaptive combine on the GPU: 1 to 64 coils, got " + std::to_string(coils));
  require(batch >= 1 && batch <= 65535, "adaptive combine: batch must be 1 to 65535");
  require(window >= 1 && window <= 64, "adaptive combine: window must be 1 to 64, got " + std::to_string(window));
  require(dims[0] < (1 << 30) && dims[1] < (1 << 30) && dims[2] < (1 << 30), "adaptive combine: image too large");
  const index_t voxels = dims[0] * dims[1] * dims[2];
  const float2* pi = be_.elements(in, voxels * coils * batch, "adaptiveCombine");
  float2* po = be_.elements(out, voxels * batch, "adaptiveCombine");
  require(static_cast<const void*>(po) != static_cast<const void*>(pi) || voxels == 0,
          "cuda backend: adaptiveCombine cannot write over the coil images");
  if (voxels == 0) return;
  CombineArgs a;
  for (int d = 0; d < 3; ++d) a.n[d] = static_cast<int>(dims[d]);
  a.voxels = voxels;
  a.coils = static_cast<int>(coils);
  a.window = window;
  a.in = pi;
  a.out = po;
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  cudaStream_t s = be_.stream_.handle;
  if (coils <= 1) launchCombine<1>(a, batch, s);
  else if (coils <= 2) launchCombine<2>(a, batch, s);
  else if (coils <= 4) launchCombine<4>(a, batch, s);
  else if (coils <= 8) launchCombine<8>(a, batch, s);
  else if (coils <= 16) launchCombine<16>(a, batch, s);
  else if (coils <= 32) launchCombine<32>(a, batch, s);
  else launchCombine<64>(a, batch, s);
}

}  // namespace larmor::cuda
