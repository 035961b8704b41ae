#pragma once
// Dense float64 references for the CG / Toeplitz / regularizer / iterative tests: a NufftPlan that applies
// the exact DFT's dense matrix (support/exact_dft.hpp) in double, a Backend that is the CPU backend with that
// plan (so the pipeline can be tested without the production plans), and a small dense Hermitian solver
// (Cholesky in double).
#include <cmath>
#include <complex>
#include <memory>
#include <vector>

#include "larmor/backend/backend.hpp"
#include "larmor/backend/registry.hpp"
#include "larmor/ops/nufft.hpp"
#include "support/buffers.hpp"
#include "support/exact_dft.hpp"
#include "support/nc_problem.hpp"
#include "support/random_data.hpp"

namespace larmor::test {

using cd = std::complex<double>;

/// The dense F (M x N, row-major): F[j][n] = exp(-2 pi i k_j . r_n).
inline std::vector<cd> denseF(const NufftGeometry& g) { return ExactDft(g).matrix(); }

/// A NufftPlan that applies the dense F in double (host memory: CPU-backend buffers only).
class DenseDftPlan final : public NufftPlan {
 public:
  explicit DenseDftPlan(const NufftGeometry& g)
      : g_(g), m_(g.samples()), n_(g.image[0] * g.image[1] * (g.dims == 3 ? g.image[2] : 1)), F_(denseF(g)) {}
  index_t samples() const override { return m_; }
  Shape imageShape() const override { return Shape{g_.image[0], g_.image[1], g_.dims == 3 ? g_.image[2] : 1}; }
  void adjoint(const Buffer& samples, Buffer& image, index_t batch) override {
    auto* in = static_cast<const cfloat*>(samples.ptr());
    auto* out = static_cast<cfloat*>(image.ptr());
    for (index_t b = 0; b < batch; ++b)
      for (index_t v = 0; v < n_; ++v) {
        cd s = 0;
        for (index_t j = 0; j < m_; ++j) s += std::conj(F_[j * n_ + v]) * cd(in[b * m_ + j]);
        out[b * n_ + v] = cfloat(s);
      }
    ++adjoints;
  }
  void forward(const Buffer& image, Buffer& samples, index_t batch) override {
    auto* in = static_cast<const cfloat*>(image.ptr());
    auto* out = static_cast<cfloat*>(samples.ptr());
    for (index_t b = 0; b < batch; ++b)
      for (index_t j = 0; j < m_; ++j) {
        cd s = 0;
        for (index_t v = 0; v < n_; ++v) s += F_[j * n_ + v] * cd(in[b * n_ + v]);
        out[b * m_ + j] = cfloat(s);
      }
    ++forwards;
  }
  void spreadInterpolate(const Buffer&, Buffer&) override { throw Error("not needed"); }
  int adjoints = 0, forwards = 0;

