// The CUDA NUFFT plan (cuda/nufft.cu, nufft_sector.cu, nufft_gather.cu, nufft_tron.cu)'s GPU-only checks: both
// adjoint spreaders (Gregerson's sectors and the gather, with TRON's radial lists or the footprints') on the same radial data against the float64 exact DFT
// (support/exact_dft.hpp), crowded sectors that are split into parts, radial adjointness, batches over the coil
// groups, TRON's and the sector spreader's determinism, spreadInterpolate for both spreaders, the CPU plan on the same inputs (and on the
// benchmark's workload), and the errors. Every output buffer is filled with NaN first. (The accuracy curve,
// odd sizes, 3D, band edges, random-trajectory adjointness, table vs direct kernel: tests/shared/
// nufft_vs_exact_dft.cpp, run here on "cuda".)
#include "larmor/traj/spiral.hpp"
#include "support/buffers.hpp"
#include "support/device.hpp"
#include "support/error_norms.hpp"
#include "support/exact_dft.hpp"
#include "support/expect_error.hpp"
#include "support/nc_problem.hpp"
#include "support/random_data.hpp"

using namespace larmor;
using namespace larmor::test;
using larmor::traj::RadialOrder;

namespace {

class NufftGpu : public GpuTest {};

NufftOptions options(int width, double sigma, Spreader s = Spreader::Auto, KernelEvaluation k = KernelEvaluation::Table) {
  NufftOptions o;
  o.width = width;
  o.oversampling = sigma;
  o.spreader = s;
  o.kernel = k;
  return o;
}

PlanRun runOn(Backend& be, const Problem& p, const NufftOptions& o, const std::vector<cfloat>& img,
              const std::vector<cfloat>& data, index_t batch) {
  auto plan = be.makeNufftPlan(p.geometry(), o);
  EXPECT_EQ(plan->samples(), p.m);
  EXPECT_EQ(plan->imageShape(), (Shape{p.n[0], p.n[1], p.n[2]}));
  return runPlan(be, *plan, img, data, batch);
}

std::vector<cfloat> spreadInterpolateOn(Backend& be, larmor::NufftPlan& plan, const std::vector<cfloat>& w) {
  auto in = toBuffer(be, w);
  auto out = poisoned(be, static_cast<index_t>(w.size()));
  plan.spreadInterpolate(*in, *out);
  return fromBuffer(be, *out, static_cast<index_t>(w.size()));
}

const char* name(Spreader s) { return s == Spreader::Tron ? "tron" : s == Spreader::Sector ? "sector" : "auto"; }

}  // namespace

// Both spreaders on golden-angle and linear radial data (readout 2N: the outermost samples sit on the
// grid's edge and their footprints wrap): the same accuracy, and the same sums to float rounding.
TEST_F(NufftGpu, RadialBothSpreadersAgainstExactDft) {
  for (RadialOrder order : {RadialOrder::GoldenAngle, RadialOrder::Linear180}) {
    const Problem p = radialProblem(32, 64, 50, order);
    const auto img = randomComplex(p.voxels(), 3), data = randomComplex(p.m, 4);
    const ExactDft exact(p.geometry());
    const auto exF = exact.forward(img, 1), exA = exact.adjoint(data, 1);
    for (auto [w, sigma, tol] : {std::tuple{4, 1.25, 1e-2}, std::tuple{6, 2.0, 1e-4}, std::tuple{2, 2.0, 0.15}}) {
      PlanRun r[2];
      int i = 0;
      for (Spreader s : {Spreader::Sector, Spreader::Tron}) {
        r[i] = runOn(*gpu_, p, options(w, sigma, s), img, data, 1);
        const double ef = relL2Error(r[i].forward, exF), ea = relL2Error(r[i].adjoint, exA);
        std::printf("radial %s W=%d sigma=%.2f %-6s forward %.2e adjoint %.2e\n",
                    order == RadialOrder::GoldenAngle ? "golden" : "linear", w, sigma, name(s), ef, ea);
        EXPECT_LE(ef, tol);
        EXPECT_LE(ea, tol);
        ++i;
      }
      EXPECT_LE(relL2Error(r[1].adjoint, r[0].adjoint), 2e-6) << "TRON vs sector, W " << w << " sigma " << sigma;
    }
  }
}

