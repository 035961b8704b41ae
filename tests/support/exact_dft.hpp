#pragma once
// The tests' one float64 reference of the exact non-uniform DFT (docs/conventions.md, ops/nufft.hpp),
// written here and independent of the engine's kernels:
//   forward  d_j = sum_n rho_n exp(-2 pi i k_j . r_n),   adjoint  rho_n = sum_j d_j exp(+2 pi i k_j . r_n),
// r_n = (n - floor(N/2)) / N per dimension, k in cycles/FOV, z ignored in 2D; batches are consecutive
// images / sample sets. The phasors are tabulated per dimension (exp(2 pi i k.r) = prod_d exp(2 pi i k_d r_d)),
// so the sums need no trigonometry. Used by the NUFFT, exact-DFT, gridding/TRON, Toeplitz, CG and iterative
// tests (the dense matrix F for the small dense solves).
#include <complex>
#include <vector>

#include "larmor/ops/nufft.hpp"

namespace larmor::test {

/// Position of pixel n of N along a dimension: (n - floor(N/2)) / N.
inline double pixelPos(index_t n, index_t N) { return static_cast<double>(n - N / 2) / static_cast<double>(N); }

class ExactDft {
 public:
  explicit ExactDft(const NufftGeometry& g);
  index_t samples() const { return m_; }
  index_t voxels() const { return n_[0] * n_[1] * n_[2]; }
  /// d = F img, for `batch` images of voxels() each (x fastest).
  std::vector<cdouble> forward(const std::vector<cfloat>& img, index_t batch) const;
  /// img = F^H d, for `batch` sample sets of samples() each.
  std::vector<cdouble> adjoint(const std::vector<cfloat>& data, index_t batch) const;
  /// The dense F, samples() x voxels(), row-major: F[j * voxels() + v].
  std::vector<cdouble> matrix() const;

 private:
  cdouble phase(int d, index_t j, index_t x) const { return e_[d][static_cast<std::size_t>(j * n_[d] + x)]; }
  int dims_;
  index_t n_[3];
  index_t m_;
  std::vector<cdouble> e_[3];  ///< e_[d][j, x] = exp(+2 pi i k_jd r_x)
};

}  // namespace larmor::test
