// Cancel within 0.5 s inside the other long single calls that take no Progress: the CPU NUFFT's spread of a 3D
// multi-coil problem (polled per coil chunk and per tile) and the CPU backend's batched products (polled per
// entry: GRAPPA's calibration and fill over many problems). Each runs seconds uncancelled on this CPU.
#include <gtest/gtest.h>

#include <cstdio>

#include "larmor/backend/registry.hpp"
#include "larmor/ops/linalg.hpp"
#include "larmor/ops/nufft.hpp"
#include "larmor/util/cancel_scope.hpp"
#include "support/cancel_latency.hpp"
#include "support/nc_problem.hpp"
#include "support/random_data.hpp"

using namespace larmor;
using namespace larmor::test;

namespace {

std::shared_ptr<Backend> cpu() { return BackendRegistry::instance().select("cpu").backend; }

void expectPrompt(const CancelOutcome& o, const char* what) {
  std::printf("%s: %s after %.3f s\n", what, o.cancelled ? "cancelled" : "NOT cancelled (ran to its end)", o.seconds);
  EXPECT_TRUE(o.cancelled) << what << " was not cancelled";
  EXPECT_LT(o.seconds, 0.5) << what;
}

}  // namespace

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
