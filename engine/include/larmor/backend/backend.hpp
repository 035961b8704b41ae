#pragma once
// The Backend interface: coarse-grained operations on whole arrays. Algorithms (pipelines, CG, GRAPPA)
// are written once against it; CpuBackend (FFTW + OpenMP, engine/src/cpu/) and CudaBackend (cuFFT + own
// kernels, a run-time plugin, cuda/) implement it. No CUDA types appear here: device memory is an opaque
// Buffer.
//
// The core, which several algorithms share: 22 virtual methods, each with the callers that keep it here (engine/src
// unless named):
//   device                 info: the device's description (recon.cpp's planner and provenance, pipelines, front ends)
//   memory and transfers   allocate, upload, download, copy: every pipeline and operator; view: SENSE's coil maps
//                          (ops/sense.cpp) and dynamic imaging's frames (recon/dynamic.cpp); synchronize:
//                          stage timings (util/timer.cpp), coil maps, bench
//   vector ops, reductions fill, scale, axpby, multiply, dot, norm2: the solvers, the operators and the pipelines;
//                          reciprocalDiagonal: CG's Jacobi preconditioner, GRAPPA's weights, partial Fourier;
//                          sumOfSquares: SENSE, the Cartesian, GRAPPA, iterative and partial-Fourier pipelines,
//                          display scaling
//   arrays                 fft, resizeCentred: every Cartesian and calibration step, ESPIRiT, Toeplitz; gather,
//                          scatter: Cartesian sampling (ops/cartesian_sampling.cpp) and GRAPPA
//   dense linear algebra   gemmBatched: GRAPPA, SENSE, ESPIRiT, coil compression (batched, column-major)
//   plan factories         makeNufftPlan, makeDftPlan: gridding, iterative, calibration, Toeplitz, density
//                          compensation
// An operation that one algorithm alone needs lives in that algorithm's family, an interface of its own that
// each backend provides (CPU twin in engine/src/cpu/, CUDA twin in cuda/), so adding an algorithm does not grow
// this class; a new backend (a test double, another GPU API) implements the core and the families it needs:
// (family             what                                   its callers in engine/src)
//   executionOps()    queued transfers, peer copies,         backend/streamed_batch.cpp, recon/iterative_slabs.cpp,
//                     recorded work (CUDA graphs), the       solve/cg.cpp; memory figures: recon/recon.cpp,
//                     memory figures of the allocator        recon/run_frames.cpp, bench/
//   priorOps()        finite-difference priors               ops/regularizer.cpp
//   sparsityOps()     TV and wavelet proximal maps           recon/iterative.cpp (compressed sensing)
//   coilCombineOps()  adaptive coil combination              recon/cartesian.cpp
//   espiritOps()      ESPIRiT's eigenvectors                 ops/espirit.cpp
//   solverOps()       CG/FISTA scalars and fused steps       solve/cg.cpp, solve/fista.cpp, recon/iterative.cpp
//   qualityOps()      image metrics                          quality/metrics.cpp
//   toeplitzOps()     the Gram of the FFT, F^H diag(d) F,    ops/cartesian_sampling.cpp,
//                     plain and padded                       ops/toeplitz.cpp
//   grappaOps()       the batched Cholesky solve (queued or  recon/grappa_plan.cpp, recon/grappa.cpp
//                     not), the planes' transpose
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/backend/buffer.hpp"
#include "larmor/backend/coil_combine_ops.hpp"
#include "larmor/backend/espirit_ops.hpp"
#include "larmor/backend/execution_ops.hpp"
#include "larmor/backend/grappa_ops.hpp"
#include "larmor/backend/prior_ops.hpp"
#include "larmor/backend/quality_ops.hpp"
#include "larmor/backend/solver_ops.hpp"
#include "larmor/backend/sparsity_ops.hpp"
#include "larmor/backend/toeplitz_ops.hpp"
#include "larmor/ops/linalg.hpp"

