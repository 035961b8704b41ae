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
//    matrices of n <= 128 and 1 x 1 systems go to the kernels of cholesky.cu, the others to cuSOLVER
//    (cusolverDnZpotrf / ZpotrfBatched, cublasZtrsmBatched or cusolverDnZpotrsBatched for one right-hand
//    side).
#include <cublas_v2.h>
#include <cusolverDn.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "check.hpp"
#include "cholesky.hpp"
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

/// Pinned host blocks for the factorisations' results of queued solves (choleskySolveBatchedQueued), kept for
/// reuse: a copy from the device into pinned memory is queued and returns, into pageable memory it makes the
/// host wait for the stream. Where pinned memory cannot be had, pageable blocks (correct, the copy waits).
class ResultBlocks {
 public:
  struct Block {
    int* p = nullptr;
    std::size_t capacity = 0;
    bool pinned = false;
  };
  explicit ResultBlocks(int device) : device_(device) {}
  ~ResultBlocks() {
    (void)cudaSetDevice(device_);
    for (const Block& b : free_) release(b);
    (void)cudaGetLastError();
  }
  ResultBlocks(const ResultBlocks&) = delete;
  ResultBlocks& operator=(const ResultBlocks&) = delete;
  /// A block of at least n ints.
  Block take(std::size_t n) {
    {
      std::lock_guard lock(mutex_);
      for (auto it = free_.begin(); it != free_.end(); ++it)
        if (it->capacity >= n) {
          const Block b = *it;
          free_.erase(it);
          return b;
        }
    }
    Block b;
    b.capacity = std::max<std::size_t>(n, 1024);
    void* p = nullptr;
    if (cudaMallocHost(&p, b.capacity * sizeof(int)) == cudaSuccess) {
      b.p = static_cast<int*>(p);
      b.pinned = true;
    } else {
      (void)cudaGetLastError();
      b.p = new int[b.capacity];
    }
    return b;
  }
  void give(const Block& b) {
    std::lock_guard lock(mutex_);
    free_.push_back(b);
  }

 private:
  static void release(const Block& b) {
    if (b.pinned)
      (void)cudaFreeHost(b.p);
    else
      delete[] b.p;
  }
  const int device_;
  std::mutex mutex_;
  std::vector<Block> free_;
};

/// The library handles of one backend. Destroyed with the backend (its last owner), after the backend's
/// stream: cuBLAS is given its workspace from the backend's allocator (cublasSetWorkspace), so it owns no
/// memory tied to that stream, and the deleter only makes the device current and releases the handles.
struct LinalgState {
  int device = 0;
  cublasHandle_t blas = nullptr;
  cusolverDnHandle_t solver = nullptr;
  std::shared_ptr<DeviceAllocator> allocator;
  DeviceAllocator::Block workspace;
  std::shared_ptr<ResultBlocks> results;  ///< shared with the checks of queued solves, which may outlive a call
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
    st->results = std::make_shared<ResultBlocks>(device);
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
  // beta 0 with the entries packed (nothing between them to keep): C is only written.
  const bool packedC = c.ld == m && (batch == 1 || c.stride == m * n);
  if (!(beta == cfloat(0) && packedC)) toDouble(launch_, dc.as<double2>(), pc, ec);
  const cuDoubleComplex al{alpha.real(), alpha.imag()}, be{beta.real(), beta.imag()};
  const auto* zb = sameAB ? da.as<cuDoubleComplex>() : db.as<cuDoubleComplex>();
  LARMOR_CUBLAS_CHECK(cublasZgemmStridedBatched_64(st.blas, toCublas(opA), toCublas(opB), m, n, k, &al,
                                                   da.as<cuDoubleComplex>(), a.ld, a.stride, zb, b.ld, b.stride, &be,
                                                   dc.as<cuDoubleComplex>(), c.ld, c.stride, batch));
  toFloat(launch_, pc, dc.as<double2>(), ec);
}

void CudaBackend::choleskySolveBatched(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b, index_t batch) {
  choleskySolveBatchedQueued(A, a, B, b, batch)();
}