// Thousands of samples in the few sectors around k = 0: the sector spreader splits them into parts and
// sums the parts in a second pass.
TEST_F(NufftGpu, CrowdedSectorsAreSplit) {
  const Problem p = randomProblem(2, 32, 32, 1, 12000, 17, 0.12);
  const auto img = randomComplex(p.voxels(), 9), data = randomComplex(p.m, 10);
  const ExactDft exact(p.geometry());
  const PlanRun r = runOn(*gpu_, p, options(6, 2.0, Spreader::Sector), img, data, 1);
  EXPECT_LE(relL2Error(r.adjoint, exact.adjoint(data, 1)), 1e-4);
  EXPECT_LE(relL2Error(r.forward, exact.forward(img, 1)), 1e-4);
  // 3D: 16^3 sectors, all samples near the centre.
  const Problem q = randomProblem(3, 16, 16, 16, 9000, 18, 0.2);
  const auto img3 = randomComplex(q.voxels(), 11), data3 = randomComplex(q.m, 12);
  const ExactDft exact3(q.geometry());
  const PlanRun r3 = runOn(*gpu_, q, options(4, 2.0), img3, data3, 1);
  EXPECT_LE(relL2Error(r3.adjoint, exact3.adjoint(data3, 1)), 2e-3);
}

// <F x, y> = <x, F^H y> to float rounding: spread = interp^T with the same weights, IFFT = FFT^H,
// crop = pad^T, a real diagonal deapodization.
TEST_F(NufftGpu, Adjointness) {
  struct Case {
    Problem p;
    NufftOptions o;
  };
  std::vector<Case> cases;
  cases.push_back({radialProblem(32, 64, 40, RadialOrder::GoldenAngle), options(4, 2.0, Spreader::Tron)});
  cases.push_back({radialProblem(32, 64, 40, RadialOrder::GoldenAngle), options(5, 1.25, Spreader::Sector)});
  for (const Case& c : cases) {
    const auto x = randomComplex(c.p.voxels(), 9), y = randomComplex(c.p.m, 10);
    const PlanRun r = runOn(*gpu_, c.p, c.o, x, y, 1);
    const double mismatch = adjointMismatch(x, r.forward, y, r.adjoint);
    std::printf("adjointness %dD %s: %.2e\n", c.p.dims, name(c.o.spreader), mismatch);
    EXPECT_LE(mismatch, 1e-5) << c.p.dims << "D " << name(c.o.spreader);
  }
}

// A batch equals its coils run one at a time, across the 8-coil chunk and the spreaders' coil groups
// (sector: 4 coils per block; TRON: 8, 4, 2 or 1 accumulators per thread).
TEST_F(NufftGpu, BatchEqualsSingleCoils) {
  for (Spreader s : {Spreader::Sector, Spreader::Tron}) {
    const Problem p = radialProblem(24, 48, 30, RadialOrder::GoldenAngle);
    for (index_t batch : {index_t{3}, index_t{11}}) {
      const auto img = randomComplex(p.voxels() * batch, 11), data = randomComplex(p.m * batch, 12);
      const NufftOptions o = options(4, 2.0, s);
      auto plan = gpu_->makeNufftPlan(p.geometry(), o);
      const PlanRun all = runPlan(*gpu_, *plan, img, data, batch);
      for (index_t b = 0; b < batch; ++b) {
        std::vector<cfloat> i1(img.begin() + p.voxels() * b, img.begin() + p.voxels() * (b + 1));
        std::vector<cfloat> d1(data.begin() + p.m * b, data.begin() + p.m * (b + 1));
        const PlanRun one = runPlan(*gpu_, *plan, i1, d1, 1);
        std::vector<cfloat> f(all.forward.begin() + p.m * b, all.forward.begin() + p.m * (b + 1));
        std::vector<cfloat> a(all.adjoint.begin() + p.voxels() * b, all.adjoint.begin() + p.voxels() * (b + 1));
        EXPECT_LE(relL2Error(f, one.forward), 1e-6) << name(s) << " batch " << batch << " coil " << b;
        EXPECT_LE(relL2Error(a, one.adjoint), 1e-6) << name(s) << " batch " << batch << " coil " << b;
      }
    }
  }
}

