// The exact non-uniform DFT on the GPU: Stone et al.'s F^H d (adjoint, voxel-parallel) and F d
// (forward, sample-parallel) (Stone et al., J Parallel Distrib Comput 68:1307, 2008; Kirk & Hwu ch. 14),
//   adjoint  rho_n = sum_j d_j exp(+2 pi i k_j . r_n),   forward  d_j = sum_n rho_n exp(-2 pi i k_j . r_n),
// raw sums over the definitions of ops/nufft.hpp, for batches of coils. Twin: engine/src/cpu/dft.cpp.
//
// As in the paper the operand streamed past every thread (the samples for F^H d, the image for F d) is
// tiled through on-chip memory: Stone's cmpFhD loads each tile of samples into constant memory from the
// host; here each block loads its tile into shared memory (same broadcast when all lanes read one sample,
// no host round trips, any number of blocks), and the voxel (or sample) each thread owns stays in
// registers. Three trigonometry modes (DftOptions::trig):
//  - Accurate: sincospif on the phase in cycles, whose argument reduction is exact;
//  - Fast: __sincosf, the special-function units (Stone's GPU.FastTrig), on the phase reduced to one turn;
//  - Recurrence: one phasor per sample and run of voxels along x (F^H d: __sincosf on the exactly reduced
//    phase, kRunStart), then along the run (F^H d: V voxels per thread) z_{v+1} = z_v exp(i theta),
//    theta = 2 pi k_x / N_x, a complex rotation (4 flops), or where |sin theta| >= kThreeTermMinSin the
//    three-term (Chebyshev) recurrence z_{v+1} = 2 cos(theta) z_v - z_{v-1} (2 FMA; the recurrence of
//    Goertzel, Amer Math Monthly 65:34, 1958, on a complex sequence): with the datum folded into z, 4 flops
//    per voxel-sample pair instead of 6. A perturbation of z_k reaches z_v scaled by
//    sin((v-k) theta) / sin theta, and a rounding of cos theta moves theta by ~eps / sin theta, so the
//    three-term form is used only away from theta = 0 and pi: |sin theta| >= 0.1, 94 % of uniformly spread
//    theta (float emulation of 32-voxel runs: relative RMS error per term 3.9e-7 by rotations alone, 8.2e-7
//    mixed, largest 1.1e-5; Stone's 128^3 F^H d against float64 at 64 voxels 9.3e-6 -> 8.4e-6, the float sums
//    over the samples dominating; 140 -> 117 ms on the H100). The samples are ordered
//    once per plan, three-term ones first (one loop per kind: ptxas spilled the accumulators when both bodies
//    sat behind a per-sample branch). The CPU twin rotates along whole rows, where the three-term form's
//    error growth (up to the row's length / |sin theta|) would be too large. F d: Horner's rule along each
//    image row, sum_x rho_x s^x = rho_0 + s (rho_1 + s (...)), 4 FMA per voxel. GPU.md measured the rotations
//    at 130 ms for 128^3 voxels x 284,592 samples on the H100 with 1.5e-5 relative error.
// Phases: k.r_n = q.X with q = k/N (cycles per voxel) and integer X = n - c; q is split into a fixed-point
// part whose products with X are exact in float and a small remainder (nufft_math.hpp), so the phase keeps
// ~3e-8 cycles for any |k r|. Without it the float rounding of phases of ~100 cycles (7.6e-6 cycles, 5e-5
// rad) would be the error floor of all three modes.
// Small problems (few rows or few samples) are split over the streamed operand into parts that write
// partial results, summed in a fixed order by a second kernel, so that the GPU is filled.
// Cancellation: where the caller can cancel (a CancelScope, util/cancel_scope.hpp) and a call has more than
// kChunkPairs voxel-sample-coil products, the streamed operand of every part is taken in chunks, one launch each,
// every thread resuming its sums from what the previous chunk wrote (the same additions in the same order: bit
// for bit the one launch's result); the host waits for each chunk and polls the scope between them.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "check.hpp"
#include "larmor/util/cancel_scope.hpp"
#include "cuda_backend.hpp"
#include "nufft_internal.cuh"

