#pragma once
// Shared by the CG / Toeplitz / regularizer / iterative tests: a float64 dense reference of the exact
// non-uniform DFT (ops/nufft.hpp's definitions), a NufftPlan built on it, a Backend that is the CPU backend
// with that plan (so the pipeline can be tested without depending on the production plans), and a small
// dense Hermitian solver (Cholesky in double).
#include <cmath>
#include <complex>
#include <memory>
#include <random>
#include <vector>

#include "larmor/backend/backend.hpp"
#include "larmor/backend/registry.hpp"
#include "larmor/ops/nufft.hpp"

namespace larmor::testutil {

using cd = std::complex<double>;

/// Position of pixel n of N along a dimension: (n - floor(N/2)) / N (docs/conventions.md).
inline double pixelPos(index_t n, index_t N) { return static_cast<double>(n - N / 2) / static_cast<double>(N); }

/// The dense matrix F (M x N, row-major): F[j][n] = exp(-2 pi i k_j . r_n).
inline std::vector<cd> denseF(const NufftGeometry& g) {
  const index_t m = g.samples();
  const index_t n0 = g.image[0], n1 = g.image[1], n2 = g.dims == 3 ? g.image[2] : 1;
  const index_t n = n0 * n1 * n2;
  std::vector<cd> F(static_cast<std::size_t>(m * n));
  for (index_t j = 0; j < m; ++j) {
    const double kx = g.trajectory[3 * j], ky = g.trajectory[3 * j + 1], kz = g.dims == 3 ? g.trajectory[3 * j + 2] : 0.0;
    for (index_t z = 0; z < n2; ++z)
      for (index_t y = 0; y < n1; ++y)
        for (index_t x = 0; x < n0; ++x) {
          const double ph = -2 * M_PI * (kx * pixelPos(x, n0) + ky * pixelPos(y, n1) + (g.dims == 3 ? kz * pixelPos(z, n2) : 0.0));
          F[j * n + x + n0 * (y + n1 * z)] = cd(std::cos(ph), std::sin(ph));
        }
  }
  return F;
}

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

/// The CPU backend, but with DenseDftPlan as both its exact DFT and its NUFFT.
class DenseBackend final : public Backend {
 public:
  DenseBackend() : cpu_(makeCpuBackend()) {}
  DeviceInfo info() const override { return cpu_->info(); }
  std::unique_ptr<Buffer> allocate(std::size_t bytes) override { return cpu_->allocate(bytes); }
  void upload(Buffer& d, const void* s, std::size_t b, std::size_t o = 0) override { cpu_->upload(d, s, b, o); }
  void download(void* d, const Buffer& s, std::size_t b, std::size_t o = 0) override { cpu_->download(d, s, b, o); }
  void copy(Buffer& d, const Buffer& s, std::size_t b) override { cpu_->copy(d, s, b); }
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
  PriorOps& priorOps() override { return cpu_->priorOps(); }
  SparsityOps& sparsityOps() override { return cpu_->sparsityOps(); }
  CoilCombineOps& coilCombineOps() override { return cpu_->coilCombineOps(); }
  EspiritOps& espiritOps() override { return cpu_->espiritOps(); }
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
  void choleskySolveBatched(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b, index_t n) override {
    cpu_->choleskySolveBatched(A, a, B, b, n);
  }
  void gather(Buffer& o, const Buffer& s, const Buffer& i, index_t n) override { cpu_->gather(o, s, i, n); }
  void scatter(Buffer& o, const Buffer& s, const Buffer& i, index_t n) override { cpu_->scatter(o, s, i, n); }
  int plansMade = 0;

 private:
  std::shared_ptr<Backend> cpu_;
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

/// Uniform random trajectory in the band |k_d| < N_d / 2: [3, M].
inline RArray randomTrajectory(index_t m, const index_t image[3], int dims, unsigned seed) {
  std::mt19937 rng(seed);
  RArray k(Shape{3, m});
  for (index_t j = 0; j < m; ++j)
    for (int d = 0; d < 3; ++d) {
      const double half = d < dims ? image[d] / 2.0 : 0.0;
      std::uniform_real_distribution<double> u(-half, half);
      k[3 * j + d] = d < dims ? static_cast<float>(u(rng)) : 0.f;
    }
  return k;
}

inline std::vector<cfloat> randomComplex(index_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<cfloat> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = {nd(rng), nd(rng)};
  return v;
}

inline std::unique_ptr<Buffer> toBuffer(Backend& b, const std::vector<cfloat>& v) {
  auto buf = b.allocate(v.size() * sizeof(cfloat));
  b.upload(*buf, v.data(), v.size() * sizeof(cfloat));
  return buf;
}

inline std::vector<cfloat> fromBuffer(Backend& b, const Buffer& buf, index_t n) {
  std::vector<cfloat> v(static_cast<std::size_t>(n));
  b.download(v.data(), buf, v.size() * sizeof(cfloat));
  return v;
}

}  // namespace larmor::testutil
