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

// --- CG over devices (recon/split_cg.hpp, SolverOps::cgPublish / cgCombine) -------------------------------------
// A device's scalars hold two CgLayouts: the first the whole problem's values (what the update kernels read), the
// second, from slot l.size() on, the device's own share of each inner product. The shares are summed over the
// devices in their order, so every device gets the same sums and makes the same decisions.

/// Which of an iteration's sums cgCombine forms.
enum class CgCombineStep : int {
  Initial = 0,    ///< ||b||^2, rr[0], rz[0], xb[0], xr[0] (no stopping rule: the host tests iteration 0)
  Curvature = 1,  ///< pq[k], then cgCurvature's breakdown rule
  Update = 2,     ///< rr[k], rz[k], xb[k], xr[k], then cgUpdate's tolerance rule
};

/// A share's slot: the second layout's.
LARMOR_HD LARMOR_INLINE std::int64_t cgShare(const CgLayout& l, std::int64_t slot) { return l.size() + slot; }

/// s's shares of iteration k's update sums (rr, rz, xb, xr, as cgUpdate and the preconditioned dot left them in
/// the first layout) copied to the second layout, where the other devices read them.
LARMOR_HD LARMOR_INLINE void cgPublish(double* s, const CgLayout& l, int k) {
  s[cgShare(l, l.rr(k))] = s[l.rr(k)];
  s[cgShare(l, l.rz(k))] = s[l.rz(k)];
  s[cgShare(l, l.xb(k))] = s[l.xb(k)];
  s[cgShare(l, l.xr(k))] = s[l.xr(k)];
}

/// The sums of a step into s's first layout from every device's shares (share(d, slot): device d's slot), and the
/// step's stopping rule. Nothing for Curvature and Update once stopped.
template <class Share>
LARMOR_HD void cgCombine(double* s, const Share& share, int devices, const CgLayout& l, int k, CgCombineStep step,
                         double tolerance) {
  const auto sum = [&](std::int64_t slot) {
    double v = 0;
    for (int d = 0; d < devices; ++d) v += share(d, cgShare(l, slot));
    return v;
  };
  if (step == CgCombineStep::Initial) {
    s[CgLayout::kRhsNorm2] = sum(CgLayout::kRhsNorm2);
    s[l.rr(0)] = sum(l.rr(0));
    s[l.rz(0)] = sum(l.rz(0));
    s[l.xb(0)] = sum(l.xb(0));
    s[l.xr(0)] = sum(l.xr(0));
    return;
  }
  if (s[CgLayout::kStop] != 0) return;
  if (step == CgCombineStep::Curvature) {
    s[l.pq(k)] = sum(l.pq(k));
    if (cgBreakdown(s[l.pq(k)], s[l.rz(k - 1)])) {
      s[CgLayout::kStop] = k;
      s[CgLayout::kReason] = static_cast<double>(SolverStop::Breakdown);
    }
    return;
  }
  s[l.rr(k)] = sum(l.rr(k));
  s[l.rz(k)] = sum(l.rz(k));
  s[l.xb(k)] = sum(l.xb(k));
  s[l.xr(k)] = sum(l.xr(k));
  if (cgConverged(s[l.rr(k)], s[CgLayout::kRhsNorm2], tolerance)) {
    s[CgLayout::kStop] = k;
    s[CgLayout::kReason] = static_cast<double>(SolverStop::Tolerance);
  }
}

}  // namespace larmor::kernels