namespace larmor::cuda {

namespace {

using nc::i64;

constexpr int kDftThreads = 256;
constexpr int kSampleTile = 512;        // samples per shared-memory tile (F^H d)
constexpr int kImageTileValues = 4096;  // image values per shared-memory tile (F d): 32 KB
constexpr double kTwoPi = 6.283185307179586;
// Products per chunk of a cancellable call: ~50 ms in the accurate mode at ~1.2e12 products/s, so the wait for
// each chunk (~20 us) costs under 0.1 %.
constexpr double kChunkPairs = 6.4e10;

struct DftArgs {
  int n[3];      ///< image extents
  int c[3];      ///< centres floor(N/2)
  i64 voxels;    ///< N0 N1 N2
  i64 m;         ///< samples per coil
  int coils;     ///< coils in this call
  const float4* qa;  ///< per sample {qhi_x, qhi_y, qhi_z, qlo_x}
  const float4* qb;  ///< per sample {qlo_y, qlo_z, cos 2 pi q_x, sin 2 pi q_x}
  const int* order;  ///< sample j of qa/qb is sample order[j] of the data (recurrence: three-term ones first)
  const int* tileThree;  ///< recurrence: of tile t (samples [t kSampleTile, (t + 1) kSampleTile) of qa/qb) the first
                         ///< tileThree[t] take the three-term recurrence, the rest rotations
  // F^H d
  int segments;      ///< runs of V voxels per image row
  i64 rows;          ///< N1 N2
  i64 partLength;    ///< samples (adjoint) or rows (forward) per part
  i64 chunkBegin, chunkEnd;  ///< this launch's share of every part: [chunkBegin, chunkEnd) of its operand
  int resume;                ///< 1: the sums start from what the previous chunk wrote (0: from zero)
  const float2* in;  ///< [m, coils] (adjoint) or [voxels, coils] (forward)
  float2* out;       ///< [voxels, coils] or [m, coils], or partials [part][coils][...]
};

__device__ __forceinline__ float2 cmulf(float2 a, float2 b) {
  return make_float2(fmaf(a.x, b.x, -a.y * b.y), fmaf(a.x, b.y, a.y * b.x));
}

/// exp(sign 2 pi i phase) for a reduced phase (cycles, |phase| <= ~0.5).
template <TrigMode MODE>
__device__ __forceinline__ float2 phasor(float phase) {
  float s, c;
  if constexpr (MODE == TrigMode::Fast) __sincosf(static_cast<float>(kTwoPi) * phase, &s, &c);
  else sincospif(2.f * phase, &s, &c);
  return make_float2(c, s);
}

/// The trigonometry of a run's first phasor in the recurrence mode of F^H d: the special-function units on
/// the exactly reduced phase (|phase| <= 1/2 turn, error ~4e-7; sincospif's polynomial was ~20 % of the
/// kernel's instructions).
constexpr TrigMode kRunStart = TrigMode::Fast;

/// Smallest |sin theta| of a sample whose run uses the three-term recurrence (see the top of the file).
constexpr float kThreeTermMinSin = 0.1f;

/// The phasors z_v = z_0 exp(i v theta) of one sample along a run, step = exp(i theta): by rotations, or
/// (THREE) by z_{v+1} = 2 cos(theta) z_v - z_{v-1}, started from z_{-1} = z_0 conj(step).
template <bool THREE>
struct RunPhasor {
  float2 z, prev, step;
  float twoCos;
  __device__ __forceinline__ RunPhasor(float2 z0, float2 st) : z(z0), step(st) {
    if constexpr (THREE) {
      twoCos = st.x + st.x;
      prev = cmulf(z0, make_float2(st.x, -st.y));
    }
  }
  __device__ __forceinline__ void next() {
    if constexpr (THREE) {
      const float2 n = make_float2(fmaf(twoCos, z.x, -prev.x), fmaf(twoCos, z.y, -prev.y));
      prev = z;
      z = n;
    } else {
      z = cmulf(z, step);
    }
  }
};

/// acc[v] += z0_v, then += z1_v: two samples' runs of the single-coil adjoint, data folded into z.
template <bool THREE, int V>
__device__ __forceinline__ void addTwoRuns(float2 (&acc)[V][1], float2 z0, float2 step0, float2 z1, float2 step1) {
  RunPhasor<THREE> r0(z0, step0);
  RunPhasor<THREE> r1(z1, step1);
#pragma unroll
  for (int v = 0; v < V; ++v) {
    acc[v][0].x += r0.z.x;
    acc[v][0].y += r0.z.y;
    acc[v][0].x += r1.z.x;
    acc[v][0].y += r1.z.y;
    r0.next();
    r1.next();
  }
}

/// acc[v][c] += d[c] z_v for one sample's run (CB == 1: d folded into z0 by the caller, d unused).
template <bool THREE, int V, int CB>
__device__ __forceinline__ void addRun(float2 (&acc)[V][CB], const float2 (&d)[CB], float2 z0, float2 step) {
  RunPhasor<THREE> r(z0, step);
#pragma unroll
  for (int v = 0; v < V; ++v) {
    if constexpr (CB == 1) {
      acc[v][0].x += r.z.x;
      acc[v][0].y += r.z.y;
    } else {
#pragma unroll
      for (int c = 0; c < CB; ++c) {
        acc[v][c].x = fmaf(d[c].x, r.z.x, fmaf(-d[c].y, r.z.y, acc[v][c].x));
        acc[v][c].y = fmaf(d[c].x, r.z.y, fmaf(d[c].y, r.z.x, acc[v][c].y));
      }
    }
    r.next();
  }
}

/// Exact fixed-point part (x) and small remainder (y) of a sample's phase at a run's first voxel (X0, Y, Z).
__device__ __forceinline__ float2 phaseAt(float4 qa, float4 qb, float X0, float Y, float Z) {
  return make_float2(fmaf(qa.x, X0, fmaf(qa.y, Y, qa.z * Z)), fmaf(qa.w, X0, fmaf(qb.x, Y, qb.y * Z)));
}

/// The recurrence mode's F^H d over the tile's samples [from, to), all of one kind (THREE or rotations).
/// One kind per loop: with both bodies behind a per-sample branch ptxas spilled the accumulators (80 registers:
/// 560 bytes of spill stores against 44). Single coil: two samples at a time, two start phasors and two chains in
/// flight per thread (ncu: 16 % of issue cycles without an eligible warp at one); each voxel still adds sample s,
/// then s + 1.
template <bool THREE, int V, int CB>
__device__ __forceinline__ void addRuns(float2 (&acc)[V][CB], const float4* sa, const float4* sb,
                                        const float2 (&sd)[CB][kSampleTile], int from, int to, float X0, float Y,
                                        float Z) {
  int s = from;
  if constexpr (CB == 1) {
    for (; s + 1 < to; s += 2) {
      const float4 qa0 = sa[s], qb0 = sb[s], qa1 = sa[s + 1], qb1 = sb[s + 1];
      const float2 p0 = phaseAt(qa0, qb0, X0, Y, Z), p1 = phaseAt(qa1, qb1, X0, Y, Z);
      const float2 z0 = cmulf(sd[0][s], phasor<kRunStart>(nc::reducedPhase(p0.x, p0.y)));
      const float2 z1 = cmulf(sd[0][s + 1], phasor<kRunStart>(nc::reducedPhase(p1.x, p1.y)));
      addTwoRuns<THREE>(acc, z0, make_float2(qb0.z, qb0.w), z1, make_float2(qb1.z, qb1.w));
    }
  }
  for (; s < to; ++s) {
    const float4 qa = sa[s], qb = sb[s];
    const float2 p = phaseAt(qa, qb, X0, Y, Z);
    float2 z = phasor<kRunStart>(nc::reducedPhase(p.x, p.y));
    float2 d[CB];
#pragma unroll
    for (int c = 0; c < CB; ++c) d[c] = sd[c][s];
    if constexpr (CB == 1) z = cmulf(d[0], z);  // fold the datum into the run: 4 or 6 flops per voxel
    addRun<THREE>(acc, d, z, make_float2(qb.z, qb.w));
  }
}

/// F^H d: thread = run of V voxels of one row, CB coils; block y = part of the samples, z = coil group.
/// Three blocks of 256 threads per multiprocessor (80 registers): 146 -> 140 ms against two (128 registers) for
/// Stone's 128^3 problem on the H100, where the rotation chains left 16 % of issue cycles without a ready warp.
template <TrigMode MODE, int V, int CB>
__global__ void __launch_bounds__(kDftThreads, 3) dftAdjointKernel(DftArgs a) {
  __shared__ float4 sa[kSampleTile], sb[kSampleTile];
  __shared__ float2 sd[CB][kSampleTile];
  const i64 t = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x;
  const i64 row = t / a.segments;
  const int seg = static_cast<int>(t - row * a.segments);
  const bool active = row < a.rows;
  const int yIndex = active ? static_cast<int>(row % a.n[1]) : 0;
  const int zIndex = active ? static_cast<int>(row / a.n[1]) : 0;
  const float X0 = static_cast<float>(seg * V - a.c[0]);
  const float Y = static_cast<float>(yIndex - a.c[1]);
  const float Z = static_cast<float>(zIndex - a.c[2]);
  const int coil0 = blockIdx.z * CB;
  const int nc = min(CB, a.coils - coil0);
  const i64 partBegin = static_cast<i64>(blockIdx.y) * a.partLength;
  const i64 begin = partBegin + a.chunkBegin;
  const i64 end = min(a.m, partBegin + min(a.partLength, a.chunkEnd));
  // Partial sums (several parts) go to [part][coil][voxel]; a single part writes the image directly.
  float2* const dstBase = a.out + static_cast<i64>(blockIdx.y) * a.coils * a.voxels + row * a.n[0];

  float2 acc[V][CB];
#pragma unroll
  for (int v = 0; v < V; ++v)
#pragma unroll
    for (int c = 0; c < CB; ++c) {
      const int x = seg * V + v;
      acc[v][c] = a.resume && active && c < nc && x < a.n[0] ? dstBase[static_cast<i64>(coil0 + c) * a.voxels + x]
                                                             : make_float2(0.f, 0.f);
    }

  for (i64 tile = begin; tile < end; tile += kSampleTile) {
    const int count = static_cast<int>(min(static_cast<i64>(kSampleTile), end - tile));
    __syncthreads();
    for (int i = threadIdx.x; i < count; i += blockDim.x) {
      sa[i] = __ldg(a.qa + tile + i);
      sb[i] = __ldg(a.qb + tile + i);
      const i64 j = __ldg(a.order + tile + i);
#pragma unroll
      for (int c = 0; c < CB; ++c)
        sd[c][i] = c < nc ? __ldg(a.in + j + static_cast<i64>(coil0 + c) * a.m) : make_float2(0.f, 0.f);
    }
    __syncthreads();
    if (!active) continue;
    if constexpr (MODE == TrigMode::Recurrence) {
      const int split = __ldg(a.tileThree + tile / kSampleTile);
      addRuns<true>(acc, sa, sb, sd, 0, split, X0, Y, Z);
      addRuns<false>(acc, sa, sb, sd, split, count, X0, Y, Z);
    } else {
      for (int s = 0; s < count; ++s) {
        const float4 qa = sa[s], qb = sb[s];
        const float2 phase = phaseAt(qa, qb, X0, Y, Z);
        const float hi = phase.x, lo = phase.y;
        float2 d[CB];
#pragma unroll
        for (int c = 0; c < CB; ++c) d[c] = sd[c][s];
#pragma unroll
        for (int v = 0; v < V; ++v) {
          const float fv = static_cast<float>(v);
          const float2 e = phasor<MODE>(nc::reducedPhase(fmaf(qa.x, fv, hi), fmaf(qa.w, fv, lo)));
#pragma unroll
          for (int c = 0; c < CB; ++c) {
            acc[v][c].x = fmaf(d[c].x, e.x, fmaf(-d[c].y, e.y, acc[v][c].x));
            acc[v][c].y = fmaf(d[c].x, e.y, fmaf(d[c].y, e.x, acc[v][c].y));
          }
        }
      }
    }
  }
  if (!active) return;
#pragma unroll
  for (int c = 0; c < CB; ++c) {
    if (c >= nc) continue;
    float2* dst = dstBase + static_cast<i64>(coil0 + c) * a.voxels;
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const int x = seg * V + v;
      if (x < a.n[0]) dst[x] = acc[v][c];
    }
  }
}

/// F d: thread = one sample of one coil (block z); block y = part of the image rows.
template <TrigMode MODE>
__global__ void __launch_bounds__(kDftThreads) dftForwardKernel(DftArgs a, int tileRows) {
  __shared__ __align__(16) float2 image[kImageTileValues];
  const i64 j = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool active = j < a.m;
  const int coil = blockIdx.z;
  const i64 partBegin = static_cast<i64>(blockIdx.y) * a.partLength;
  const i64 rowBegin = partBegin + a.chunkBegin;
  const i64 rowEnd = min(a.rows, partBegin + min(a.partLength, a.chunkEnd));
  float2* const dst = a.out + (static_cast<i64>(blockIdx.y) * a.coils + coil) * a.m;
  const float4 qa = active ? __ldg(a.qa + j) : make_float4(0.f, 0.f, 0.f, 0.f);
  const float4 qb = active ? __ldg(a.qb + j) : make_float4(0.f, 0.f, 0.f, 0.f);
  const float2 sigma = make_float2(qb.z, -qb.w);  // exp(-2 pi i q_x)
  const float xFirst = static_cast<float>(-a.c[0]);
  const int n0 = a.n[0];
  const float2* src = a.in + static_cast<i64>(coil) * a.voxels;
  float2 acc = a.resume && active ? dst[__ldg(a.order + j)] : make_float2(0.f, 0.f);

  for (i64 r0 = rowBegin; r0 < rowEnd; r0 += tileRows) {
    const int rows = static_cast<int>(min(static_cast<i64>(tileRows), rowEnd - r0));
    __syncthreads();
    for (int i = threadIdx.x; i < rows * n0; i += blockDim.x) image[i] = src[r0 * n0 + i];
    __syncthreads();
    if (!active) continue;
    for (int r = 0; r < rows; ++r) {
      const i64 row = r0 + r;
      const float Y = static_cast<float>(static_cast<int>(row % a.n[1]) - a.c[1]);
      const float Z = static_cast<float>(static_cast<int>(row / a.n[1]) - a.c[2]);
      // Phase of the row's first voxel, split as in the adjoint.
      const float hi = fmaf(qa.x, xFirst, fmaf(qa.y, Y, qa.z * Z));
      const float lo = fmaf(qa.w, xFirst, fmaf(qb.x, Y, qb.y * Z));
      const float2* line = image + r * n0;
      if constexpr (MODE == TrigMode::Recurrence) {
        float2 p = make_float2(0.f, 0.f);
        if ((n0 & 1) == 0) {
          const float4* pairs = reinterpret_cast<const float4*>(line);
          for (int x = n0 / 2 - 1; x >= 0; --x) {
            const float4 v = pairs[x];
            p = cmulf(p, sigma);
            p.x += v.z;
            p.y += v.w;
            p = cmulf(p, sigma);
            p.x += v.x;
            p.y += v.y;
          }
        } else {
          for (int x = n0 - 1; x >= 0; --x) {
            p = cmulf(p, sigma);
            p.x += line[x].x;
            p.y += line[x].y;
          }
        }
        float2 e = phasor<TrigMode::Accurate>(nc::reducedPhase(hi, lo));
        e.y = -e.y;
        const float2 q = cmulf(p, e);
        acc.x += q.x;
        acc.y += q.y;
      } else {
        for (int x = 0; x < n0; ++x) {
          const float fx = static_cast<float>(x);
          float2 e = phasor<MODE>(nc::reducedPhase(fmaf(qa.x, fx, hi), fmaf(qa.w, fx, lo)));
          const float2 v = line[x];
          acc.x = fmaf(v.x, e.x, fmaf(v.y, e.y, acc.x));  // v * conj(e)
          acc.y = fmaf(v.y, e.x, fmaf(-v.x, e.y, acc.y));
        }
      }
    }
  }
  if (active) dst[__ldg(a.order + j)] = acc;
}

/// out[i] = sum_p partial[p][i], p in order.
__global__ void sumPartsKernel(const float2* partial, i64 size, int parts, float2* out) {
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < size;
       i += static_cast<i64>(gridDim.x) * blockDim.x) {
    float2 s = partial[i];
    for (int p = 1; p < parts; ++p) {
      const float2 v = partial[static_cast<i64>(p) * size + i];
      s.x += v.x;
      s.y += v.y;
    }
    out[i] = s;
  }
}

