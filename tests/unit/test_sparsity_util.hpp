#pragma once
// Shared by the sparsity prior tests (test_sparsity.cpp: wavelets; test_sparsity_tv.cpp: TV;
// tests/gpu/test_gpu_sparsity.cpp): random complex images, host <-> backend round trips, norms in double.
#include <array>
#include <cmath>
#include <complex>
#include <functional>
#include <random>
#include <vector>

#include "larmor/backend/backend.hpp"

#include "../support/error_norms.hpp"

namespace larmor::sparsitytest {

using cd = std::complex<double>;
using Image = std::vector<cfloat>;

inline index_t voxels(const Shape& s) { return s.size(); }

inline Image randomImage(index_t n, unsigned seed, float scale = 1.f) {
  Image a(static_cast<std::size_t>(n));
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, scale);
  for (auto& v : a) v = {nd(rng), nd(rng)};
  return a;
}

/// A piecewise-constant complex image (blocks) plus a little noise: what TV is made for.
inline Image blockyImage(const Shape& s, unsigned seed, float noise = 0.1f) {
  Image a = randomImage(s.size(), seed, noise);
  for (index_t z = 0; z < s[2]; ++z)
    for (index_t y = 0; y < s[1]; ++y)
      for (index_t x = 0; x < s[0]; ++x) {
        const bool in = (x >= s[0] / 4 && x < 3 * s[0] / 4 + 1) && (y >= s[1] / 3) && (z <= s[2] / 2);
        a[static_cast<std::size_t>(x + s[0] * (y + s[1] * z))] += in ? cfloat(1.f, 0.5f) : cfloat(0.2f, -0.1f);
      }
  return a;
}

inline std::unique_ptr<Buffer> toBackend(Backend& be, const Image& host) {
  auto b = be.allocate(host.size() * sizeof(cfloat));
  be.upload(*b, host.data(), host.size() * sizeof(cfloat));
  return b;
}

inline Image fromBackend(Backend& be, const Buffer& b, std::size_t n) {
  Image host(n);
  be.download(host.data(), b, n * sizeof(cfloat));
  return host;
}

inline double norm(const Image& a) {
  double s = 0;
  for (auto v : a) s += std::norm(cd(v));
  return std::sqrt(s);
}

/// ||a - b|| / ||b||: the tests' one measure (tests/support/error_norms.hpp).
using larmor::test::relL2Error;

}  // namespace larmor::sparsitytest
