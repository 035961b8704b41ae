// The CG solver (solve/cg.hpp) against a dense Hermitian positive definite operator: the float64 direct
// solution, monotone objective, the Jacobi preconditioner, warm start, tolerance, cancellation.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>

#include "larmor/solve/cg.hpp"
#include "support/dense_reference.hpp"
#include "support/error_norms.hpp"

using namespace larmor;
using namespace larmor::test;

namespace {

/// A = B^H diag(s) B + mu I with a random B (rows x n) and positive row scales s (conditioning knob).
class DenseOperator final : public solve::LinearOperator {
 public:
  DenseOperator(index_t n, index_t rows, double mu, double spread, unsigned seed) : n_(n), A_(n * n, 0.0) {
    const auto b = randomComplex(rows * n, seed);
    std::vector<double> colScale(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) colScale[i] = std::pow(spread, static_cast<double>(i) / (n - 1));
    // Columns scaled by colScale: the diagonal of A spans `spread`^2, which Jacobi undoes.
    for (index_t i = 0; i < n; ++i)
      for (index_t j = 0; j < n; ++j) {
        cd s = 0;
        for (index_t r = 0; r < rows; ++r) s += std::conj(cd(b[r * n + i])) * cd(b[r * n + j]);
        A_[i * n + j] = s * colScale[i] * colScale[j] + (i == j ? mu * colScale[i] * colScale[i] : 0.0);
      }
  }
  index_t size() const override { return n_; }
  void apply(const Buffer& x, Buffer& y) override {
    auto* px = static_cast<const cfloat*>(x.ptr());
    auto* py = static_cast<cfloat*>(y.ptr());
    for (index_t i = 0; i < n_; ++i) {
      cd s = 0;
      for (index_t j = 0; j < n_; ++j) s += A_[i * n_ + j] * cd(px[j]);
      py[i] = cfloat(s);
    }
    ++applications;
  }
  std::vector<double> diagonal() const {
    std::vector<double> d(static_cast<std::size_t>(n_));
    for (index_t i = 0; i < n_; ++i) d[i] = A_[i * n_ + i].real();
    return d;
  }
  const std::vector<cd>& matrix() const { return A_; }
  int applications = 0;

 private:
  index_t n_;
  std::vector<cd> A_;
};

}  // namespace

TEST(Cg, ConvergesToTheDirectFloat64Solution) {
  auto be = makeCpuBackend();
  DenseOperator A(40, 60, 0.1, 1.0, 11);
  const auto b = randomComplex(40, 12);
  std::vector<cd> bd(b.begin(), b.end());
  const auto exact = choleskySolve(A.matrix(), bd);
  auto bb = toBuffer(*be, b), x = be->allocate(40 * sizeof(cfloat));
  solve::CgOptions o;
  o.maxIterations = 200;
  o.tolerance = 1e-6;
  const auto r = solve::conjugateGradient(*be, A, *bb, *x, o);
  EXPECT_TRUE(r.converged) << r.stopReason;
  EXPECT_EQ(r.stopReason, "tolerance");
  EXPECT_LT(relL2Error(fromBuffer(*be, *x, 40), exact), 1e-4);
  EXPECT_EQ(static_cast<int>(r.history.size()), r.iterations + 1);
  EXPECT_LE(r.history.back().relativeResidual, 1e-6);
  EXPECT_DOUBLE_EQ(r.history.front().relativeResidual, 1.0);
  // Without a preconditioner the loop applies A once per iteration (zero initial guess: none before).
  EXPECT_EQ(A.applications, r.iterations);
}

TEST(Cg, ObjectiveFallsMonotonicallyAndMatchesItsDefinition) {
  auto be = makeCpuBackend();
  DenseOperator A(30, 20, 0.05, 4.0, 5);
  const auto b = randomComplex(30, 6);
  auto bb = toBuffer(*be, b), x = be->allocate(30 * sizeof(cfloat));
  solve::CgOptions o;
  o.maxIterations = 25;
  o.objectiveOffset = 10.0;
  for (bool precondition : {false, true}) {
    solve::DiagonalPreconditioner M(*be, A.diagonal());
    const auto r = solve::conjugateGradient(*be, A, *bb, *x, o, precondition ? &M : nullptr);
    ASSERT_GE(r.history.size(), 10u);
    EXPECT_DOUBLE_EQ(r.history[0].objective, 10.0);  // phi(0) = 0
    for (std::size_t k = 1; k < r.history.size(); ++k)
      EXPECT_LE(r.history[k].objective, r.history[k - 1].objective + 1e-9 * std::abs(r.history[k - 1].objective))
          << "iteration " << k << (precondition ? " (Jacobi)" : "");
    // phi(x) = x^H A x - 2 Re x^H b, densely, at the final iterate.
    const auto xs = fromBuffer(*be, *x, 30);
    cd xAx = 0, xb = 0;
    for (int i = 0; i < 30; ++i) {
      cd s = 0;
      for (int j = 0; j < 30; ++j) s += A.matrix()[i * 30 + j] * cd(xs[j]);
      xAx += std::conj(cd(xs[i])) * s;
      xb += std::conj(cd(xs[i])) * cd(b[i]);
    }
    EXPECT_NEAR(r.history.back().objective, 10.0 + xAx.real() - 2 * xb.real(), 1e-4 * std::abs(xAx.real()));
  }
}