template <TrigMode MODE, int V, int CB>
void launchAdjoint(const DftArgs& a, dim3 grid, cudaStream_t s) {
  dftAdjointKernel<MODE, V, CB><<<grid, kDftThreads, 0, s>>>(a);
  LARMOR_CUDA_CHECK_LAUNCH();
}

template <TrigMode MODE>
void launchAdjointMode(const DftArgs& a, int cb, dim3 grid, cudaStream_t s) {
  if (cb == 4) launchAdjoint<MODE, 8, 4>(a, grid, s);
  else if (cb == 2) launchAdjoint<MODE, 16, 2>(a, grid, s);
  else launchAdjoint<MODE, 32, 1>(a, grid, s);
}

class CudaDftPlan final : public NufftPlan {
 public:
  CudaDftPlan(CudaBackend& be, const NufftGeometry& geo, const DftOptions& o) : be_(be), trig_(o.trig) {
    require(geo.dims == 2 || geo.dims == 3, "exact DFT: dims must be 2 or 3, got " + std::to_string(geo.dims));
    for (int d = 0; d < 3; ++d) {
      n_[d] = d < geo.dims ? static_cast<int>(geo.image[d]) : 1;
      require(n_[d] >= 1 && (d < geo.dims ? geo.image[d] : 1) <= 65536,
              "exact DFT: image size must be 1 to 65536 in each dimension");
    }
    require(geo.dims == 3 || geo.image[2] <= 1, "exact DFT: a 2D plan needs image[2] = 1");
    require(n_[0] <= kImageTileValues,
            "exact DFT on the GPU: image rows up to " + std::to_string(kImageTileValues) + " voxels");
    require(geo.trajectory.size() % 3 == 0, "exact DFT: the trajectory needs three coordinates per sample");
    m_ = geo.samples();
    require(m_ >= 1, "exact DFT: the trajectory is empty");
    require(m_ < (index_t{1} << 31), "exact DFT: more than 2^31 samples");
    voxels_ = static_cast<i64>(n_[0]) * n_[1] * n_[2];
    multiprocessors_ = be.info().multiprocessors;

    // Largest |X| any thread uses: the adjoint's runs of up to 32 voxels may pass the row's end.
    double maxX[3];
    for (int d = 0; d < 3; ++d) maxX[d] = std::max(n_[d] / 2, n_[d] - 1 - n_[d] / 2 + (d == 0 ? 32 : 0));
    const float* k = geo.trajectory.data();
    double bound = 0;
    for (index_t j = 0; j < m_; ++j) {
      double b = 0;
      for (int d = 0; d < geo.dims; ++d) {
        const double kd = k[3 * j + d];
        require(std::isfinite(kd), [&] { return "exact DFT: trajectory sample " + std::to_string(j) + " is not finite"; });
        b += std::fabs(kd / n_[d]) * maxX[d];
      }
      bound = std::max(bound, b);
    }
    const int e = nc::phaseExponent(bound);
    const std::size_t m = static_cast<std::size_t>(m_);
    std::vector<float4> qa(m), qb(m);
    for (index_t j = 0; j < m_; ++j) {
      float hi[3] = {0, 0, 0}, lo[3] = {0, 0, 0};
      for (int d = 0; d < geo.dims; ++d) nc::splitPhase(static_cast<double>(k[3 * j + d]) / n_[d], e, &hi[d], &lo[d]);
      const double qx = static_cast<double>(k[3 * j]) / n_[0];
      const double turn = qx - std::nearbyint(qx);
      qa[static_cast<std::size_t>(j)] = make_float4(hi[0], hi[1], hi[2], lo[0]);
      qb[static_cast<std::size_t>(j)] = make_float4(lo[1], lo[2], static_cast<float>(std::cos(kTwoPi * turn)),
                                                    static_cast<float>(std::sin(kTwoPi * turn)));
    }
    // The recurrence takes the samples of each kind in a loop of their own: in every tile of kSampleTile those
    // with |sin theta| >= kThreeTermMinSin first, then the rotations, each kind in the trajectory's order (a fixed
    // order: deterministic sums). The rotations (~1.5x the cost of a three-term step) are spread evenly over the
    // tiles, so that the parts of a split call (runAdjoint: whole tiles each) cost the same: with all of them at
    // the end, the last part of a GPU.Multi slab of 128^3 took ~3 % longer than the others.
    std::vector<int> order(m);
    for (std::size_t j = 0; j < m; ++j) order[j] = static_cast<int>(j);
    if (trig_ == TrigMode::Recurrence) {
      const auto three = [&](int j) { return std::fabs(qb[static_cast<std::size_t>(j)].w) >= kThreeTermMinSin; };
      const auto split = std::stable_partition(order.begin(), order.end(), three);
      const std::vector<int> threes(order.begin(), split), rotations(split, order.end());
      const i64 tiles = (m_ + kSampleTile - 1) / kSampleTile, r = static_cast<i64>(rotations.size());
      std::vector<int> tileThree(static_cast<std::size_t>(std::max<i64>(tiles, 1)), 0);
      std::size_t next3 = 0, nextR = 0, at = 0;
      for (i64 t = 0; t < tiles; ++t) {
        const i64 begin = t * kSampleTile, end = std::min<i64>(m_, begin + kSampleTile);
        const i64 rot = r * end / m_ - r * begin / m_;  // telescoping: every rotation placed once
        tileThree[static_cast<std::size_t>(t)] = static_cast<int>(end - begin - rot);
        for (i64 i = 0; i < end - begin - rot; ++i) order[at++] = threes[next3++];
        for (i64 i = 0; i < rot; ++i) order[at++] = rotations[nextR++];
      }
      tileThree_.upload(be_, tileThree);
      std::vector<float4> pa(m), pb(m);
      for (std::size_t j = 0; j < m; ++j) {
        pa[j] = qa[static_cast<std::size_t>(order[j])];
        pb[j] = qb[static_cast<std::size_t>(order[j])];
      }
      qa.swap(pa);
      qb.swap(pb);
    }
    qa_.upload(be_, qa);
    qb_.upload(be_, qb);
    order_.upload(be_, order);
  }

