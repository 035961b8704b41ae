// Preconditioned conjugate gradients (Hestenes & Stiefel 1952; the preconditioned form of Concus, Golub,
// O'Leary 1976, which Stone et al. 2008 cite as [9] for their solver), on any Backend: the fast executor the
// library solves with. The same loop written plainly, with host scalars, is solve/cg_reference.cpp; the two
// agree on the CPU backend (tests/unit/test_cg_reference.cpp).
//
// Per iteration k (z = M^{-1} r, rz = Re <r, z>):
//   q = A p;  alpha = rz / Re <p, q>;  x += alpha p;  r -= alpha q;  z = M^{-1} r;
//   beta = rz_new / rz;  p = z + beta p.
// The objective phi(x) = x^H A x - 2 Re x^H b is evaluated without another operator application:
// A x = b - r, so phi(x) = -Re x^H (b + r) (two dot products), which also makes the monotone decrease a
// measured property (tests/unit/test_cg.cpp) rather than one assumed by a recursion.
// The scalars (rz, pq, ||r||^2 and the objective's products) stay in the backend's memory and the step
// sizes are computed there (backend/solver_ops.hpp): on a GPU the host queues a window of iterations and
// reads the scalars once per window instead of waiting for the device three to five times an iteration.
#include "larmor/solve/cg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "larmor/backend/solver_ops.hpp"
#include "larmor/util/cancel_scope.hpp"

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
  backend.reciprocalDiagonal(*inverse_, *da, 1.0, db.get(), db ? lambda : 0.0, n_);
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

void RecordedApplication::operator()() {
  if (!recording_ && !tried_ && ++applications_ >= 2) {
    tried_ = true;
    recording_ = backend_.executionOps().record([&] { a_.apply(x_, y_); });
  }
  if (recording_) recording_->replay();
  else a_.apply(x_, y_);
}

int readWindow(const SolverOps& ops, index_t n, int requested) {
  if (ops.scalarsOnHost()) return 1;
  if (requested > 0) return requested;
  constexpr index_t kElements = index_t{1} << 24;
  return static_cast<int>(std::clamp<index_t>(kElements / std::max<index_t>(n, 1), 1, 16));
}

CgIterate cgIterate(const std::vector<double>& v, int k, double bnorm, const CgOptions& o) {
  const CgLayout l{o.maxIterations};
  const double rnorm = std::sqrt(v[static_cast<std::size_t>(l.rr(k))]);
  const double objective = o.trackObjective ? o.objectiveOffset - (v[static_cast<std::size_t>(l.xb(k))] +
                                                                   v[static_cast<std::size_t>(l.xr(k))])
                                            : std::numeric_limits<double>::quiet_NaN();
  return {k, bnorm > 0 ? rnorm / bnorm : 0.0, objective};
}

void reportIteration(const CgOptions& o, const Progress& progress, int j) {
  CancelScope::check();  // a solve given no Progress (a warm start) still stops at the caller's Cancel
  const double span = o.progressTo - o.progressFrom;
  progress.report(o.progressFrom + span * (j - 1) / std::max(1, o.maxIterations),
                  o.stage + " iteration " + std::to_string(j) + "/" + std::to_string(o.maxIterations));
}

bool replayWindow(const std::vector<double>& v, int first, int last, CgResult& result,
                  const std::function<void(int)>& record) {
  const int stop = static_cast<int>(v[CgLayout::kStop]);
  const auto reason = static_cast<SolverStop>(static_cast<int>(v[CgLayout::kReason]));
  for (int j = first; j <= last; ++j) {
    if (stop == j && reason == SolverStop::Breakdown) {
      // p^H A p <= 0: A is not positive definite on p, or p vanished (x is already the solution to float
      // precision). Either way another step would divide by (nearly) zero.
      result.stopReason = "breakdown";
      return true;
    }
    result.iterations = j;
    record(j);
    if (stop == j) {
      result.converged = true;
      result.stopReason = "tolerance";
      return true;
    }
  }
  return false;
}

