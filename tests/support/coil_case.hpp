#pragma once
// The coil-combination tests' images (tests/unit/test_adaptive_combine.cpp, tests/gpu/test_gpu_adaptive.cpp):
// x_c = s_c rho from the phantom's smooth coil sensitivities and a Shepp-Logan object given a smooth phase
// (a linear ramp plus a bump, which the combination must keep); optional complex Gaussian noise.
#include <cmath>
#include <random>
#include <vector>

#include "larmor/phantom/coils.hpp"
#include "larmor/phantom/phantom.hpp"

namespace larmor::test {

struct CoilCase {
  index_t dims[3];
  index_t coils;
  CArray rho;                  ///< [voxels]
  CArray maps;                 ///< [voxels, coils]
  std::vector<cfloat> images;  ///< [voxels, coils]
  index_t voxels() const { return dims[0] * dims[1] * dims[2]; }
};

inline CoilCase makeCoilCase(index_t n, index_t nz, int coils, double noise = 0, unsigned seed = 1) {
  CoilCase c;
  c.dims[0] = c.dims[1] = n;
  c.dims[2] = nz;
  c.coils = coils;
  const bool threeD = nz > 1;
  const phantom::Phantom ph = threeD ? phantom::Phantom::sheppLogan3D() : phantom::Phantom::sheppLogan2D();
  const Shape shape = threeD ? Shape{n, n, nz} : Shape{n, n};
  c.rho = ph.rasterize(shape, 2);
  for (index_t v = 0; v < c.rho.size(); ++v) {
    const double x = static_cast<double>(v % n - n / 2) / n, y = static_cast<double>((v / n) % n - n / 2) / n;
    c.rho[v] *= cfloat(std::polar(1.0, 1.5 * x - 0.8 * y + 0.6 * std::exp(-20 * (x * x + y * y))));
  }
  c.maps = phantom::coilMaps(phantom::makeCoilModel(coils, threeD ? 3 : 2), shape);
  const index_t voxels = c.voxels();
  c.images.resize(static_cast<std::size_t>(voxels * coils));
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.f, static_cast<float>(noise));
  for (index_t k = 0; k < coils; ++k)
    for (index_t v = 0; v < voxels; ++v)
      c.images[static_cast<std::size_t>(v + voxels * k)] =
          c.maps[v + voxels * k] * c.rho[v] + (noise > 0 ? cfloat(g(rng), g(rng)) : cfloat(0));
  return c;
}

}  // namespace larmor::test
