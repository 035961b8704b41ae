#pragma once
// CudaBackend: the Backend interface on one CUDA device. Every operation is queued on the backend's own
// non-blocking stream, so work from different backends (devices) overlaps and nothing waits on the legacy
// default stream; synchronize(), download() and the reductions wait on that stream. Twin of
// engine/src/cpu/cpu_backend.hpp: each op's body lives in the file named after its CPU twin.
#include <cuda_runtime.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "fft.hpp"
#include "kernels.hpp"
#include "larmor/backend/backend.hpp"
#include "larmor/ops/nufft.hpp"
#include "memory.hpp"

namespace larmor::cuda {

/// Name, memory, compute capability and library versions of device `index`; throws Error.
DeviceInfo describeDevice(int index);

class CudaPriorOps;
class CudaSparsityOps;
class CudaCoilCombineOps;
class CudaEspiritOps;
class CudaSolverOps;
class CudaQualityOps;
class CudaToeplitzOps;
class CudaGrappaOps;
class CudaExecutionOps;

class CudaBackend final : public Backend {
 public:
  /// Throws Error when the device does not exist or cannot be used.
  explicit CudaBackend(int device);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  DeviceInfo info() const override { return info_; }

  std::unique_ptr<Buffer> allocate(std::size_t bytes) override;
  std::unique_ptr<Buffer> view(Buffer& parent, std::size_t offset, std::size_t bytes) override;
  void upload(Buffer& dst, const void* src, std::size_t bytes, std::size_t dstOffset = 0) override;
  void download(void* dst, const Buffer& src, std::size_t bytes, std::size_t srcOffset = 0) override;
  void copy(Buffer& dst, const Buffer& src, std::size_t bytes, std::size_t dstOffset = 0, std::size_t srcOffset = 0) override;
  void synchronize() override;
  /// ExecutionOps's ops on this device (a copy stream per direction, peer copies, CUDA graphs of the stream's
  /// work); CudaExecutionOps forwards here.
  bool copyFromPeer(Buffer& dst, std::size_t dstOffset, Backend& source, const Buffer& src, std::size_t srcOffset,
                    std::size_t bytes);
  std::unique_ptr<ExecutionOps::Transfer> uploadQueued(Buffer& dst, const void* src, std::size_t bytes,
                                                       std::size_t dstOffset = 0);
  std::unique_ptr<ExecutionOps::Transfer> downloadQueued(void* dst, const Buffer& src, std::size_t bytes,
                                                         std::size_t srcOffset = 0);
  std::unique_ptr<ExecutionOps::Recording> record(const std::function<void()>& work);
  /// Work queued on this backend from now on waits for `event` (a queued transfer's join()).
  void waitFor(cudaEvent_t event);
  /// ExecutionOps's memory figures: the caching allocator's (memory.hpp).
  MemoryStats memoryStats() const { return allocator_->stats(); }
  void resetPeakMemory() { allocator_->resetPeak(); }

  void fill(Buffer& x, cfloat value, index_t n) override;
  void scale(Buffer& x, cfloat a, index_t n) override;
  void axpby(Buffer& y, cfloat a, const Buffer& x, cfloat b, index_t n) override;
  void multiply(Buffer& out, const Buffer& a, index_t na, const Buffer& b, index_t nb, bool conjA) override;
  cdouble dot(const Buffer& a, const Buffer& b, index_t n) override;
  double norm2(const Buffer& x, index_t n) override;

  void fft(Buffer& data, const Shape& shape, int rank, FftDirection dir) override;
  /// ToeplitzOps::fftGram on this device; CudaToeplitzOps forwards here.
  void fftGram(Buffer& data, const Shape& shape, int rank, const Buffer& diagonal);
  /// ToeplitzOps::fftGramInBox on this device; CudaToeplitzOps forwards here.
  void fftGramInBox(Buffer& data, const Shape& shape, int rank, const Buffer& diagonal, const Shape& box);
  /// Work queued on this backend from now on starts after the work queued on `other` so far (an event).
  void waitForPeer(CudaBackend& other);
  void resizeCentred(Buffer& dst, const Shape& dstShape, const Buffer& src, const Shape& srcShape) override;
  /// ToeplitzOps::fftGramPadded on this device (fft_last.cu's padded passes); CudaToeplitzOps forwards here.
  void fftGramPadded(Buffer& out, const Buffer& image, const Shape& imageShape, Buffer& grid, const Shape& gridShape,
                     int rank, const Buffer& diagonal);
  /// GrappaOps::transpose on this device (kernels.cu); CudaGrappaOps forwards here.
  void transpose(Buffer& dst, const Buffer& src, index_t n0, index_t n1, index_t batch);
  void sumOfSquares(Buffer& out, const Buffer& coilImages, index_t voxels, index_t coils, index_t batch) override;