TEST(Cg, JacobiPreconditionerNeedsFewerIterationsOnABadlyScaledProblem) {
  auto be = makeCpuBackend();
  DenseOperator A(50, 80, 0.2, 100.0, 21);  // diagonal spanning 1e4
  const auto b = randomComplex(50, 22);
  auto bb = toBuffer(*be, b), x = be->allocate(50 * sizeof(cfloat));
  solve::CgOptions o;
  o.maxIterations = 500;
  o.tolerance = 1e-5;
  const auto plain = solve::conjugateGradient(*be, A, *bb, *x, o);
  solve::DiagonalPreconditioner M(*be, A.diagonal());
  const auto pre = solve::conjugateGradient(*be, A, *bb, *x, o, &M);
  EXPECT_TRUE(pre.converged);
  EXPECT_LT(pre.iterations, plain.iterations) << "Jacobi " << pre.iterations << " vs plain " << plain.iterations;
  std::vector<cd> bd(b.begin(), b.end());
  EXPECT_LT(relL2Error(fromBuffer(*be, *x, 50), choleskySolve(A.matrix(), bd)), 1e-3);
}

TEST(Cg, WarmStartFromANearbySolutionConvergesFaster) {
  auto be = makeCpuBackend();
  DenseOperator A1(40, 50, 0.10, 3.0, 31), A2(40, 50, 0.12, 3.0, 31);  // lambda changed a little
  const auto b = randomComplex(40, 32);
  auto bb = toBuffer(*be, b), x = be->allocate(40 * sizeof(cfloat));
  solve::CgOptions o;
  o.maxIterations = 300;
  o.tolerance = 1e-5;
  solve::conjugateGradient(*be, A1, *bb, *x, o);  // x = solution for A1
  solve::CgOptions warm = o;
  warm.warmStart = true;
  const int before = A2.applications;
  const auto rw = solve::conjugateGradient(*be, A2, *bb, *x, warm);
  EXPECT_EQ(A2.applications - before, rw.iterations + 1);  // the initial residual costs one application
  EXPECT_LT(rw.history.front().relativeResidual, 0.2);
  const auto rc = solve::conjugateGradient(*be, A2, *bb, *x, o);
  EXPECT_TRUE(rw.converged && rc.converged);
  EXPECT_LT(rw.iterations, rc.iterations) << "warm " << rw.iterations << " vs cold " << rc.iterations;
}

TEST(Cg, CancelStopsWithinOneIteration) {
  auto be = makeCpuBackend();
  DenseOperator A(30, 30, 0.01, 1.0, 41);
  const auto b = randomComplex(30, 42);
  auto bb = toBuffer(*be, b), x = be->allocate(30 * sizeof(cfloat));
  CancelToken token;
  Progress progress([](double, const std::string&) {}, &token);
  solve::CgOptions o;
  o.maxIterations = 1000;
  int seen = 0;
  auto observer = [&](const solve::CgIterate& it) {
    seen = it.iteration;
    if (it.iteration == 3) token.cancel();
  };
  EXPECT_THROW(solve::conjugateGradient(*be, A, *bb, *x, o, nullptr, progress, observer), Cancelled);
  EXPECT_EQ(seen, 3);
  EXPECT_EQ(A.applications, 3);  // the fourth iteration never applied A
}

TEST(Cg, ZeroRightHandSideAndZeroIterations) {
  auto be = makeCpuBackend();
  DenseOperator A(10, 10, 0.1, 1.0, 51);
  std::vector<cfloat> zero(10, cfloat(0.f)), guess = randomComplex(10, 52);
  auto bb = toBuffer(*be, zero), x = toBuffer(*be, guess);
  solve::CgOptions o;
  o.warmStart = true;
  const auto r = solve::conjugateGradient(*be, A, *bb, *x, o);
  EXPECT_EQ(r.stopReason, "zero right-hand side");
  EXPECT_EQ(fromBuffer(*be, *x, 10), zero);
  const auto b = randomComplex(10, 53);
  auto bb2 = toBuffer(*be, b);
  o.maxIterations = 0;
  o.warmStart = false;
  const auto r0 = solve::conjugateGradient(*be, A, *bb2, *x, o);
  EXPECT_EQ(r0.iterations, 0);
  EXPECT_EQ(r0.history.size(), 1u);
  const auto j = r0.toJson();
  EXPECT_EQ(j["relative_residual"].size(), 1u);
  EXPECT_EQ(j["stop"], "iterations");
}
