// FISTA and the power iteration (solve/fista.hpp) on any backend. The scalars (the relative change, the
// power iteration's norms) stay in the backend's memory and the host reads them once per window of queued
// iterations (backend/solver_ops.hpp); the momentum weights depend on k alone and are computed here. These are
// the fast executors the library uses; the same loops written plainly, with host scalars, are
// solve/fista_reference.cpp (tests/unit/test_fista_reference.cpp: the same result on the CPU backend).
#include "larmor/solve/fista.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "larmor/backend/solver_ops.hpp"
#include "larmor/util/cancel_scope.hpp"

namespace larmor::solve {

namespace {
std::size_t bytesOf(index_t n) { return static_cast<std::size_t>(n) * sizeof(cfloat); }
}  // namespace

nlohmann::json FistaResult::toJson() const {
  nlohmann::json change = nlohmann::json::array();
  for (const auto& h : history) change.push_back(h.relativeChange);
  return {{"iterations", iterations}, {"converged", converged}, {"stop", stopReason}, {"relative_change", change}};
}

FistaResult fista(Backend& backend, LinearOperator& A, const Buffer& b, Buffer& x, double L, double mu,
                  const Prox& prox, const FistaOptions& options, const Progress& progress,
                  const FistaObserver& observer) {
  const index_t n = A.size();
  require(L > 0 && std::isfinite(L), "fista: the step bound L must be > 0");
  require(mu >= 0 && std::isfinite(mu), "fista: the prior weight must be >= 0");
  require(options.maxIterations >= 0, "fista: the iteration count must be >= 0");
  FistaResult result;
  if (!options.warmStart) backend.fill(x, cfloat(0.f), n);
  if (backend.norm2(b, n) == 0 && !options.warmStart) {
    result.stopReason = "zero right-hand side";
    result.converged = true;
    return result;
  }
  SolverOps& ops = backend.solverOps();
  const FistaLayout l{options.maxIterations};
  auto state = ops.scalars(l.size());
  std::vector<double> v(static_cast<std::size_t>(l.size()));
  // x holds x_{k-1} until iteration k commits x_k (from next); y is the extrapolated point.
  auto next = backend.allocate(bytesOf(n)), y = backend.allocate(bytesOf(n)), g = backend.allocate(bytesOf(n));
  backend.copy(*y, x, bytesOf(n));
  double t = 1;
  result.stopReason = "iterations";
  const int window = readWindow(ops, n, options.readEvery);
  RecordedApplication gradient(backend, A, *y, *g, options.recordOperator);  // g = A y (cg.hpp)
  for (int k = 1; k <= options.maxIterations;) {
    const int last = std::min(options.maxIterations, k + window - 1);
    for (int j = k; j <= last; ++j) {
      progress.report(static_cast<double>(j - 1) / options.maxIterations,
                      options.stage + ": iteration " + std::to_string(j) + "/" + std::to_string(options.maxIterations));
      // x_j = prox(y - (A y - b) / L)
      gradient();
      ops.fistaGradientStep(*next, *y, *g, b, 1.0 / L, n);
      prox(*next, mu / L);
      // The relative change (and the stopping test), then the momentum step y = x_j + beta (x_j - x_{j-1}).
      ops.fistaChange(*state, l, j, *next, x, options.tolerance, n);
      const double tNext = 0.5 * (1 + std::sqrt(1 + 4 * t * t));
      const double beta = (t - 1) / tNext;
      t = tNext;
      ops.fistaCommit(*state, l, j, x, *y, *next, beta, n);
    }
    ops.read(v.data(), *state, 0, l.size());
    const int stop = static_cast<int>(v[FistaLayout::kStop]);
    for (int j = k; j <= last; ++j) {
      result.iterations = j;
      result.history.push_back(
          {j, kernels::relativeChange(v[static_cast<std::size_t>(l.dx(j))], v[static_cast<std::size_t>(l.nx(j))])});
      if (observer) observer(result.history.back());
      if (stop == j) {
        result.converged = true;
        result.stopReason = "tolerance";
        progress.report(1.0, options.stage + ": done");
        return result;
      }
    }
    k = last + 1;
  }
  progress.report(1.0, options.stage + ": done");
  return result;
}

double largestEigenvalue(Backend& backend, LinearOperator& A, const Buffer& start, int iterations) {
  const index_t n = A.size();
  require(iterations >= 0, "power iteration: the step count must be >= 0");
  SolverOps& ops = backend.solverOps();
  // Slot 0: ||start||^2; slots 1 + 2i and 2 + 2i: step i's Rayleigh quotient <v, A v> and ||A v||^2.
  auto s = ops.scalars(1 + 2 * static_cast<index_t>(iterations));
  auto v = backend.allocate(bytesOf(n)), w = backend.allocate(bytesOf(n));
  ops.dot(*s, 0, start, start, n);
  double norm2 = 0;
  ops.read(&norm2, *s, 0, 1);
  if (norm2 == 0) return 0;
  ops.scaleByInverseRoot(*v, start, *s, 0, n);
  for (int i = 0; i < iterations; ++i) {
    CancelScope::check();  // on the CPU each step is an operator application (3D: ~0.3 s)
    A.apply(*v, *w);
    ops.dot(*s, 1 + 2 * i, *v, *w, n);  // the Rayleigh quotient of the unit vector v
    ops.dot(*s, 2 + 2 * i, *w, *w, n);
    ops.scaleByInverseRoot(*v, *w, *s, 2 + 2 * i, n);  // v = A v / ||A v|| (0 once A v vanished)
  }
  std::vector<double> r(static_cast<std::size_t>(1 + 2 * iterations));
  ops.read(r.data(), *s, 0, static_cast<index_t>(r.size()));
  double lambda = 0;
  for (int i = 0; i < iterations; ++i) {
    if (r[static_cast<std::size_t>(2 + 2 * i)] == 0) return 0;
    lambda = r[static_cast<std::size_t>(1 + 2 * i)];
  }
  return lambda;
}

}  // namespace larmor::solve