  index_t samples() const override { return m_; }
  Shape imageShape() const override { return Shape{n_[0], n_[1], n_[2]}; }

  void adjoint(const Buffer& samples, Buffer& image, index_t batch) override {
    require(batch >= 1, "exact DFT adjoint: batch must be at least 1");
    const float2* in = elements(samples, m_ * batch, "sample");
    float2* out = elements(image, voxels_ * batch, "image");
    std::lock_guard lock(be_.mutex());
    LARMOR_CUDA_CHECK(cudaSetDevice(be_.device()));
    runAdjoint(in, out, static_cast<int>(batch));
  }

  void forward(const Buffer& image, Buffer& samples, index_t batch) override {
    require(batch >= 1, "exact DFT forward: batch must be at least 1");
    const float2* in = elements(image, voxels_ * batch, "image");
    float2* out = elements(samples, m_ * batch, "sample");
    std::lock_guard lock(be_.mutex());
    LARMOR_CUDA_CHECK(cudaSetDevice(be_.device()));
    runForward(in, out, static_cast<int>(batch));
  }

  /// forward(adjoint(w)): the Pipe-Menon step through the exact transform.
  void spreadInterpolate(const Buffer& weights, Buffer& out) override {
    const float2* in = elements(weights, m_, "weight");
    float2* o = elements(out, m_, "output");
    std::lock_guard lock(be_.mutex());
    LARMOR_CUDA_CHECK(cudaSetDevice(be_.device()));
    image_.reserve(be_, static_cast<std::size_t>(voxels_));
    runAdjoint(in, image_.data(), 1);
    runForward(image_.data(), o, 1);
  }

