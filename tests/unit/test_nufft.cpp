// The CPU NUFFT plan's own checks: a batch equals its coils one at a time across the 8-coil chunk (bitwise),
// bitwise determinism across thread counts, and the errors for bad trajectories and options. (Against the
// float64 exact DFT, the accuracy curve, 3D, band edges, adjointness, table vs direct kernel, spreadInterpolate:
// tests/shared/nufft_vs_exact_dft.cpp, run here on "cpu".)
#include <gtest/gtest.h>
#include <omp.h>

#include <limits>

#include "larmor/backend/registry.hpp"
#include "larmor/ops/nufft.hpp"
#include "support/buffers.hpp"
#include "support/expect_error.hpp"
#include "support/nc_problem.hpp"
#include "support/random_data.hpp"

using namespace larmor;
using namespace larmor::test;

namespace {

std::shared_ptr<Backend> cpu() { return BackendRegistry::instance().select("cpu").backend; }

PlanRun runPlan(Backend& be, const Problem& p, const NufftOptions& o, const std::vector<cfloat>& img,
                const std::vector<cfloat>& data, index_t batch) {
  auto plan = be.makeNufftPlan(p.geometry(), o);
  return larmor::test::runPlan(be, *plan, img, data, batch);
}

}  // namespace

TEST(Nufft, BatchEqualsSingleCoilsAndChunks) {
  auto be = cpu();
  const Problem p = randomProblem(2, 20, 20, 1, 500, 31);
  const index_t batch = 11;  // more than one chunk of 8 coils
  const auto img = randomComplex(p.voxels() * batch, 11), data = randomComplex(p.m * batch, 12);
  NufftOptions o;
  const PlanRun all = runPlan(*be, p, o, img, data, batch);
  for (index_t b : {index_t{0}, index_t{7}, index_t{10}}) {
    std::vector<cfloat> i1(img.begin() + p.voxels() * b, img.begin() + p.voxels() * (b + 1));
    std::vector<cfloat> d1(data.begin() + p.m * b, data.begin() + p.m * (b + 1));
    const PlanRun one = runPlan(*be, p, o, i1, d1, 1);
    for (index_t j = 0; j < p.m; ++j) EXPECT_EQ(one.forward[j], all.forward[j + p.m * b]);
    for (index_t v = 0; v < p.voxels(); ++v) EXPECT_EQ(one.adjoint[v], all.adjoint[v + p.voxels() * b]);
  }
}

// The spreader's tiles are owned by one thread each and filled in a fixed order, so the adjoint is
// bitwise the same with 1 or several threads (no data races, no order-dependent rounding).
TEST(Nufft, DeterministicAcrossThreadCounts) {
  auto be = cpu();
  const Problem p = randomProblem(2, 64, 64, 1, 20000, 51);
  const auto img = randomComplex(p.voxels(), 15), data = randomComplex(p.m, 16);
  NufftOptions o;
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const PlanRun one = runPlan(*be, p, o, img, data, 1);
  omp_set_num_threads(std::max(2, saved));
  const PlanRun many = runPlan(*be, p, o, img, data, 1);
  omp_set_num_threads(saved);
  EXPECT_EQ(one.adjoint, many.adjoint);
  EXPECT_EQ(one.forward, many.forward);
}

TEST(Nufft, BadInput) {
  auto be = cpu();
  Problem p = randomProblem(2, 16, 16, 1, 10, 71);
  p.k[3 * 4] = 12.f;  // |k| = 12 > 1.01 * 8: a trajectory in another unit
  expectError([&] { be->makeNufftPlan(p.geometry(), NufftOptions{}); }, "wrong trajectory scale?");
  p = randomProblem(2, 16, 16, 1, 10, 71);
  p.k[3 * 2 + 1] = std::numeric_limits<float>::quiet_NaN();
  expectError([&] { be->makeNufftPlan(p.geometry(), NufftOptions{}); }, "NaN");
  p.k = RArray(Shape{3, 0});
  expectError([&] { be->makeNufftPlan(p.geometry(), NufftOptions{}); }, "empty");
  p = randomProblem(2, 16, 16, 1, 10, 71);
  NufftOptions o;
  o.width = 1;
  expectError([&] { be->makeNufftPlan(p.geometry(), o); }, "kernel width");
  o = NufftOptions{};
  o.oversampling = 0.5;
  expectError([&] { be->makeNufftPlan(p.geometry(), o); }, "oversampling");
  auto plan = be->makeNufftPlan(p.geometry(), NufftOptions{});
  auto small = be->allocate(8);
  auto img = be->allocate(16 * 16 * sizeof(cfloat));
  expectError([&] { plan->adjoint(*small, *img, 1); }, "buffer");
}
