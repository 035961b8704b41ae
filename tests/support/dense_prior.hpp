#pragma once
// The priors of ops/regularizer.hpp written here as dense float64 matrices, from their definitions and not from
// the engine's code, for the direct solves the iterative tests compare against (support/iterative_problem.hpp):
//   Tikhonov W = I; smoothness W = D, first-order forward differences along every axis of extent > 1, one row
//   per voxel and axis, zero on the last plane of that axis (Neumann); anatomical W = diag(w) D with
//   w_a(i) = 1 / sqrt(1 + (| |ref(i + e_a)| - |ref(i)| | / delta)^2), delta = max(3 median, 0.02 max) of those
//   neighbour differences over every pair inside the volume (the median: the element of rank floor(pairs / 2)
//   in ascending order), 1 for a constant reference. Returns lambda-free W^H W (n x n, row-major).
#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "larmor/array/array.hpp"

namespace larmor::test {

enum class DensePrior { Tikhonov, FiniteDifference, Anatomical };

/// |ref| neighbour differences of every pair inside the volume, every axis (explicit coordinates).
inline std::vector<double> neighbourDifferences(const std::vector<double>& mag, const index_t dims[3]) {
  std::vector<double> out;
  for (int a = 0; a < 3; ++a)
    for (index_t z = 0; z < dims[2]; ++z)
      for (index_t y = 0; y < dims[1]; ++y)
        for (index_t x = 0; x < dims[0]; ++x) {
          const index_t c[3] = {x, y, z};
          if (c[a] + 1 >= dims[a]) continue;
          const index_t i = x + dims[0] * (y + dims[1] * z);
          const index_t j = i + (a == 0 ? 1 : a == 1 ? dims[0] : dims[0] * dims[1]);
          out.push_back(std::abs(mag[j] - mag[i]));
        }
  return out;
}

/// W^H W, densely. `reference`: |ref| per voxel, used by the anatomical prior only.
inline std::vector<std::complex<double>> densePriorNormal(DensePrior kind, const index_t dims[3],
                                                          const std::vector<double>& reference = {}) {
  const index_t n = dims[0] * dims[1] * dims[2];
  std::vector<std::complex<double>> N(static_cast<std::size_t>(n * n), 0.0);
  if (kind == DensePrior::Tikhonov) {
    for (index_t i = 0; i < n; ++i) N[i * n + i] = 1.0;
    return N;
  }
  double delta = 1;
  if (kind == DensePrior::Anatomical) {
    std::vector<double> d = neighbourDifferences(reference, dims);
    const double mx = d.empty() ? 0 : *std::max_element(d.begin(), d.end());
    std::sort(d.begin(), d.end());
    const double median = d.empty() ? 0 : d[d.size() / 2];
    delta = std::max(3 * median, 0.02 * mx);
    if (!(delta > 0)) delta = 1;
  }
  for (int a = 0; a < 3; ++a) {
    if (dims[a] <= 1) continue;
    const index_t stride = a == 0 ? 1 : a == 1 ? dims[0] : dims[0] * dims[1];
    for (index_t z = 0; z < dims[2]; ++z)
      for (index_t y = 0; y < dims[1]; ++y)
        for (index_t x = 0; x < dims[0]; ++x) {
          const index_t c[3] = {x, y, z};
          if (c[a] + 1 >= dims[a]) continue;  // the row of the last plane is zero
          const index_t i = x + dims[0] * (y + dims[1] * z), j = i + stride;
          double w = 1;
          if (kind == DensePrior::Anatomical) {
            const double jump = std::abs(reference[j] - reference[i]) / delta;
            w = 1 / std::sqrt(1 + jump * jump);
          }
          // The row r = w (e_j - e_i) adds r^H r = w^2 [[1, -1], [-1, 1]] on (i, j).
          const double w2 = w * w;
          N[i * n + i] += w2;
          N[j * n + j] += w2;
          N[i * n + j] -= w2;
          N[j * n + i] -= w2;
        }
  }
  return N;
}

}  // namespace larmor::test
