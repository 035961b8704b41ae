// The plain FISTA and power-iteration loops (solve/fista_reference.cpp) against the fast executors the library
// solves with (solve/fista.cpp: scalars in the backend's memory read once per window, the gradient and momentum
// steps fused, the operator recorded), on the CPU backend: FISTA with the TV proximal map on the Cartesian SENSE
// problem and with wavelets on the Toeplitz one, the power iteration on both.
//
// Tolerance: kSame = 1e-6 relative (L2 over the iterate, relative on each entry of the history and on the
// eigenvalue). On the CPU backend both loops compute the same float steps (the fused passes of CpuSolverOps add
// the same terms, in an order that float addition's commutativity makes the same) and the same double norms, the
// sums possibly split differently among threads (~1e-16): they agree to the last bit (measured: 0 on every case
// here). 1e-6 (about 16 float roundings) leaves room for a twin that rounds in another order, while a difference
// in the algorithm (the momentum weight, the step, an iteration more) moves the result by far more (the last
// test: one iteration, 5e-2).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <memory>
#include <vector>

#include "larmor/solve/fista_reference.hpp"
#include "support/buffers.hpp"
#include "support/error_norms.hpp"
#include "support/random_data.hpp"
#include "support/solver_problems.hpp"

using namespace larmor;
using namespace larmor::test;

namespace {

constexpr double kSame = 1e-6;

struct FistaRun {
  std::vector<cfloat> x;
  solve::FistaResult result;
};

using Solver = solve::FistaResult (*)(Backend&, solve::LinearOperator&, const Buffer&, Buffer&, double, double,
                                      const solve::Prox&, const solve::FistaOptions&, const Progress&,
                                      const solve::FistaObserver&);

/// One solve with a fresh proximal map: TV (its dual field starting at zero) or wavelets with fixed shifts.
FistaRun run(Solver solver, Backend& be, solve::LinearOperator& A, const Shape& image, bool tv,
        const std::vector<cfloat>& b, const solve::FistaOptions& o, double L, double mu) {
  auto bb = toBuffer(be, b), xb = be.allocate(b.size() * sizeof(cfloat));
  auto dual = be.allocate(static_cast<std::size_t>(SparsityOps::tvDualElements(image)) * sizeof(cfloat));
  be.fill(*dual, cfloat(0.f), SparsityOps::tvDualElements(image));
  int calls = 0;
  const solve::Prox prox = [&](Buffer& v, double t) {
    if (tv) {
      be.sparsityOps().tvProx(v, image, t, 5, *dual);
    } else {
      const index_t s = (calls++ * 5) % image[0];
      be.sparsityOps().waveletProx(v, image, t, {s, (s * 3) % image[1], 0});
    }
  };
  FistaRun r;
  r.result = solver(be, A, *bb, *xb, L, mu, prox, o, {}, {});
  r.x = fromBuffer(be, *xb, A.size());
  return r;
}

void expectSame(const FistaRun& got, const FistaRun& ref) {
  EXPECT_LE(relL2Error(got.x, ref.x), kSame);
  EXPECT_EQ(got.result.iterations, ref.result.iterations);
  EXPECT_EQ(got.result.converged, ref.result.converged);
  EXPECT_EQ(got.result.stopReason, ref.result.stopReason);
  ASSERT_EQ(got.result.history.size(), ref.result.history.size());
  for (std::size_t k = 0; k < ref.result.history.size(); ++k) {
    const double g = got.result.history[k].relativeChange, r = ref.result.history[k].relativeChange;
    EXPECT_LE(std::abs(g - r), kSame * std::abs(r)) << "iteration " << k + 1;
  }
}

/// fista and fistaReference on one problem, for an iteration limit and a tolerance that stops earlier.
void compare(Backend& be, solve::LinearOperator& A, const Shape& image, bool tv, unsigned seed) {
  const auto b = randomComplex(A.size(), seed);
  auto start = toBuffer(be, b);
  const double lambda = solve::largestEigenvalue(be, A, *start, 20);
  EXPECT_LE(std::abs(lambda - solve::largestEigenvalueReference(be, A, *start, 20)), kSame * lambda);
  solve::FistaOptions o;
  o.maxIterations = 30;
  const FistaRun f = run(&solve::fista, be, A, image, tv, b, o, 1.1 * lambda, 0.05);
  const FistaRun r = run(&solve::fistaReference, be, A, image, tv, b, o, 1.1 * lambda, 0.05);
  expectSame(f, r);
  EXPECT_EQ(r.result.stopReason, "iterations");
  // A tolerance that the 15th iterate meets (or an earlier one): both stop at the same iterate.
  o.tolerance = r.result.history[14].relativeChange;
  const FistaRun ft = run(&solve::fista, be, A, image, tv, b, o, 1.1 * lambda, 0.05);
  const FistaRun rt = run(&solve::fistaReference, be, A, image, tv, b, o, 1.1 * lambda, 0.05);
  expectSame(ft, rt);
  EXPECT_EQ(rt.result.stopReason, "tolerance");
  EXPECT_LE(rt.result.iterations, 15);
}

}  // namespace

TEST(FistaReference, SenseWithTvGivesTheFastExecutorsSolve) {
  SenseProblem p;
  compare(*p.be, *p.A, Shape{SenseProblem::kN, SenseProblem::kN, 1}, true, 21);
}

TEST(FistaReference, ToeplitzWithWaveletsGivesTheFastExecutorsSolve) {
  ToeplitzProblem p;
  compare(*p.be, *p.A, Shape{ToeplitzProblem::kN, ToeplitzProblem::kN, 1}, false, 22);
}

TEST(FistaReference, OneIterationMoreIsFarOutsideTheTolerance) {
  SenseProblem p;
  const Shape image{SenseProblem::kN, SenseProblem::kN, 1};
  const auto b = randomComplex(p.A->size(), 21);
  solve::FistaOptions o;
  o.maxIterations = 20;
  const FistaRun r20 = run(&solve::fistaReference, *p.be, *p.A, image, true, b, o, 10.0, 0.05);
  o.maxIterations = 21;
  const FistaRun r21 = run(&solve::fistaReference, *p.be, *p.A, image, true, b, o, 10.0, 0.05);
  EXPECT_GT(relL2Error(r21.x, r20.x), 1e3 * kSame);  // measured 5.2e-2
}