  void reciprocalDiagonal(Buffer& out, const Buffer& a, double alpha, const Buffer* b, double beta,
                          index_t n) override;

  ExecutionOps& executionOps() override;
  PriorOps& priorOps() override;
  SparsityOps& sparsityOps() override;
  CoilCombineOps& coilCombineOps() override;
  EspiritOps& espiritOps() override;
  SolverOps& solverOps() override;
  QualityOps& qualityOps() override;
  ToeplitzOps& toeplitzOps() override;
  GrappaOps& grappaOps() override;

  // nufft.cu, dft.cu, linalg.cu
  std::unique_ptr<NufftPlan> makeNufftPlan(const NufftGeometry& geometry, const NufftOptions& options) override;
  std::unique_ptr<NufftPlan> makeDftPlan(const NufftGeometry& geometry, const DftOptions& options) override;
  void gemmBatched(MatOp opA, MatOp opB, index_t m, index_t n, index_t k, cfloat alpha, const Buffer& A,
                   const MatrixBatch& a, const Buffer& B, const MatrixBatch& b, cfloat beta, Buffer& C,
                   const MatrixBatch& c, index_t batch) override;
  /// GrappaOps::choleskySolveBatched on this device (linalg.cu); CudaGrappaOps forwards here.
  void choleskySolveBatched(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b, index_t batch);
  /// GrappaOps::choleskySolveBatchedQueued on this device (linalg.cu); CudaGrappaOps forwards here.
  GrappaOps::SolveCheck choleskySolveBatchedQueued(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b,
                                                   index_t batch);
  void gather(Buffer& out, const Buffer& src, const Buffer& index, index_t n, index_t batch = 1,
              index_t stride = 0) override;
  void scatter(Buffer& out, const Buffer& src, const Buffer& index, index_t n, index_t batch = 1,
               index_t stride = 0) override;
  /// EspiritOps::hermitianEigen on this device (linalg.cu: cuSOLVER zheevd in double).
  void hermitianEigen(std::vector<cdouble>& a, std::vector<double>& values, index_t n);
  /// EspiritOps::gramKernels on this device (linalg.cu): the Gram to double, zheevd, conjugated eigenvectors
  /// largest first back to float, all on the device; the eigenvalues to the host.
  void gramKernels(const float2* gram, index_t n, std::vector<double>& values, float2* kernels);
  /// EspiritOps::gramKernelsBatched on this device (linalg.cu): the Grams to double side by side in chunks of
  /// eigenBatch(n), the last padded, one cusolverDnXsyevBatched a chunk (CUDA 12.6.2 and later; before, zheevd
  /// one by one), the kernels as gramKernels's. Returns the chunk size (1: zheevd one by one).
  index_t gramKernelsBatched(const std::vector<const float2*>& grams, index_t n,
                             std::vector<std::vector<double>>& values, const std::vector<float2*>& kernels);
  /// The batched eigen-solver's chunk for n x n Grams, fixed by n alone: kEigenBatch, fewer where that many
  /// double Grams would pass kEigenBatchBytes (1: zheevd).
  static index_t eigenBatch(index_t n);
  static constexpr index_t kEigenBatch = 32;
  static constexpr std::size_t kEigenBatchBytes = std::size_t{256} << 20;
  int device() const { return device_; }
  /// Library handles of linalg.cu (cuBLAS, cuSOLVER), created there on first use; type-erased so this
  /// header needs no cuBLAS include.
  std::shared_ptr<void> linalgState;
  DeviceAllocator& allocator() { return *allocator_; }
  /// BackendProvider::borrow for this device: `ptr` checked to be its memory, the device synchronized (the
  /// other library's streams' work on it finished), a DeviceBuffer that releases nothing.
  std::unique_ptr<Buffer> borrow(void* ptr, std::size_t bytes);
  std::recursive_mutex& mutex() const { return mutex_; }

  cudaStream_t stream() const { return stream_.handle; }

 private:
  // The kernel interfaces launch on this backend's stream under its mutex, as its own ops do.
  friend class CudaPriorOps;
  friend class CudaSparsityOps;
  friend class CudaCoilCombineOps;
  friend class CudaEspiritOps;
  friend class CudaSolverOps;
  friend class CudaQualityOps;

  /// Owns the stream; declared first so that it is destroyed last.
  struct StreamHandle {
    cudaStream_t handle = nullptr;
    ~StreamHandle();
  };
  /// A pinned double2 for reduction results (pageable where pinned memory cannot be had).
  struct HostResult {
    double2* value = nullptr;
    bool pinned = false;
    ~HostResult();
  };