namespace larmor {

class NufftPlan;
struct NufftGeometry;
struct NufftOptions;
struct DftOptions;

struct DeviceInfo {
  std::string id;          ///< "cpu", "cuda:0", ... (what --device accepts)
  std::string name;        ///< "NVIDIA H100 80GB HBM3", "x86_64 CPU (2 threads)"
  bool gpu = false;
  std::size_t memoryBytes = 0;
  int computeMajor = 0, computeMinor = 0;  ///< GPU compute capability
  int multiprocessors = 0;                  ///< SMs (GPU) or threads (CPU)
  std::string library;                      ///< "FFTW 3.3.10", "CUDA runtime 13.0, cuFFT 12.0"
};

enum class FftDirection { Forward, Inverse };

/// Centred, unitary discrete Fourier transform convention, written down once (docs/conventions.md):
///   X[k] = N^{-1/2} sum_n x[n] exp(-2 pi i (k - c)(n - c) / N),  c = floor(N / 2),
/// for each transformed dimension of length N (Forward; Inverse has +i). Index c holds k = 0 and
/// the image centre, as in BART's `fft -u` and ISMRMRD's tools.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceInfo info() const = 0;
  bool isGpu() const { return info().gpu; }
  /// This backend object among every one of the process, never reused (an address may be, once a backend is
  /// gone): what keeps state made on a backend apart from a later backend's (recon::OperatorCache).
  std::uint64_t serial() const { return serial_; }

  // --- memory -----------------------------------------------------------------------------------
  virtual std::unique_ptr<Buffer> allocate(std::size_t bytes) = 0;
  /// bytes of `parent` from byte `offset`, as a buffer of its own that owns nothing (no copy): it must not
  /// outlive `parent`. For one array seen in parts (SENSE's coil maps: every coil a view into its group).
  virtual std::unique_ptr<Buffer> view(Buffer& parent, std::size_t offset, std::size_t bytes) = 0;
  virtual void upload(Buffer& dst, const void* src, std::size_t bytes, std::size_t dstOffset = 0) = 0;
  virtual void download(void* dst, const Buffer& src, std::size_t bytes, std::size_t srcOffset = 0) = 0;
  /// bytes from src + srcOffset to dst + dstOffset (both on this backend).
  virtual void copy(Buffer& dst, const Buffer& src, std::size_t bytes, std::size_t dstOffset = 0,
                    std::size_t srcOffset = 0) = 0;
  /// Waits for all queued work, ExecutionOps's queued transfers included (timing, before host reads).
  virtual void synchronize() = 0;

  // --- complex vectors of n elements ---------------------------------------------------------------
  virtual void fill(Buffer& x, cfloat value, index_t n) = 0;
  /// x *= a
  virtual void scale(Buffer& x, cfloat a, index_t n) = 0;
  /// y = a*x + b*y
  virtual void axpby(Buffer& y, cfloat a, const Buffer& x, cfloat b, index_t n) = 0;
  /// out[i] = op(a[i % na]) * b[i] for i < nb, op = conj when conjA; na divides nb (broadcast of a
  /// over batches of b, e.g. one image times every coil). out may alias b.
  virtual void multiply(Buffer& out, const Buffer& a, index_t na, const Buffer& b, index_t nb, bool conjA) = 0;
  /// sum_i conj(a[i]) b[i], accumulated in double.
  virtual cdouble dot(const Buffer& a, const Buffer& b, index_t n) = 0;
  /// sqrt(sum_i |x[i]|^2), accumulated in double.
  virtual double norm2(const Buffer& x, index_t n) = 0;
  /// The inverse of a Jacobi preconditioner's diagonal (solve/cg.hpp): out[i] = float(1 / (alpha Re a[i] +
  /// beta Re b[i])), or 1 / (alpha Re a[i] + beta) where b is null (a constant term: a floor); sums in double;
  /// 1 where that sum is not finite or not > 0; imaginary 0.
  virtual void reciprocalDiagonal(Buffer& out, const Buffer& a, double alpha, const Buffer* b, double beta,
                                  index_t n) = 0;

  // --- arrays ---------------------------------------------------------------------------------------
  /// Centred unitary FFT (convention above) over dimensions [0, rank) of `shape`, batched over the rest.
  virtual void fft(Buffer& data, const Shape& shape, int rank, FftDirection dir) = 0;
  /// Copies the centred region: dst (shape dstShape) from src (shape srcShape), both of the same
  /// rank <= 4 with equal batch (dims >= 4). Along each dimension the centres (floor(N/2)) coincide;
  /// where dst is larger the border is zero (zero-padding), where smaller src is cropped.
  virtual void resizeCentred(Buffer& dst, const Shape& dstShape, const Buffer& src, const Shape& srcShape) = 0;
  /// out[v + voxels*b] = sqrt(sum_c |in[v + voxels*(c + coils*b)]|^2) (imaginary part 0).
  virtual void sumOfSquares(Buffer& out, const Buffer& coilImages, index_t voxels, index_t coils, index_t batch) = 0;