namespace {

/// The buffers hold the operator's size, the iteration count is >= 0, the tolerance >= 0 and finite.
void requireCgArguments(const LinearOperator& A, const Buffer& b, const Buffer& x, const CgOptions& o) {
  const index_t n = A.size();
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(cfloat);
  require(b.bytes() >= bytes && x.bytes() >= bytes,
          "CG: the right-hand side or the solution holds fewer than the operator's " + std::to_string(n) +
              " elements");
  require(o.maxIterations >= 0, "CG: the iteration count must be >= 0");
  require(o.tolerance >= 0 && std::isfinite(o.tolerance), "CG: the tolerance must be >= 0");
}

/// A x = 0 with A positive definite: x = 0, whatever the initial guess (and r = 0).
void solveZeroRightHandSide(Backend& backend, Buffer& x, Buffer& r, index_t n, CgResult& result) {
  backend.fill(x, cfloat(0.f), n);
  backend.fill(r, cfloat(0.f), n);
  result.stopReason = "zero right-hand side";
  result.converged = true;
}

/// The start: r = b - A x0 (warm start; q its scratch) or x = 0 and r = b, z = M^-1 r (z is r without M), and
/// the start's scalars queued into `state`: ||r||^2, the objective's x^H b and x^H r where tracked, rz.
void startResidual(Backend& backend, LinearOperator& A, const Buffer& b, Buffer& x, Buffer& r, Buffer& q, Buffer& z,
                   Preconditioner* M, Buffer& state, const CgOptions& o) {
  const index_t n = A.size();
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(cfloat);
  SolverOps& ops = backend.solverOps();
  const CgLayout l{o.maxIterations};
  if (o.warmStart) {
    A.apply(x, q);
    backend.copy(r, b, bytes);
    backend.axpby(r, cfloat(-1.f), q, cfloat(1.f), n);  // r = b - A x0
  } else {
    backend.fill(x, cfloat(0.f), n);
    backend.copy(r, b, bytes);
  }
  ops.dot(state, l.rr(0), r, r, n);
  if (o.trackObjective) {
    ops.dot(state, l.xb(0), x, b, n);
    ops.dot(state, l.xr(0), x, r, n);
  }
  if (M) M->apply(r, z);
  ops.dot(state, l.rz(0), r, z, n);
}

}  // namespace

CgResult conjugateGradient(Backend& backend, LinearOperator& A, const Buffer& b, Buffer& x, const CgOptions& o,
                           Preconditioner* M, const Progress& progress, const CgObserver& observer) {
  requireCgArguments(A, b, x, o);
  const index_t n = A.size();
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(cfloat);

  CgResult result;
  SolverOps& ops = backend.solverOps();
  const CgLayout l{o.maxIterations};
  auto state = ops.scalars(l.size());
  std::vector<double> v(static_cast<std::size_t>(l.size()));
  auto r = backend.allocate(bytes), p = backend.allocate(bytes), q = backend.allocate(bytes);
  std::unique_ptr<Buffer> zOwned = M ? backend.allocate(bytes) : nullptr;
  Buffer& z = M ? *zOwned : *r;  // without M, z is r itself
  const Buffer* objectiveRhs = o.trackObjective ? &b : nullptr;
  const Buffer* minv = M ? M->inverseDiagonal() : nullptr;

  // The objective from the two inner products the update kernels sum: phi(x) = -Re x^H (b + r).
  auto record = [&](int k, double bnorm) {
    const CgIterate it = cgIterate(v, k, bnorm, o);
    result.history.push_back(it);
    if (observer) observer(it);
  };

  auto readState = [&] { ops.read(v.data(), *state, 0, l.size()); };

  ops.dot(*state, CgLayout::kRhsNorm2, b, b, n);
  readState();
  const double bnorm = std::sqrt(v[CgLayout::kRhsNorm2]);
  if (!(bnorm > 0)) {
    solveZeroRightHandSide(backend, x, *r, n, result);
    std::fill(v.begin(), v.end(), 0.0);
    record(0, 0.0);
    return result;
  }

  startResidual(backend, A, b, x, *r, *q, z, M, *state, o);
  readState();
  record(0, bnorm);
  if (o.tolerance > 0 && kernels::cgConverged(v[static_cast<std::size_t>(l.rr(0))], v[CgLayout::kRhsNorm2],
                                              o.tolerance)) {
    result.converged = true;
    result.stopReason = "tolerance";
    return result;
  }
  backend.copy(*p, z, bytes);
  result.stopReason = "iterations";

  // Iterations are queued in windows; the kernels stop themselves (breakdown, tolerance), the host reads
  // the scalars once per window and replays the history (backend/solver_ops.hpp).
  const int window = readWindow(ops, n, o.readEvery);
  // q = A p, the bulk of an iteration's kernels, recorded and replayed where the backend can (on the GPU
  // machine the host queues a launch more slowly than the kernels of a 256^2 SENSE iteration run, measured 2026-11-28).
  RecordedApplication applyA(backend, A, *p, *q, o.recordOperator);
  for (int k = 1; k <= o.maxIterations;) {
    const int last = std::min(o.maxIterations, k + window - 1);
    for (int j = k; j <= last; ++j) {
      // The cancellation point: between iterations, so Cancel stops within one operator application (a
      // window of them on a GPU).
      reportIteration(o, progress, j);
      applyA();
      ops.cgCurvature(*state, l, j, *p, *q, n);
      // A diagonal M inside the update's pass (z = M^-1 r, rz), any other after it.
      ops.cgUpdate(*state, l, j, x, *r, *p, *q, objectiveRhs, o.tolerance, n, minv, minv ? &z : nullptr);
      if (j == o.maxIterations) break;
      if (M && !minv) {
        M->apply(*r, z);
        ops.dot(*state, l.rz(j), *r, z, n);
      }
      ops.cgDirection(*state, l, j, *p, z, n);
    }
    readState();
    if (replayWindow(v, k, last, result, [&](int j) { record(j, bnorm); })) return result;
    k = last + 1;
  }
  return result;
}

}  // namespace larmor::solve