namespace {

/// A queued solve's outcome: its factorisations' results copied to a pinned block behind the solve, an event
/// after the copy. Returns the block when the last copy of the check dies (a block handed out again is
/// written only by work queued later on the same stream, so a check dropped unread is harmless).
struct PendingSolve {
  std::shared_ptr<ResultBlocks> blocks;
  ResultBlocks::Block block;
  cudaEvent_t copied = nullptr;
  index_t batch = 0;
  ~PendingSolve() {
    if (copied) (void)cudaEventDestroy(copied);
    if (block.p) blocks->give(block);
    (void)cudaGetLastError();
  }
  void check() const {
    LARMOR_CUDA_CHECK(cudaEventSynchronize(copied));
    const int* info = block.p;
    require(info[batch] == 0, "cuda backend: choleskySolveBatched: cuSOLVER rejected argument " +
                                  std::to_string(-info[batch]));
    for (index_t e = 0; e < batch; ++e)
      if (info[e] != 0)
        throw Error("cuda backend: choleskySolveBatched: matrix " + str(e) + " of the batch of " + str(batch) +
                    " is not positive definite (leading minor " + std::to_string(info[e]) + ")");
  }
};

}  // namespace

GrappaOps::SolveCheck CudaBackend::choleskySolveBatchedQueued(Buffer& A, const MatrixBatch& a, Buffer& B,
                                                              const MatrixBatch& b, index_t batch) {
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
  if (n == 0 || batch == 0) return [] {};
  requireInt(n, "matrix size");
  requireInt(a.ld, "leading dimension");
  requireInt(b.ld, "leading dimension");
  requireInt(batch, "batch");

  std::lock_guard lock(mutex_);
  activate();
  refuseWhileRecording("a solve's outcome");
  // info[e]: the factorisation of entry e (0, or the order of the first leading minor that is not positive
  // definite); info[batch]: an argument cuSOLVER rejected. Copied behind the solve to a pinned block that the
  // check reads after the copy's event: the host waits only there.
  auto pending = std::make_shared<PendingSolve>();
  pending->blocks = stateOf(linalgState, device_, stream_.handle, allocator_).results;
  pending->batch = batch;
  const std::size_t infoBytes = static_cast<std::size_t>(batch + 1) * sizeof(int);
  pending->block = pending->blocks->take(static_cast<std::size_t>(batch + 1));
  LARMOR_CUDA_CHECK(cudaEventCreateWithFlags(&pending->copied, cudaEventDisableTiming));
  Scratch info(*allocator_, infoBytes);
  int* dInfo = info.as<int>();
  LARMOR_CUDA_CHECK(cudaMemsetAsync(dInfo, 0, infoBytes, stream_.handle));
  if (n == 1) {
    requireInt(nrhs, "right-hand sides");
    choleskySolve1x1(launch_, static_cast<float2*>(A.ptr()), a.stride, static_cast<float2*>(B.ptr()), b.ld, b.stride,
                     nrhs, batch, dInfo);
  } else if (!choleskySolveInSharedMemory(A, a, B, b, batch, dInfo)) {
    choleskySolveByCusolver(A, a, B, b, batch, dInfo);
  }
  LARMOR_CUDA_CHECK(cudaMemcpyAsync(pending->block.p, dInfo, infoBytes, cudaMemcpyDeviceToHost, stream_.handle));
  LARMOR_CUDA_CHECK(cudaEventRecord(pending->copied, stream_.handle));
  return [pending] { pending->check(); };
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
  int optin = 0;
  LARMOR_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_));
  if (!choleskyInSharedMemoryFits(a.rows, b.cols, batch, optin)) return false;
  Scratch factor(*allocator_, choleskyFactorBytes(a.rows, batch));
  larmor::cuda::choleskySolveInSharedMemory(launch_, optin, static_cast<float2*>(A.ptr()), a.ld, a.stride,
                                            static_cast<float2*>(B.ptr()), b.ld, b.stride, a.rows, b.cols, batch,
                                            factor.as<double2>(), dInfo);
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

index_t CudaBackend::eigenBatch(index_t n) {
  const std::size_t gram = static_cast<std::size_t>(std::max<index_t>(n, 1) * std::max<index_t>(n, 1)) * sizeof(cuDoubleComplex);
  return std::clamp<index_t>(static_cast<index_t>(kEigenBatchBytes / gram), 1, kEigenBatch);
}

