// Shared by the unit (cpu) and GPU (cuda) binaries: the solvers' scalars in the backend's memory
// (backend/solver_ops.hpp). On a GPU the solvers queue windows of iterations and the kernels stop themselves;
// the iterate, the history and the stop reason must not depend on the window (a window of 1 is the loop
// that reads after every iteration, the CPU's). Operator: A = diag(d) + mu D^H D on a 2D image (D: forward
// differences), built from backend ops only, so it runs on either device.
#include <gtest/gtest.h>

#include <complex>
#include <cstring>
#include <limits>

#include "larmor/solve/cg.hpp"
#include "larmor/solve/fista.hpp"
#include "support/device.hpp"
#include "support/random_data.hpp"

using namespace larmor;
using larmor::test::randomComplex;

namespace {

class SolverScalars : public larmor::test::DeviceTest {};

constexpr index_t kNx = 64, kNy = 48, kN = kNx * kNy;

std::unique_ptr<Buffer> upload(Backend& be, const std::vector<cfloat>& v) {
  auto b = be.allocate(v.size() * sizeof(cfloat));
  be.upload(*b, v.data(), b->bytes());
  return b;
}

std::vector<cfloat> download(Backend& be, const Buffer& b, index_t n) {
  std::vector<cfloat> v(static_cast<std::size_t>(n));
  be.download(v.data(), b, v.size() * sizeof(cfloat));
  return v;
}

/// A x = d x + mu sum_axis D^H D x; d real in [0.5, 2]; mu = 0 gives a diagonal operator, scale 0 gives A = 0.
class Spd final : public solve::LinearOperator {
 public:
  Spd(Backend& be, double mu, float scale = 1.f) : be_(be), mu_(mu) {
    std::vector<cfloat> d(static_cast<std::size_t>(kN));
    for (index_t i = 0; i < kN; ++i) d[i] = cfloat(scale * (0.5f + 1.5f * static_cast<float>((i * 7919) % 1000) / 999.f), 0.f);
    diag_ = upload(be, d);
    t_ = be.allocate(kN * sizeof(cfloat));
    u_ = be.allocate(kN * sizeof(cfloat));
  }
  index_t size() const override { return kN; }
  void apply(const Buffer& x, Buffer& y) override {
    be_.multiply(y, *diag_, kN, x, kN, false);
    const index_t dims[3] = {kNx, kNy, 1};
    for (int axis = 0; axis < 2 && mu_ != 0; ++axis) {
      be_.priorOps().finiteDifference(*t_, x, dims, 1, axis, false);
      be_.priorOps().finiteDifference(*u_, *t_, dims, 1, axis, true);
      be_.axpby(y, cfloat(static_cast<float>(mu_)), *u_, cfloat(1.f), kN);
    }
    ++applications;
  }
  const Buffer& diagonal() const { return *diag_; }
  int applications = 0;

 private:
  Backend& be_;
  double mu_;
  std::unique_ptr<Buffer> diag_, t_, u_;
};

bool sameBits(const std::vector<cfloat>& a, const std::vector<cfloat>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(cfloat)) == 0;
}

}  // namespace

TEST_P(SolverScalars, CgGivesTheSameBitsForEveryWindow) {
  Spd A(be(), 0.3);
  auto b = upload(be(), randomComplex(kN, 71));
  solve::DiagonalPreconditioner M(be(), A.diagonal(), 1.0, nullptr, 0, kN);
  for (bool preconditioned : {false, true}) {
    std::vector<cfloat> reference;
    solve::CgResult first;
    for (int window : {1, 5, 7}) {
      auto x = be().allocate(kN * sizeof(cfloat));
      solve::CgOptions o;
      o.maxIterations = 300;
      o.tolerance = 1e-5;
      o.readEvery = window;
      o.objectiveOffset = 10;
      const solve::CgResult r = solve::conjugateGradient(be(), A, *b, *x, o, preconditioned ? &M : nullptr);
      EXPECT_TRUE(r.converged) << r.stopReason;
      EXPECT_EQ(r.stopReason, "tolerance");
      ASSERT_EQ(r.history.size(), static_cast<std::size_t>(r.iterations + 1));
      ASSERT_NE(r.iterations % 35, 0) << "the stop falls on a window edge for every window; change the tolerance";
      const auto xs = download(be(), *x, kN);
      if (window == 1) {
        reference = xs;
        first = r;
        continue;
      }
      EXPECT_EQ(r.iterations, first.iterations) << "window " << window;
      EXPECT_TRUE(sameBits(xs, reference)) << "window " << window << ": the iterate differs";
      for (std::size_t k = 0; k < r.history.size(); ++k) {
        EXPECT_EQ(r.history[k].relativeResidual, first.history[k].relativeResidual) << "k = " << k;
        EXPECT_EQ(r.history[k].objective, first.history[k].objective) << "k = " << k;
      }
    }
  }
}

