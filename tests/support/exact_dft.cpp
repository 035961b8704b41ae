// The float64 exact non-uniform DFT of exact_dft.hpp.
#include "support/exact_dft.hpp"

#include <cmath>
#include <numbers>

namespace larmor::test {

ExactDft::ExactDft(const NufftGeometry& g) : dims_(g.dims), m_(g.samples()) {
  for (int d = 0; d < 3; ++d) n_[d] = d < g.dims ? g.image[d] : 1;
  for (int d = 0; d < 3; ++d) {
    e_[d].resize(static_cast<std::size_t>(m_ * n_[d]));
    for (index_t j = 0; j < m_; ++j)
      for (index_t x = 0; x < n_[d]; ++x) {
        const double ph = d < dims_ ? static_cast<double>(g.trajectory[3 * j + d]) * pixelPos(x, n_[d]) : 0.0;
        e_[d][static_cast<std::size_t>(j * n_[d] + x)] = std::polar(1.0, 2 * std::numbers::pi * ph);
      }
  }
}

std::vector<cdouble> ExactDft::forward(const std::vector<cfloat>& img, index_t batch) const {
  std::vector<cdouble> out(static_cast<std::size_t>(m_ * batch));
#pragma omp parallel for collapse(2)
  for (index_t b = 0; b < batch; ++b)
    for (index_t j = 0; j < m_; ++j) {
      cdouble s = 0;
      for (index_t z = 0; z < n_[2]; ++z)
        for (index_t y = 0; y < n_[1]; ++y) {
          const cdouble ezy = std::conj(phase(2, j, z) * phase(1, j, y));
          const cfloat* row = img.data() + ((b * n_[2] + z) * n_[1] + y) * n_[0];
          cdouble r = 0;
          for (index_t x = 0; x < n_[0]; ++x) r += cdouble(row[x]) * std::conj(phase(0, j, x));
          s += r * ezy;
        }
      out[static_cast<std::size_t>(j + m_ * b)] = s;
    }
  return out;
}

std::vector<cdouble> ExactDft::adjoint(const std::vector<cfloat>& data, index_t batch) const {
  const index_t nv = voxels();
  std::vector<cdouble> out(static_cast<std::size_t>(nv * batch));
#pragma omp parallel for collapse(2)
  for (index_t b = 0; b < batch; ++b)
    for (index_t v = 0; v < nv; ++v) {
      const index_t x = v % n_[0], y = (v / n_[0]) % n_[1], z = v / (n_[0] * n_[1]);
      cdouble s = 0;
      for (index_t j = 0; j < m_; ++j)
        s += cdouble(data[static_cast<std::size_t>(j + m_ * b)]) * phase(2, j, z) * phase(1, j, y) * phase(0, j, x);
      out[static_cast<std::size_t>(v + nv * b)] = s;
    }
  return out;
}

std::vector<cdouble> ExactDft::matrix() const {
  const index_t nv = voxels();
  std::vector<cdouble> F(static_cast<std::size_t>(m_ * nv));
  for (index_t j = 0; j < m_; ++j)
    for (index_t v = 0; v < nv; ++v) {
      const index_t x = v % n_[0], y = (v / n_[0]) % n_[1], z = v / (n_[0] * n_[1]);
      F[static_cast<std::size_t>(j * nv + v)] = std::conj(phase(2, j, z) * phase(1, j, y) * phase(0, j, x));
    }
  return F;
}

}  // namespace larmor::test
