// Cancel within 0.5 s inside the other long single calls that take no Progress: the CPU NUFFT's spread of a 3D
// multi-coil problem (polled per coil chunk and per tile), the CPU backend's batched products (polled per
// entry: GRAPPA's calibration and fill over many problems), and the solver loops run without a Progress (the
// power iteration of FISTA's step, CS's warm-start CG: 3D operator applications of ~0.3 s each). Each runs
// seconds uncancelled.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "larmor/backend/registry.hpp"
#include "larmor/ops/linalg.hpp"
#include "larmor/ops/nufft.hpp"
#include "larmor/solve/cg.hpp"
#include "larmor/solve/fista.hpp"
#include "larmor/util/cancel_scope.hpp"
#include "support/cancel_latency.hpp"
#include "support/nc_problem.hpp"
#include "support/random_data.hpp"

using namespace larmor;
using namespace larmor::test;

namespace {

std::shared_ptr<Backend> cpu() { return BackendRegistry::instance().select("cpu").backend; }

/// y = diag(1, 2, ..., n) x after 0.2 s: an operator application as slow as a 3D one on this CPU, with n distinct
/// eigenvalues (CG does not converge in a few steps).
class SlowOperator : public solve::LinearOperator {
 public:
  SlowOperator(Backend& be, index_t n) : be_(be), n_(n), d_(be.allocate(static_cast<std::size_t>(n) * sizeof(cfloat))) {
    std::vector<cfloat> d(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) d[static_cast<std::size_t>(i)] = cfloat(static_cast<float>(i + 1), 0.f);
    be.upload(*d_, d.data(), d.size() * sizeof(cfloat));
  }
  index_t size() const override { return n_; }
  void apply(const Buffer& x, Buffer& y) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    be_.multiply(y, *d_, n_, x, n_, false);
  }

 private:
  Backend& be_;
  index_t n_;
  std::unique_ptr<Buffer> d_;
};

}  // namespace

TEST(CancelPaths, SolverLoopsWithoutProgressStopWithinHalfASecond) {
  auto be = cpu();
  constexpr index_t n = 1000;
  SlowOperator A(*be, n);
  const auto v = randomComplex(n, 34);
  auto b = be->allocate(n * sizeof(cfloat)), x = be->allocate(n * sizeof(cfloat));
  be->upload(*b, v.data(), n * sizeof(cfloat));
  expectPrompt(cancelAfter([&](const Progress& progress) {
                 const CancelScope cancel(progress);
                 solve::largestEigenvalue(*be, A, *b, 30);  // 6 s uncancelled
               }),
               "power iteration (30 steps of 0.2 s)");
  solve::CgOptions o;
  o.maxIterations = 30;
  o.tolerance = 0;
  expectPrompt(cancelAfter([&](const Progress& progress) {
                 const CancelScope cancel(progress);
                 be->fill(*x, cfloat(0), n);
                 solve::conjugateGradient(*be, A, *b, *x, o);  // no Progress of its own
               }),
               "CG without a Progress (30 iterations of 0.2 s)");
}

TEST(CancelPaths, Nufft3DAdjointStopsWithinHalfASecond) {
  auto be = cpu();
  constexpr index_t coils = 8;
  const Problem p = randomProblem(3, 128, 128, 128, 1500000, 31);  // 1.5 M samples, 8 coils: seconds of spreading
  auto plan = be->makeNufftPlan(p.geometry(), NufftOptions{});
  const auto d = randomComplex(p.m * coils, 32);
  auto in = be->allocate(d.size() * sizeof(cfloat)), out = be->allocate(p.voxels() * coils * sizeof(cfloat));
  be->upload(*in, d.data(), d.size() * sizeof(cfloat));
  expectPrompt(cancelAfter([&](const Progress& progress) {
                 const CancelScope cancel(progress);
                 plan->adjoint(*in, *out, coils);
               }),
               "NUFFT adjoint (128^3, 1.5 M samples, 8 coils)");
}

TEST(CancelPaths, BatchedProductStopsWithinHalfASecond) {
  auto be = cpu();
  constexpr index_t n = 384, batch = 96;  // 96 products of 384^3 complex values: seconds
  const auto a = randomComplex(n * n * batch, 33);
  auto A = be->allocate(a.size() * sizeof(cfloat)), C = be->allocate(a.size() * sizeof(cfloat));
  be->upload(*A, a.data(), a.size() * sizeof(cfloat));
  const MatrixBatch m{n, n, n, n * n};
  auto B = be->allocate(a.size() * sizeof(cfloat));
  be->upload(*B, a.data(), a.size() * sizeof(cfloat));
  expectPrompt(cancelAfter([&](const Progress& progress) {
                 const CancelScope cancel(progress);
                 be->gemmBatched(MatOp::None, MatOp::None, n, n, n, cfloat(1), *A, m, *B, m, cfloat(0), *C, m, batch);
               }),
               "gemmBatched (96 x 384^3)");
}
