#pragma once
// The tests' non-uniform problems: image extents, a trajectory (cycles/FOV) and radial geometry where known;
// random ones uniform in the band (or a fraction / multiple of it) and 2D radial ones. Used by the exact-DFT,
// NUFFT, Toeplitz, CG and iterative tests on every device.
#include <optional>
#include <random>

#include "larmor/ops/nufft.hpp"
#include "larmor/traj/radial.hpp"

namespace larmor::test {

/// M samples uniform in [-band N_d/2, band N_d/2) of each of the first `dims` dimensions; z = 0 in 2D. [3, M].
inline RArray randomTrajectory(index_t m, const index_t image[3], int dims, unsigned seed, double band = 1.0) {
  RArray k(Shape{3, m}, 0.f);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  for (index_t j = 0; j < m; ++j)
    for (int d = 0; d < dims; ++d) k[3 * j + d] = static_cast<float>(band * u(rng) * static_cast<double>(image[d]));
  return k;
}

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

inline Problem randomProblem(int dims, index_t n0, index_t n1, index_t n2, index_t m, unsigned seed, double band = 1.0) {
  Problem p;
  p.dims = dims;
  p.n[0] = n0, p.n[1] = n1, p.n[2] = dims == 3 ? n2 : 1;
  p.m = m;
  p.k = randomTrajectory(m, p.n, dims, seed, band);
  return p;
}

/// 2D radial for an N x N image (full spokes; readout 2N: k from -N/2 to N/2 - 1/2, so the footprints of the
/// outermost samples wrap around the oversampled grid).
inline Problem radialProblem(index_t n, index_t readout, index_t spokes, traj::RadialOrder order) {
  const traj::Trajectory t = traj::radial2D(readout, spokes, n, order);
  Problem p;
  p.dims = 2;
  p.n[0] = p.n[1] = n;
  p.k = t.k;
  p.m = t.samples();
  p.radial = t.radial;
  return p;
}

}  // namespace larmor::test