 private:
  /// Device pointer of a buffer of this backend holding at least `n` complex values.
  const float2* elements(const Buffer& b, index_t n, const char* what) const {
    const auto* d = dynamic_cast<const DeviceBuffer*>(&b);
    require(d && d->allocator() == &be_.allocator(), std::string("exact DFT: the ") + what +
                                                          " buffer belongs to another backend (" + be_.info().id +
                                                          " expected)");
    if (n < 0 || static_cast<std::size_t>(n) * sizeof(float2) > b.bytes())
      throw Error(std::string("exact DFT: the ") + what + " buffer holds " +
                  std::to_string(b.bytes() / sizeof(float2)) + " complex values, " + std::to_string(n) + " are needed");
    return static_cast<const float2*>(b.ptr());
  }
  float2* elements(Buffer& b, index_t n, const char* what) {
    return const_cast<float2*>(elements(static_cast<const Buffer&>(b), n, what));
  }

  DftArgs baseArgs(int coils) const {
    DftArgs a{};
    for (int d = 0; d < 3; ++d) {
      a.n[d] = n_[d];
      a.c[d] = n_[d] / 2;
    }
    a.voxels = voxels_;
    a.m = m_;
    a.coils = coils;
    a.qa = qa_.data();
    a.qb = qb_.data();
    a.order = order_.data();
    a.tileThree = tileThree_.data();
    a.rows = static_cast<i64>(n_[1]) * n_[2];
    return a;
  }

