// Batched dense linear algebra on the device (GRAPPA calibration and filling, coil compression), the
// Hermitian eigen-decomposition of ESPIRiT's Gram matrix (cusolverDnZheevd, double), and the
// index-table moves gather/scatter. cuBLAS and cuSOLVER handles live in CudaBackend::linalgState, created on
// first use and bound to the backend's stream, so all of it queues behind the backend's other work.
//
// Precision follows the CPU backend (engine/src/cpu/linalg.cpp, its twin), which the GPU is tested against:
//  - products in complex float (cublasCgemmStridedBatched), except reduction-shaped ones (inner dimension
//    larger than both output dimensions: GRAPPA's A A^H and B A^H) which are converted to double and run
//    as cublasZgemmStridedBatched: their rounding is amplified by the ill-conditioned solve (Schneider
//    2008, sec. 5.3.3). On Hopper FP64 tensor cores make ZGEMM about as fast as CGEMM; the conversions
//    touch the operands once.
//  - the Cholesky factorisation and solves in double: with float products and a float Cholesky the
//    weights were 7e-5 from the float64 reference on the Table 5.1 case, 1.2e-5 with these choices. A few
//    matrices per call (kSharedMemoryBatchMax) of n <= 128 (GRAPPA's basic kernel at 32 coils) are factored
//    by one block each (right-looking in panels of 8 columns: the panel by one warp in registers, the trailing
//    update in register tiles; the factor kept as doubles in shared memory) and solved by a warp per
//    right-hand side (forward, then backward substitution, the right-hand side in registers, the factor in
//    shared memory); 1 x 1 systems by a thread each; the others by cuSOLVER
//    (cusolverDnZpotrf / ZpotrfBatched, cublasZtrsmBatched or cusolverDnZpotrsBatched for one right-hand
//    side). cuSOLVER's batched factorisation and cuBLAS's batched triangular solves took ~0.3 ms of the 1 ms
//    Table 5.1 slice for four 128 x 128 systems of 96 right-hand sides (ncu, docs/perf.md session 11); the
//    kernels here take 0.16 ms (factor 0.13, solve 0.03; session 15).
#include <cublas_v2.h>
#include <cusolverDn.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "check.hpp"
#include "cuda_backend.hpp"

