// The CUDA exact non-uniform DFT (cuda/dft.cu)'s GPU-only checks: the small-problem split (parts summed by a
// second kernel) against the float64 sum, batches over coil groups, the CPU plan on the same inputs, the
// errors. Outputs are poisoned with NaN first. (Each trig mode against float64, odd sizes, 3D, adjointness,
// spreadInterpolate: tests/shared/exact_dft_plan.cpp, run here on "cuda".)
#include "support/buffers.hpp"
#include "support/device.hpp"
#include "support/error_norms.hpp"
#include "support/exact_dft.hpp"
#include "support/expect_error.hpp"
#include "support/nc_problem.hpp"
#include "support/random_data.hpp"

using namespace larmor;
using namespace larmor::test;

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
  return runPlan(be, *plan, img, data, batch);
}

// Expected float errors: accurate ~3e-7 (sincospif on a phase kept to ~3e-8 cycles), fast ~5e-7
// (__sincosf within one turn), recurrence ~1e-6 (32 rotations in float; GPU.md measured 1.5e-5 without
// the exact phase split).
double bound(TrigMode m) { return m == TrigMode::Recurrence ? 2e-5 : 1e-5; }

}  // namespace

// Small images (few voxel rows) split the samples, few samples split the image rows: partial results
// summed in a second pass.
TEST_F(DftGpu, SmallProblemsAreSplit) {
  for (const Problem& p : {randomProblem(2, 8, 4, 1, 30000, 21), randomProblem(2, 96, 80, 1, 40, 22),
                           randomProblem(3, 4, 4, 4, 20000, 23)}) {
    const auto img = randomComplex(p.voxels() * 2, 13), data = randomComplex(p.m * 2, 14);
    const ExactDft exact(p.geometry());
    for (TrigMode m : {TrigMode::Accurate, TrigMode::Recurrence}) {
      const PlanRun r = runDft(*gpu_, p, m, img, data, 2);
      EXPECT_LE(relL2Error(r.forward, exact.forward(img, 2)), bound(m)) << p.n[0] << "x" << p.n[1] << " " << modeName(m);
      EXPECT_LE(relL2Error(r.adjoint, exact.adjoint(data, 2)), bound(m)) << p.n[0] << "x" << p.n[1] << " " << modeName(m);
    }
  }
}

TEST_F(DftGpu, BatchEqualsSingleCoils) {
  const Problem p = randomProblem(2, 20, 18, 1, 600, 41);
  const index_t batch = 7;  // coil groups of 4, then 2, then 1
  const auto img = randomComplex(p.voxels() * batch, 17), data = randomComplex(p.m * batch, 18);
  for (TrigMode m : {TrigMode::Accurate, TrigMode::Recurrence}) {
    auto plan = gpu_->makeDftPlan(p.geometry(), dft(m));
    const PlanRun all = runPlan(*gpu_, *plan, img, data, batch);
    for (index_t b = 0; b < batch; ++b) {
      std::vector<cfloat> i1(img.begin() + p.voxels() * b, img.begin() + p.voxels() * (b + 1));
      std::vector<cfloat> d1(data.begin() + p.m * b, data.begin() + p.m * (b + 1));
      const PlanRun one = runPlan(*gpu_, *plan, i1, d1, 1);
      std::vector<cfloat> f(all.forward.begin() + p.m * b, all.forward.begin() + p.m * (b + 1));
      std::vector<cfloat> a(all.adjoint.begin() + p.voxels() * b, all.adjoint.begin() + p.voxels() * (b + 1));
      EXPECT_LE(relL2Error(f, one.forward), 2e-6) << modeName(m) << " coil " << b;
      EXPECT_LE(relL2Error(a, one.adjoint), 2e-6) << modeName(m) << " coil " << b;
    }
  }
}

// CPU and GPU compute the same sums: 1e-5 for the accurate and recurrence modes. The fast modes differ
// by design (the CPU's reduces 2 pi k.r in float, the GPU's reduces the phase in cycles exactly first),
// so they are bounded by each one's error against float64.
TEST_F(DftGpu, MatchesCpuPlan) {
  auto host = cpu_;
  for (const Problem& p : {randomProblem(2, 48, 40, 1, 3000, 61), randomProblem(3, 16, 12, 10, 2000, 62)}) {
    const auto img = randomComplex(p.voxels() * 2, 21), data = randomComplex(p.m * 2, 22);
    const ExactDft exact(p.geometry());
    const auto exF = exact.forward(img, 2), exA = exact.adjoint(data, 2);
    for (TrigMode m : {TrigMode::Accurate, TrigMode::Fast, TrigMode::Recurrence}) {
      const PlanRun g = runDft(*gpu_, p, m, img, data, 2);
      const PlanRun h = runDft(*host, p, m, img, data, 2);
      const double ef = relL2Error(g.forward, h.forward), ea = relL2Error(g.adjoint, h.adjoint);
      std::printf("DFT %dD %-10s GPU vs CPU: forward %.2e adjoint %.2e (CPU vs float64: %.2e / %.2e)\n", p.dims,
                  modeName(m), ef, ea, relL2Error(h.forward, exF), relL2Error(h.adjoint, exA));
      const double tol = m == TrigMode::Fast
                             ? 1e-6 + relL2Error(h.forward, exF) + relL2Error(g.forward, exF) +
                                   relL2Error(h.adjoint, exA) + relL2Error(g.adjoint, exA)
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
  auto hostBuffer = cpu_->allocate(100 * sizeof(cfloat));
  expectError([&] { plan->adjoint(*hostBuffer, *image, 1); }, "another backend");
  Problem bad = p;
  bad.k[4] = std::numeric_limits<float>::quiet_NaN();  // y of sample 1
  expectError([&] { gpu_->makeDftPlan(bad.geometry(), DftOptions{}); }, "not finite");
}
