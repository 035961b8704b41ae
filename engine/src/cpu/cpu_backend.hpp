#pragma once
// CpuBackend: the Backend interface on the host, FFTW3 (single precision, threaded) and OpenMP loops; the
// reference implementation of every Backend op, which the CUDA backend is tested against. Twin of
// cuda/cuda_backend.hpp: each op's body lives in the file named after its CUDA twin (memory.cpp, fft.cpp,
// nufft.cpp, dft.cpp, linalg.cpp, coil_combine.cpp, prior.cpp, finite_difference.cpp, sparsity.cpp,
// wavelet.cpp, solver.cpp, quality.cpp). Internal to the engine.
#include <fftw3.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "larmor/backend/backend.hpp"
#include "larmor/backend/quality_ops.hpp"
#include "larmor/backend/solver_ops.hpp"
#include "larmor/ops/nufft.hpp"

namespace larmor::cpu {

/// The n complex elements of a CPU buffer, checked against its size (op names the caller in the error).
inline const cfloat* elements(const Buffer& b, index_t n, const char* op) {
  require(static_cast<std::size_t>(n) * sizeof(cfloat) <= b.bytes(),
          std::string(op) + ": " + std::to_string(n) + " elements exceed a buffer of " +
              std::to_string(b.bytes() / sizeof(cfloat)));
  return static_cast<const cfloat*>(b.ptr());
}
inline cfloat* elements(Buffer& b, index_t n, const char* op) {
  return const_cast<cfloat*>(elements(static_cast<const Buffer&>(b), n, op));
}

/// Host memory from fftwf_malloc (aligned for FFTW's SIMD loads); memory.cpp.
class HostBuffer final : public Buffer {
 public:
  explicit HostBuffer(std::size_t bytes);
  /// A view of bytes of `parent` from `offset`: owns nothing (Backend::view).
  HostBuffer(Buffer& parent, std::size_t offset, std::size_t bytes);
  ~HostBuffer() override;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  std::size_t bytes() const override { return bytes_; }
  void* ptr() override { return data_; }
  const void* ptr() const override { return data_; }

 private:
  std::size_t bytes_;
  void* data_;
  bool owned_ = true;
};

/// Centred unitary FFTs (backend.hpp's convention) with FFTW plans cached by shape; fft.cpp.
class FftEngine {
 public:
  FftEngine();
  ~FftEngine();
  FftEngine(const FftEngine&) = delete;
  FftEngine& operator=(const FftEngine&) = delete;
  /// The transform of `data` (shape.size() elements, checked by the caller) over dims [0, rank).
  void transform(cfloat* data, const Shape& shape, int rank, FftDirection dir);
  /// data <- F^H diag(d) F data (ToeplitzOps::fftGram), d one transform's elements applied to every batch, when
  /// every transformed length is even (or 1); false, with nothing done, otherwise.
  bool gramEven(cfloat* data, const Shape& shape, int rank, const cfloat* d);

 private:
  /// FFTW's plain (uncentred, unscaled) DFT over dims [0, rank).
  void plain(cfloat* data, const Shape& shape, int rank, FftDirection dir);
  using Key = std::tuple<std::vector<index_t>, int, index_t, int>;
  fftwf_plan planFor(const Shape& shape, int rank, index_t batch, FftDirection dir, cfloat* buffer);
  std::mutex planMutex_;  ///< this engine's plan map (FFTW's planner itself: one process-wide lock, fft.cpp)
  std::map<Key, fftwf_plan> plans_;
};

/// The prior kernels (larmor/backend/prior_ops.hpp) on the host: prior.cpp and finite_difference.cpp.
class CpuPriorOps final : public PriorOps {
 public:
  void finiteDifference(Buffer& out, const Buffer& in, const index_t dims[3], index_t batch, int axis,
                        bool adjoint) override;
  NeighbourDifferences neighbourDifferences(const Buffer& image, const index_t dims[3], std::uint64_t k) override;
  void edgeWeights(Buffer& out, const Buffer& image, const index_t dims[3], int axis, double delta) override;
  void addDifferenceDiagonal(Buffer& out, const Buffer* w, const index_t dims[3], int axis) override;
  void differenceNormal(Buffer& y, const Buffer& x, const Buffer* const w[3], const index_t dims[3], float alpha,
                        bool accumulate) override;
};

/// The sparsity priors (larmor/backend/sparsity_ops.hpp) on the host: sparsity.cpp (TV) and wavelet.cpp.
/// Workspaces are kept between calls (grown when an image needs more), so a solver's iterations allocate
/// nothing; one call at a time.
class CpuSparsityOps final : public SparsityOps {
 public:
  using SparsityOps::totalVariation;
  using SparsityOps::tvProx;
  void tvProx(Buffer& x, const Shape& image, double t, int iterations, Buffer& dual, const TvWeights& w) override;
  double totalVariation(const Buffer& x, const Shape& image, const TvWeights& w) override;
  void waveletProx(Buffer& x, const Shape& image, double t, const std::array<index_t, 3>& shift) override;
  double waveletL1(const Buffer& x, const Shape& image) override;
  void waveletTransform(Buffer& data, const Shape& image, bool inverse) override;

