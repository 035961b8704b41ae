// The CPU exact non-uniform DFT plan's own checks: spreadInterpolate is bitwise forward(adjoint(.)), and the
// errors for bad trajectories. (Each trig mode against the float64 sum, odd sizes, 3D, adjointness:
// tests/shared/exact_dft_plan.cpp, run here on "cpu".)
#include <gtest/gtest.h>

#include "larmor/backend/registry.hpp"
#include "larmor/ops/nufft.hpp"
#include "support/nc_problem.hpp"
#include "support/random_data.hpp"

using namespace larmor;
using namespace larmor::test;

namespace {
std::shared_ptr<Backend> cpu() { return BackendRegistry::instance().select("cpu").backend; }
}  // namespace

TEST(Dft, SpreadInterpolateIsForwardOfAdjoint) {
  auto be = cpu();
  const Problem p = randomProblem(2, 12, 12, 1, 100, 9);
  const auto w = randomComplex(p.m, 7);
  auto plan = be->makeDftPlan(p.geometry(), DftOptions{});
  const std::size_t bytes = w.size() * sizeof(cfloat);
  auto in = be->allocate(bytes), out = be->allocate(bytes), img = be->allocate(p.voxels() * sizeof(cfloat));
  be->upload(*in, w.data(), bytes);
  plan->spreadInterpolate(*in, *out);
  std::vector<cfloat> si(w.size()), fa(w.size());
  be->download(si.data(), *out, bytes);
  plan->adjoint(*in, *img, 1);
  plan->forward(*img, *out, 1);
  be->download(fa.data(), *out, bytes);
  EXPECT_EQ(si, fa);
}

TEST(Dft, BadInput) {
  auto be = cpu();
  Problem p = randomProblem(2, 16, 16, 1, 10, 10);
  p.k[3 * 5 + 1] = -40.f;
  try {
    be->makeDftPlan(p.geometry(), DftOptions{});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("wrong trajectory scale?"), std::string::npos) << e.what();
  }
  p.k = RArray(Shape{3, 0});
  EXPECT_THROW(be->makeDftPlan(p.geometry(), DftOptions{}), Error);
}