TEST_P(SolverScalars, CgDiagonalPreconditionerInsideTheUpdateMatchesItsOwnPass) {
  // A diagonal M is applied inside the update's pass (SolverOps::cgUpdate with minv: z and r^H z there); the same
  // M behind the generic interface (apply, then a dot) must give the same solve: iterations, stop and iterate to
  // float rounding (r^H z is summed in another pass: its bits may differ).
  struct Opaque final : solve::Preconditioner {
    explicit Opaque(solve::Preconditioner& m) : m_(m) {}
    void apply(const Buffer& r, Buffer& z) override { m_.apply(r, z); }
    solve::Preconditioner& m_;
  };
  Spd A(be(), 0.3);
  auto b = upload(be(), randomComplex(kN, 72));
  solve::DiagonalPreconditioner M(be(), A.diagonal(), 1.0, nullptr, 0, kN);
  ASSERT_NE(M.inverseDiagonal(), nullptr);
  Opaque generic(M);
  std::vector<cfloat> xs[2];
  solve::CgResult rs[2];
  for (int variant = 0; variant < 2; ++variant) {
    auto x = be().allocate(kN * sizeof(cfloat));
    solve::CgOptions o;
    o.maxIterations = 300;
    o.tolerance = 1e-5;
    rs[variant] = solve::conjugateGradient(be(), A, *b, *x, o, variant == 0 ? static_cast<solve::Preconditioner*>(&M)
                                                                            : &generic);
    xs[variant] = download(be(), *x, kN);
  }
  EXPECT_EQ(rs[0].stopReason, "tolerance");
  EXPECT_EQ(rs[0].iterations, rs[1].iterations);
  double e = 0, r = 0;
  for (index_t i = 0; i < kN; ++i) {
    e += std::norm(std::complex<double>(xs[0][i]) - std::complex<double>(xs[1][i]));
    r += std::norm(std::complex<double>(xs[1][i]));
  }
  EXPECT_LT(std::sqrt(e / r), 1e-5);
  for (std::size_t k = 0; k < rs[0].history.size(); ++k)
    EXPECT_NEAR(rs[0].history[k].relativeResidual, rs[1].history[k].relativeResidual,
                1e-4 * rs[1].history[k].relativeResidual) << "k = " << k;
}

TEST_P(SolverScalars, CgBreakdownInsideAWindowLeavesTheIterate) {
  Spd zero(be(), 0.0, 0.f);  // A = 0: p^H A p = 0 at the first step
  auto b = upload(be(), randomComplex(kN, 72));
  const auto guess = randomComplex(kN, 73);
  auto x = upload(be(), guess);
  solve::CgOptions o;
  o.maxIterations = 20;
  o.readEvery = 4;
  o.warmStart = true;
  const solve::CgResult r = solve::conjugateGradient(be(), zero, *b, *x, o);
  EXPECT_EQ(r.stopReason, "breakdown");
  EXPECT_EQ(r.iterations, 0);
  EXPECT_EQ(r.history.size(), 1u);
  EXPECT_TRUE(sameBits(download(be(), *x, kN), guess));
}

TEST_P(SolverScalars, CgCancelStopsWithinAWindow) {
  Spd A(be(), 0.3);
  auto b = upload(be(), randomComplex(kN, 74));
  auto x = be().allocate(kN * sizeof(cfloat));
  CancelToken token;
  Progress progress([](double, const std::string&) {}, &token);
  solve::CgOptions o;
  o.maxIterations = 200;
  o.readEvery = 4;
  o.recordOperator = false;  // a replayed recording does not run apply() on the host, which this test counts
  int seen = 0;
  auto observer = [&](const solve::CgIterate& it) {
    seen = it.iteration;
    if (it.iteration == 3) token.cancel();
  };
  EXPECT_THROW(solve::conjugateGradient(be(), A, *b, *x, o, nullptr, progress, observer), Cancelled);
  const int window = solve::readWindow(be().solverOps(), kN, o.readEvery);
  EXPECT_EQ(seen, std::max(3, window));  // the observer sees the whole window that was read
  EXPECT_EQ(A.applications, seen);       // the next window never started
}