// TRON gathers in a fixed order: the same input gives the same bits.
TEST_F(NufftGpu, TronIsDeterministic) {
  const Problem p = radialProblem(64, 128, 101, RadialOrder::GoldenAngle);
  const auto img = randomComplex(p.voxels(), 15), data = randomComplex(p.m, 16);
  auto plan = gpu_->makeNufftPlan(p.geometry(), options(4, 2.0, Spreader::Tron));
  const PlanRun a = runPlan(*gpu_, *plan, img, data, 1);
  const PlanRun b = runPlan(*gpu_, *plan, img, data, 1);
  EXPECT_EQ(a.adjoint, b.adjoint);
  EXPECT_EQ(a.forward, b.forward);
}

// Any other 2D trajectory: Auto takes the gather with lists from the footprints (nufft_gather.cu). Random samples
// over the whole band (footprints wrapping along x, y and both at its edge), a variable-density spiral,
// W 2 to 16, grids of 90 and 100 points (partial tiles), 1 to 9 coils: the sector spreader's sums within float
// rounding, the forward (its interpolation now in home-tile order) the same, and the same bits every run.
TEST_F(NufftGpu, GatherOnAny2dTrajectory) {
  struct Case {
    Problem p;
    int width;
    double sigma;
    index_t batch;
    const char* what;
  };
  traj::SpiralDesign sd;
  sd.matrix = 64;
  sd.interleaves = 8;
  const traj::Trajectory spiral = traj::spiral2D(sd);
  Problem sp;
  sp.dims = 2;
  sp.n[0] = sp.n[1] = 64;
  sp.k = spiral.k;
  sp.m = spiral.samples();
  std::vector<Case> cases;
  cases.push_back({randomProblem(2, 48, 40, 1, 3000, 61), 4, 2.0, 3, "random W4"});
  cases.push_back({randomProblem(2, 45, 50, 1, 2500, 62, 1.0), 16, 2.0, 8, "random W16 G90 x G100"});
  cases.push_back({randomProblem(2, 32, 32, 1, 2000, 63, 1.0), 2, 1.25, 1, "random W2 s1.25"});
  cases.push_back({randomProblem(2, 40, 36, 1, 2000, 64, 1.0), 7, 1.5, 9, "random W7 s1.5, 9 coils"});
  cases.push_back({sp, 6, 2.0, 4, "spiral W6"});
  for (const Case& c : cases) {
    const auto img = randomComplex(c.p.voxels() * c.batch, 71), data = randomComplex(c.p.m * c.batch, 72);
    auto gather = gpu_->makeNufftPlan(c.p.geometry(), options(c.width, c.sigma, Spreader::Auto));
    const PlanRun a = runPlan(*gpu_, *gather, img, data, c.batch);
    const PlanRun b = runPlan(*gpu_, *gather, img, data, c.batch);
    const PlanRun sector = runOn(*gpu_, c.p, options(c.width, c.sigma, Spreader::Sector), img, data, c.batch);
    const double ea = relL2Error(a.adjoint, sector.adjoint), ef = relL2Error(a.forward, sector.forward);
    std::printf("gather vs sector %-26s adjoint %.2e forward %.2e\n", c.what, ea, ef);
    EXPECT_LE(ea, 2e-6) << c.what;
    EXPECT_LE(ef, 1e-6) << c.what;
    EXPECT_EQ(a.adjoint, b.adjoint) << c.what;
  }
}

// The sector spreader's tiles add in fixed point (nufft_sector.cu): the same input gives the same bits, however
// the threads' atomics interleave. Crowded centres (thousands of samples per sector, split into parts), 2D with
// a coil batch, 3D, and a new plan each time (other allocations). With float atomics the adjoint's bits
// changed from run to run here.
TEST_F(NufftGpu, SectorIsDeterministic) {
  struct Case {
    Problem p;
    index_t coils;
  };
  std::vector<Case> cases;
  cases.push_back({randomProblem(2, 32, 32, 1, 12000, 21, 0.12), 5});
  cases.push_back({randomProblem(3, 16, 16, 16, 9000, 22, 0.2), 2});
  cases.push_back({radialProblem(64, 128, 101, RadialOrder::GoldenAngle), 3});
  for (const Case& c : cases) {
    const auto img = randomComplex(c.p.voxels() * c.coils, 23), data = randomComplex(c.p.m * c.coils, 24);
    auto plan = gpu_->makeNufftPlan(c.p.geometry(), options(6, 2.0, Spreader::Sector));
    const PlanRun first = runPlan(*gpu_, *plan, img, data, c.coils);
    for (int rep = 0; rep < 4; ++rep) {
      auto again = rep % 2 ? gpu_->makeNufftPlan(c.p.geometry(), options(6, 2.0, Spreader::Sector)) : nullptr;
      const PlanRun r = runPlan(*gpu_, again ? *again : *plan, img, data, c.coils);
      EXPECT_EQ(r.adjoint, first.adjoint) << c.p.dims << "D, repetition " << rep;
    }
  }
}

