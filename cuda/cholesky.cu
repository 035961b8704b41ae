// Batched Cholesky solves on the device, in double from float input, for the systems cuSOLVER handles slowly:
// a few (up to kSharedMemoryBatchMax) Hermitian positive definite matrices of n <= 128, GRAPPA's basic kernel at
// 32 coils (Schneider 2008, sec. 4.2.4: four 128 x 128 systems of 96 right-hand sides in the Table 5.1 slice),
// and 1 x 1 systems (GRAPPA's equation weights Psi = 1 / sqrt(p), a few hundred per slice). Everything else goes
// to cuSOLVER (linalg.cu), which the tests compare these kernels against, as they do the CPU twin
// (engine/src/cpu/linalg.cpp, Eigen's LLT).
//
// Factorisation: one block per matrix, its packed lower triangle in shared memory as doubles (132 KB at
// n = 128), right-looking in panels of 8 columns (Golub & Van Loan, Matrix Computations, 4th ed., sec. 4.2.9;
// see choleskyFactorKernel). Solve: a warp per right-hand side, its rows in registers, the factor in shared
// memory. The first kernels here factored column by column (one barrier pair per column, every trailing element
// read and written per column) and solved against shared-memory vectors: 198 + 85 µs of the Table 5.1 slice
// on the H100; these take 132 + 32 µs, where the diagonal blocks' serial chain of
// 128 square roots, divisions and shuffles by one warp is now the largest part.
#include <algorithm>

#include "check.hpp"
#include "cholesky.hpp"