  void runAdjoint(const float2* in, float2* out, int coils) {
    // Up to 32 accumulators per thread: 32 voxels of 1 coil, 16 of 2, 8 of 4.
    const int cb = coils >= 4 ? 4 : coils >= 2 ? 2 : 1;
    const int v = 32 / cb;
    DftArgs a = baseArgs(coils);
    a.segments = (n_[0] + v - 1) / v;
    a.in = in;
    const i64 threads = a.rows * a.segments;
    const i64 blocksX = (threads + kDftThreads - 1) / kDftThreads;
    const int groups = (coils + cb - 1) / cb;
    // Split the samples when the voxels alone give less than a block per multiprocessor.
    const i64 tiles = (m_ + kSampleTile - 1) / kSampleTile;
    a.partLength = partUnits(blocksX * groups, tiles) * kSampleTile;
    const i64 parts = std::max<i64>(1, (m_ + a.partLength - 1) / a.partLength);
    a.out = partialOutput(parts, coils * voxels_, out);
    const dim3 grid(static_cast<unsigned>(blocksX), static_cast<unsigned>(parts), static_cast<unsigned>(groups));
    cudaStream_t s = be_.stream();
    const double pairs = static_cast<double>(voxels_) * static_cast<double>(m_) * coils;
    launchChunks(a, chunkLength(pairs, a.partLength, kSampleTile), [&](const DftArgs& c) {
      switch (trig_) {
        case TrigMode::Accurate: launchAdjointMode<TrigMode::Accurate>(c, cb, grid, s); break;
        case TrigMode::Fast: launchAdjointMode<TrigMode::Fast>(c, cb, grid, s); break;
        case TrigMode::Recurrence: launchAdjointMode<TrigMode::Recurrence>(c, cb, grid, s); break;
      }
    });
    if (parts > 1) sumParts(scratch_.data(), voxels_ * coils, static_cast<int>(parts), out);
  }

