#pragma once
// The scalar arithmetic of CG and FISTA (backend/solver_ops.hpp), written once for the CPU twin
// (engine/src/cpu/solver.cpp) and the CUDA twin (cuda/solver.cu): step sizes from the double inner products,
// rounded to float where they scale a float vector (as the host loop did through Backend::axpby), and the
// stopping tests.
#include <cmath>
#include <cstdint>

#include "larmor/kernels/kernel_math.hpp"

namespace larmor::kernels {

/// Why a solve stopped before its iteration limit (the `reason` slot).
enum class SolverStop : int { Running = 0, Tolerance = 1, Breakdown = 2 };

/// Slot indices of a CG state vector for at most `iterations` iterations (backend/solver_ops.hpp).
struct CgLayout {
  int iterations = 0;
  static constexpr std::int64_t kStop = 0, kReason = 1, kRhsNorm2 = 2;
  LARMOR_HD std::int64_t span() const { return static_cast<std::int64_t>(iterations) + 1; }
  LARMOR_HD std::int64_t rz(int k) const { return 3 + k; }
  LARMOR_HD std::int64_t pq(int k) const { return 3 + span() + k; }
  LARMOR_HD std::int64_t rr(int k) const { return 3 + 2 * span() + k; }
  LARMOR_HD std::int64_t xb(int k) const { return 3 + 3 * span() + k; }
  LARMOR_HD std::int64_t xr(int k) const { return 3 + 4 * span() + k; }
  LARMOR_HD std::int64_t size() const { return 3 + 5 * span(); }
};

/// Slot indices of a FISTA state vector.
struct FistaLayout {
  int iterations = 0;
  static constexpr std::int64_t kStop = 0, kReason = 1;
  LARMOR_HD std::int64_t span() const { return static_cast<std::int64_t>(iterations) + 1; }
  LARMOR_HD std::int64_t dx(int k) const { return 3 + k; }
  LARMOR_HD std::int64_t nx(int k) const { return 3 + span() + k; }
  LARMOR_HD std::int64_t size() const { return 3 + 2 * span(); }
};

/// CG breaks down when p^H A p <= 0 (A not positive definite on p, or p vanished) or r^H z <= 0.
LARMOR_HD LARMOR_INLINE bool cgBreakdown(double pq, double rzPrevious) { return !(pq > 0) || !(rzPrevious > 0); }

/// alpha = rz / pq, the float that scales p and q.
LARMOR_HD LARMOR_INLINE float cgAlpha(double rzPrevious, double pq) { return static_cast<float>(rzPrevious / pq); }

/// beta = rz_new / rz, the float that scales the old direction.
LARMOR_HD LARMOR_INLINE float cgBeta(double rz, double rzPrevious) { return static_cast<float>(rz / rzPrevious); }

/// ||r|| <= tolerance ||b|| from the squared norms.
LARMOR_HD LARMOR_INLINE bool cgConverged(double rr, double bb, double tolerance) {
  return tolerance > 0 && sqrt(rr) <= tolerance * sqrt(bb);
}

/// FISTA's ||x_k - x_{k-1}|| / ||x_k|| from the squared norms (1 when x_k = 0 but x moved, 0 when neither).
LARMOR_HD LARMOR_INLINE double relativeChange(double dx2, double nx2) {
  const double dx = sqrt(dx2), nx = sqrt(nx2);
  return nx > 0 ? dx / nx : (dx > 0 ? 1.0 : 0.0);
}

/// The stop slot as the kernels read it: 0 while running, else the iteration at which the solve ended.
LARMOR_HD LARMOR_INLINE bool stoppedBefore(double stop, int k) { return stop != 0 && stop < k; }

}  // namespace larmor::kernels
