#pragma once
// The iterative tests' problem (tests/unit/test_iterative_recon.cpp, tests/gpu/test_gpu_iterative.cpp): a
// small random-trajectory dataset with smooth coil maps and a reference image, CG settings that converge,
// and the dense float64 direct solution of (E^H E + lambda W^H W) x = E^H d that the solvers must reach, its
// W^H W from support/dense_prior.hpp (no production regularizer code).
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "larmor/recon/settings_table.hpp"
#include "larmor/ops/regularizer.hpp"
#include "support/dense_prior.hpp"
#include "larmor/data/dataset.hpp"
#include "larmor/recon/settings.hpp"
#include "support/dense_reference.hpp"

namespace larmor::test {

inline Dataset makeDataset(int dims, index_t n0, index_t n1, index_t n2, index_t m, index_t coils, index_t slices,
                    unsigned seed) {
  if (dims == 2) n2 = 1;
  Dataset d;
  d.source = "test";
  Header& h = d.header;
  h.trajectory = TrajectoryKind::Other;
  h.encoded[0] = h.recon[0] = n0;
  h.encoded[1] = h.recon[1] = n1;
  h.encoded[2] = h.recon[2] = n2;
  h.coils = coils;
  h.slices = slices;
  const index_t image[3] = {n0, n1, n2};
  RArray k = randomTrajectory(m, image, dims, seed);
  k.reshape(Shape{3, m, 1});
  d.trajectory = k;
  const index_t n = n0 * n1 * n2;
  const auto data = randomComplex(m * coils * slices, seed + 1);
  d.kspace = CArray(Shape{m, 1, 1, coils, slices});
  std::copy(data.begin(), data.end(), d.kspace.data());
  // Smooth, distinct coil maps: a phase ramp and a magnitude falling off from a point per coil.
  CArray maps(Shape{n0, n1, n2, coils, slices});
  for (index_t s = 0; s < slices; ++s)
    for (index_t c = 0; c < coils; ++c)
      for (index_t z = 0; z < n2; ++z)
        for (index_t y = 0; y < n1; ++y)
          for (index_t x = 0; x < n0; ++x) {
            const double px = pixelPos(x, n0), py = pixelPos(y, n1), a = 2 * M_PI * c / coils;
            const double dx = px - 0.5 * std::cos(a), dy = py - 0.5 * std::sin(a);
            const double mag = 1.0 / (1.0 + 2.0 * (dx * dx + dy * dy)), ph = a + 1.5 * px - 0.7 * py + 0.1 * s;
            maps(x, y, z, c, s) = cfloat(std::polar(mag, ph));
          }
  d.coilMaps = maps;
  CArray ref(Shape{n0, n1, n2, 1, slices});
  const auto r = randomComplex(n * slices, seed + 2);
  for (index_t i = 0; i < n * slices; ++i) ref[i] = cfloat(std::abs(r[i]) > 1.f ? 1.f : 0.2f, 0.f);
  d.reference = ref;
  d.validate();
  return d;
}

inline recon::ReconSettings cgSettings(const std::string& reg, double lambda) {
  recon::ReconSettings s;
  s.method = recon::Method::Cg;
  recon::settings::set(s, recon::settings::find("iterative.regularizer"), reg);
  s.iterative.lambda = lambda;
  s.iterative.iterations = 400;
  s.iterative.tolerance = 1e-6;
  s.iterative.coilMaps = recon::CoilMapSource::Dataset;
  s.iterative.cacheDirectory = "none";
  s.iterative.fhd = recon::FhdMethod::Dft;  // the paper's exact path, which the dense solve reproduces
  return s;
}

/// The dense float64 solution of (E^H E + lambda W^H W) x = E^H d for slice `slice`, using the dataset's
/// coil maps and the prior written densely in support/dense_prior.hpp (anatomical: from the dataset's reference).
inline std::vector<cd> directSolve(const Dataset& d, const recon::ReconSettings& s, index_t slice) {
  const Header& h = d.header;
  const int dims = h.encoded[2] > 1 ? 3 : 2;
  NufftGeometry g;
  g.dims = dims;
  for (int i = 0; i < 3; ++i) g.image[i] = h.recon[i];
  g.trajectory = d.trajectory;
  g.trajectory.reshape(Shape{3, d.trajectory.size() / 3});
  const auto F = denseF(g);
  const index_t m = g.samples(), n = h.recon[0] * h.recon[1] * h.recon[2], coils = h.coils;
  const double scale = 1.0 / std::sqrt(static_cast<double>(n));
  // E rows: (coil, sample); E[(c, j), v] = scale F[j, v] S_c[v].
  std::vector<cd> A(static_cast<std::size_t>(n * n), 0.0), b(static_cast<std::size_t>(n), 0.0);
  std::vector<cd> row(static_cast<std::size_t>(n));
  for (index_t c = 0; c < coils; ++c)
    for (index_t j = 0; j < m; ++j) {
      for (index_t v = 0; v < n; ++v) {
        const cd sv = coils > 1 ? cd((*d.coilMaps)[(slice * coils + c) * n + v]) : 1.0;
        row[v] = scale * F[j * n + v] * sv;
      }
      const cd dj = d.kspace[(slice * coils + c) * m + j];
      for (index_t u = 0; u < n; ++u) {
        const cd cu = std::conj(row[u]);
        b[u] += cu * dj;
        for (index_t v = 0; v < n; ++v) A[u * n + v] += cu * row[v];
      }
    }
  // lambda W^H W: the dense prior written in tests/support from its definition (support/dense_prior.hpp), not
  // the production regularizer.
  const index_t idims[3] = {h.recon[0], h.recon[1], h.recon[2]};
  DensePrior kind = DensePrior::Anatomical;
  if (s.iterative.regularizer == ops::RegularizerKind::Tikhonov) kind = DensePrior::Tikhonov;
  else if (s.iterative.regularizer == ops::RegularizerKind::FiniteDifference) kind = DensePrior::FiniteDifference;
  std::vector<double> mag(static_cast<std::size_t>(n), 0.0);
  if (kind == DensePrior::Anatomical)
    for (index_t v = 0; v < n; ++v) mag[v] = std::abs(cd((*d.reference)[slice * n + v]));
  const auto WhW = densePriorNormal(kind, idims, mag);
  for (index_t i = 0; i < n * n; ++i) A[i] += s.iterative.lambda * WhW[i];
  return choleskySolve(A, b);
}

}  // namespace larmor::test