  // --- kernels of single algorithms, each behind its own interface -----------------------------------
  /// Queued transfers, peer copies, recorded work and the memory figures (larmor/backend/execution_ops.hpp); owned
  /// by the backend.
  virtual ExecutionOps& executionOps() = 0;
  /// The finite-difference priors' kernels (ops/regularizer.hpp); owned by the backend.
  virtual PriorOps& priorOps() = 0;
  /// Compressed sensing's sparsity priors (TV, wavelets; larmor/backend/sparsity_ops.hpp); owned by the backend.
  virtual SparsityOps& sparsityOps() = 0;
  /// Adaptive coil combination; owned by the backend.
  virtual CoilCombineOps& coilCombineOps() = 0;
  /// ESPIRiT's pointwise eigenvectors (ops/espirit.hpp); owned by the backend.
  virtual EspiritOps& espiritOps() = 0;
  /// The iterative solvers' scalars and fused steps (larmor/backend/solver_ops.hpp); owned by the backend.
  virtual SolverOps& solverOps() = 0;
  /// Image metrics against a reference (larmor/backend/quality_ops.hpp); owned by the backend.
  virtual QualityOps& qualityOps() = 0;
  /// The Gram of the FFT, plain (Cartesian sampling) and padded (the Toeplitz operator;
  /// larmor/backend/toeplitz_ops.hpp); owned by the backend.
  virtual ToeplitzOps& toeplitzOps() = 0;
  /// GRAPPA's batched Cholesky solves and planes' transpose (larmor/backend/grappa_ops.hpp); owned by the backend.
  virtual GrappaOps& grappaOps() = 0;

  // --- non-uniform transforms (ops/nufft.hpp) ------------------------------------------------------
  /// A plan whose buffers live on this backend.
  virtual std::unique_ptr<NufftPlan> makeNufftPlan(const NufftGeometry& geometry, const NufftOptions& options) = 0;
  virtual std::unique_ptr<NufftPlan> makeDftPlan(const NufftGeometry& geometry, const DftOptions& options) = 0;

  // --- batched dense linear algebra (ops/linalg.hpp), complex float, column-major; index moves -------
  /// C_b = alpha op(A_b) op(B_b) + beta C_b for b < batch; m x n result, inner dimension k.
  virtual void gemmBatched(MatOp opA, MatOp opB, index_t m, index_t n, index_t k, cfloat alpha, const Buffer& A,
                           const MatrixBatch& a, const Buffer& B, const MatrixBatch& b, cfloat beta, Buffer& C,
                           const MatrixBatch& c, index_t batch) = 0;
  /// out[i + n b] = src[index[i] + stride b] for i < n, b < batch (index: int64 buffer on this backend, n
  /// entries, shared by the batch; index < 0 gives 0). A batch of grids sampled at the same points needs
  /// one index of n entries, not n * batch.
  virtual void gather(Buffer& out, const Buffer& src, const Buffer& index, index_t n, index_t batch = 1,
                      index_t stride = 0) = 0;
  /// out[index[i] + stride b] = src[i + n b] for i < n, b < batch (index < 0 skipped; indices must be
  /// distinct, and stride >= the largest index + 1 when batch > 1, so that no two writes meet).
  virtual void scatter(Buffer& out, const Buffer& src, const Buffer& index, index_t n, index_t batch = 1,
                       index_t stride = 0) = 0;

 private:
  static std::uint64_t nextSerial();
  const std::uint64_t serial_ = nextSerial();
};

/// An array living in a backend's memory.
template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(Backend& backend, Shape shape)
      : backend_(&backend), shape_(std::move(shape)),
        buffer_(backend.allocate(static_cast<std::size_t>(shape_.size()) * sizeof(T))) {}

  static DeviceArray upload(Backend& backend, const Array<T>& host) {
    DeviceArray d(backend, host.shape());
    backend.upload(*d.buffer_, host.data(), d.bytes());
    return d;
  }
  Array<T> download() const {
    Array<T> host(shape_);
    backend_->download(host.data(), *buffer_, bytes());
    return host;
  }
  const Shape& shape() const { return shape_; }
  index_t size() const { return shape_.size(); }
  std::size_t bytes() const { return static_cast<std::size_t>(shape_.size()) * sizeof(T); }
  Buffer& buffer() { return *buffer_; }
  const Buffer& buffer() const { return *buffer_; }
  Backend& backend() const { return *backend_; }
  void reshape(Shape s) {
    require(s.size() == shape_.size(), "reshape " + shape_.str() + " -> " + s.str() + " changes the size");
    shape_ = std::move(s);
  }

 private:
  Backend* backend_ = nullptr;
  Shape shape_;
  std::unique_ptr<Buffer> buffer_;
};

using CDeviceArray = DeviceArray<cfloat>;

}  // namespace larmor