// interp(spread(.)) is real symmetric with a positive diagonal, for both spreaders.
TEST_F(NufftGpu, SpreadInterpolateIsSymmetric) {
  const Problem p = radialProblem(32, 64, 40, RadialOrder::GoldenAngle);
  for (Spreader s : {Spreader::Sector, Spreader::Tron}) {
    auto plan = gpu_->makeNufftPlan(p.geometry(), options(4, 2.0, s));
    const auto a = randomComplex(p.m, 17), b = randomComplex(p.m, 18);
    const auto sa = spreadInterpolateOn(*gpu_, *plan, a), sb = spreadInterpolateOn(*gpu_, *plan, b);
    const cdouble l = dot(sa, b), r = dot(a, sb);
    EXPECT_LE(std::abs(l - r) / std::abs(l), 1e-5) << name(s);
    const auto s1 = spreadInterpolateOn(*gpu_, *plan, std::vector<cfloat>(static_cast<std::size_t>(p.m), cfloat(1)));
    for (const cfloat& v : s1) {
      ASSERT_GT(v.real(), 0.f) << name(s);
      ASSERT_NEAR(v.imag(), 0.f, 1e-5f * v.real()) << name(s);
    }
  }
}

// The GPU and CPU plans compute the same sums (same grid size rule, footprint, kernel table and
// deapodization): 1e-5 for the same W and sigma, both spreaders, both kernel evaluations.
TEST_F(NufftGpu, MatchesCpuPlan) {
  auto host = cpu_;
  struct Case {
    Problem p;
    NufftOptions o;
    index_t batch;
    const char* what;
  };
  std::vector<Case> cases;
  cases.push_back({randomProblem(2, 32, 32, 1, 2000, 51), options(4, 2.0), 3, "2D random W4 s2"});
  cases.push_back({randomProblem(2, 30, 20, 1, 1500, 52), options(2, 1.25), 1, "2D random W2 s1.25"});
  cases.push_back({randomProblem(2, 32, 32, 1, 2000, 53), options(6, 2.0, Spreader::Auto, KernelEvaluation::Direct), 2,
                   "2D random W6 direct"});
  cases.push_back({radialProblem(64, 128, 80, RadialOrder::GoldenAngle), options(4, 2.0, Spreader::Tron), 9,
                   "2D golden TRON"});
  cases.push_back({radialProblem(64, 128, 80, RadialOrder::GoldenAngle), options(4, 2.0, Spreader::Sector), 9,
                   "2D golden sector"});
  cases.push_back({radialProblem(48, 96, 60, RadialOrder::Linear360), options(6, 1.5, Spreader::Tron), 2,
                   "2D linear360 TRON"});
  // Grids of 90 and 100 points: the last tiles of 8 x 4 stick out of the grid; W = 12 and 16 stage 24 and 32 weights
  // per sample (with 8 coils, the staging and the partial sums above the 48 KB of shared memory a block gets
  // unasked); 3 coils run in a group of 4.
  cases.push_back({radialProblem(45, 90, 70, RadialOrder::GoldenAngle), options(16, 2.0, Spreader::Tron), 8,
                   "2D golden TRON W16 G90"});
  cases.push_back({radialProblem(45, 90, 70, RadialOrder::GoldenAngle), options(12, 2.0, Spreader::Tron), 8,
                   "2D golden TRON W12 G90"});
  cases.push_back({radialProblem(50, 100, 64, RadialOrder::Linear180), options(3, 2.0, Spreader::Tron), 3,
                   "2D linear180 TRON W3 G100"});
  cases.push_back({randomProblem(3, 16, 12, 10, 3000, 54), options(4, 1.5), 2, "3D random W4 s1.5"});
  cases.push_back({randomProblem(3, 16, 16, 16, 3000, 55), options(7, 2.0), 1, "3D random W7 s2"});
  for (const Case& c : cases) {
    const auto img = randomComplex(c.p.voxels() * c.batch, 19), data = randomComplex(c.p.m * c.batch, 20);
    const PlanRun g = runOn(*gpu_, c.p, c.o, img, data, c.batch);
    const PlanRun h = runOn(*host, c.p, c.o, img, data, c.batch);
    const double ef = relL2Error(g.forward, h.forward), ea = relL2Error(g.adjoint, h.adjoint);
    std::printf("GPU vs CPU %-22s forward %.2e adjoint %.2e\n", c.what, ef, ea);
    EXPECT_LE(ef, 1e-5) << c.what;
    EXPECT_LE(ea, 1e-5) << c.what;
    auto gp = gpu_->makeNufftPlan(c.p.geometry(), c.o);
    auto hp = host->makeNufftPlan(c.p.geometry(), c.o);
    const auto w = randomComplex(c.p.m, 21);
    EXPECT_LE(relL2Error(spreadInterpolateOn(*gpu_, *gp, w), spreadInterpolateOn(*host, *hp, w)), 1e-5) << c.what;
  }
}