  void runForward(const float2* in, float2* out, int coils) {
    DftArgs a = baseArgs(coils);
    a.in = in;
    const int tileRows = std::max(1, kImageTileValues / n_[0]);
    const i64 blocksX = (m_ + kDftThreads - 1) / kDftThreads;
    a.partLength = partUnits(blocksX * coils, a.rows);
    const i64 parts = (a.rows + a.partLength - 1) / a.partLength;
    a.out = partialOutput(parts, coils * m_, out);
    const dim3 grid(static_cast<unsigned>(blocksX), static_cast<unsigned>(parts), static_cast<unsigned>(coils));
    cudaStream_t s = be_.stream();
    const double pairs = static_cast<double>(voxels_) * static_cast<double>(m_) * coils;
    launchChunks(a, chunkLength(pairs, a.partLength, 1), [&](const DftArgs& c) {
      switch (trig_) {
        case TrigMode::Accurate: dftForwardKernel<TrigMode::Accurate><<<grid, kDftThreads, 0, s>>>(c, tileRows); break;
        case TrigMode::Fast: dftForwardKernel<TrigMode::Fast><<<grid, kDftThreads, 0, s>>>(c, tileRows); break;
        case TrigMode::Recurrence: dftForwardKernel<TrigMode::Recurrence><<<grid, kDftThreads, 0, s>>>(c, tileRows); break;
      }
      LARMOR_CUDA_CHECK_LAUNCH();
    });
    if (parts > 1) sumParts(scratch_.data(), m_ * coils, static_cast<int>(parts), out);
  }