namespace larmor::cuda {

namespace {

constexpr int kCholeskyThreads = 256;
constexpr int kSolveWarps = 8;
/// Columns of a panel (its diagonal block factored by one warp before the block's trailing update), and the
/// register tile of that update (kTileRows x kTileCols elements per thread).
constexpr int kPanel = 8;
constexpr int kTileRows = 4, kTileCols = 2;
/// Rows per lane held in registers by a solving warp: the shared-memory kernels take n <= 32 kRowSlots.
constexpr int kRowSlots = 4;
constexpr index_t kSharedMemoryMaxN = 32 * kRowSlots;
/// Most systems per call taken by the shared-memory kernels: one block factors each matrix, which beats
/// cuSOLVER's batched factorisation for a few (the Table 5.1 slice's four 128 x 128 systems: 0.88 -> 0.83 ms
/// a slice on an H200) and loses for many (a 32-slice batch's 128: 11.6 -> 12.2 ms) with the column kernel;
/// with the blocked kernel the batch takes 10.4-10.7 ms either way, so it stays with cuSOLVER.
constexpr index_t kSharedMemoryBatchMax = 16;
constexpr unsigned kFullWarp = 0xffffffffu;

/// Position of (i, j), i >= j, in the packed lower triangle of an n x n matrix, column by column.
__device__ __forceinline__ int packedAt(int i, int j, int n) { return j * n - (j * (j - 1)) / 2 + (i - j); }
__host__ __device__ constexpr index_t packedSize(index_t n) { return n * (n + 1) / 2; }

/// a -= l conj(m) in four FMAs.
__device__ __forceinline__ void subtractTimesConj(double2& a, const double2& l, const double2& m) {
  a.x = fma(-l.x, m.x, a.x);
  a.x = fma(-l.y, m.y, a.x);
  a.y = fma(-l.y, m.x, a.y);
  a.y = fma(l.x, m.y, a.y);
}

__device__ __forceinline__ double2 shuffle(const double2& v, int lane) {
  return double2{__shfl_sync(kFullWarp, v.x, lane), __shfl_sync(kFullWarp, v.y, lane)};
}

/// One block per matrix e, n <= kSharedMemoryMaxN: its lower triangle (float, column-major, ld) to doubles in
/// shared memory, then L L^H = A right-looking in panels of kPanel columns (Golub & Van Loan, Matrix
/// Computations, 4th ed., sec. 4.2.9): per panel
///  1. warp 0 factors the panel's kPanel x kPanel diagonal block, lane c holding row kb + c in registers
///     (l_cc = sqrt(a_cc), l_ic = a_ic / l_cc, a_ij -= l_ic conj(l_jc); the columns pass by shuffles);
///  2. one thread per row r below it solves its row of the panel against that block:
///     l_rc = (a_rc - sum_{c' < c} l_rc' conj(l_cc')) / l_cc;
///  3. every thread updates kTileRows x kTileCols elements of the trailing lower triangle in registers,
///     a_ij -= sum_c l_ic conj(l_jc) (the warps' tasks: see below).
/// Each element is read and written once per panel instead of once per column, and the work of a column is
/// spread over the block: the column-at-a-time kernel before it was bound by shared-memory traffic and
/// barriers (198 µs for the Table 5.1 slice's systems), a first panel version by its one warp's panel
/// (172 µs). The factor goes back to A's lower triangle (float) and to `factor`
/// (packed doubles, for the solve); info[e] = k + 1 when the leading minor of order k + 1 is not positive
/// definite (cuSOLVER's convention), else 0.
/// Long because: the three numbered panel steps share the shared-memory factor, register rows and barriers.
__global__ void __launch_bounds__(kCholeskyThreads) choleskyFactorKernel(float2* A, index_t ld, index_t stride, int n,
                                                                         double2* factor, int* info) {
  extern __shared__ double2 shared[];
  double2* m = shared;
  double* panelInv = reinterpret_cast<double*>(m + packedSize(n));  // 1 / l_cc of the panel's diagonal block
  int& failedAt = *reinterpret_cast<int*>(panelInv + kPanel);       // the first bad leading minor, or 0
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  float2* a = A + static_cast<index_t>(blockIdx.x) * stride;
  for (int j = warp; j < n; j += warps)
    for (int i = j + lane; i < n; i += 32) {
      const float2 v = a[i + j * ld];
      m[packedAt(i, j, n)] = double2{v.x, v.y};
    }
  if (threadIdx.x == 0) failedAt = 0;
  __syncthreads();
  for (int kb = 0; kb < n; kb += kPanel) {
    const int width = min(kPanel, n - kb), t0 = kb + width;
    if (warp == 0) {
      const int r = kb + lane;
      double2 p[kPanel];
#pragma unroll
      for (int c = 0; c < kPanel; ++c)
        p[c] = c < width && lane < width && lane >= c ? m[packedAt(r, kb + c, n)] : double2{0.0, 0.0};
      int bad = 0;
      double d[kPanel];
#pragma unroll
      for (int c = 0; c < kPanel; ++c) {
        if (c >= width) break;  // uniform over the warp
        const double akk = __shfl_sync(kFullWarp, p[c].x, c);
        if (!(akk > 0.0) || !isfinite(akk)) {
          bad = kb + c + 1;
          break;
        }
        d[c] = sqrt(akk);
        const double inv = 1.0 / d[c];
        if (lane == 0) panelInv[c] = inv;
        if (lane > c && lane < width) p[c] = double2{p[c].x * inv, p[c].y * inv};
#pragma unroll
        for (int j = c + 1; j < kPanel; ++j) {
          if (j >= width) break;
          const double2 ljc = shuffle(p[c], j);
          if (lane >= j && lane < width) subtractTimesConj(p[j], p[c], ljc);
        }
      }
      if (bad) {
        if (lane == 0) failedAt = bad;
      } else if (lane < width) {
#pragma unroll
        for (int c = 0; c < kPanel; ++c)
          if (c <= lane) m[packedAt(r, kb + c, n)] = c == lane ? double2{d[c], 0.0} : p[c];
      }
    }
    __syncthreads();
    if (failedAt) break;  // uniform over the block
    for (int r = t0 + static_cast<int>(threadIdx.x); r < n; r += blockDim.x) {
      double2 l[kPanel];
#pragma unroll
      for (int c = 0; c < kPanel; ++c) {
        if (c >= width) break;
        double2 v = m[packedAt(r, kb + c, n)];
#pragma unroll
        for (int c2 = 0; c2 < c; ++c2) subtractTimesConj(v, l[c2], m[packedAt(kb + c, kb + c2, n)]);
        const double inv = panelInv[c];
        l[c] = double2{v.x * inv, v.y * inv};
        m[packedAt(r, kb + c, n)] = l[c];
      }
    }
    __syncthreads();
    // Warp tasks of 32 rows x 4 kTileCols columns of the trailing lower triangle, those with an element on or
    // below the diagonal, row block by row block; lane (g, q) = (lane / 8, lane % 8) takes rows i0 + q + 8 u
    // and columns j0 + kTileCols g + w (u < kTileRows, w < kTileCols): a group's 8 lanes read 8 consecutive
    // rows of a column (one wavefront), its four groups the same rows of the panel.
    constexpr int taskCols = 4 * kTileCols, perRowBlock = 32 / taskCols;
    const int rest = n - t0, colBlocks = (rest + taskCols - 1) / taskCols;
    int tasks = 0;
    for (int I = 0; 32 * I < rest; ++I) tasks += min(perRowBlock * (I + 1), colBlocks);
    for (int task = warp; task < tasks; task += warps) {
      int I = 0, J = task;
      while (J >= min(perRowBlock * (I + 1), colBlocks)) J -= min(perRowBlock * (I++ + 1), colBlocks);
      const int i0 = t0 + 32 * I + (lane & 7), j0 = t0 + taskCols * J + kTileCols * (lane >> 3);
      double2 acc[kTileRows][kTileCols];
#pragma unroll
      for (int u = 0; u < kTileRows; ++u)
#pragma unroll
        for (int w = 0; w < kTileCols; ++w) {
          const int i = i0 + 8 * u, j = j0 + w;
          acc[u][w] = i < n && j <= i ? m[packedAt(i, j, n)] : double2{0.0, 0.0};
        }
      for (int c = 0; c < width; ++c) {
        double2 li[kTileRows], lj[kTileCols];
#pragma unroll
        for (int u = 0; u < kTileRows; ++u) li[u] = i0 + 8 * u < n ? m[packedAt(i0 + 8 * u, kb + c, n)] : double2{0.0, 0.0};
#pragma unroll
        for (int w = 0; w < kTileCols; ++w) lj[w] = j0 + w < n ? m[packedAt(j0 + w, kb + c, n)] : double2{0.0, 0.0};
#pragma unroll
        for (int u = 0; u < kTileRows; ++u)
#pragma unroll
          for (int w = 0; w < kTileCols; ++w) subtractTimesConj(acc[u][w], li[u], lj[w]);
      }
#pragma unroll
      for (int u = 0; u < kTileRows; ++u)
#pragma unroll
        for (int w = 0; w < kTileCols; ++w) {
          const int i = i0 + 8 * u, j = j0 + w;
          if (i < n && j <= i) m[packedAt(i, j, n)] = acc[u][w];
        }
    }
    __syncthreads();
  }
  const int bad = failedAt;
  if (threadIdx.x == 0) info[blockIdx.x] = bad;
  if (bad) return;
  double2* f = factor + static_cast<index_t>(blockIdx.x) * packedSize(n);
  for (int j = warp; j < n; j += warps)
    for (int i = j + lane; i < n; i += 32) {
      const double2 v = m[packedAt(i, j, n)];
      f[packedAt(i, j, n)] = v;
      a[i + j * ld] = float2{static_cast<float>(v.x), static_cast<float>(v.y)};
    }
}

/// Block (e, g): matrix e's factor into shared memory (and 1 / l_ii), then warp w solves L L^H x = b for
/// right-hand side c = g kSolveWarps + w (column c of B_e, in place) with b's rows in registers (row
/// lane + 32 s): L y = b column by column (y_i = b_i / l_ii, passed by a shuffle, then b_r -= l_ri y_i below
/// it), then L^H x = y from the last row up (x_i = y_i / l_ii, then y_r -= conj(l_ir) x_i above it). Nothing for
/// an entry whose factorisation failed.
__global__ void __launch_bounds__(kSolveWarps * 32) choleskySolveKernel(const double2* factor, const int* info,
                                                                        float2* B, index_t ld, index_t stride, int n,
                                                                        int nrhs) {
  const int e = blockIdx.x;
  if (info[e] != 0) return;
  extern __shared__ double2 shared[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int total = static_cast<int>(packedSize(n));
  double2* L = shared;
  double* invDiag = reinterpret_cast<double*>(shared + total);
  const double2* f = factor + static_cast<index_t>(e) * total;
  for (int q = threadIdx.x; q < total; q += blockDim.x) L[q] = f[q];
  for (int i = threadIdx.x; i < n; i += blockDim.x) invDiag[i] = 1.0 / f[packedAt(i, i, n)].x;
  __syncthreads();
  const int c = blockIdx.y * kSolveWarps + warp;
  if (c >= nrhs) return;
  float2* b = B + static_cast<index_t>(e) * stride + static_cast<index_t>(c) * ld;
  double2 v[kRowSlots];
#pragma unroll
  for (int s = 0; s < kRowSlots; ++s) {
    const int r = lane + 32 * s;
    v[s] = r < n ? double2{b[r].x, b[r].y} : double2{0.0, 0.0};
  }
#pragma unroll
  for (int s = 0; s < kRowSlots; ++s) {
    if (32 * s >= n) break;
    const int count = min(32, n - 32 * s);
    for (int q = 0; q < count; ++q) {
      const int i = 32 * s + q;
      const double inv = invDiag[i];
      const double2 y = double2{__shfl_sync(kFullWarp, v[s].x, q) * inv, __shfl_sync(kFullWarp, v[s].y, q) * inv};
#pragma unroll
      for (int t = s; t < kRowSlots; ++t) {
        const int r = lane + 32 * t;
        if (r > i && r < n) {
          const double2 l = L[packedAt(r, i, n)];
          v[t].x -= l.x * y.x - l.y * y.y;
          v[t].y -= l.x * y.y + l.y * y.x;
        }
      }
      if (lane == q) v[s] = y;
    }
  }
#pragma unroll
  for (int s = kRowSlots - 1; s >= 0; --s) {
    if (32 * s >= n) continue;
    const int count = min(32, n - 32 * s);
    for (int q = count - 1; q >= 0; --q) {
      const int i = 32 * s + q;
      const double inv = invDiag[i];
      const double2 x = double2{__shfl_sync(kFullWarp, v[s].x, q) * inv, __shfl_sync(kFullWarp, v[s].y, q) * inv};
#pragma unroll
      for (int t = 0; t <= s; ++t) {
        const int r = lane + 32 * t;
        if (r < i) {
          const double2 l = L[packedAt(i, r, n)];
          v[t].x -= l.x * x.x + l.y * x.y;  // y_r -= conj(l_ir) x_i
          v[t].y -= l.x * x.y - l.y * x.x;
        }
      }
      if (lane == q) v[s] = x;
    }
  }
#pragma unroll
  for (int s = 0; s < kRowSlots; ++s) {
    const int r = lane + 32 * s;
    if (r < n) b[r] = float2{static_cast<float>(v[s].x), static_cast<float>(v[s].y)};
  }
}

/// 1 x 1 systems, one thread each (GRAPPA's equation weights Psi = 1 / sqrt(p), a few hundred per slice): the
/// same arithmetic as the kernels above (l = sqrt(a), x = (b / l) / l), where cuSOLVER's batched path took
/// about fourteen launches and two conversions for them.
__global__ void choleskySolve1x1Kernel(float2* A, index_t strideA, float2* B, index_t ldB, index_t strideB, int nrhs,
                                       index_t batch, int* info) {
  for (index_t e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < batch;
       e += static_cast<index_t>(gridDim.x) * blockDim.x) {
    float2& a = A[e * strideA];
    const double akk = a.x;
    if (!(akk > 0.0) || !isfinite(akk)) {
      info[e] = 1;
      continue;
    }
    const double d = sqrt(akk), inv = 1.0 / d;
    a = float2{static_cast<float>(d), 0.0f};
    for (int c = 0; c < nrhs; ++c) {
      float2& b = B[e * strideB + c * ldB];
      const double yx = b.x * inv, yy = b.y * inv;
      b = float2{static_cast<float>(yx * inv), static_cast<float>(yy * inv)};
    }
  }
}

/// Shared-memory bytes of the factor and solve kernels for n x n matrices.
std::size_t factorBytes(index_t n) {
  return static_cast<std::size_t>(packedSize(n)) * sizeof(double2) + kPanel * sizeof(double) + sizeof(int);
}
std::size_t solveBytes(index_t n) {
  return static_cast<std::size_t>(packedSize(n)) * sizeof(double2) + static_cast<std::size_t>(n) * sizeof(double);
}


}  // namespace

bool choleskyInSharedMemoryFits(index_t n, index_t nrhs, index_t batch, int optinBytes) {
  const index_t groups = (nrhs + kSolveWarps - 1) / kSolveWarps;
  return batch <= kSharedMemoryBatchMax && n <= kSharedMemoryMaxN &&
         std::max(factorBytes(n), solveBytes(n)) <= static_cast<std::size_t>(optinBytes) && groups <= 65535;
}

std::size_t choleskyFactorBytes(index_t n, index_t batch) {
  return static_cast<std::size_t>(batch * packedSize(n)) * sizeof(double2);
}

void choleskySolveInSharedMemory(const Launch& l, int optinBytes, float2* A, index_t lda, index_t strideA, float2* B,
                                 index_t ldb, index_t strideB, index_t n, index_t nrhs, index_t batch, double2* factor,
                                 int* info) {
  // Per call (cheap, idempotent, right on every device), to the device's largest: another backend's call can
  // then never leave a smaller limit between this one's setting and its launch.
  LARMOR_CUDA_CHECK(cudaFuncSetAttribute(choleskyFactorKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optinBytes));
  LARMOR_CUDA_CHECK(cudaFuncSetAttribute(choleskySolveKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optinBytes));
  const int ni = static_cast<int>(n);
  choleskyFactorKernel<<<static_cast<unsigned>(batch), kCholeskyThreads, factorBytes(n), l.stream>>>(A, lda, strideA,
                                                                                                    ni, factor, info);
  LARMOR_CUDA_CHECK_LAUNCH();
  if (nrhs > 0) {
    const index_t groups = (nrhs + kSolveWarps - 1) / kSolveWarps;
    choleskySolveKernel<<<dim3(static_cast<unsigned>(batch), static_cast<unsigned>(groups)), kSolveWarps * 32,
                          solveBytes(n), l.stream>>>(factor, info, B, ldb, strideB, ni, static_cast<int>(nrhs));
    LARMOR_CUDA_CHECK_LAUNCH();
  }
}

void choleskySolve1x1(const Launch& l, float2* A, index_t strideA, float2* B, index_t ldb, index_t strideB,
                      index_t nrhs, index_t batch, int* info) {
  choleskySolve1x1Kernel<<<gridFor(batch, l), kThreads, 0, l.stream>>>(A, strideA, B, ldb, strideB,
                                                                       static_cast<int>(nrhs), batch, info);
  LARMOR_CUDA_CHECK_LAUNCH();
}

}  // namespace larmor::cuda