// The benchmark's workload (golden-angle radial 512 readout x 512 spokes -> 256^2, 8 coils): the two
// spreaders agree with each other and with the CPU plan.
TEST_F(NufftGpu, BenchmarkWorkloadMatchesCpu) {
  const Problem p = radialProblem(256, 512, 512, RadialOrder::GoldenAngle);
  const index_t coils = 8;
  const auto img = randomComplex(p.voxels() * coils, 23), data = randomComplex(p.m * coils, 24);
  const PlanRun tron = runOn(*gpu_, p, options(4, 2.0, Spreader::Tron), img, data, coils);
  const PlanRun sector = runOn(*gpu_, p, options(4, 2.0, Spreader::Sector), img, data, coils);
  const PlanRun host = runOn(*cpu_, p, options(4, 2.0), img, data, coils);
  EXPECT_LE(relL2Error(tron.adjoint, sector.adjoint), 2e-6);
  EXPECT_LE(relL2Error(tron.adjoint, host.adjoint), 1e-5);
  EXPECT_LE(relL2Error(sector.adjoint, host.adjoint), 1e-5);
  EXPECT_LE(relL2Error(tron.forward, host.forward), 1e-5);
}

TEST_F(NufftGpu, Errors) {
  const Problem random = randomProblem(2, 16, 16, 1, 100, 71);
  expectError([&] { gpu_->makeNufftPlan(random.geometry(), options(4, 2.0, Spreader::Tron)); }, "TRON");
  const Problem three = randomProblem(3, 8, 8, 8, 100, 72);
  expectError([&] { gpu_->makeNufftPlan(three.geometry(), options(4, 2.0, Spreader::Tron)); }, "TRON");
  // Samples off the spokes their radial description gives.
  Problem bent = radialProblem(16, 32, 10, RadialOrder::GoldenAngle);
  bent.k[3 * 40] += 3.f;
  expectError([&] { gpu_->makeNufftPlan(bent.geometry(), options(4, 2.0, Spreader::Tron)); }, "off the spokes");
  // ...but Auto still grids it, with the sector spreader.
  const auto img = randomComplex(bent.voxels(), 1), data = randomComplex(bent.m, 2);
  const PlanRun r = runOn(*gpu_, bent, options(6, 2.0), img, data, 1);
  EXPECT_LE(relL2Error(r.adjoint, ExactDft(bent.geometry()).adjoint(data, 1)), 1e-4);

  Problem scaled = randomProblem(2, 16, 16, 1, 10, 73);
  scaled.k[3 * 4] = 12.f;
  expectError([&] { gpu_->makeNufftPlan(scaled.geometry(), NufftOptions{}); }, "wrong trajectory scale?");
  expectError([&] { gpu_->makeNufftPlan(random.geometry(), options(1, 2.0)); }, "kernel width");
  expectError([&] { gpu_->makeNufftPlan(random.geometry(), options(4, 0.5)); }, "oversampling");
  auto plan = gpu_->makeNufftPlan(random.geometry(), NufftOptions{});
  auto small = gpu_->allocate(8);
  auto image = gpu_->allocate(16 * 16 * sizeof(cfloat));
  expectError([&] { plan->adjoint(*small, *image, 1); }, "buffer");
  auto hostBuffer = cpu_->allocate(100 * sizeof(cfloat));
  expectError([&] { plan->adjoint(*hostBuffer, *image, 1); }, "another backend");
}
