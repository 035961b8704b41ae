#pragma once
// Shared by the CPU exact-DFT and NUFFT tests (test_dft.cpp, test_nufft.cpp) and the GPU ones
// (tests/gpu/noncartesian_test_util.hpp): a non-uniform problem (image extents, a trajectory, radial
// geometry where known), a random one uniform in the band, and random complex data.
#include <optional>
#include <random>
#include <vector>

#include "larmor/ops/nufft.hpp"

namespace larmor::nctest {

struct Problem {
  int dims = 2;
  index_t n[3] = {1, 1, 1};
  RArray k;  ///< [3, M] or [3, readout, spokes]
  index_t m = 0;
  std::optional<RadialInfo> radial;
  index_t voxels() const { return n[0] * n[1] * n[2]; }
  NufftGeometry geometry() const {
    NufftGeometry g;
    g.dims = dims;
    for (int d = 0; d < 3; ++d) g.image[d] = n[d];
    g.trajectory = k;
    g.radial = radial;
    return g;
  }
};

/// Samples uniform in [-band N/2, band N/2) of each dimension.
inline Problem randomProblem(int dims, index_t n0, index_t n1, index_t n2, index_t m, unsigned seed, double band = 1.0) {
  Problem p;
  p.dims = dims;
  p.n[0] = n0, p.n[1] = n1, p.n[2] = dims == 3 ? n2 : 1;
  p.m = m;
  p.k = RArray(Shape{3, m}, 0.f);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  for (index_t j = 0; j < m; ++j)
    for (int d = 0; d < dims; ++d) p.k[3 * j + d] = static_cast<float>(band * u(rng) * static_cast<double>(p.n[d]));
  return p;
}

inline std::vector<cfloat> randomComplex(index_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.f, 1.f);
  std::vector<cfloat> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = cfloat(g(rng), g(rng));
  return v;
}

}  // namespace larmor::nctest
