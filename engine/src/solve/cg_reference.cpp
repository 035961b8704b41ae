// Preconditioned conjugate gradients, the textbook loop (Hestenes & Stiefel, J. Res. NBS 49:409, 1952; the
// preconditioned form of Concus, Golub & O'Leary 1976; Shewchuk 1994, "An introduction to the conjugate
// gradient method without the agonizing pain", algorithm B3). For A Hermitian positive definite and M ~ A:
//   r = b - A x,  z = M^-1 r,  p = z
//   repeat:  q = A p;  alpha = <r, z> / <p, q>;  x += alpha p;  r -= alpha q;
//            z = M^-1 r;  beta = <r, z>_new / <r, z>;  p = z + beta p
// with <u, v> = Re u^H v. The objective phi(x) = x^H A x - 2 Re x^H b = -Re x^H (b + r) since A x = b - r.
//
// The reference of solve/cg.cpp: the same arithmetic (the scalars in double, the steps' factors rounded to
// float by kernels/solver_math.hpp) and the same history and stop rules, but every scalar is read to the host
// when it is computed. The fast executor keeps them in the backend's memory (backend/solver_ops.hpp), reads
// them once per window of queued iterations, applies a Jacobi M inside the update's pass and replays the
// operator as a CUDA graph; on the CPU backend the two agree (tests/unit/test_cg_reference.cpp).
#include "larmor/solve/cg_reference.hpp"

#include <cmath>
#include <limits>

#include "larmor/kernels/solver_math.hpp"

namespace larmor::solve {

CgResult conjugateGradientReference(Backend& be, LinearOperator& A, const Buffer& b, Buffer& x, const CgOptions& o,
                                    Preconditioner* M, const Progress& progress, const CgObserver& observer) {
  const index_t n = A.size();
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(cfloat);
  require(b.bytes() >= bytes && x.bytes() >= bytes, "CG reference: b or x holds fewer than " + std::to_string(n) +
                                                        " elements");
  require(o.maxIterations >= 0, "CG reference: the iteration count must be >= 0");
  require(o.tolerance >= 0 && std::isfinite(o.tolerance), "CG reference: the tolerance must be >= 0");
  auto dot = [&](const Buffer& u, const Buffer& v) { return be.dot(u, v, n).real(); };
  auto r = be.allocate(bytes), p = be.allocate(bytes), q = be.allocate(bytes);
  auto zOwned = M ? be.allocate(bytes) : nullptr;
  Buffer& z = M ? *zOwned : *r;
  CgResult result;
  auto record = [&](int k, double rr, double bnorm) {
    const double objective = o.trackObjective ? o.objectiveOffset - (dot(x, b) + dot(x, *r))
                                              : std::numeric_limits<double>::quiet_NaN();
    result.history.push_back({k, bnorm > 0 ? std::sqrt(rr) / bnorm : 0.0, objective});
    if (observer) observer(result.history.back());
  };

  const double bb = dot(b, b), bnorm = std::sqrt(bb);
  if (!(bnorm > 0)) {  // A x = 0 with A positive definite: x = 0
    be.fill(x, cfloat(0.f), n);
    be.fill(*r, cfloat(0.f), n);
    result.converged = true;
    result.stopReason = "zero right-hand side";
    result.history.push_back({0, 0.0, o.trackObjective ? o.objectiveOffset : std::numeric_limits<double>::quiet_NaN()});
    if (observer) observer(result.history.back());
    return result;
  }
  be.copy(*r, b, bytes);
  if (o.warmStart) {
    A.apply(x, *q);
    be.axpby(*r, cfloat(-1.f), *q, cfloat(1.f), n);  // r = b - A x
  } else {
    be.fill(x, cfloat(0.f), n);
  }
  double rr = dot(*r, *r);
  record(0, rr, bnorm);
  if (M) M->apply(*r, z);
  double rz = dot(*r, z);
  if (kernels::cgConverged(rr, bb, o.tolerance)) {
    result.converged = true;
    result.stopReason = "tolerance";
    return result;
  }
  be.copy(*p, z, bytes);
  result.stopReason = "iterations";
  for (int k = 1; k <= o.maxIterations; ++k) {
    reportIteration(o, progress, k);
    A.apply(*p, *q);
    const double pq = dot(*p, *q);
    if (kernels::cgBreakdown(pq, rz)) {  // p^H A p <= 0: A not positive definite on p, or p vanished
      result.stopReason = "breakdown";
      return result;
    }
    const float alpha = kernels::cgAlpha(rz, pq);
    be.axpby(x, cfloat(alpha), *p, cfloat(1.f), n);
    be.axpby(*r, cfloat(-alpha), *q, cfloat(1.f), n);
    rr = dot(*r, *r);
    result.iterations = k;
    record(k, rr, bnorm);
    if (kernels::cgConverged(rr, bb, o.tolerance)) {
      result.converged = true;
      result.stopReason = "tolerance";
      return result;
    }
    if (M) M->apply(*r, z);
    const double rzNew = dot(*r, z);
    be.axpby(*p, cfloat(1.f), z, cfloat(kernels::cgBeta(rzNew, rz)), n);  // p = z + beta p
    rz = rzNew;
  }
  return result;
}

}  // namespace larmor::solve
