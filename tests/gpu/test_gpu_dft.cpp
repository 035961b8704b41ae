// The CUDA exact non-uniform DFT (cuda/dft.cu, Stone et al.'s F d and F^H d) against a float64 DFT written
// in the test and against the CPU plan: each trig mode's error printed and bounded, 2D and 3D, odd sizes,
// phases of many cycles, batches, the small-problem split (parts summed by a second kernel), adjointness,
// spreadInterpolate = forward(adjoint(.)). Outputs are poisoned with NaN first.
#include "noncartesian_test_util.hpp"

using namespace nctest;
using larmor::DftOptions;
using larmor::TrigMode;

namespace {

class DftGpu : public GpuTest {};

const char* modeName(TrigMode m) {
  return m == TrigMode::Accurate ? "accurate" : m == TrigMode::Fast ? "fast" : "recurrence";
}

DftOptions dft(TrigMode m) {
  DftOptions o;
  o.trig = m;
  return o;
}

PlanRun runDft(Backend& be, const Problem& p, TrigMode m, const std::vector<cfloat>& img,
               const std::vector<cfloat>& data, index_t batch) {
  auto plan = be.makeDftPlan(p.geometry(), dft(m));
  EXPECT_EQ(plan->samples(), p.m);
  EXPECT_EQ(plan->imageShape(), (Shape{p.n[0], p.n[1], p.n[2]}));
  return runPlan(be, *plan, p, img, data, batch);
}

// Expected float errors: accurate ~3e-7 (sincospif on a phase kept to ~3e-8 cycles), fast ~5e-7
// (__sincosf within one turn), recurrence ~1e-6 (32 rotations in float; GPU.md measured 1.5e-5 without
// the exact phase split).
double bound(TrigMode m) { return m == TrigMode::Recurrence ? 2e-5 : 1e-5; }

}  // namespace

TEST_F(DftGpu, EachTrigModeAgainstFloat64) {
  struct Case {
    Problem p;
    index_t batch;
    const char* what;
  };
  std::vector<Case> cases;
  cases.push_back({randomProblem(2, 32, 32, 1, 2000, 1), 1, "2D 32^2"});
  cases.push_back({randomProblem(2, 64, 48, 1, 1500, 2), 3, "2D 64x48 3 coils"});
  cases.push_back({randomProblem(3, 16, 16, 16, 2000, 3), 1, "3D 16^3"});
  cases.push_back({randomProblem(3, 15, 9, 5, 800, 4), 5, "3D 15x9x5 5 coils"});
  // Phases of many cycles: k far outside the band (the exact DFT does not require |k| <= N/2).
  cases.push_back({randomProblem(3, 24, 24, 24, 1000, 5, 8.0), 1, "3D 24^3, |k| to 4N"});
  for (const Case& c : cases) {
    const auto img = randomComplex(c.p.voxels() * c.batch, 11), data = randomComplex(c.p.m * c.batch, 12);
    const ExactDft exact(c.p);
    const auto exF = exact.forward(img, c.batch), exA = exact.adjoint(data, c.batch);
    for (TrigMode m : {TrigMode::Accurate, TrigMode::Fast, TrigMode::Recurrence}) {
      const PlanRun r = runDft(*gpu_, c.p, m, img, data, c.batch);
      const double ef = relError(r.forward, exF), ea = relError(r.adjoint, exA);
      std::printf("GPU DFT %-20s %-10s error vs float64: forward %.2e adjoint %.2e\n", c.what, modeName(m), ef, ea);
      EXPECT_LE(ef, bound(m)) << c.what << " " << modeName(m);
      EXPECT_LE(ea, bound(m)) << c.what << " " << modeName(m);
    }
  }
}

// Small images (few voxel rows) split the samples, few samples split the image rows: partial results
// summed in a second pass.
TEST_F(DftGpu, SmallProblemsAreSplit) {
  for (const Problem& p : {randomProblem(2, 8, 4, 1, 30000, 21), randomProblem(2, 96, 80, 1, 40, 22),
                           randomProblem(3, 4, 4, 4, 20000, 23)}) {
    const auto img = randomComplex(p.voxels() * 2, 13), data = randomComplex(p.m * 2, 14);
    const ExactDft exact(p);
    for (TrigMode m : {TrigMode::Accurate, TrigMode::Recurrence}) {
      const PlanRun r = runDft(*gpu_, p, m, img, data, 2);
      EXPECT_LE(relError(r.forward, exact.forward(img, 2)), bound(m)) << p.n[0] << "x" << p.n[1] << " " << modeName(m);
      EXPECT_LE(relError(r.adjoint, exact.adjoint(data, 2)), bound(m)) << p.n[0] << "x" << p.n[1] << " " << modeName(m);
    }
  }
}

TEST_F(DftGpu, Adjointness) {
  for (int dims : {2, 3}) {
    const Problem p = dims == 2 ? randomProblem(2, 40, 24, 1, 1000, 31) : randomProblem(3, 12, 10, 9, 800, 32);
    const auto x = randomComplex(p.voxels(), 15), y = randomComplex(p.m, 16);
    for (TrigMode m : {TrigMode::Accurate, TrigMode::Fast, TrigMode::Recurrence}) {
      const PlanRun r = runDft(*gpu_, p, m, x, y, 1);
      EXPECT_LE(adjointMismatch(x, r.forward, y, r.adjoint), 2e-5) << dims << "D " << modeName(m);
    }
  }
}