 private:
  NufftGeometry g_;
  index_t m_, n_;
  std::vector<cd> F_;
};

/// The CPU backend, but with DenseDftPlan as both its exact DFT and its NUFFT: a test double that implements the
/// Backend's core by forwarding to a CPU backend, forwards the families to that backend's, and queues nothing
/// (ImmediateExecutionOps: its own buffers' peer copies, transfers at once, no recording).
class DenseBackend final : public Backend {
 public:
  DenseBackend() : cpu_(makeCpuBackend()), execution_(*this) {}
  DeviceInfo info() const override { return cpu_->info(); }
  std::unique_ptr<Buffer> allocate(std::size_t bytes) override { return cpu_->allocate(bytes); }
  std::unique_ptr<Buffer> view(Buffer& p, std::size_t o, std::size_t b) override { return cpu_->view(p, o, b); }
  void upload(Buffer& d, const void* s, std::size_t b, std::size_t o = 0) override { cpu_->upload(d, s, b, o); }
  void download(void* d, const Buffer& s, std::size_t b, std::size_t o = 0) override { cpu_->download(d, s, b, o); }
  void copy(Buffer& d, const Buffer& s, std::size_t b, std::size_t dOff = 0, std::size_t sOff = 0) override {
    cpu_->copy(d, s, b, dOff, sOff);
  }
  void synchronize() override {}
  void fill(Buffer& x, cfloat v, index_t n) override { cpu_->fill(x, v, n); }
  void scale(Buffer& x, cfloat a, index_t n) override { cpu_->scale(x, a, n); }
  void axpby(Buffer& y, cfloat a, const Buffer& x, cfloat b, index_t n) override { cpu_->axpby(y, a, x, b, n); }
  void multiply(Buffer& o, const Buffer& a, index_t na, const Buffer& b, index_t nb, bool c) override {
    cpu_->multiply(o, a, na, b, nb, c);
  }
  cdouble dot(const Buffer& a, const Buffer& b, index_t n) override { return cpu_->dot(a, b, n); }
  double norm2(const Buffer& x, index_t n) override { return cpu_->norm2(x, n); }
  void fft(Buffer& d, const Shape& s, int r, FftDirection dir) override { cpu_->fft(d, s, r, dir); }
  void resizeCentred(Buffer& d, const Shape& ds, const Buffer& s, const Shape& ss) override {
    cpu_->resizeCentred(d, ds, s, ss);
  }
  void sumOfSquares(Buffer& o, const Buffer& c, index_t v, index_t n, index_t b) override {
    cpu_->sumOfSquares(o, c, v, n, b);
  }
  void reciprocalDiagonal(Buffer& o, const Buffer& a, double al, const Buffer* b, double be, index_t n) override {
    cpu_->reciprocalDiagonal(o, a, al, b, be, n);
  }
  ExecutionOps& executionOps() override { return execution_; }
  PriorOps& priorOps() override { return cpu_->priorOps(); }
  SparsityOps& sparsityOps() override { return cpu_->sparsityOps(); }
  CoilCombineOps& coilCombineOps() override { return cpu_->coilCombineOps(); }
  EspiritOps& espiritOps() override { return cpu_->espiritOps(); }
  SolverOps& solverOps() override { return cpu_->solverOps(); }
  QualityOps& qualityOps() override { return cpu_->qualityOps(); }
  ToeplitzOps& toeplitzOps() override { return cpu_->toeplitzOps(); }
  GrappaOps& grappaOps() override { return cpu_->grappaOps(); }
  std::unique_ptr<NufftPlan> makeNufftPlan(const NufftGeometry& g, const NufftOptions&) override {
    ++plansMade;
    return std::make_unique<DenseDftPlan>(g);
  }
  std::unique_ptr<NufftPlan> makeDftPlan(const NufftGeometry& g, const DftOptions&) override {
    ++plansMade;
    return std::make_unique<DenseDftPlan>(g);
  }
  void gemmBatched(MatOp oa, MatOp ob, index_t m, index_t n, index_t k, cfloat al, const Buffer& A,
                   const MatrixBatch& a, const Buffer& B, const MatrixBatch& b, cfloat be, Buffer& C,
                   const MatrixBatch& c, index_t batch) override {
    cpu_->gemmBatched(oa, ob, m, n, k, al, A, a, B, b, be, C, c, batch);
  }
  void gather(Buffer& o, const Buffer& s, const Buffer& i, index_t n, index_t batch, index_t stride) override {
    cpu_->gather(o, s, i, n, batch, stride);
  }
  void scatter(Buffer& o, const Buffer& s, const Buffer& i, index_t n, index_t batch, index_t stride) override {
    cpu_->scatter(o, s, i, n, batch, stride);
  }
  int plansMade = 0;

 private:
  std::shared_ptr<Backend> cpu_;
  ImmediateExecutionOps execution_;
};

/// Solves A x = b for Hermitian positive definite A (n x n, row-major) by Cholesky in double.
inline std::vector<cd> choleskySolve(std::vector<cd> A, std::vector<cd> b) {
  const std::size_t n = b.size();
  for (std::size_t j = 0; j < n; ++j) {
    double d = A[j * n + j].real();
    for (std::size_t k = 0; k < j; ++k) d -= std::norm(A[j * n + k]);
    if (!(d > 0)) throw Error("choleskySolve: not positive definite");
    const double l = std::sqrt(d);
    A[j * n + j] = l;
    for (std::size_t i = j + 1; i < n; ++i) {
      cd s = A[i * n + j];
      for (std::size_t k = 0; k < j; ++k) s -= A[i * n + k] * std::conj(A[j * n + k]);
      A[i * n + j] = s / l;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {  // L y = b
    cd s = b[i];
    for (std::size_t k = 0; k < i; ++k) s -= A[i * n + k] * b[k];
    b[i] = s / A[i * n + i].real();
  }
  for (std::size_t ii = n; ii-- > 0;) {  // L^H x = y
    cd s = b[ii];
    for (std::size_t k = ii + 1; k < n; ++k) s -= std::conj(A[k * n + ii]) * b[k];
    b[ii] = s / A[ii * n + ii].real();
  }
  return b;
}

}  // namespace larmor::test