 private:
  /// `n` elements of workspace `which` (0: TV primal, 1: TV momentum dual, 2: wavelet coefficients).
  cfloat* workspace(int which, index_t n);
  std::mutex mutex_;
  std::vector<cfloat> work_[3];
};

/// Adaptive coil combination (larmor/backend/coil_combine_ops.hpp) on the host: coil_combine.cpp.
class CpuCoilCombineOps final : public CoilCombineOps {
 public:
  void adaptiveCombine(Buffer& out, const Buffer& coilImages, const index_t dims[3], index_t coils, index_t batch,
                       int window) override;
};

/// ESPIRiT's pointwise eigenvectors (larmor/backend/espirit_ops.hpp) on the host: espirit.cpp.
class CpuEspiritOps final : public EspiritOps {
 public:
  void dominantEigenvectors(Buffer& maps, Buffer& values, const Buffer& cov, index_t voxels, index_t channels,
                            const std::vector<cfloat>& reference, float crop) override;
  void smallGridMatrices(Buffer& cov, const Buffer& u, index_t points, index_t channels, index_t kept,
                         double scale) override;
  void calibrationMatrix(Buffer& a, const Buffer& cal, const index_t box[4], const index_t kernel[3]) override;
  void hermitianEigen(std::vector<cdouble>& a, std::vector<double>& values, index_t n) override;
  void gramKernels(const Buffer& gram, index_t n, std::vector<double>& values, Buffer& kernels) override;
};

/// The solvers' scalars (larmor/backend/solver_ops.hpp) on the host: solver.cpp. Steps are the backend's
/// own vector ops or plain loops over its buffers; the scalars are host doubles.
class CpuSolverOps final : public SolverOps {
 public:
  explicit CpuSolverOps(Backend& backend) : be_(backend) {}
  bool scalarsOnHost() const override { return true; }
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
  Backend& be_;
};

/// The image metrics (larmor/backend/quality_ops.hpp) on the host: quality.cpp.
class CpuQualityOps final : public QualityOps {
 public:
  quality::Metrics compare(const Buffer& test, const Buffer& reference, const Shape& shape,
                           const quality::CompareOptions& options) override;
};

/// The Gram of the FFT (larmor/backend/toeplitz_ops.hpp) on the host: cpu_backend.cpp. fftGram by the FFT engine
/// between two shifts (even lengths) or as fft, multiply, inverse fft; fftGramPadded as the backend's resizeCentred,
/// fftGram, resizeCentred.
class CpuToeplitzOps final : public ToeplitzOps {
 public:
  CpuToeplitzOps(Backend& backend, FftEngine& fft) : be_(backend), fft_(fft) {}
  void fftGram(Buffer& data, const Shape& shape, int rank, const Buffer& diagonal) override;
  void fftGramPadded(Buffer& out, const Buffer& image, const Shape& imageShape, Buffer& grid, const Shape& gridShape,
                     int rank, const Buffer& diagonal) override;
  void fftGramInBox(Buffer& data, const Shape& shape, int rank, const Buffer& diagonal, const Shape& box) override;