namespace larmor::cuda {

namespace {

std::string str(index_t v) { return std::to_string(v); }

[[noreturn]] void throwCublas(cublasStatus_t s, const char* call, const char* file, int line) {
  throw Error(std::string("cuBLAS error at ") + baseName(file) + ":" + std::to_string(line) + ": " +
              cublasGetStatusString(s) + " (" + call + ")");
}
[[noreturn]] void throwCusolver(cusolverStatus_t s, const char* call, const char* file, int line) {
  throw Error(std::string("cuSOLVER error at ") + baseName(file) + ":" + std::to_string(line) + ": status " +
              std::to_string(static_cast<int>(s)) + " (" + call + ")");
}

#define LARMOR_CUBLAS_CHECK(call)                                                          \
  do {                                                                                     \
    const cublasStatus_t larmor_blas_st_ = (call);                                         \
    if (larmor_blas_st_ != CUBLAS_STATUS_SUCCESS) throwCublas(larmor_blas_st_, #call, __FILE__, __LINE__); \
  } while (0)
#define LARMOR_CUSOLVER_CHECK(call)                                                        \
  do {                                                                                     \
    const cusolverStatus_t larmor_sol_st_ = (call);                                        \
    if (larmor_sol_st_ != CUSOLVER_STATUS_SUCCESS) throwCusolver(larmor_sol_st_, #call, __FILE__, __LINE__); \
  } while (0)

/// The library handles of one backend. Destroyed with the backend (its last owner), after the backend's
/// stream: cuBLAS is given its workspace from the backend's allocator (cublasSetWorkspace), so it owns no
/// memory tied to that stream, and the deleter only makes the device current and releases the handles.
struct LinalgState {
  int device = 0;
  cublasHandle_t blas = nullptr;
  cusolverDnHandle_t solver = nullptr;
  std::shared_ptr<DeviceAllocator> allocator;
  DeviceAllocator::Block workspace;
  ~LinalgState() {
    (void)cudaSetDevice(device);
    if (solver) (void)cusolverDnDestroy(solver);
    if (blas) (void)cublasDestroy(blas);
    if (allocator && workspace.ptr) allocator->release(workspace);
    (void)cudaGetLastError();
  }
};

/// cuBLAS's recommended workspace on Hopper (cuBLAS guide, cublasSetWorkspace): 32 MiB.
constexpr std::size_t kCublasWorkspaceBytes = std::size_t{32} << 20;

/// A device block for the duration of one op; returned to the allocator when the op has queued its work
/// (the allocator hands it out again only to work queued later on the same stream).
class Scratch {
 public:
  Scratch(DeviceAllocator& a, std::size_t bytes) : alloc_(a), block_(a.allocate(std::max<std::size_t>(bytes, 16))) {}
  ~Scratch() { alloc_.release(block_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <class T>
  T* as() const { return static_cast<T*>(block_.ptr); }

 private:
  DeviceAllocator& alloc_;
  DeviceAllocator::Block block_;
};

/// One past the last element a batch of matrices touches.
index_t extentOf(const MatrixBatch& m, index_t batch) {
  if (m.rows == 0 || m.cols == 0 || batch == 0) return 0;
  return (batch - 1) * m.stride + (m.cols - 1) * m.ld + m.rows;
}

void checkOperand(const char* op, const char* name, const Buffer& buf, const MatrixBatch& m, index_t rows,
                  index_t cols, index_t batch) {
  const std::string where = std::string("cuda backend: ") + op + ": " + name;
  require(m.rows == rows && m.cols == cols, where + " is stored as " + str(m.rows) + "x" + str(m.cols) +
                                                " but the operation needs " + str(rows) + "x" + str(cols));
  require(m.ld >= std::max<index_t>(1, rows), where + " has leading dimension " + str(m.ld) + " < its " +
                                                  str(rows) + " rows");
  require(m.stride >= 0, where + " has a negative batch stride");
  const index_t last = extentOf(m, batch);
  require(last <= static_cast<index_t>(buf.bytes() / sizeof(float2)),
          where + " needs " + str(last) + " elements, its buffer holds " + str(static_cast<index_t>(buf.bytes() / 8)));
}

void checkOutputEntriesDisjoint(const char* op, const char* name, const MatrixBatch& m, index_t batch) {
  if (batch <= 1 || m.rows == 0 || m.cols == 0) return;
  const index_t extent = (m.cols - 1) * m.ld + m.rows;
  const bool sequential = m.stride >= extent;
  const bool interleaved = m.stride >= m.rows && (batch - 1) * m.stride + m.rows <= m.ld;
  require(sequential || interleaved, std::string("cuda backend: ") + op + ": the batch entries of " + name +
                                         " overlap (stride " + str(m.stride) + ", ld " + str(m.ld) + ")");
}

void requireInt(index_t v, const char* what) {
  require(v <= std::numeric_limits<int>::max(), std::string("cuda backend: ") + what + " " + str(v) +
                                                    " exceeds cuSOLVER's 32-bit sizes");
}

cublasOperation_t toCublas(MatOp op) {
  switch (op) {
    case MatOp::None: return CUBLAS_OP_N;
    case MatOp::Transpose: return CUBLAS_OP_T;
    case MatOp::ConjTranspose: return CUBLAS_OP_C;
  }
  return CUBLAS_OP_N;
}

/// See the file comment; the CPU backend's accumulatesInDouble is the same rule.
bool accumulatesInDouble(index_t m, index_t n, index_t k) { return k > std::max(m, n); }

// --- kernels -------------------------------------------------------------------------------------------------

__global__ void toDoubleKernel(double2* out, const float2* in, index_t n) {
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<index_t>(gridDim.x) * blockDim.x)
    out[i] = double2{in[i].x, in[i].y};
}

__global__ void toFloatKernel(float2* out, const double2* in, index_t n) {
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<index_t>(gridDim.x) * blockDim.x)
    out[i] = float2{static_cast<float>(in[i].x), static_cast<float>(in[i].y)};
}

__global__ void pointersKernel(double2** out, double2* base, index_t stride, index_t batch) {
  for (index_t e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < batch;
       e += static_cast<index_t>(gridDim.x) * blockDim.x)
    out[e] = base + e * stride;
}

/// Out-of-range indices are skipped like negative ones (no fault); the CPU backend, which the tests run on
/// the same tables, reports them as errors.
// Batched gather/scatter (Backend::gather): element e = i + n b of the batch uses index[i] + stride b; the
// entry's index is read once per element (the batch shares the n-entry index). Returns that position and sets
// j = index[i] (negative: no sample).
__device__ __forceinline__ long long batchedPosition(const long long* index, index_t n, index_t stride, index_t e,
                                                    long long& j) {
  const index_t b = e / n;
  j = index[e - b * n];
  return j + stride * b;
}

__global__ void gatherKernel(float2* out, const float2* src, index_t srcCount, const long long* index, index_t n,
                             index_t total, index_t stride) {
  for (index_t e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<index_t>(gridDim.x) * blockDim.x) {
    long long j;
    const long long at = batchedPosition(index, n, stride, e, j);
    out[e] = (j >= 0 && at < srcCount) ? src[at] : float2{0.f, 0.f};
  }
}

__global__ void scatterKernel(float2* out, index_t outCount, const float2* src, const long long* index, index_t n,
                              index_t total, index_t stride) {
  for (index_t e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<index_t>(gridDim.x) * blockDim.x) {
    long long j;
    const long long at = batchedPosition(index, n, stride, e, j);
    if (j >= 0 && at < outCount) out[at] = src[e];
  }
}

void toDouble(const Launch& l, double2* out, const float2* in, index_t n) {
  if (n == 0) return;
  toDoubleKernel<<<gridFor(n, l), kThreads, 0, l.stream>>>(out, in, n);
  LARMOR_CUDA_CHECK_LAUNCH();
}

// --- Cholesky factorisation and solves in shared memory (see the file comment) -------------------------------

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
/// a slice on an H200) and loses for many (a 32-slice batch's 128: 11.6 -> 12.2 ms), session 11; with the
/// blocked kernel the batch takes 10.4-10.7 ms either way (session 15), so it stays with cuSOLVER.
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
/// (172 µs; docs/perf.md session 15). The factor goes back to A's lower triangle (float) and to `factor`
/// (packed doubles, for the solve); info[e] = k + 1 when the leading minor of order k + 1 is not positive
/// definite (cuSOLVER's convention), else 0.
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
/// about fourteen launches and two conversions for them (docs/perf.md session 15).
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

/// out[e + n i] = conj(in[e + n (n - 1 - i)]) as float: an n x n matrix's columns reversed and conjugated.
__global__ void conjugateReversedColumnsKernel(float2* out, const double2* in, index_t n) {
  for (index_t j = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n * n;
       j += static_cast<index_t>(gridDim.x) * blockDim.x) {
    const index_t i = j / n, e = j - i * n;
    const double2 v = in[e + n * (n - 1 - i)];
    out[j] = float2{static_cast<float>(v.x), static_cast<float>(-v.y)};
  }
}

void conjugateReversedColumns(const Launch& l, float2* out, const double2* in, index_t n) {
  if (n <= 0) return;
  conjugateReversedColumnsKernel<<<gridFor(n * n, l), kThreads, 0, l.stream>>>(out, in, n);
  LARMOR_CUDA_CHECK_LAUNCH();
}

void toFloat(const Launch& l, float2* out, const double2* in, index_t n) {
  if (n == 0) return;
  toFloatKernel<<<gridFor(n, l), kThreads, 0, l.stream>>>(out, in, n);
  LARMOR_CUDA_CHECK_LAUNCH();
}
void pointers(const Launch& l, double2** out, double2* base, index_t stride, index_t batch) {
  pointersKernel<<<gridFor(batch, l), kThreads, 0, l.stream>>>(out, base, stride, batch);
  LARMOR_CUDA_CHECK_LAUNCH();
}

LinalgState& stateOf(std::shared_ptr<void>& slot, int device, cudaStream_t stream,
                     const std::shared_ptr<DeviceAllocator>& allocator) {
  if (!slot) {
    auto st = std::make_shared<LinalgState>();
    st->device = device;
    st->allocator = allocator;
    st->workspace = allocator->allocate(kCublasWorkspaceBytes);
    LARMOR_CUBLAS_CHECK(cublasCreate(&st->blas));
    LARMOR_CUBLAS_CHECK(cublasSetStream(st->blas, stream));
    LARMOR_CUBLAS_CHECK(cublasSetWorkspace(st->blas, st->workspace.ptr, kCublasWorkspaceBytes));
    LARMOR_CUSOLVER_CHECK(cusolverDnCreate(&st->solver));
    LARMOR_CUSOLVER_CHECK(cusolverDnSetStream(st->solver, stream));
    slot = st;
  }
  return *static_cast<LinalgState*>(slot.get());
}

}  // namespace

void CudaBackend::gemmBatched(MatOp opA, MatOp opB, index_t m, index_t n, index_t k, cfloat alpha, const Buffer& A,
                              const MatrixBatch& a, const Buffer& B, const MatrixBatch& b, cfloat beta, Buffer& C,
                              const MatrixBatch& c, index_t batch) {
  const char* op = "gemmBatched";
  require(m >= 0 && n >= 0 && k >= 0 && batch >= 0, "cuda backend: gemmBatched needs non-negative sizes, got m " +
                                                        str(m) + ", n " + str(n) + ", k " + str(k) + ", batch " +
                                                        str(batch));
  checked(A, op);
  checked(B, op);
  checked(C, op);
  const bool transA = opA != MatOp::None, transB = opB != MatOp::None;
  checkOperand(op, "A", A, a, transA ? k : m, transA ? m : k, batch);
  checkOperand(op, "B", B, b, transB ? n : k, transB ? k : n, batch);
  checkOperand(op, "C", C, c, m, n, batch);
  checkOutputEntriesDisjoint(op, "C", c, batch);
  require(C.ptr() != A.ptr() && C.ptr() != B.ptr(), "cuda backend: gemmBatched cannot write C into A or B");
  if (m == 0 || n == 0 || batch == 0) return;

  std::lock_guard lock(mutex_);
  activate();
  LinalgState& st = stateOf(linalgState, device_, stream_.handle, allocator_);
  const auto* pa = static_cast<const float2*>(A.ptr());
  const auto* pb = static_cast<const float2*>(B.ptr());
  auto* pc = static_cast<float2*>(C.ptr());
  if (!accumulatesInDouble(m, n, k)) {
    const cuComplex al{alpha.real(), alpha.imag()}, be{beta.real(), beta.imag()};
    LARMOR_CUBLAS_CHECK(cublasCgemmStridedBatched_64(st.blas, toCublas(opA), toCublas(opB), m, n, k, &al, pa, a.ld,
                                                     a.stride, pb, b.ld, b.stride, &be, pc, c.ld, c.stride, batch));
    return;
  }
  // Double: the touched extents converted (C too, so that elements between the entries keep their values
  // when the result is converted back), ZGEMM, C back to float.
  const index_t ea = extentOf(a, batch), eb = extentOf(b, batch), ec = extentOf(c, batch);
  const bool sameAB = A.ptr() == B.ptr() && ea == eb;
  Scratch da(*allocator_, static_cast<std::size_t>(ea) * sizeof(double2));
  Scratch db(*allocator_, sameAB ? 0 : static_cast<std::size_t>(eb) * sizeof(double2));
  Scratch dc(*allocator_, static_cast<std::size_t>(ec) * sizeof(double2));
  toDouble(launch_, da.as<double2>(), pa, ea);
  if (!sameAB) toDouble(launch_, db.as<double2>(), pb, eb);
  toDouble(launch_, dc.as<double2>(), pc, ec);
  const cuDoubleComplex al{alpha.real(), alpha.imag()}, be{beta.real(), beta.imag()};
  const auto* zb = sameAB ? da.as<cuDoubleComplex>() : db.as<cuDoubleComplex>();
  LARMOR_CUBLAS_CHECK(cublasZgemmStridedBatched_64(st.blas, toCublas(opA), toCublas(opB), m, n, k, &al,
                                                   da.as<cuDoubleComplex>(), a.ld, a.stride, zb, b.ld, b.stride, &be,
                                                   dc.as<cuDoubleComplex>(), c.ld, c.stride, batch));
  toFloat(launch_, pc, dc.as<double2>(), ec);
}

void CudaBackend::choleskySolveBatched(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b, index_t batch) {
  const char* op = "choleskySolveBatched";
  require(batch >= 0, "cuda backend: choleskySolveBatched needs a non-negative batch, got " + str(batch));
  checked(A, op);
  checked(B, op);
  const index_t n = a.rows, nrhs = b.cols;
  require(n >= 0 && nrhs >= 0, "cuda backend: choleskySolveBatched needs non-negative sizes");
  checkOperand(op, "A", A, a, n, n, batch);
  checkOperand(op, "B", B, b, n, nrhs, batch);
  checkOutputEntriesDisjoint(op, "A", a, batch);
  checkOutputEntriesDisjoint(op, "B", b, batch);
  require(A.ptr() != B.ptr(), "cuda backend: choleskySolveBatched needs A and B in different buffers");
  if (n == 0 || batch == 0) return;
  requireInt(n, "matrix size");
  requireInt(a.ld, "leading dimension");
  requireInt(b.ld, "leading dimension");
  requireInt(batch, "batch");

  std::lock_guard lock(mutex_);
  activate();
  // info[e]: the factorisation of entry e (0, or the order of the first leading minor that is not positive
  // definite); info[batch]: an argument cuSOLVER rejected. One host read (a synchronisation) per solve, after
  // everything is queued.
  Scratch info(*allocator_, static_cast<std::size_t>(batch + 1) * sizeof(int));
  int* dInfo = info.as<int>();
  LARMOR_CUDA_CHECK(cudaMemsetAsync(dInfo, 0, static_cast<std::size_t>(batch + 1) * sizeof(int), stream_.handle));
  if (n == 1) {
    requireInt(nrhs, "right-hand sides");
    choleskySolve1x1Kernel<<<gridFor(batch, launch_), kThreads, 0, stream_.handle>>>(
        static_cast<float2*>(A.ptr()), a.stride, static_cast<float2*>(B.ptr()), b.ld, b.stride, static_cast<int>(nrhs),
        batch, dInfo);
    LARMOR_CUDA_CHECK_LAUNCH();
  } else if (!choleskySolveInSharedMemory(A, a, B, b, batch, dInfo)) {
    choleskySolveByCusolver(A, a, B, b, batch, dInfo);
  }
  std::vector<int> host(static_cast<std::size_t>(batch + 1));
  LARMOR_CUDA_CHECK(cudaMemcpyAsync(host.data(), dInfo, host.size() * sizeof(int), cudaMemcpyDeviceToHost, stream_.handle));
  LARMOR_CUDA_CHECK(cudaStreamSynchronize(stream_.handle));
  require(host[static_cast<std::size_t>(batch)] == 0, "cuda backend: choleskySolveBatched: cuSOLVER rejected argument " +
                                                          std::to_string(-host[static_cast<std::size_t>(batch)]));
  for (index_t e = 0; e < batch; ++e)
    if (host[static_cast<std::size_t>(e)] != 0)
      throw Error("cuda backend: choleskySolveBatched: matrix " + str(e) + " of the batch of " + str(batch) +
                  " is not positive definite (leading minor " + std::to_string(host[static_cast<std::size_t>(e)]) +
                  ")");
}

void CudaBackend::choleskySolveByCusolver(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b,
                                          index_t batch, int* dInfo) {
  const index_t n = a.rows, nrhs = b.cols;
  LinalgState& st = stateOf(linalgState, device_, stream_.handle, allocator_);
  const index_t ea = extentOf(a, batch), eb = extentOf(b, batch);
  Scratch da(*allocator_, static_cast<std::size_t>(ea) * sizeof(double2));
  Scratch db(*allocator_, static_cast<std::size_t>(eb) * sizeof(double2));
  Scratch ptrA(*allocator_, static_cast<std::size_t>(batch) * sizeof(double2*));
  Scratch ptrB(*allocator_, static_cast<std::size_t>(batch) * sizeof(double2*));
  toDouble(launch_, da.as<double2>(), static_cast<const float2*>(A.ptr()), ea);
  toDouble(launch_, db.as<double2>(), static_cast<const float2*>(B.ptr()), eb);
  pointers(launch_, ptrA.as<double2*>(), da.as<double2>(), a.stride, batch);
  pointers(launch_, ptrB.as<double2*>(), db.as<double2>(), b.stride, batch);
  auto** za = reinterpret_cast<cuDoubleComplex**>(ptrA.as<double2*>());
  auto** zb = reinterpret_cast<cuDoubleComplex**>(ptrB.as<double2*>());
  const int ni = static_cast<int>(n), lda = static_cast<int>(a.ld), ldb = static_cast<int>(b.ld);
  const int bi = static_cast<int>(batch);

  // The batched factorisation is built for many small matrices; a few large ones (the improved kernel's
  // K_PE K_RO N_c rows) factor faster one at a time with the blocked potrf.
  if (n <= 256) {
    LARMOR_CUSOLVER_CHECK(cusolverDnZpotrfBatched(st.solver, CUBLAS_FILL_MODE_LOWER, ni, za, lda, dInfo, bi));
  } else {
    auto* first = da.as<cuDoubleComplex>();
    int lwork = 0;
    LARMOR_CUSOLVER_CHECK(cusolverDnZpotrf_bufferSize(st.solver, CUBLAS_FILL_MODE_LOWER, ni, first, lda, &lwork));
    Scratch work(*allocator_, static_cast<std::size_t>(std::max(lwork, 1)) * sizeof(cuDoubleComplex));
    for (index_t e = 0; e < batch; ++e)
      LARMOR_CUSOLVER_CHECK(cusolverDnZpotrf(st.solver, CUBLAS_FILL_MODE_LOWER, ni, first + e * a.stride, lda,
                                             work.as<cuDoubleComplex>(), lwork, dInfo + e));
  }
  if (nrhs == 1) {
    // potrsBatched reports only invalid arguments in its (single) info; factorisation failures are in dInfo.
    LARMOR_CUSOLVER_CHECK(cusolverDnZpotrsBatched(st.solver, CUBLAS_FILL_MODE_LOWER, ni, 1, za, lda, zb, ldb,
                                                  dInfo + batch, bi));
  } else if (nrhs > 1) {
    requireInt(nrhs, "right-hand sides");
    const cuDoubleComplex one{1.0, 0.0};
    // L Y = B, then L^H X = Y.
    LARMOR_CUBLAS_CHECK(cublasZtrsmBatched(st.blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                                           CUBLAS_DIAG_NON_UNIT, ni, static_cast<int>(nrhs), &one, za, lda, zb, ldb, bi));
    LARMOR_CUBLAS_CHECK(cublasZtrsmBatched(st.blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C,
                                           CUBLAS_DIAG_NON_UNIT, ni, static_cast<int>(nrhs), &one, za, lda, zb, ldb, bi));
  }
  toFloat(launch_, static_cast<float2*>(A.ptr()), da.as<double2>(), ea);
  toFloat(launch_, static_cast<float2*>(B.ptr()), db.as<double2>(), eb);
}

bool CudaBackend::choleskySolveInSharedMemory(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b,
                                              index_t batch, int* dInfo) {
  const index_t n = a.rows, nrhs = b.cols;
  int optin = 0;
  LARMOR_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_));
  const std::size_t fb = factorBytes(n), sb = solveBytes(n);
  const index_t groups = (nrhs + kSolveWarps - 1) / kSolveWarps;
  if (batch > kSharedMemoryBatchMax || n > kSharedMemoryMaxN || std::max(fb, sb) > static_cast<std::size_t>(optin) ||
      groups > 65535)
    return false;
  // Per call (cheap, idempotent, right on every device), to the device's largest: another backend's call can
  // then never leave a smaller limit between this one's setting and its launch.
  LARMOR_CUDA_CHECK(cudaFuncSetAttribute(choleskyFactorKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  LARMOR_CUDA_CHECK(cudaFuncSetAttribute(choleskySolveKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  Scratch factor(*allocator_, static_cast<std::size_t>(batch * packedSize(n)) * sizeof(double2));
  const int ni = static_cast<int>(n);
  choleskyFactorKernel<<<static_cast<unsigned>(batch), kCholeskyThreads, fb, stream_.handle>>>(
      static_cast<float2*>(A.ptr()), a.ld, a.stride, ni, factor.as<double2>(), dInfo);
  LARMOR_CUDA_CHECK_LAUNCH();
  if (nrhs > 0) {
    choleskySolveKernel<<<dim3(static_cast<unsigned>(batch), static_cast<unsigned>(groups)), kSolveWarps * 32, sb,
                          stream_.handle>>>(factor.as<double2>(), dInfo, static_cast<float2*>(B.ptr()), b.ld,
                                            b.stride, ni, static_cast<int>(nrhs));
    LARMOR_CUDA_CHECK_LAUNCH();
  }
  return true;
}

void CudaBackend::zheevd(index_t n, std::vector<double>& values, const std::function<void(void*)>& load,
                         const std::function<void(const void*)>& store, const char* op) {
  values.assign(static_cast<std::size_t>(n), 0.0);
  if (n == 0) return;
  requireInt(n, "matrix size");
  const int ni = static_cast<int>(n);
  std::lock_guard lock(mutex_);
  activate();
  LinalgState& st = stateOf(linalgState, device_, stream_.handle, allocator_);
  Scratch da(*allocator_, static_cast<std::size_t>(n * n) * sizeof(cuDoubleComplex));
  Scratch dw(*allocator_, static_cast<std::size_t>(n) * sizeof(double));
  Scratch info(*allocator_, sizeof(int));
  auto* za = da.as<cuDoubleComplex>();
  load(za);
  int lwork = 0;
  LARMOR_CUSOLVER_CHECK(cusolverDnZheevd_bufferSize(st.solver, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, ni, za,
                                                    ni, dw.as<double>(), &lwork));
  Scratch work(*allocator_, static_cast<std::size_t>(std::max(lwork, 1)) * sizeof(cuDoubleComplex));
  LARMOR_CUSOLVER_CHECK(cusolverDnZheevd(st.solver, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, ni, za, ni,
                                         dw.as<double>(), work.as<cuDoubleComplex>(), lwork, info.as<int>()));
  store(za);
  int hostInfo = 0;
  LARMOR_CUDA_CHECK(cudaMemcpyAsync(values.data(), dw.as<double>(), values.size() * sizeof(double),
                                    cudaMemcpyDeviceToHost, stream_.handle));
  LARMOR_CUDA_CHECK(cudaMemcpyAsync(&hostInfo, info.as<int>(), sizeof(int), cudaMemcpyDeviceToHost, stream_.handle));
  LARMOR_CUDA_CHECK(cudaStreamSynchronize(stream_.handle));
  require(hostInfo == 0,
          std::string("cuda backend: ") + op + ": cuSOLVER zheevd failed (info " + std::to_string(hostInfo) + ")");
}

void CudaBackend::hermitianEigen(std::vector<cdouble>& a, std::vector<double>& values, index_t n) {
  require(n >= 0 && static_cast<index_t>(a.size()) == n * n, "cuda backend: hermitianEigen needs an n x n matrix");
  const std::size_t bytes = a.size() * sizeof(cdouble);
  const auto load = [&](void* za) {
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(za, a.data(), bytes, cudaMemcpyHostToDevice, stream_.handle));
  };
  const auto store = [&](const void* za) {
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(a.data(), za, bytes, cudaMemcpyDeviceToHost, stream_.handle));
  };
  zheevd(n, values, load, store, "hermitianEigen");
}

void CudaBackend::gramKernels(const float2* gram, index_t n, std::vector<double>& values, float2* kernels) {
  const auto load = [&](void* za) { toDouble(launch_, static_cast<double2*>(za), gram, n * n); };
  const auto store = [&](const void* za) {
    conjugateReversedColumns(launch_, kernels, static_cast<const double2*>(za), n);
  };
  zheevd(n, values, load, store, "gramKernels");
}

void CudaBackend::gather(Buffer& out, const Buffer& src, const Buffer& index, index_t n, index_t batch,
                         index_t stride) {
  checked(out, "gather");
  checked(src, "gather");
  checked(index, "gather");
  require(n >= 0 && static_cast<std::size_t>(n) * sizeof(long long) <= index.bytes(),
          "cuda backend: gather of " + str(n) + " elements needs " + str(n) + " indices, the index buffer holds " +
              str(static_cast<index_t>(index.bytes() / sizeof(long long))));
  require(batch >= 1 && stride >= 0,
          "cuda backend: gather: batch " + str(batch) + " and stride " + str(stride) + " (batch >= 1, stride >= 0)");
  float2* po = elements(out, n * batch, "gather");
  require(out.ptr() != src.ptr() || n == 0, "cuda backend: gather cannot gather a buffer into itself");
  if (n == 0) return;
  std::lock_guard lock(mutex_);
  activate();
  gatherKernel<<<gridFor(n * batch, launch_), kThreads, 0, launch_.stream>>>(
      po, static_cast<const float2*>(src.ptr()), static_cast<index_t>(src.bytes() / sizeof(float2)),
      static_cast<const long long*>(index.ptr()), n, n * batch, stride);
  LARMOR_CUDA_CHECK_LAUNCH();
}

void CudaBackend::scatter(Buffer& out, const Buffer& src, const Buffer& index, index_t n, index_t batch,
                          index_t stride) {
  checked(out, "scatter");
  checked(src, "scatter");
  checked(index, "scatter");
  require(n >= 0 && static_cast<std::size_t>(n) * sizeof(long long) <= index.bytes(),
          "cuda backend: scatter of " + str(n) + " elements needs " + str(n) + " indices, the index buffer holds " +
              str(static_cast<index_t>(index.bytes() / sizeof(long long))));
  require(batch >= 1 && stride >= 0,
          "cuda backend: scatter: batch " + str(batch) + " and stride " + str(stride) + " (batch >= 1, stride >= 0)");
  const float2* ps = elements(src, n * batch, "scatter");
  require(out.ptr() != src.ptr() || n == 0, "cuda backend: scatter cannot scatter a buffer into itself");
  if (n == 0) return;
  std::lock_guard lock(mutex_);
  activate();
  scatterKernel<<<gridFor(n * batch, launch_), kThreads, 0, launch_.stream>>>(
      static_cast<float2*>(out.ptr()), static_cast<index_t>(out.bytes() / sizeof(float2)), ps,
      static_cast<const long long*>(index.ptr()), n, n * batch, stride);
  LARMOR_CUDA_CHECK_LAUNCH();
}

}  // namespace larmor::cuda
