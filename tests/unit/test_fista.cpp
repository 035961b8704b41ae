// FISTA and the power iteration (solve/fista.hpp) against float64 references written here: on a small dense
// problem min 1/2 x^H A x - Re x^H b + mu ||x||_1 (complex soft threshold as the proximal map), FISTA reaches
// the solution that 20000 steps of ISTA in double give; the power iteration finds A's largest eigenvalue (Eigen's
// dense solver in double). The operator runs on the CPU backend through downloads (the solver sees a backend).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "larmor/backend/registry.hpp"
#include "larmor/solve/fista.hpp"
#include "../support/error_norms.hpp"

using namespace larmor;

namespace {

using Mat = Eigen::MatrixXcd;
using Vec = Eigen::VectorXcd;

/// y = A x with a dense double matrix, through the backend's buffers.
class DenseOperator final : public solve::LinearOperator {
 public:
  DenseOperator(Backend& be, Mat a) : be_(be), a_(std::move(a)) {}
  index_t size() const override { return a_.rows(); }
  void apply(const Buffer& x, Buffer& y) override {
    std::vector<cfloat> h(static_cast<std::size_t>(size()));
    be_.download(h.data(), x, h.size() * sizeof(cfloat));
    Vec v(size());
    for (index_t i = 0; i < size(); ++i) v[i] = cdouble(h[static_cast<std::size_t>(i)]);
    const Vec r = a_ * v;
    for (index_t i = 0; i < size(); ++i) h[static_cast<std::size_t>(i)] = cfloat(r[i]);
    be_.upload(y, h.data(), h.size() * sizeof(cfloat));
  }

 private:
  Backend& be_;
  Mat a_;
};

cdouble soft(cdouble c, double t) {
  const double m = std::abs(c);
  return m > t ? c * (1 - t / m) : cdouble(0);
}

struct Problem {
  Mat a;
  Vec b;
};

Problem makeProblem(index_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> g;
  Mat m(n, n);
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < n; ++j) m(i, j) = cdouble(g(rng), g(rng));
  Problem p;
  p.a = m.adjoint() * m / static_cast<double>(n) + 0.3 * Mat::Identity(n, n);  // Hermitian positive definite
  p.b = Vec(n);
  for (index_t i = 0; i < n; ++i) p.b[i] = cdouble(g(rng), g(rng));
  return p;
}

}  // namespace

TEST(Fista, ReachesTheFloat64SolutionOfASmallL1Problem) {
  auto be = BackendRegistry::instance().select("cpu").backend;
  const index_t n = 16;
  const Problem p = makeProblem(n, 3);
  const double L = Eigen::SelfAdjointEigenSolver<Mat>(p.a).eigenvalues().maxCoeff();
  for (double mu : {0.05, 1.0}) {
    // The reference: ISTA in double, 20000 steps of 1/L (the objective is strongly convex: it converges).
    Vec x = Vec::Zero(n);
    for (int k = 0; k < 20000; ++k) {
      const Vec y = x - (p.a * x - p.b) / L;
      for (index_t i = 0; i < n; ++i) x[i] = soft(y[i], mu / L);
    }
    std::vector<cfloat> bh(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) bh[static_cast<std::size_t>(i)] = cfloat(p.b[i]);
    auto b = be->allocate(bh.size() * sizeof(cfloat)), xb = be->allocate(bh.size() * sizeof(cfloat));
    be->upload(*b, bh.data(), bh.size() * sizeof(cfloat));
    DenseOperator A(*be, p.a);
    const solve::Prox prox = [&](Buffer& v, double t) {
      std::vector<cfloat> h(static_cast<std::size_t>(n));
      be->download(h.data(), v, h.size() * sizeof(cfloat));
      for (auto& c : h) c = cfloat(soft(cdouble(c), t));
      be->upload(v, h.data(), h.size() * sizeof(cfloat));
    };
    solve::FistaOptions o;
    o.maxIterations = 3000;
    o.tolerance = 1e-9;
    const auto r = solve::fista(*be, A, *b, *xb, 1.05 * L, mu, prox, o);
    std::vector<cfloat> got(static_cast<std::size_t>(n));
    be->download(got.data(), *xb, got.size() * sizeof(cfloat));
    std::vector<cdouble> ref(x.data(), x.data() + n);
    const double err = test::relL2Error(got, ref);
    std::printf("fista mu %.2f: %d iterations (%s), relative error to the float64 solution %.2e\n", mu, r.iterations,
                r.stopReason.c_str(), err);
    EXPECT_LT(err, 1e-5) << "mu " << mu;
    int zeros = 0;
    for (index_t i = 0; i < n; ++i) zeros += x[i] == cdouble(0);
    if (mu == 1.0) EXPECT_GT(zeros, 0) << "the l1 problem should have a sparse solution";
  }
}

TEST(Fista, PowerIterationFindsTheLargestEigenvalue) {
  auto be = BackendRegistry::instance().select("cpu").backend;
  const index_t n = 20;
  const Problem p = makeProblem(n, 9);
  const double L = Eigen::SelfAdjointEigenSolver<Mat>(p.a).eigenvalues().maxCoeff();
  std::vector<cfloat> start(static_cast<std::size_t>(n), cfloat(1.f, 0.5f));
  auto s = be->allocate(start.size() * sizeof(cfloat));
  be->upload(*s, start.data(), start.size() * sizeof(cfloat));
  DenseOperator A(*be, p.a);
  const double est = solve::largestEigenvalue(*be, A, *s, 200);
  EXPECT_LE(est, L * (1 + 1e-5));  // a Rayleigh quotient: from below
  EXPECT_NEAR(est, L, 1e-3 * L);
  std::vector<cfloat> zero(static_cast<std::size_t>(n), cfloat(0.f));
  be->upload(*s, zero.data(), zero.size() * sizeof(cfloat));
  EXPECT_EQ(solve::largestEigenvalue(*be, A, *s, 10), 0.0);
}