// q = A p recorded once and replayed (ExecutionOps::record, a CUDA graph on the GPU): the same iterate and history
// bit for bit as applying A every iteration; on the GPU the operator's host code runs twice (the first
// iteration, then the recording), so a recording that silently fell back would show here.
TEST_P(SolverScalars, CgRecordedOperatorGivesTheSameBits) {
  Spd direct(be(), 0.3), recorded(be(), 0.3);
  auto b = upload(be(), randomComplex(kN, 76));
  solve::DiagonalPreconditioner M(be(), direct.diagonal(), 1.0, nullptr, 0, kN);
  std::vector<cfloat> xs[2];
  solve::CgResult rs[2];
  for (int i = 0; i < 2; ++i) {
    Spd& A = i == 0 ? direct : recorded;
    auto x = be().allocate(kN * sizeof(cfloat));
    solve::CgOptions o;
    o.maxIterations = 25;
    o.readEvery = 7;
    o.recordOperator = i == 1;
    rs[i] = solve::conjugateGradient(be(), A, *b, *x, o, &M);
    xs[i] = download(be(), *x, kN);
  }
  EXPECT_EQ(rs[1].iterations, 25);
  EXPECT_TRUE(sameBits(xs[1], xs[0])) << "the recorded operator's iterate differs";
  ASSERT_EQ(rs[1].history.size(), rs[0].history.size());
  for (std::size_t k = 0; k < rs[0].history.size(); ++k) {
    EXPECT_EQ(rs[1].history[k].relativeResidual, rs[0].history[k].relativeResidual) << "k = " << k;
    EXPECT_EQ(rs[1].history[k].objective, rs[0].history[k].objective) << "k = " << k;
  }
  EXPECT_EQ(direct.applications, 25);
  EXPECT_EQ(recorded.applications, be().isGpu() ? 2 : 25);
}

// SolverOps::countNonFinite: adds the number of elements with a NaN or infinite real or imaginary part.
TEST_P(SolverScalars, CountNonFiniteAddsTheBadElements) {
  std::vector<cfloat> v = randomComplex(kN, 77);
  auto s = be().solverOps().scalars(3);
  auto good = upload(be(), v);
  be().solverOps().countNonFinite(*s, 1, *good, kN);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  v[0] = cfloat(nan, 0.f);
  v[17] = cfloat(0.f, -inf);
  v[kN - 1] = cfloat(inf, nan);
  v[1000] = cfloat(1e38f, -1e38f);  // large, finite
  auto bad = upload(be(), v);
  be().solverOps().countNonFinite(*s, 2, *bad, kN);
  be().solverOps().countNonFinite(*s, 2, *bad, kN - 1);  // adds: the last one is outside this range
  double out[3];
  be().solverOps().read(out, *s, 0, 3);
  EXPECT_EQ(out[0], 0.0);
  EXPECT_EQ(out[1], 0.0);
  EXPECT_EQ(out[2], 5.0);
}

TEST_P(SolverScalars, FistaGivesTheSameBitsForEveryWindow) {
  Spd A(be(), 0.3);
  auto b = upload(be(), randomComplex(kN, 75));
  const double L = 1.1 * solve::largestEigenvalue(be(), A, *b, 30);
  const Shape image{kNx, kNy, 1};
  std::vector<cfloat> reference;
  solve::FistaResult first;
  for (int window : {1, 6}) {
    auto dual = be().allocate(static_cast<std::size_t>(SparsityOps::tvDualElements(image)) * sizeof(cfloat));
    be().fill(*dual, cfloat(0.f), SparsityOps::tvDualElements(image));
    auto x = be().allocate(kN * sizeof(cfloat));
    solve::FistaOptions o;
    o.maxIterations = 200;
    o.tolerance = 2e-3;
    o.readEvery = window;
    const solve::FistaResult r = solve::fista(
        be(), A, *b, *x, L, 0.05, [&](Buffer& v, double t) { be().sparsityOps().tvProx(v, image, t, 5, *dual); }, o);
    EXPECT_TRUE(r.converged) << r.stopReason;
    ASSERT_NE(r.iterations % 6, 0) << "the stop falls on a window edge; change the tolerance";
    const auto xs = download(be(), *x, kN);
    if (window == 1) {
      reference = xs;
      first = r;
      continue;
    }
    EXPECT_EQ(r.iterations, first.iterations);
    EXPECT_TRUE(sameBits(xs, reference)) << "the iterate differs";
    ASSERT_EQ(r.history.size(), first.history.size());
    for (std::size_t k = 0; k < r.history.size(); ++k)
      EXPECT_EQ(r.history[k].relativeChange, first.history[k].relativeChange) << "k = " << k;
  }
}

TEST_P(SolverScalars, PowerIterationFindsTheLargestEigenvalue) {
  Spd A(be(), 0.0);  // diagonal: eigenvalues are d, the largest 2
  auto start = upload(be(), randomComplex(kN, 76));
  const double lambda = solve::largestEigenvalue(be(), A, *start, 300);
  EXPECT_NEAR(lambda, 2.0, 5e-3);
  EXPECT_LE(lambda, 2.0 + 1e-6);  // a Rayleigh quotient never exceeds the largest eigenvalue
  auto zero = upload(be(), std::vector<cfloat>(kN, cfloat(0.f)));
  EXPECT_EQ(solve::largestEigenvalue(be(), A, *zero, 10), 0.0);
  EXPECT_EQ(solve::largestEigenvalue(be(), A, *start, 0), 0.0);
}

LARMOR_INSTANTIATE_ON_TEST_DEVICE(SolverScalars);