  void activate() const;
  /// choleskySolveBatched's work, queued under the lock, each entry's factorisation result in dInfo[e]: by the
  /// shared-memory kernels of linalg.cu when the matrices fit (false when they do not), else by cuSOLVER (which
  /// also sets dInfo[batch] when it rejects an argument).
  bool choleskySolveInSharedMemory(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b, index_t batch,
                                   int* dInfo);
  void choleskySolveByCusolver(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b, index_t batch,
                               int* dInfo);
  /// cuSOLVER zheevd (double) of an n x n Hermitian matrix on the device (linalg.cu), shared by hermitianEigen
  /// and gramKernels: under the backend's lock `load` fills the matrix at the device pointer it is given and
  /// `store` takes the eigenvectors from it; the eigenvalues (ascending) go to `values`.
  void zheevd(index_t n, std::vector<double>& values, const std::function<void(void*)>& load,
              const std::function<void(const void*)>& store, const char* op);
  const DeviceBuffer& checked(const Buffer& b, const char* op) const;
  float2* elements(Buffer& b, index_t n, const char* op);
  const float2* elements(const Buffer& b, index_t n, const char* op) const;
  double2 readResult();
  /// Queues a copy on `copyStream` after the work queued on the backend so far (uploadQueued, downloadQueued).
  std::unique_ptr<ExecutionOps::Transfer> queueCopy(cudaStream_t copyStream, void* to, const void* from,
                                                    std::size_t bytes, cudaMemcpyKind kind);

  const int device_;
  DeviceInfo info_;
  Launch launch_;
  StreamHandle stream_;
  StreamHandle upStream_, downStream_;  ///< the queued transfers' copy streams, one a direction
  HostResult hostResult_;
  std::shared_ptr<DeviceAllocator> allocator_;
  std::unique_ptr<HostStaging> staging_;
  std::unique_ptr<FftEngine> fft_;
  DeviceAllocator::Block scratch_;  ///< reduction partials, then the result
  /// One caller at a time: the staging area, the plan cache and the scratch are shared state. Recursive: record()
  /// holds it while the recorded work's own calls take it again (no other thread's work joins a recording).
  mutable std::recursive_mutex mutex_;
  /// The thread inside record(): its transfers, synchronisations, result reads and allocations refuse (before
  /// the runtime is asked, which would refuse them on a capturing stream with an error of its own).
  std::atomic<std::thread::id> recorder_{};
  std::set<int> peersEnabled_;    ///< devices whose access this context has asked for (copyFromPeer)
  std::set<int> peersReachable_;  ///< those of them it reaches directly
  void refuseWhileRecording(const char* what) const;
  /// `copy` queued on this stream after the work queued on `peer` (another backend) and before its later work; peer
  /// access enabled once per pair where the devices have it. Called with both backends' locks held.
  void orderedPeerCopy(CudaBackend& peer, const std::function<void(cudaStream_t)>& copy);
  /// This context's direct access to the peer's memory, enabled once per pair where the devices have it; true for
  /// the same device.
  bool enablePeer(CudaBackend& peer);
  std::unique_ptr<CudaPriorOps> priorOps_;
  std::unique_ptr<CudaSparsityOps> sparsityOps_;
  std::unique_ptr<CudaCoilCombineOps> coilCombineOps_;
  std::unique_ptr<CudaEspiritOps> espiritOps_;
  std::unique_ptr<CudaSolverOps> solverOps_;
  std::unique_ptr<CudaQualityOps> qualityOps_;
  std::unique_ptr<CudaToeplitzOps> toeplitzOps_;
  std::unique_ptr<CudaGrappaOps> grappaOps_;
  std::unique_ptr<CudaExecutionOps> executionOps_;
};

/// The prior kernels (larmor/backend/prior_ops.hpp) on one device: prior.cu and finite_difference.cu.
class CudaPriorOps final : public PriorOps {
 public:
  explicit CudaPriorOps(CudaBackend& backend) : be_(backend) {}
  void finiteDifference(Buffer& out, const Buffer& in, const index_t dims[3], index_t batch, int axis,
                        bool adjoint) override;
  NeighbourDifferences neighbourDifferences(const Buffer& image, const index_t dims[3], std::uint64_t k) override;
  void edgeWeights(Buffer& out, const Buffer& image, const index_t dims[3], int axis, double delta) override;
  void addDifferenceDiagonal(Buffer& out, const Buffer* w, const index_t dims[3], int axis) override;
  void differenceNormal(Buffer& y, const Buffer& x, const Buffer* const w[3], const index_t dims[3], float alpha,
                        bool accumulate) override;

