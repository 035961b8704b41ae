// Preconditioned conjugate gradients (Hestenes & Stiefel 1952; the preconditioned form of Concus, Golub,
// O'Leary 1976, which Stone et al. 2008 cite as [9] for their solver), on any Backend.
//
// Per iteration k (z = M^{-1} r, rz = Re <r, z>):
//   q = A p;  alpha = rz / Re <p, q>;  x += alpha p;  r -= alpha q;  z = M^{-1} r;
//   beta = rz_new / rz;  p = z + beta p.
// The objective phi(x) = x^H A x - 2 Re x^H b is evaluated without another operator application:
// A x = b - r, so phi(x) = -Re x^H (b + r) (two dot products), which also makes the monotone decrease a
// measured property (tests/unit/test_cg.cpp) rather than one assumed by a recursion.
#include "larmor/solve/cg.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace larmor::solve {

DiagonalPreconditioner::DiagonalPreconditioner(Backend& backend, const std::vector<double>& diagonal)
    : DiagonalPreconditioner(backend, diagonal, 0.0, {}) {}

namespace {
std::unique_ptr<Buffer> uploadReal(Backend& backend, const std::vector<double>& v) {
  std::vector<cfloat> c(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) c[i] = cfloat(static_cast<float>(v[i]), 0.f);
  auto b = backend.allocate(c.size() * sizeof(cfloat));
  backend.upload(*b, c.data(), c.size() * sizeof(cfloat));
  return b;
}
}  // namespace

DiagonalPreconditioner::DiagonalPreconditioner(Backend& backend, const std::vector<double>& a, double lambda,
                                               const std::vector<double>& b)
    : backend_(backend), n_(static_cast<index_t>(a.size())) {
  require(b.empty() || b.size() == a.size(), "preconditioner: the two diagonals differ in length");
  const auto da = uploadReal(backend, a);
  const auto db = b.empty() ? nullptr : uploadReal(backend, b);
  inverse_ = backend.allocate(a.size() * sizeof(cfloat));
  backend.reciprocalDiagonal(*inverse_, *da, 1.0, db.get(), lambda, n_);
}

DiagonalPreconditioner::DiagonalPreconditioner(Backend& backend, const Buffer& a, double alpha, const Buffer* b,
                                               double beta, index_t n)
    : backend_(backend), n_(n) {
  inverse_ = backend.allocate(static_cast<std::size_t>(n) * sizeof(cfloat));
  backend.reciprocalDiagonal(*inverse_, a, alpha, b, beta, n);
}

void DiagonalPreconditioner::apply(const Buffer& r, Buffer& z) { backend_.multiply(z, *inverse_, n_, r, n_, false); }

nlohmann::json CgResult::toJson() const {
  nlohmann::json res = nlohmann::json::array(), obj = nlohmann::json::array();
  for (const auto& h : history) {
    res.push_back(h.relativeResidual);
    obj.push_back(std::isfinite(h.objective) ? nlohmann::json(h.objective) : nlohmann::json());
  }
  return {{"iterations", iterations}, {"converged", converged}, {"stop", stopReason},
          {"relative_residual", res}, {"objective", obj}};
}

CgResult conjugateGradient(Backend& backend, LinearOperator& A, const Buffer& b, Buffer& x, const CgOptions& o,
                           Preconditioner* M, const Progress& progress, const CgObserver& observer) {
  const index_t n = A.size();
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(cfloat);
  require(b.bytes() >= bytes && x.bytes() >= bytes,
          "CG: the right-hand side or the solution holds fewer than the operator's " + std::to_string(n) +
              " elements");
  require(o.maxIterations >= 0, "CG: the iteration count must be >= 0");
  require(o.tolerance >= 0 && std::isfinite(o.tolerance), "CG: the tolerance must be >= 0");

  CgResult result;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto r = backend.allocate(bytes), p = backend.allocate(bytes), q = backend.allocate(bytes);
  std::unique_ptr<Buffer> zOwned = M ? backend.allocate(bytes) : nullptr;
  Buffer& z = M ? *zOwned : *r;  // without M, z is r itself

  auto objective = [&]() {
    if (!o.trackObjective) return nan;
    return o.objectiveOffset - (backend.dot(x, b, n).real() + backend.dot(x, *r, n).real());
  };
  auto record = [&](int k, double rnorm, double bnorm) {
    CgIterate it{k, bnorm > 0 ? rnorm / bnorm : 0.0, objective()};
    result.history.push_back(it);
    if (observer) observer(it);
  };

  const double bnorm = backend.norm2(b, n);
  if (!(bnorm > 0)) {
    // A x = 0 with A positive definite: x = 0, whatever the initial guess.
    backend.fill(x, cfloat(0.f), n);
    backend.fill(*r, cfloat(0.f), n);
    result.stopReason = "zero right-hand side";
    result.converged = true;
    record(0, 0.0, 0.0);
    return result;
  }

  if (o.warmStart) {
    A.apply(x, *q);
    backend.copy(*r, b, bytes);
    backend.axpby(*r, cfloat(-1.f), *q, cfloat(1.f), n);  // r = b - A x0
  } else {
    backend.fill(x, cfloat(0.f), n);
    backend.copy(*r, b, bytes);
  }
  double rnorm = backend.norm2(*r, n);
  record(0, rnorm, bnorm);
  if (o.tolerance > 0 && rnorm <= o.tolerance * bnorm) {
    result.converged = true;
    result.stopReason = "tolerance";
    return result;
  }

  if (M) M->apply(*r, z);
  double rz = M ? backend.dot(*r, z, n).real() : rnorm * rnorm;
  backend.copy(*p, z, bytes);
  result.stopReason = "iterations";

  for (int k = 1; k <= o.maxIterations; ++k) {
    // The cancellation point: between iterations, so Cancel stops within one operator application.
    const double span = o.progressTo - o.progressFrom;
    progress.report(o.progressFrom + span * (k - 1) / std::max(1, o.maxIterations),
                    o.stage + " iteration " + std::to_string(k) + "/" + std::to_string(o.maxIterations));
    A.apply(*p, *q);
    const double pq = backend.dot(*p, *q, n).real();
    if (!(pq > 0) || !(rz > 0)) {
      // p^H A p <= 0: A is not positive definite on p, or p vanished (x is already the solution to
      // float precision). Either way another step would divide by (nearly) zero.
      result.stopReason = "breakdown";
      break;
    }
    const double alpha = rz / pq;
    backend.axpby(x, cfloat(static_cast<float>(alpha)), *p, cfloat(1.f), n);
    backend.axpby(*r, cfloat(static_cast<float>(-alpha)), *q, cfloat(1.f), n);
    rnorm = backend.norm2(*r, n);
    result.iterations = k;
    record(k, rnorm, bnorm);
    if (o.tolerance > 0 && rnorm <= o.tolerance * bnorm) {
      result.converged = true;
      result.stopReason = "tolerance";
      break;
    }
    if (k == o.maxIterations) break;
    double rzNew;
    if (M) {
      M->apply(*r, z);
      rzNew = backend.dot(*r, z, n).real();
    } else {
      rzNew = rnorm * rnorm;
    }
    const double beta = rzNew / rz;
    rz = rzNew;
    backend.axpby(*p, cfloat(1.f), z, cfloat(static_cast<float>(beta)), n);  // p = z + beta p
  }
  return result;
}

}  // namespace larmor::solve