index_t CudaBackend::gramKernelsBatched(const std::vector<const float2*>& grams, index_t n,
                                        std::vector<std::vector<double>>& values, const std::vector<float2*>& kernels) {
  const std::size_t count = grams.size();
  values.assign(count, std::vector<double>(static_cast<std::size_t>(n), 0.0));
  if (count == 0 || n == 0) return 1;
#if CUSOLVER_VERSION >= 11701
  const index_t batch = eigenBatch(n);
#else
  const index_t batch = 1;
#endif
  if (batch == 1) {  // zheevd one by one (a batch of one: the batched routine's own path is no faster)
    for (std::size_t b = 0; b < count; ++b) gramKernels(grams[b], n, values[b], kernels[b]);
    return 1;
  }
#if CUSOLVER_VERSION >= 11701
  // Chunks of exactly `batch` matrices, the last padded with copies of its last Gram: cusolverDnXsyevBatched
  // gives a matrix the same bits whatever the other matrices of its batch and its place there, but other bits
  // for another batch size (measured with a probe), so a fixed size makes a slice's maps independent of
  // the slices that share its call (and of how a call's slices were split over devices). The batched routine
  // costs about the same from 2 to 64 matrices of 288^2 (19-22 ms on an H200): the padding is nearly free.
  requireInt(n, "matrix size");
  const index_t nn = n * n;
  const auto bn = static_cast<int64_t>(batch);
  std::lock_guard lock(mutex_);
  activate();
  LinalgState& st = stateOf(linalgState, device_, stream_.handle, allocator_);
  Scratch da(*allocator_, static_cast<std::size_t>(nn * batch) * sizeof(cuDoubleComplex));
  Scratch dw(*allocator_, static_cast<std::size_t>(n * batch) * sizeof(double));
  Scratch info(*allocator_, static_cast<std::size_t>(batch) * sizeof(int));
  auto* za = da.as<double2>();
  cusolverDnParams_t params = nullptr;
  LARMOR_CUSOLVER_CHECK(cusolverDnCreateParams(&params));
  std::unique_ptr<std::remove_pointer_t<cusolverDnParams_t>, void (*)(cusolverDnParams_t)> owned(
      params, [](cusolverDnParams_t q) { (void)cusolverDnDestroyParams(q); });
  std::size_t deviceBytes = 0, hostBytes = 0;
  LARMOR_CUSOLVER_CHECK(cusolverDnXsyevBatched_bufferSize(st.solver, params, CUSOLVER_EIG_MODE_VECTOR,
                                                          CUBLAS_FILL_MODE_LOWER, n, CUDA_C_64F, za, n, CUDA_R_64F,
                                                          dw.as<double>(), CUDA_C_64F, &deviceBytes, &hostBytes, bn));
  Scratch work(*allocator_, std::max<std::size_t>(deviceBytes, 16));
  std::vector<char> hostWork(std::max<std::size_t>(hostBytes, 16));
  std::vector<double> w(static_cast<std::size_t>(n * batch));
  std::vector<int> hostInfo(static_cast<std::size_t>(batch), 0);
  for (std::size_t c = 0; c < count; c += static_cast<std::size_t>(batch)) {
    const std::size_t real = std::min(count - c, static_cast<std::size_t>(batch));
    for (std::size_t b = 0; b < static_cast<std::size_t>(batch); ++b)
      toDouble(launch_, za + b * nn, grams[c + std::min(b, real - 1)], nn);
    LARMOR_CUSOLVER_CHECK(cusolverDnXsyevBatched(st.solver, params, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER,
                                                 n, CUDA_C_64F, za, n, CUDA_R_64F, dw.as<double>(), CUDA_C_64F,
                                                 work.as<void>(), deviceBytes, hostWork.data(), hostBytes,
                                                 info.as<int>(), bn));
    for (std::size_t b = 0; b < real; ++b) conjugateReversedColumns(launch_, kernels[c + b], za + b * nn, n);
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(w.data(), dw.as<double>(), w.size() * sizeof(double), cudaMemcpyDeviceToHost,
                                      stream_.handle));
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(hostInfo.data(), info.as<int>(), hostInfo.size() * sizeof(int),
                                      cudaMemcpyDeviceToHost, stream_.handle));
    // Also keeps hostWork alive until the solve is done, and the next chunk's Grams from overwriting these.
    LARMOR_CUDA_CHECK(cudaStreamSynchronize(stream_.handle));
    for (std::size_t b = 0; b < real; ++b) {
      require(hostInfo[b] == 0, "cuda backend: gramKernelsBatched: cuSOLVER Xsyev batched failed for matrix " +
                                    std::to_string(c + b) + " (info " + std::to_string(hostInfo[b]) + ")");
      std::copy_n(w.data() + b * static_cast<std::size_t>(n), n, values[c + b].data());
    }
  }
#endif
  return batch;
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
