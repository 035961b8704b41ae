#pragma once
// Two small normal-equation problems A = sum_c S_c^H T S_c + lambda I (ops/sense.hpp) on the CPU backend, on which
// the solvers' plain loops are compared with their fast executors (test_cg_reference.cpp,
// test_fista_reference.cpp): a Cartesian SENSE problem (T = IFFT diag(mask) FFT, 4 coils) and a non-Cartesian one
// (T the Toeplitz operator of random samples, one coil).
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "larmor/backend/registry.hpp"
#include "larmor/ops/cartesian_sampling.hpp"
#include "larmor/ops/sense.hpp"
#include "larmor/ops/toeplitz.hpp"
#include "support/nc_problem.hpp"

namespace larmor::test {

/// Smooth coil maps [n, n, 1, coils]: each coil bright near its own edge, with a linear phase.
inline CArray coilMaps(index_t n, index_t coils) {
  CArray maps(Shape{n, n, 1, coils});
  for (index_t c = 0; c < coils; ++c)
    for (index_t y = 0; y < n; ++y)
      for (index_t x = 0; x < n; ++x) {
        const double a = 2 * M_PI * static_cast<double>(c) / static_cast<double>(coils);
        const double u = static_cast<double>(x) / n - 0.5, v = static_cast<double>(y) / n - 0.5;
        const double gain = std::exp(-4 * ((u - 0.5 * std::cos(a)) * (u - 0.5 * std::cos(a)) +
                                           (v - 0.5 * std::sin(a)) * (v - 0.5 * std::sin(a))));
        const double phase = 2 * M_PI * (0.3 * u + 0.2 * v) * static_cast<double>(c + 1);
        maps[x + n * (y + n * c)] = cfloat(static_cast<float>(gain * std::cos(phase)),
                                           static_cast<float>(gain * std::sin(phase)));
      }
  return maps;
}

/// A Cartesian SENSE problem: 24^2, 4 coils, every other line plus 8 central ones, Tikhonov lambda 0.01.
struct SenseProblem {
  static constexpr index_t kN = 24, kCoils = 4;
  std::shared_ptr<Backend> be = makeCpuBackend();
  std::unique_ptr<ops::CartesianPlan> plan;
  std::unique_ptr<ops::CartesianGram> gram;
  std::unique_ptr<ops::CoilSensitivities> coils;
  std::unique_ptr<ops::Regularizer> tikhonov;
  std::unique_ptr<ops::NormalOperator> A;
  SenseProblem() {
    std::vector<std::int64_t> index;
    for (index_t y = 0; y < kN; ++y)
      if (y % 2 == 0 || std::abs(y - kN / 2) < 4)
        for (index_t x = 0; x < kN; ++x) index.push_back(x + kN * y);
    const Shape grid{kN, kN, 1};
    plan = std::make_unique<ops::CartesianPlan>(*be, grid, index);
    gram = std::make_unique<ops::CartesianGram>(*be, *plan);
    coils = std::make_unique<ops::CoilSensitivities>(*be, coilMaps(kN, kCoils), kN * kN, kCoils);
    const index_t dims[3] = {kN, kN, 1};
    tikhonov = ops::makeTikhonov(*be, dims);
    A = std::make_unique<ops::NormalOperator>(*be, *gram, coils.get(), tikhonov.get(), 0.01);
  }
};

/// A non-Cartesian problem: 16^2 from 300 random samples, the Toeplitz operator (Q by the exact DFT), one coil,
/// Tikhonov lambda 0.05.
struct ToeplitzProblem {
  static constexpr index_t kN = 16;
  std::shared_ptr<Backend> be = makeCpuBackend();
  std::unique_ptr<ops::ToeplitzOperator> toeplitz;
  std::unique_ptr<ops::Regularizer> tikhonov;
  std::unique_ptr<ops::NormalOperator> A;
  ToeplitzProblem() {
    NufftGeometry g;
    g.dims = 2;
    g.image[0] = g.image[1] = kN;
    g.image[2] = 1;
    g.trajectory = randomTrajectory(300, g.image, 2, 11);
    toeplitz = std::make_unique<ops::ToeplitzOperator>(*be, g, ops::computePsf(*be, g, nullptr, {}),
                                                        1.0 / static_cast<double>(kN * kN));
    const index_t dims[3] = {kN, kN, 1};
    tikhonov = ops::makeTikhonov(*be, dims);
    A = std::make_unique<ops::NormalOperator>(*be, *toeplitz, nullptr, tikhonov.get(), 0.05);
  }
};

}  // namespace larmor::test