TEST_F(DftGpu, BatchEqualsSingleCoils) {
  const Problem p = randomProblem(2, 20, 18, 1, 600, 41);
  const index_t batch = 7;  // coil groups of 4, then 2, then 1
  const auto img = randomComplex(p.voxels() * batch, 17), data = randomComplex(p.m * batch, 18);
  for (TrigMode m : {TrigMode::Accurate, TrigMode::Recurrence}) {
    auto plan = gpu_->makeDftPlan(p.geometry(), dft(m));
    const PlanRun all = runPlan(*gpu_, *plan, p, img, data, batch);
    for (index_t b = 0; b < batch; ++b) {
      std::vector<cfloat> i1(img.begin() + p.voxels() * b, img.begin() + p.voxels() * (b + 1));
      std::vector<cfloat> d1(data.begin() + p.m * b, data.begin() + p.m * (b + 1));
      const PlanRun one = runPlan(*gpu_, *plan, p, i1, d1, 1);
      std::vector<cfloat> f(all.forward.begin() + p.m * b, all.forward.begin() + p.m * (b + 1));
      std::vector<cfloat> a(all.adjoint.begin() + p.voxels() * b, all.adjoint.begin() + p.voxels() * (b + 1));
      EXPECT_LE(relDiff(f, one.forward), 2e-6) << modeName(m) << " coil " << b;
      EXPECT_LE(relDiff(a, one.adjoint), 2e-6) << modeName(m) << " coil " << b;
    }
  }
}

TEST_F(DftGpu, SpreadInterpolateIsForwardOfAdjoint) {
  const Problem p = randomProblem(2, 24, 20, 1, 500, 51);
  const auto w = randomComplex(p.m, 19);
  const ExactDft exact(p);
  const auto img = exact.adjoint(w, 1);
  std::vector<cfloat> imgF(img.begin(), img.end());
  const auto ref = exact.forward(imgF, 1);
  auto plan = gpu_->makeDftPlan(p.geometry(), dft(TrigMode::Accurate));
  auto in = toBackend(*gpu_, w);
  auto out = poisoned(*gpu_, p.m);
  plan->spreadInterpolate(*in, *out);
  EXPECT_LE(relError(fromBackend(*gpu_, *out, p.m), ref), 1e-5);
}

// CPU and GPU compute the same sums: 1e-5 for the accurate and recurrence modes. The fast modes differ
// by design (the CPU's reduces 2 pi k.r in float, the GPU's reduces the phase in cycles exactly first),
// so they are bounded by each one's error against float64.
TEST_F(DftGpu, MatchesCpuPlan) {
  auto host = cpu();
  for (const Problem& p : {randomProblem(2, 48, 40, 1, 3000, 61), randomProblem(3, 16, 12, 10, 2000, 62)}) {
    const auto img = randomComplex(p.voxels() * 2, 21), data = randomComplex(p.m * 2, 22);
    const ExactDft exact(p);
    const auto exF = exact.forward(img, 2), exA = exact.adjoint(data, 2);
    for (TrigMode m : {TrigMode::Accurate, TrigMode::Fast, TrigMode::Recurrence}) {
      const PlanRun g = runDft(*gpu_, p, m, img, data, 2);
      const PlanRun h = runDft(*host, p, m, img, data, 2);
      const double ef = relDiff(g.forward, h.forward), ea = relDiff(g.adjoint, h.adjoint);
      std::printf("DFT %dD %-10s GPU vs CPU: forward %.2e adjoint %.2e (CPU vs float64: %.2e / %.2e)\n", p.dims,
                  modeName(m), ef, ea, relError(h.forward, exF), relError(h.adjoint, exA));
      const double tol = m == TrigMode::Fast
                             ? 1e-6 + relError(h.forward, exF) + relError(g.forward, exF) +
                                   relError(h.adjoint, exA) + relError(g.adjoint, exA)
                             : 1e-5;
      EXPECT_LE(ef, tol) << p.dims << "D " << modeName(m);
      EXPECT_LE(ea, tol) << p.dims << "D " << modeName(m);
    }
  }
}

TEST_F(DftGpu, Errors) {
  const Problem p = randomProblem(2, 16, 16, 1, 100, 71);
  auto plan = gpu_->makeDftPlan(p.geometry(), DftOptions{});
  auto small = gpu_->allocate(8);
  auto image = gpu_->allocate(16 * 16 * sizeof(cfloat));
  expectError([&] { plan->adjoint(*small, *image, 1); }, "buffer");
  expectError([&] { plan->forward(*image, *small, 1); }, "buffer");
  auto hostBuffer = cpu()->allocate(100 * sizeof(cfloat));
  expectError([&] { plan->adjoint(*hostBuffer, *image, 1); }, "another backend");
  Problem bad = p;
  bad.k[4] = std::numeric_limits<float>::quiet_NaN();  // y of sample 1
  expectError([&] { gpu_->makeDftPlan(bad.geometry(), DftOptions{}); }, "not finite");
}
