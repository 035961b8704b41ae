// Cancel within 0.5 s inside the exact non-uniform DFT (one long call with no Progress of its own): the
// plan's forward and adjoint poll the caller's CancelScope per block, so a 256^2 multi-coil radial transform
// (seconds on this CPU) stops soon after the request; so do the exact Toeplitz kernel Q (its boxes are each
// one DFT), which then leaves no file in its cache, and --method dft and cg with the exact Q through recon::run.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "larmor/backend/registry.hpp"
#include "larmor/ops/toeplitz.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/iterative.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/util/cancel_scope.hpp"
#include "support/cancel_latency.hpp"
#include "support/nc_problem.hpp"
#include "support/random_data.hpp"
#include "support/test_dir.hpp"

using namespace larmor;
using namespace larmor::test;

namespace {

constexpr index_t kCoils = 8;

std::shared_ptr<Backend> cpu() { return BackendRegistry::instance().select("cpu").backend; }

/// 256^2, 402 full spokes of 512 samples (~206k samples per coil): each transform of 8 coils takes seconds.
Problem bigRadial() { return radialProblem(256, 512, 402, traj::RadialOrder::Linear180); }

phantom::SimulateSettings radialPhantom() {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 256;
  s.coils = static_cast<int>(kCoils);
  s.trajectory = TrajectoryKind::Radial;
  return s;
}

}  // namespace

TEST(CancelDft, AdjointStopsWithinHalfASecond) {
  auto be = cpu();
  const Problem p = bigRadial();
  auto plan = be->makeDftPlan(p.geometry(), DftOptions{});
  const auto d = randomComplex(p.m * kCoils, 3);
  auto in = be->allocate(d.size() * sizeof(cfloat)), out = be->allocate(p.voxels() * kCoils * sizeof(cfloat));
  be->upload(*in, d.data(), d.size() * sizeof(cfloat));
  expectPrompt(cancelAfter([&](const Progress& progress) {
                 const CancelScope cancel(progress);
                 plan->adjoint(*in, *out, kCoils);
               }),
               "exact DFT adjoint (256^2, 8 coils)");
}

TEST(CancelDft, ForwardStopsWithinHalfASecond) {
  auto be = cpu();
  const Problem p = bigRadial();
  DftOptions o;
  o.trig = TrigMode::Fast;
  auto plan = be->makeDftPlan(p.geometry(), o);
  const auto img = randomComplex(p.voxels() * kCoils, 4);
  auto in = be->allocate(img.size() * sizeof(cfloat)), out = be->allocate(p.m * kCoils * sizeof(cfloat));
  be->upload(*in, img.data(), img.size() * sizeof(cfloat));
  expectPrompt(cancelAfter([&](const Progress& progress) {
                 const CancelScope cancel(progress);
                 plan->forward(*in, *out, kCoils);
               }),
               "exact DFT forward (256^2, 8 coils, fast trig)");
}

TEST(CancelDft, WithoutScopeNothingChanges) {
  // A scope whose token is never cancelled leaves the result bit for bit as without one.
  auto be = cpu();
  const Problem p = randomProblem(2, 24, 20, 1, 700, 5);
  auto plan = be->makeDftPlan(p.geometry(), DftOptions{});
  const auto d = randomComplex(p.m * 2, 6);
  auto in = be->allocate(d.size() * sizeof(cfloat)), out = be->allocate(p.voxels() * 2 * sizeof(cfloat));
  be->upload(*in, d.data(), d.size() * sizeof(cfloat));
  std::vector<cfloat> plain(static_cast<std::size_t>(p.voxels() * 2)), scoped(plain.size());
  plan->adjoint(*in, *out, 2);
  be->download(plain.data(), *out, plain.size() * sizeof(cfloat));
  CancelToken token;
  const Progress progress({}, &token);
  {
    const CancelScope cancel(progress);
    plan->adjoint(*in, *out, 2);
  }
  be->download(scoped.data(), *out, scoped.size() * sizeof(cfloat));
  EXPECT_EQ(plain, scoped);
}

TEST(CancelDft, ExactQStopsAndLeavesNoCacheFile) {
  auto be = cpu();
  const Problem p = bigRadial();
  const std::string dir = larmor::testing::freshTestDir("cancel");
  ops::PsfOptions o;
  o.method = ops::PsfMethod::Dft;
  ops::PsfCacheStatus status{};
  expectPrompt(cancelAfter([&](const Progress& progress) {
                 ops::cachedPsf(*be, p.geometry(), nullptr, o, dir, &status, {}, progress);
               }),
               "exact Toeplitz kernel Q (256^2)");
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << dir << " holds a file of the cancelled Q";
}

TEST(CancelDft, ReconDftStopsWithinHalfASecond) {
  const Dataset d = phantom::simulate(radialPhantom());
  recon::ReconRequest r;
  r.dataset = &d;
  r.device = "cpu";
  r.settings.method = recon::Method::Dft;
  expectPrompt(cancelAfter([&](const Progress& progress) { recon::run(r, progress); }, 0.3),
               "--method dft (256^2 radial, 8 coils)");
}

TEST(CancelDft, CgWithExactQStopsWithinHalfASecond) {
  const Dataset d = phantom::simulate(radialPhantom());
  recon::ReconRequest r;
  r.dataset = &d;
  r.device = "cpu";
  r.settings.method = recon::Method::Cg;
  r.settings.iterative.fhd = recon::FhdMethod::Nufft;
  r.settings.iterative.toeplitz = recon::ToeplitzMethod::Dft;
  r.settings.iterative.cacheDirectory = larmor::testing::freshTestDir("cancel");
  expectPrompt(cancelAfter([&](const Progress& progress) { recon::run(r, progress); }, 0.3),
               "cg --toeplitz dft (256^2 radial, 8 coils)");
  EXPECT_TRUE(std::filesystem::is_empty(r.settings.iterative.cacheDirectory));
}