 private:
  CudaBackend& be_;
};

/// The sparsity priors (larmor/backend/sparsity_ops.hpp) on one device: sparsity.cu (TV) and wavelet.cu.
/// Workspaces are device buffers kept between calls and grown when an image needs more, so a solver's
/// iterations allocate nothing; launches go to the backend's stream under its mutex.
class CudaSparsityOps final : public SparsityOps {
 public:
  explicit CudaSparsityOps(CudaBackend& backend) : be_(backend) {}
  using SparsityOps::totalVariation;
  using SparsityOps::tvProx;
  void tvProx(Buffer& x, const Shape& image, double t, int iterations, Buffer& dual, const TvWeights& w) override;
  double totalVariation(const Buffer& x, const Shape& image, const TvWeights& w) override;
  void waveletProx(Buffer& x, const Shape& image, double t, const std::array<index_t, 3>& shift) override;
  double waveletL1(const Buffer& x, const Shape& image) override;
  void waveletTransform(Buffer& data, const Shape& image, bool inverse) override;

 private:
  /// Workspace `which` (0 and 1: TV's momentum dual field, read from one and written to the other; 2 and 3:
  /// wavelet ping-pong) of >= `elements`
  /// complex values; call under the backend's mutex.
  float2* workspace(int which, index_t elements);
  CudaBackend& be_;
  std::unique_ptr<Buffer> work_[4];
};

/// Adaptive coil combination (larmor/backend/coil_combine_ops.hpp) on one device: coil_combine.cu.
class CudaCoilCombineOps final : public CoilCombineOps {
 public:
  explicit CudaCoilCombineOps(CudaBackend& backend) : be_(backend) {}
  void adaptiveCombine(Buffer& out, const Buffer& coilImages, const index_t dims[3], index_t coils, index_t batch,
                       int window) override;

 private:
  CudaBackend& be_;
};

/// ESPIRiT's pointwise eigenvectors (larmor/backend/espirit_ops.hpp) on one device: espirit.cu.
class CudaEspiritOps final : public EspiritOps {
 public:
  explicit CudaEspiritOps(CudaBackend& backend) : be_(backend) {}
  void dominantEigenvectors(Buffer& maps, Buffer& values, const Buffer& cov, index_t voxels, index_t channels,
                            const std::vector<cfloat>& reference, float crop) override;
  void smallGridMatrices(Buffer& cov, const Buffer& u, index_t points, index_t channels, index_t kept,
                         double scale) override;
  void calibrationMatrix(Buffer& a, const Buffer& cal, const index_t box[4], const index_t kernel[3]) override;
  void hermitianEigen(std::vector<cdouble>& a, std::vector<double>& values, index_t n) override;
  void gramKernels(const Buffer& gram, index_t n, std::vector<double>& values, Buffer& kernels) override;
  index_t gramKernelsBatched(const std::vector<const Buffer*>& grams, index_t n,
                             std::vector<std::vector<double>>& values, const std::vector<Buffer*>& kernels) override;

 private:
  CudaBackend& be_;
};

/// The solvers' scalars and fused steps (larmor/backend/solver_ops.hpp) on one device: solver.cu. The scalars
/// stay in device memory; `read` is the only round trip.
class CudaSolverOps final : public SolverOps {
 public:
  explicit CudaSolverOps(CudaBackend& backend) : be_(backend) {}
  bool scalarsOnHost() const override { return false; }
  std::unique_ptr<Buffer> scalars(index_t count) override;
  void read(double* out, const Buffer& s, index_t first, index_t count) override;
  void dot(Buffer& s, index_t slot, const Buffer& a, const Buffer& b, index_t n) override;
  void countNonFinite(Buffer& s, index_t slot, const Buffer& x, index_t n) override;
  void scaleByInverseRoot(Buffer& dst, const Buffer& src, const Buffer& s, index_t slot, index_t n) override;
  void cgCurvature(Buffer& s, const CgLayout& l, int k, const Buffer& p, const Buffer& q, index_t n) override;
  void cgUpdate(Buffer& s, const CgLayout& l, int k, Buffer& x, Buffer& r, const Buffer& p, const Buffer& q,
                const Buffer* b, double tolerance, index_t n, const Buffer* minv = nullptr, Buffer* z = nullptr) override;
  void cgDirection(const Buffer& s, const CgLayout& l, int k, Buffer& p, const Buffer& z, index_t n) override;
  void fistaGradientStep(Buffer& xn, const Buffer& y, const Buffer& g, const Buffer& b, double invL,
                         index_t n) override;
  void fistaChange(Buffer& s, const FistaLayout& l, int k, const Buffer& xn, const Buffer& x, double tolerance,
                   index_t n) override;
  void fistaCommit(const Buffer& s, const FistaLayout& l, int k, Buffer& x, Buffer& y, const Buffer& xn, double beta,
                   index_t n) override;