  /// The streamed operand's share of every part per launch, a multiple of `unit` (sample tiles, rows): the whole
  /// part, or where the caller can cancel and the call has more than kChunkPairs products, about that many.
  i64 chunkLength(double pairs, i64 partLength, i64 unit) const {
    if (!CancelScope::current() || pairs <= kChunkPairs) return partLength;
    const i64 chunks = static_cast<i64>(std::ceil(pairs / kChunkPairs));
    const i64 units = (partLength + unit - 1) / unit;
    return std::max<i64>(1, (units + chunks - 1) / chunks) * unit;
  }

  /// launch(a) for each chunk [from, from + chunk) of every part's operand, in order, each chunk's sums resumed
  /// from the previous one's; between chunks the host waits for the GPU and polls the caller's CancelScope.
  template <class Launch>
  void launchChunks(DftArgs a, i64 chunk, const Launch& launch) {
    const Progress* cancel = CancelScope::current();
    for (i64 from = 0; from < a.partLength; from += chunk) {
      a.chunkBegin = from;
      a.chunkEnd = std::min(a.partLength, from + chunk);
      a.resume = from > 0 ? 1 : 0;
      launch(a);
      if (a.chunkEnd == a.partLength) break;
      LARMOR_CUDA_CHECK(cudaStreamSynchronize(be_.stream()));
      if (CancelScope::requested(cancel)) throw Cancelled();
    }
  }

  /// Part length, in units of the streamed operand (sample tiles for F^H d, image rows for F d), such that
  /// `blocks` blocks per part fill the GPU: the operand is split only when the output alone gives less
  /// than a block per multiprocessor (at most `units` and 65535 parts).
  i64 partUnits(i64 blocks, i64 units) const {
    i64 parts = 1;
    if (blocks < multiprocessors_)
      parts = std::clamp<i64>((multiprocessors_ + blocks - 1) / blocks, 1, std::max<i64>(units, 1));
    parts = std::min<i64>(parts, 65535);
    return (units + parts - 1) / parts;
  }

  /// Where the kernels write: `out` itself, or (split into parts) scratch for `parts` partial results of
  /// `size` elements each, summed into `out` afterwards.
  float2* partialOutput(i64 parts, i64 size, float2* out) {
    if (parts <= 1) return out;
    scratch_.reserve(be_, static_cast<std::size_t>(parts * size));
    return scratch_.data();
  }

  void sumParts(const float2* partial, i64 size, int parts, float2* out) {
    const unsigned blocks =
        static_cast<unsigned>(std::clamp<i64>((size + kDftThreads - 1) / kDftThreads, 1, 8 * multiprocessors_));
    sumPartsKernel<<<blocks, kDftThreads, 0, be_.stream()>>>(partial, size, parts, out);
    LARMOR_CUDA_CHECK_LAUNCH();
  }

  CudaBackend& be_;
  TrigMode trig_;
  int n_[3] = {1, 1, 1};
  i64 voxels_ = 1;
  index_t m_ = 0;
  int multiprocessors_ = 1;
  nc::DeviceVector<int> tileThree_;  ///< recurrence: the three-term samples at the start of each tile (DftArgs)
  nc::DeviceVector<float4> qa_, qb_;
  nc::DeviceVector<int> order_;  ///< the data's sample index of each entry of qa_/qb_
  nc::DeviceVector<float2> scratch_, image_;
};

}  // namespace

std::unique_ptr<NufftPlan> CudaBackend::makeDftPlan(const NufftGeometry& geometry, const DftOptions& options) {
  activate();
  return std::make_unique<CudaDftPlan>(*this, geometry, options);
}

}  // namespace larmor::cuda
