// FISTA (Beck & Teboulle, SIAM J. Imaging Sci. 2:183, 2009, eq. 4.1-4.3) and the power iteration (Golub & Van
// Loan, Matrix Computations, sec. 7.3.1), the plain loops:
//   FISTA:  x_k = prox_{mu/L R}(y_k - (A y_k - b) / L);  t_{k+1} = (1 + sqrt(1 + 4 t_k^2)) / 2;
//           y_{k+1} = x_k + (t_k - 1) / t_{k+1} (x_k - x_{k-1});  stop when ||x_k - x_{k-1}|| <= tol ||x_k||
//   power:  v = s / ||s||;  repeat: w = A v, lambda = Re v^H w, v = w / ||w||
// The references of solve/fista.cpp: the same arithmetic (the steps in float, the norms in double) and the same
// history and stop, but every scalar is read to the host when it is computed. The fast executors keep them in
// the backend's memory (backend/solver_ops.hpp) and read them once per window of queued iterations (FISTA) or
// once at the end (power), fuse the gradient step and the momentum step into one pass each, and replay the
// operator as a CUDA graph; on the CPU backend they agree (tests/unit/test_fista_reference.cpp).
#include "larmor/solve/fista_reference.hpp"

#include <cmath>

#include "larmor/kernels/solver_math.hpp"

namespace larmor::solve {

FistaResult fistaReference(Backend& be, LinearOperator& A, const Buffer& b, Buffer& x, double L, double mu,
                           const Prox& prox, const FistaOptions& o, const Progress& progress,
                           const FistaObserver& observer) {
  const index_t n = A.size();
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(cfloat);
  require(L > 0 && std::isfinite(L), "fista reference: the step bound L must be > 0");
  require(mu >= 0 && std::isfinite(mu), "fista reference: the prior weight must be >= 0");
  require(o.maxIterations >= 0, "fista reference: the iteration count must be >= 0");
  FistaResult result;
  if (!o.warmStart) be.fill(x, cfloat(0.f), n);
  if (be.norm2(b, n) == 0 && !o.warmStart) {
    result.stopReason = "zero right-hand side";
    result.converged = true;
    return result;
  }
  auto y = be.allocate(bytes), g = be.allocate(bytes), next = be.allocate(bytes), step = be.allocate(bytes);
  be.copy(*y, x, bytes);
  const auto invL = static_cast<float>(1.0 / L);
  double t = 1;
  result.stopReason = "iterations";
  for (int k = 1; k <= o.maxIterations; ++k) {
    progress.report(static_cast<double>(k - 1) / o.maxIterations,
                    o.stage + ": iteration " + std::to_string(k) + "/" + std::to_string(o.maxIterations));
    A.apply(*y, *g);
    be.copy(*next, b, bytes);
    be.axpby(*next, cfloat(-invL), *g, cfloat(invL), n);     // b / L - g / L
    be.axpby(*next, cfloat(1.f), *y, cfloat(1.f), n);        // + y
    prox(*next, mu / L);
    be.copy(*step, *next, bytes);
    be.axpby(*step, cfloat(-1.f), x, cfloat(1.f), n);        // x_k - x_{k-1}
    const double change = kernels::relativeChange(be.dot(*step, *step, n).real(), be.dot(*next, *next, n).real());
    const double tNext = 0.5 * (1 + std::sqrt(1 + 4 * t * t));
    const auto beta = static_cast<float>((t - 1) / tNext);
    t = tNext;
    be.copy(*y, *next, bytes);
    be.axpby(*y, cfloat(beta), *step, cfloat(1.f), n);       // y = x_k + beta (x_k - x_{k-1})
    be.copy(x, *next, bytes);
    result.iterations = k;
    result.history.push_back({k, change});
    if (observer) observer(result.history.back());
    if (o.tolerance > 0 && change <= o.tolerance) {
      result.converged = true;
      result.stopReason = "tolerance";
      break;
    }
  }
  progress.report(1.0, o.stage + ": done");
  return result;
}

double largestEigenvalueReference(Backend& be, LinearOperator& A, const Buffer& start, int iterations) {
  const index_t n = A.size();
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(cfloat);
  require(iterations >= 0, "power iteration reference: the step count must be >= 0");
  auto v = be.allocate(bytes), w = be.allocate(bytes);
  auto normalise = [&](Buffer& dst, const Buffer& src, double norm2) {  // dst = src / ||src||
    be.copy(dst, src, bytes);
    be.scale(dst, cfloat(static_cast<float>(1.0 / std::sqrt(norm2))), n);
  };
  const double s2 = be.dot(start, start, n).real();
  if (s2 == 0) return 0;
  normalise(*v, start, s2);
  double lambda = 0;
  for (int i = 0; i < iterations; ++i) {
    A.apply(*v, *w);
    lambda = be.dot(*v, *w, n).real();  // the Rayleigh quotient of the unit vector v
    const double w2 = be.dot(*w, *w, n).real();
    if (w2 == 0) return 0;  // A v vanished
    normalise(*v, *w, w2);
  }
  return lambda;
}

}  // namespace larmor::solve