 private:
  /// The device doubles of a scalar buffer, checked to hold `count`.
  double* slots(const Buffer& s, index_t count, const char* op);
  /// 3 x kMaxReduceBlocks doubles of block partials and an arrival counter (solver.cu), made and zeroed on
  /// first use; call under the backend's mutex.
  double* partialsArea();
  CudaBackend& be_;
  std::unique_ptr<Buffer> partials_;
};

/// The Gram of the FFT (larmor/backend/toeplitz_ops.hpp) on one device: the backend's own fftGram, fftGramPadded and
/// fftGramInBox (cuda_backend.cu, fft.cu, fft_last.cu).
class CudaToeplitzOps final : public ToeplitzOps {
 public:
  explicit CudaToeplitzOps(CudaBackend& backend) : be_(backend) {}
  void fftGram(Buffer& data, const Shape& shape, int rank, const Buffer& diagonal) override {
    be_.fftGram(data, shape, rank, diagonal);
  }
  void fftGramPadded(Buffer& out, const Buffer& image, const Shape& imageShape, Buffer& grid, const Shape& gridShape,
                     int rank, const Buffer& diagonal) override {
    be_.fftGramPadded(out, image, imageShape, grid, gridShape, rank, diagonal);
  }
  void fftGramInBox(Buffer& data, const Shape& shape, int rank, const Buffer& diagonal, const Shape& box) override {
    be_.fftGramInBox(data, shape, rank, diagonal, box);
  }

 private:
  CudaBackend& be_;
};

/// GRAPPA's kernels (larmor/backend/grappa_ops.hpp) on one device: the backend's own choleskySolveBatched,
/// choleskySolveBatchedQueued (linalg.cu) and transpose (cuda_backend.cu, kernels.cu).
class CudaGrappaOps final : public GrappaOps {
 public:
  explicit CudaGrappaOps(CudaBackend& backend) : be_(backend) {}
  void choleskySolveBatched(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b, index_t batch) override {
    be_.choleskySolveBatched(A, a, B, b, batch);
  }
  void transpose(Buffer& dst, const Buffer& src, index_t n0, index_t n1, index_t batch) override {
    be_.transpose(dst, src, n0, n1, batch);
  }
  SolveCheck choleskySolveBatchedQueued(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b,
                                        index_t batch) override {
    return be_.choleskySolveBatchedQueued(A, a, B, b, batch);
  }

 private:
  CudaBackend& be_;
};

/// Queued transfers, peer copies and recorded work (larmor/backend/execution_ops.hpp) on one device: the backend's
/// own uploadQueued, downloadQueued, copyFromPeer and record (cuda_backend.cu).
class CudaExecutionOps final : public ExecutionOps {
 public:
  explicit CudaExecutionOps(CudaBackend& backend) : be_(backend) {}
  std::unique_ptr<Transfer> uploadQueued(Buffer& dst, const void* src, std::size_t bytes,
                                         std::size_t dstOffset = 0) override {
    return be_.uploadQueued(dst, src, bytes, dstOffset);
  }
  std::unique_ptr<Transfer> downloadQueued(void* dst, const Buffer& src, std::size_t bytes,
                                           std::size_t srcOffset = 0) override {
    return be_.downloadQueued(dst, src, bytes, srcOffset);
  }
  bool copyFromPeer(Buffer& dst, std::size_t dstOffset, Backend& source, const Buffer& src, std::size_t srcOffset,
                    std::size_t bytes) override {
    return be_.copyFromPeer(dst, dstOffset, source, src, srcOffset, bytes);
  }
  std::unique_ptr<Recording> record(const std::function<void()>& work) override { return be_.record(work); }
  MemoryStats memoryStats() const override { return be_.memoryStats(); }
  void resetPeakMemory() override { be_.resetPeakMemory(); }

 private:
  CudaBackend& be_;
};

/// The image metrics (larmor/backend/quality_ops.hpp) on one device: quality.cu.
class CudaQualityOps final : public QualityOps {
 public:
  explicit CudaQualityOps(CudaBackend& backend) : be_(backend) {}
  quality::Metrics compare(const Buffer& test, const Buffer& reference, const Shape& shape,
                           const quality::CompareOptions& options) override;

 private:
  CudaBackend& be_;
};

}  // namespace larmor::cuda
