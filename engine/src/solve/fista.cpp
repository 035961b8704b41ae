// FISTA and the power iteration (solve/fista.hpp) on any backend.
#include "larmor/solve/fista.hpp"

#include <cmath>
#include <utility>

namespace larmor::solve {

namespace {
std::size_t bytesOf(index_t n) { return static_cast<std::size_t>(n) * sizeof(cfloat); }
cfloat real(double v) { return cfloat(static_cast<float>(v), 0.f); }
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
  FistaResult result;
  if (!options.warmStart) backend.fill(x, cfloat(0.f), n);
  if (backend.norm2(b, n) == 0 && !options.warmStart) {
    result.stopReason = "zero right-hand side";
    result.converged = true;
    return result;
  }
  auto previous = backend.allocate(bytesOf(n)), y = backend.allocate(bytesOf(n)), g = backend.allocate(bytesOf(n));
  backend.copy(*previous, x, bytesOf(n));
  backend.copy(*y, x, bytesOf(n));
  double t = 1;
  result.stopReason = "iterations";
  for (int k = 1; k <= options.maxIterations; ++k) {
    progress.report(static_cast<double>(k - 1) / options.maxIterations,
                    options.stage + ": iteration " + std::to_string(k) + "/" + std::to_string(options.maxIterations));
    // x_k = prox(y - (A y - b) / L)
    A.apply(*y, *g);
    backend.axpby(*g, real(1.0 / L), b, real(-1.0 / L), n);  // (b - A y) / L
    backend.copy(x, *g, bytesOf(n));
    backend.axpby(x, cfloat(1.f), *y, cfloat(1.f), n);        // x = y + (b - A y) / L
    prox(x, mu / L);
    // Relative change, then the momentum step y = x + beta (x - x_prev).
    backend.copy(*g, x, bytesOf(n));
    backend.axpby(*g, cfloat(-1.f), *previous, cfloat(1.f), n);
    const double dx = backend.norm2(*g, n), nx = backend.norm2(x, n);
    const double change = nx > 0 ? dx / nx : (dx > 0 ? 1.0 : 0.0);
    const double tNext = 0.5 * (1 + std::sqrt(1 + 4 * t * t));
    const double beta = (t - 1) / tNext;
    t = tNext;
    backend.copy(*y, x, bytesOf(n));
    backend.axpby(*y, real(beta), *g, cfloat(1.f), n);
    backend.copy(*previous, x, bytesOf(n));
    result.iterations = k;
    result.history.push_back({k, change});
    if (observer) observer(result.history.back());
    if (options.tolerance > 0 && change <= options.tolerance) {
      result.converged = true;
      result.stopReason = "tolerance";
      break;
    }
  }
  progress.report(1.0, options.stage + ": done");
  return result;
}

double largestEigenvalue(Backend& backend, LinearOperator& A, const Buffer& start, int iterations) {
  const index_t n = A.size();
  auto v = backend.allocate(bytesOf(n)), w = backend.allocate(bytesOf(n));
  backend.copy(*v, start, bytesOf(n));
  double norm = backend.norm2(*v, n), lambda = 0;
  if (norm == 0) return 0;
  backend.scale(*v, real(1.0 / norm), n);
  for (int i = 0; i < iterations; ++i) {
    A.apply(*v, *w);
    lambda = backend.dot(*v, *w, n).real();  // Rayleigh quotient of the unit vector v
    norm = backend.norm2(*w, n);
    if (norm == 0) return 0;
    std::swap(v, w);
    backend.scale(*v, real(1.0 / norm), n);
  }
  return lambda;
}

}  // namespace larmor::solve