 private:
  Backend& be_;
  FftEngine& fft_;
};

/// GRAPPA's kernels (larmor/backend/grappa_ops.hpp) on the host: linalg.cpp (the batched Cholesky in double; the
/// queued solve is that solve at once) and cpu_backend.cpp (transpose).
class CpuGrappaOps final : public GrappaOps {
 public:
  void choleskySolveBatched(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b, index_t batch) override;
  SolveCheck choleskySolveBatchedQueued(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b,
                                        index_t batch) override;
  void transpose(Buffer& dst, const Buffer& src, index_t n0, index_t n1, index_t batch) override;
};

/// Queued transfers, peer copies and recording (larmor/backend/execution_ops.hpp) on the host: each at once, as
/// ImmediateExecutionOps, with peer copies from every CPU backend's buffers (memory.cpp).
class CpuExecutionOps final : public ImmediateExecutionOps {
 public:
  using ImmediateExecutionOps::ImmediateExecutionOps;
  bool copyFromPeer(Buffer& dst, std::size_t dstOffset, Backend& source, const Buffer& src, std::size_t srcOffset,
                    std::size_t bytes) override;
  /// Bytes in HostBuffers of the process (every CPU backend's together); memory.cpp.
  MemoryStats memoryStats() const override;
  void resetPeakMemory() override;
};

class CpuBackend final : public Backend {
 public:
  CpuBackend() : solver_(*this), toeplitz_(*this, fft_), execution_(*this) {}

  DeviceInfo info() const override;

  // memory.cpp
  std::unique_ptr<Buffer> allocate(std::size_t bytes) override;
  std::unique_ptr<Buffer> view(Buffer& parent, std::size_t offset, std::size_t bytes) override;
  void upload(Buffer& dst, const void* src, std::size_t bytes, std::size_t dstOffset = 0) override;
  void download(void* dst, const Buffer& src, std::size_t bytes, std::size_t srcOffset = 0) override;
  void copy(Buffer& dst, const Buffer& src, std::size_t bytes, std::size_t dstOffset = 0, std::size_t srcOffset = 0) override;
  void synchronize() override {}

  // cpu_backend.cpp
  void fill(Buffer& x, cfloat value, index_t n) override;
  void scale(Buffer& x, cfloat a, index_t n) override;
  void axpby(Buffer& y, cfloat a, const Buffer& x, cfloat b, index_t n) override;
  void multiply(Buffer& out, const Buffer& a, index_t na, const Buffer& b, index_t nb, bool conjA) override;
  cdouble dot(const Buffer& a, const Buffer& b, index_t n) override;
  double norm2(const Buffer& x, index_t n) override;
  void reciprocalDiagonal(Buffer& out, const Buffer& a, double alpha, const Buffer* b, double beta,
                          index_t n) override;
  void fft(Buffer& data, const Shape& shape, int rank, FftDirection dir) override;
  void resizeCentred(Buffer& dst, const Shape& dstShape, const Buffer& src, const Shape& srcShape) override;
  void sumOfSquares(Buffer& out, const Buffer& coilImages, index_t voxels, index_t coils, index_t batch) override;

  ExecutionOps& executionOps() override { return execution_; }
  PriorOps& priorOps() override { return prior_; }
  SparsityOps& sparsityOps() override { return sparsity_; }
  CoilCombineOps& coilCombineOps() override { return coilCombine_; }
  EspiritOps& espiritOps() override { return espirit_; }
  SolverOps& solverOps() override { return solver_; }
  QualityOps& qualityOps() override { return quality_; }
  ToeplitzOps& toeplitzOps() override { return toeplitz_; }
  GrappaOps& grappaOps() override { return grappa_; }

  // nufft.cpp, dft.cpp
  std::unique_ptr<NufftPlan> makeNufftPlan(const NufftGeometry& geometry, const NufftOptions& options) override;
  std::unique_ptr<NufftPlan> makeDftPlan(const NufftGeometry& geometry, const DftOptions& options) override;

  // linalg.cpp
  void gemmBatched(MatOp opA, MatOp opB, index_t m, index_t n, index_t k, cfloat alpha, const Buffer& A,
                   const MatrixBatch& a, const Buffer& B, const MatrixBatch& b, cfloat beta, Buffer& C,
                   const MatrixBatch& c, index_t batch) override;
  void gather(Buffer& out, const Buffer& src, const Buffer& index, index_t n, index_t batch = 1,
              index_t stride = 0) override;
  void scatter(Buffer& out, const Buffer& src, const Buffer& index, index_t n, index_t batch = 1,
               index_t stride = 0) override;

 private:
  FftEngine fft_;
  CpuPriorOps prior_;
  CpuSparsityOps sparsity_;
  CpuCoilCombineOps coilCombine_;
  CpuEspiritOps espirit_;
  CpuSolverOps solver_;
  CpuQualityOps quality_;
  CpuToeplitzOps toeplitz_;
  CpuGrappaOps grappa_;
  CpuExecutionOps execution_;
};

}  // namespace larmor::cpu
