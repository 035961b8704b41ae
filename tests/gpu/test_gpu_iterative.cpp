// The iterative reconstruction on the GPU against the CPU: finite differences, the Toeplitz
// operator, the priors, the CG-SENSE pipeline end to end, GPU.Multi's slab split; then the paper's
// phantom experiment (Stone et al. 2008, sec. 5) at LARMOR_REPRO_N^3 (default 64; 128 gives the paper's
// 284,592-sample size), which prints the table for docs/iterative.md. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <limits>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>

#include "larmor/recon/settings_table.hpp"
#include "larmor/backend/registry.hpp"
#include "larmor/ops/regularizer.hpp"
#include "larmor/ops/toeplitz.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/quality/metrics.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/iterative.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/settings.hpp"
#include "support/device.hpp"
#include "support/error_norms.hpp"
#include "support/iterative_problem.hpp"
#include "support/random_data.hpp"

using namespace larmor;

namespace {

class GpuIterative : public larmor::test::GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    gpu = gpu_;
    cpu = cpu_;
  }
  std::shared_ptr<Backend> gpu, cpu;
};

CArray runOp(Backend& be, const CArray& in, index_t outSize, const std::function<void(Backend&, Buffer&, Buffer&)>& op) {
  auto x = CDeviceArray::upload(be, in);
  CDeviceArray y(be, Shape{outSize});
  op(be, x.buffer(), y.buffer());
  return y.download();
}

NufftGeometry randomGeometry(int dims, index_t n, index_t m, unsigned seed) {
  NufftGeometry g;
  g.dims = dims;
  g.image[0] = g.image[1] = n;
  g.image[2] = dims == 3 ? n : 1;
  g.trajectory = RArray(Shape{3, m});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  for (index_t j = 0; j < m; ++j)
    for (int d = 0; d < 3; ++d) g.trajectory[3 * j + d] = d < dims ? u(rng) * static_cast<float>(n) : 0.f;
  return g;
}

}  // namespace

TEST_F(GpuIterative, FiniteDifferencesMatchCpuExactly) {
  const index_t dims[3] = {37, 20, 9}, batch = 2, n = 37 * 20 * 9 * 2;
  const CArray x = larmor::test::randomArray(Shape{n}, 1);
  for (int axis = 0; axis < 3; ++axis)
    for (bool adjoint : {false, true}) {
      auto op = [&](Backend& be, Buffer& in, Buffer& out) { be.priorOps().finiteDifference(out, in, dims, batch, axis, adjoint); };
      const CArray c = runOp(*cpu, x, n, op), g = runOp(*gpu, x, n, op);
      EXPECT_LT(larmor::test::relL2Error(g, c), 1e-7) << "axis " << axis << (adjoint ? " adjoint" : "");
    }
}

TEST_F(GpuIterative, ToeplitzAndPriorsMatchCpu) {
  for (int dims : {2, 3}) {
    const index_t n = dims == 2 ? 64 : 24;
    const NufftGeometry g = randomGeometry(dims, n, dims == 2 ? 3000 : 5000, 7);
    const CArray q = ops::computePsf(*cpu, g, nullptr, {});
    const index_t voxels = n * n * (dims == 3 ? n : 1);
    ops::ToeplitzOperator tc(*cpu, g, q, 1.0 / voxels), tg(*gpu, g, q, 1.0 / voxels);
    const CArray x = larmor::test::randomArray(Shape{voxels}, 3);
    const CArray c = runOp(*cpu, x, voxels, [&](Backend&, Buffer& in, Buffer& out) { tc.apply(in, out); });
    const CArray gg = runOp(*gpu, x, voxels, [&](Backend&, Buffer& in, Buffer& out) { tg.apply(in, out); });
    EXPECT_LT(larmor::test::relL2Error(gg, c), 2e-6) << dims << "D Toeplitz";
    // Q itself by the GPU's exact DFT.
    const CArray qg = ops::computePsf(*gpu, g, nullptr, {});
    EXPECT_LT(larmor::test::relL2Error(qg, q), 1e-5) << dims << "D Q";
    const index_t idims[3] = {n, n, dims == 3 ? n : 1};
    CArray ref(Shape{idims[0], idims[1], idims[2]});
    const CArray r = larmor::test::randomArray(Shape{voxels}, 5);
    for (index_t i = 0; i < voxels; ++i) ref[i] = cfloat(std::abs(r[i]) > 1.f ? 1.f : 0.f, 0.f);
    auto rc = ops::makeAnatomical(*cpu, idims, ref), rg = ops::makeAnatomical(*gpu, idims, ref);
    const CArray wc = runOp(*cpu, x, voxels, [&](Backend&, Buffer& in, Buffer& out) { rc->applyNormal(in, out); });
    const CArray wg = runOp(*gpu, x, voxels, [&](Backend&, Buffer& in, Buffer& out) { rg->applyNormal(in, out); });
    // One pass, every product and sum rounded as on the CPU (PriorOps::differenceNormal): the same bits.
    EXPECT_EQ(larmor::test::relL2Error(wg, wc), 0.0) << dims << "D anatomical W^H W";
  }
}

// Converged PCG on the GPU (production exact-DFT plan, Toeplitz operator, priors, coil maps) against the
// float64 direct solve of the same normal equations (test_iterative_util.hpp), for every prior, with and
// without coils, 2D and 3D; the CPU backend's production path alongside for comparison.
TEST_F(GpuIterative, ConvergedSolveMatchesTheDirectFloat64Solve) {
  struct Case {
    int dims;
    index_t n0, n1, n2, m, coils;
    const char* reg;
    double lambda;
  };
  for (const Case& c : {Case{2, 12, 12, 1, 300, 1, "tikhonov", 0.05}, Case{2, 12, 10, 1, 200, 3, "fd", 0.1},
                        Case{2, 12, 12, 1, 200, 3, "anatomical", 0.1}, Case{3, 6, 6, 5, 400, 2, "anatomical", 0.05}}) {
    const Dataset d = larmor::test::makeDataset(c.dims, c.n0, c.n1, c.n2, c.m, c.coils, 1, 300 + c.m);
    const auto s = larmor::test::cgSettings(c.reg, c.lambda);
    const auto direct = larmor::test::directSolve(d, s, 0);
    double err[2];
    int k = 0;
    for (Backend* be : {gpu.get(), cpu.get()}) {
      Timings t;
      recon::IterativeProblem p(*be, d, s, 0, t);
      const auto r = p.solve(c.lambda, 400, 1e-6, false);
      EXPECT_TRUE(r.converged) << c.reg << " on " << be->info().id << ": " << r.stopReason;
      err[k++] = larmor::test::relL2Error(p.solution(), direct);
    }
    std::printf("converged cg %dD %s, %ld coils: vs float64 direct solve GPU %.2e, CPU %.2e\n", c.dims, c.reg,
                static_cast<long>(c.coils), err[0], err[1]);
    // docs/iterative.md: measured 1.8-4.3e-6 on the H100 (CPU backend 1.5-2.7e-6); the bound
    // (formerly 2e-4, 46x the claim) is now 1e-5 for both.
    EXPECT_LT(err[0], 1e-5) << c.dims << "D " << c.reg;
    EXPECT_LT(err[1], 1e-5) << c.dims << "D " << c.reg << " (CPU backend)";
  }
}

TEST_F(GpuIterative, CgSensePipelineMatchesCpu) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 96;
  s.coils = 4;
  s.trajectory = TrajectoryKind::GoldenAngle;
  s.spokes = 60;
  s.noiseSigma = 0.01f;
  const Dataset d = phantom::simulate(s);
  for (const char* reg : {"tikhonov", "fd", "anatomical"}) {
    recon::ReconRequest req;
    req.dataset = &d;
    req.settings.method = recon::Method::Cg;
    recon::settings::set(req.settings, recon::settings::find("iterative.regularizer"), reg);
    req.settings.iterative.lambda = 0.05;
    req.settings.iterative.iterations = 20;
    req.settings.iterative.cacheDirectory = "none";
    // One GPU against the CPU. The slab split over several GPUs (GPU.Multi) computes each slab's phases
    // from a rescaled trajectory (~1e-6 cycles, not ~3e-8), a perturbation that 20 iterations amplify beyond
    // this yardstick; it is checked below by image quality, by SlabSplitOverEveryGpuMatchesOneDevice (1e-5)
    // and, converged, against the float64 solve (ConvergedSolveMatchesTheDirectFloat64Solve).
    req.settings.iterative.multiGpu = false;
    req.device = "cpu";
    const auto c = recon::run(req);
    req.device = "cuda";
    const auto g = recon::run(req);
    if (BackendRegistry::instance().devices().size() > 2) {  // the CPU and two or more GPUs
      req.settings.iterative.multiGpu = true;
      const auto multi = recon::run(req);
      req.settings.iterative.multiGpu = false;
      std::printf("cg-sense %s on every GPU: percent error %.3f, one GPU %.3f\n", reg,
                  multi.metrics["percent_error"].get<double>(), g.metrics["percent_error"].get<double>());
      EXPECT_NEAR(multi.metrics["percent_error"].get<double>(), g.metrics["percent_error"].get<double>(), 0.05) << reg;
    }
    for (const auto& st : g.timings.stages())
      if (st.stage != "metrics") EXPECT_EQ(st.device.rfind("cuda", 0), 0u) << st.stage << " ran on " << st.device;
    // 20 iterations of a float CG amplify rounding differences: the yardstick is how far the CPU itself
    // moves when its input changes by float rounding (every k-space sample times 1 + 2^-23 u, u in [-1, 1]).
    Dataset dp = d;
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (index_t i = 0; i < dp.kspace.size(); ++i) dp.kspace[i] *= 1.f + 1.1920929e-7f * u(rng);
    req.dataset = &dp;
    req.device = "cpu";
    const auto cp = recon::run(req);
    req.dataset = &d;
    const double dg = larmor::test::relL2Error(g.image, c.image), dc = larmor::test::relL2Error(cp.image, c.image);
    std::printf("cg-sense %s, 20 iterations: GPU vs CPU %.2e; CPU vs CPU with input rounding %.2e\n", reg, dg, dc);
    EXPECT_LT(dg, std::max(10 * dc, 1e-4)) << reg;
    EXPECT_NEAR(g.metrics["percent_error"].get<double>(), c.metrics["percent_error"].get<double>(), 0.05) << reg;
  }
}

// Cartesian SENSE (the samples gathered on the device after the readout crop there) and compressed sensing
// (FISTA, TV and wavelet) as whole reconstructions: GPU = CPU, every stage but the metrics on the GPU. The
// yardstick, as above: how far the CPU moves when its input changes by float rounding.
TEST_F(GpuIterative, CartesianSenseAndCompressedSensingMatchCpu) {
  phantom::SimulateSettings cart;
  cart.matrix[0] = cart.matrix[1] = 96;
  cart.coils = 4;
  cart.accel = 2;
  cart.noiseSigma = 0.01f;
  phantom::SimulateSettings rad = cart;
  rad.accel = 1;
  rad.trajectory = TrajectoryKind::GoldenAngle;
  rad.spokes = 48;
  const Dataset dc = phantom::simulate(cart), dr = phantom::simulate(rad);
  struct Case {
    const char* name;
    const Dataset* data;
    recon::Method method;
    const char* reg;
  };
  for (const Case& k : {Case{"cartesian sense", &dc, recon::Method::Cg, "tikhonov"},
                        Case{"cs tv", &dr, recon::Method::Cs, "tv"}, Case{"cs wavelet", &dr, recon::Method::Cs, "wavelet"}}) {
    recon::ReconRequest req;
    req.dataset = k.data;
    req.settings.method = k.method;
    recon::settings::applyMethodDefaults(req.settings);
    recon::settings::set(req.settings, recon::settings::find("iterative.regularizer"), k.reg);
    req.settings.iterative.iterations = 30;
    req.settings.iterative.tolerance = 0;
    req.settings.iterative.cacheDirectory = "none";
    req.device = "cpu";
    const auto c = recon::run(req);
    req.device = "cuda";
    const auto g = recon::run(req);
    if (k.method == recon::Method::Cg) {
      // Every stage (ESPIRiT's eigen-decompositions, the solver's device-side reductions) is deterministic:
      // the same bits on every run.
      const auto again = recon::run(req);
      ASSERT_EQ(again.image.size(), g.image.size());
      EXPECT_EQ(std::memcmp(again.image.data(), g.image.data(), static_cast<std::size_t>(g.image.size()) * sizeof(cfloat)), 0)
          << k.name << ": a repeated reconstruction differs";
    }
    for (const auto& st : g.timings.stages())
      if (st.stage != "metrics") EXPECT_EQ(st.device.rfind("cuda", 0), 0u) << k.name << ": " << st.stage << " ran on " << st.device;
    Dataset perturbed = *k.data;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (index_t i = 0; i < perturbed.kspace.size(); ++i) perturbed.kspace[i] *= 1.f + 1.1920929e-7f * u(rng);
    req.dataset = &perturbed;
    req.device = "cpu";
    const auto cp = recon::run(req);
    const double dg = larmor::test::relL2Error(g.image, c.image), dcpu = larmor::test::relL2Error(cp.image, c.image);
    std::printf("%s, 30 iterations: GPU vs CPU %.2e; CPU vs CPU with input rounding %.2e\n", k.name, dg, dcpu);
    EXPECT_LT(dg, std::max(10 * dcpu, 1e-4)) << k.name;
    // The error against the truth, with the same yardstick: FISTA's thresholds make it move by ~0.1 % points
    // under input rounding (and the GPU's reductions add in another order from run to run).
    const double pc = c.metrics["percent_error"].get<double>(), pcp = cp.metrics["percent_error"].get<double>();
    EXPECT_NEAR(g.metrics["percent_error"].get<double>(), pc, std::max(0.05, 10 * std::abs(pcp - pc))) << k.name;
  }
}

TEST_F(GpuIterative, WarmStartAndNufftPathsRunOnTheGpu) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 128;
  s.coils = 8;
  s.trajectory = TrajectoryKind::GoldenAngle;
  s.spokes = 100;
  const Dataset d = phantom::simulate(s);
  recon::ReconSettings rs;
  rs.method = recon::Method::Cg;
  rs.iterative.regularizer = ops::RegularizerKind::FiniteDifference;
  rs.iterative.fhd = recon::FhdMethod::Nufft;
  rs.iterative.cacheDirectory = "none";
  Timings t;
  recon::IterativeProblem p(*gpu, d, rs, 0, t);
  const auto a = p.solve(0.01, 100, 1e-4, false);
  const auto b = p.solve(0.012, 100, 1e-4, true);
  EXPECT_LT(b.iterations, a.iterations);
  // The warm start changes where CG starts, not where it ends: solved further from the warm start and from
  // zero, the two images agree. As the CPU test (test_iterative_recon.cpp, WarmStartFromThePreviousLambda...):
  // tolerance 1e-6, bound 1e-4 (at tolerance 1e-5 the H100 measured 5.6e-4: the residual bound is too loose).
  const auto w = p.solve(0.012, 1000, 1e-6, true);
  const CArray warm = p.solution();
  const auto c = p.solve(0.012, 1000, 1e-6, false);
  const CArray cold = p.solution();
  EXPECT_TRUE(w.converged) << w.stopReason;
  EXPECT_TRUE(c.converged) << c.stopReason;
  const double diff = larmor::test::relL2Error(warm, cold);
  std::printf("warm start: %d iterations (cold %d); warm vs cold image at tolerance 1e-6: %.2e\n", w.iterations,
              c.iterations, diff);
  EXPECT_LT(diff, 1e-4);
}

TEST_F(GpuIterative, SlabSplitOverEveryGpuMatchesOneDevice) {
  const NufftGeometry g = randomGeometry(3, 32, 4000, 9);
  std::vector<Backend*> all;
  std::vector<std::shared_ptr<Backend>> keep;
  for (const auto& dev : BackendRegistry::instance().devices())
    if (dev.gpu) {
      keep.push_back(BackendRegistry::instance().select(dev.id).backend);
      all.push_back(keep.back().get());
    }
  const CArray samples = larmor::test::randomArray(Shape{4000 * 2}, 11);
  auto factory = [](Backend& b, const NufftGeometry& gg) { return b.makeDftPlan(gg, {}); };
  const CArray one = recon::slabAdjoint({gpu.get()}, g, samples, 2, factory, 1);
  const CArray split = recon::slabAdjoint(all, g, samples, 2, factory, all.size() == 1 ? 4 : 1);
  EXPECT_LT(larmor::test::relL2Error(split, one), 1e-5) << all.size() << " GPUs";
  // Gathered on the fixture's GPU by peer copies (between devices, or between two backends of one device).
  const index_t n = 32 * 32 * 32;
  auto gathered = gpu->allocate(static_cast<std::size_t>(2 * n) * sizeof(cfloat));
  gpu->fill(*gathered, cfloat(0.f), 2 * n);
  recon::SlabAdjoint(all, g, factory, all.size() == 1 ? 4 : 1).adjoint(samples, 2, *gpu, *gathered);
  CArray onDevice(Shape{32, 32, 32, 2});
  gpu->download(onDevice.data(), *gathered, static_cast<std::size_t>(2 * n) * sizeof(cfloat));
  EXPECT_LT(larmor::test::relL2Error(onDevice, one), 1e-5) << all.size() << " GPUs, gathered on the device";
  std::printf("GPU.Multi slab split checked on %zu GPU(s)\n", all.size());
}

// --- the paper's experiment ----------------------------------------------------------------------------------

namespace {

/// Stone et al.'s data set: 284,592 samples for 128^3 (M/N = 0.136). Here 3D radial (kooshball) spokes of
/// 132 samples x 2156 spokes = 284,592 at 128^3, scaled by (N/128)^3 for smaller N.
phantom::SimulateSettings paperSimulation(index_t n, float noise) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = s.matrix[2] = n;
  s.coils = 1;
  s.trajectory = TrajectoryKind::Radial3D;
  s.readout = std::llround(132.0 * n / 128.0);
  s.spokes = std::llround(2156.0 * (n / 128.0) * (n / 128.0));
  s.noiseSigma = noise;
  return s;
}

/// PSNR of the advanced reconstruction (anatomical W, `lambda`) with trigonometry `trig`, for the data as
/// simulated (seed 0) and times (1 + 2^-23 u), u uniform in [-1, 1] (seeds 1..), after each iteration count
/// of `checkpoints` (continued from the previous count on the device). One Q per trig mode.
std::vector<std::vector<double>> trigEnsemble(Backend& gpu, const Dataset& d, double lambda, const char* trig,
                                              int seeds, const std::vector<int>& checkpoints) {
  recon::ReconSettings rs;
  rs.method = recon::Method::Cg;
  rs.iterative.regularizer = ops::RegularizerKind::Anatomical;
  rs.iterative.lambda = lambda;
  rs.iterative.cacheDirectory = "none";
  recon::settings::set(rs, recon::settings::find("nufft.trig"), trig);
  Timings t;
  recon::IterativeProblem base(gpu, d, rs, 0, t);
  std::vector<std::vector<double>> psnr(checkpoints.size());
  for (int seed = 0; seed < seeds; ++seed) {
    Dataset dp = d;
    if (seed > 0) {
      std::mt19937 rng(static_cast<unsigned>(seed));
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      for (index_t i = 0; i < dp.kspace.size(); ++i) dp.kspace[i] *= 1.f + 1.1920929e-7f * u(rng);
    }
    recon::IterativeProblem p(gpu, dp, rs, 0, t, {}, base.trajectoryOperators());
    int done = 0;
    for (std::size_t c = 0; c < checkpoints.size(); ++c) {
      p.solve(lambda, checkpoints[c] - done, 0, done > 0);
      done = checkpoints[c];
      psnr[c].push_back(quality::compare(p.combined(), *d.reference).psnrDb);
    }
  }
  return psnr;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

}  // namespace

TEST_F(GpuIterative, PaperReproduction) {
  // As the paper did ("we manually balanced the resolution and the noise ... by adjusting a regularization
  // parameter"), lambda is chosen from a short sweep; every row is printed.
  const index_t n = std::getenv("LARMOR_REPRO_N") ? std::atol(std::getenv("LARMOR_REPRO_N")) : 64;
  const float noise = std::getenv("LARMOR_REPRO_NOISE") ? static_cast<float>(std::atof(std::getenv("LARMOR_REPRO_NOISE"))) : 0.1f;
  nlohmann::json table = nlohmann::json::array();
  std::printf("\n| data | N | samples | reconstruction | error %% | PSNR dB | time s |\n|---|---|---|---|---|---|---|\n");
  for (float sigma : {0.f, noise}) {
    const Dataset d = phantom::simulate(paperSimulation(n, sigma));
    const index_t m = d.trajectory.size() / 3;
    auto run = [&](recon::ReconSettings s, const std::string& label) {
      recon::ReconRequest req;
      req.dataset = &d;
      req.settings = s;
      req.backend = gpu;
      const auto t0 = std::chrono::steady_clock::now();
      const auto r = recon::run(req);
      const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double err = r.metrics["percent_error"], psnr = r.metrics["psnr_db"];
      std::printf("| %s | %ld | %ld | %s | %.1f | %.2f | %.2f |\n", sigma > 0 ? "noisy" : "noiseless", static_cast<long>(n),
                  static_cast<long>(m), label.c_str(), err, psnr, sec);
      std::fflush(stdout);
      nlohmann::json stages = nlohmann::json::object();
      for (const auto& st : r.timings.stages()) stages[st.stage] = st.milliseconds;
      table.push_back({{"noise", sigma}, {"n", n}, {"samples", m}, {"recon", label}, {"percent_error", err},
                       {"psnr_db", psnr}, {"seconds", sec}, {"stages_ms", stages}});
      return std::make_pair(err, psnr);
    };
    recon::ReconSettings grid;
    grid.method = recon::Method::Gridding;
    const auto gridding = run(grid, "gridding (ramp DCF, NUFFT)");
    recon::ReconSettings cg;
    cg.method = recon::Method::Cg;
    cg.iterative.regularizer = ops::RegularizerKind::Anatomical;
    cg.iterative.cacheDirectory = "none";
    std::pair<double, double> best{1e9, 0};
    double bestLambda = 0;
    for (double lambda : {1.0, 3.0, 10.0}) {
      cg.iterative.lambda = lambda;
      const auto r = run(cg, "advanced, anatomical W, lambda " + std::to_string(lambda).substr(0, 4));
      if (r.first < best.first) best = r, bestLambda = lambda;
    }
    cg.iterative.lambda = bestLambda;
    cg.nufft.trig = TrigMode::Fast;
    run(cg, "advanced, fast trig (__sincosf), same lambda");
    cg.iterative.qTrig = recon::QTrig::Accurate;
    run(cg, "advanced, fast trig F^H d, accurate Q");
    cg.iterative.qTrig = recon::QTrig::Auto;
    cg.nufft.trig = TrigMode::Recurrence;
    run(cg, "advanced, phase recurrence, same lambda");
    cg.iterative.qTrig = recon::QTrig::Accurate;
    run(cg, "advanced, phase recurrence F^H d, accurate Q");
    cg.nufft.trig = TrigMode::Accurate;
    cg.iterative.qTrig = recon::QTrig::Recurrence;
    run(cg, "advanced, accurate F^H d, recurrence Q");
    cg.iterative.qTrig = recon::QTrig::Auto;
    cg.iterative.regularizer = ops::RegularizerKind::FiniteDifference;
    cg.iterative.lambda = 0.3;
    run(cg, "advanced, finite-difference W (no anatomy), lambda 0.3");
    // The best row once more, after all the others: the same numbers (nothing carried over between runs).
    cg.iterative.regularizer = ops::RegularizerKind::Anatomical;
    cg.iterative.lambda = bestLambda;
    const auto again = run(cg, "advanced, anatomical W, best lambda, again");
    // The same bits: every stage is deterministic, the sector spreader's tiles included (fixed point since
    // 2026-11-27; before, float atomics made identical runs differ by up to 0.013 dB here, docs/nufft.md).
    EXPECT_EQ(again.second, best.second) << "a repeated reconstruction must give the same PSNR";
    EXPECT_EQ(again.first, best.first) << "a repeated reconstruction must give the same error";
    // Its sensitivity: the same data times (1 + 2^-23 u), u uniform in [-1, 1] (float rounding).
    {
      Dataset dp = d;
      std::mt19937 rng(11);
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      for (index_t i = 0; i < dp.kspace.size(); ++i) dp.kspace[i] *= 1.f + 1.1920929e-7f * u(rng);
      recon::ReconRequest req;
      req.dataset = &dp;
      req.settings = cg;
      req.backend = gpu;
      const auto r = recon::run(req);
      std::printf("| %s | %ld | %ld | advanced, best lambda, data times (1 + 2^-23 u) | %.1f | %.2f | |\n",
                  sigma > 0 ? "noisy" : "noiseless", static_cast<long>(n), static_cast<long>(m),
                  r.metrics["percent_error"].get<double>(), r.metrics["psnr_db"].get<double>());
    }
    EXPECT_LE(best.first, gridding.first / 3) << "advanced error must be <= 1/3 of gridding's";
    // The cost of fast trigonometry, where a float solve can resolve 0.1 dB. After 60 iterations the
    // noiseless 128^3 problem is far from converged (31.6 dB; 39.4 dB after 200) and its PSNR moves by up to
    // 0.4 dB when the data change by one float rounding (docs/iterative.md), so one 60-iteration pair is no
    // measurement of it. Measured: (1) the converged solution (200 iterations), accurate vs fast, within
    // 0.1 dB; (2) at the paper's 60 iterations, an ensemble of 1-ulp data perturbations per mode: every fast
    // result within 0.1 dB of the lowest accurate one (fast is not worse than the float solve's own spread),
    // and the means printed with their spread.
    const int seeds = std::getenv("LARMOR_REPRO_SEEDS") ? std::atoi(std::getenv("LARMOR_REPRO_SEEDS")) : 3;
    const std::vector<int> checkpoints{60, 200};
    const auto acc = trigEnsemble(*gpu, d, bestLambda, "accurate", seeds, checkpoints);
    const auto fst = trigEnsemble(*gpu, d, bestLambda, "fast", seeds, checkpoints);
    for (std::size_t c = 0; c < checkpoints.size(); ++c) {
      auto [amin, amax] = std::minmax_element(acc[c].begin(), acc[c].end());
      auto [fmin, fmax] = std::minmax_element(fst[c].begin(), fst[c].end());
      std::printf("| %s | %ld | %ld | advanced, best lambda, %d iterations, %d data roundings: accurate / fast "
                  "trig, mean (min-max) | | %.2f (%.2f-%.2f) / %.2f (%.2f-%.2f) | |\n",
                  sigma > 0 ? "noisy" : "noiseless", static_cast<long>(n), static_cast<long>(m), checkpoints[c],
                  seeds, mean(acc[c]), *amin, *amax, mean(fst[c]), *fmin, *fmax);
      table.push_back({{"noise", sigma}, {"n", n}, {"samples", m}, {"iterations", checkpoints[c]},
                       {"recon", "trig ensemble"}, {"psnr_db_accurate", acc[c]}, {"psnr_db_fast", fst[c]}});
    }
    std::fflush(stdout);
    EXPECT_LE(acc[1][0] - fst[1][0], 0.1) << "fast trig must cost <= 0.1 dB (converged solution)";
    EXPECT_LE(*std::min_element(acc[0].begin(), acc[0].end()) - *std::min_element(fst[0].begin(), fst[0].end()),
              0.1)
        << "fast trig at 60 iterations must stay within 0.1 dB of the accurate solve's rounding spread";
  }
  if (const char* path = std::getenv("LARMOR_REPRO_JSON")) std::ofstream(path) << table.dump(1) << "\n";
}


// The prior set-up ops (cuda/prior.cu) against the CPU's: the same bits (both round the same steps), on a
// volume with many tied differences (the radix select's histograms) and on random data.
TEST_F(GpuIterative, PriorSetUpOpsMatchCpuBitForBit) {
  for (const auto& d : {std::array<index_t, 3>{37, 29, 11}, std::array<index_t, 3>{128, 128, 128},
                        std::array<index_t, 3>{200, 1, 1}}) {
    const index_t dims[3] = {d[0], d[1], d[2]}, n = d[0] * d[1] * d[2];
    CArray img(Shape{n});
    std::mt19937 rng(static_cast<unsigned>(n));
    std::uniform_real_distribution<float> u(0.f, 1.f);
    for (index_t i = 0; i < n; ++i) img[i] = u(rng) < 0.5f ? cfloat(0.25f, 0.f) : cfloat(u(rng), 0.1f * u(rng));
    auto ig = CDeviceArray::upload(*gpu, img), ic = CDeviceArray::upload(*cpu, img);
    const std::uint64_t count = PriorOps::neighbourPairs(dims);
    for (std::uint64_t k : {std::uint64_t{0}, count / 7, count / 2, count - 1}) {
      const auto g = gpu->priorOps().neighbourDifferences(ig.buffer(), dims, k), c = cpu->priorOps().neighbourDifferences(ic.buffer(), dims, k);
      EXPECT_EQ(g.kth, c.kth) << d[0] << "x" << d[1] << "x" << d[2] << " rank " << k;
      EXPECT_EQ(g.maximum, c.maximum);
      EXPECT_TRUE(g.finite);
    }
    auto wg = gpu->allocate(n * sizeof(cfloat)), wc = cpu->allocate(n * sizeof(cfloat));
    auto dg = gpu->allocate(n * sizeof(cfloat)), dc = cpu->allocate(n * sizeof(cfloat));
    gpu->fill(*dg, cfloat(0.5f), n);
    cpu->fill(*dc, cfloat(0.5f), n);
    for (int a = 0; a < 3; ++a) {
      gpu->priorOps().edgeWeights(*wg, ig.buffer(), dims, a, 0.07);
      cpu->priorOps().edgeWeights(*wc, ic.buffer(), dims, a, 0.07);
      CArray hg(Shape{n}), hc(Shape{n});
      gpu->download(hg.data(), *wg, n * sizeof(cfloat));
      cpu->download(hc.data(), *wc, n * sizeof(cfloat));
      index_t differ = 0;
      for (index_t i = 0; i < n; ++i) differ += hg[i] != hc[i];
      EXPECT_EQ(differ, 0) << "edge weights, axis " << a;
      gpu->priorOps().addDifferenceDiagonal(*dg, a == 1 ? nullptr : wg.get(), dims, a);
      cpu->priorOps().addDifferenceDiagonal(*dc, a == 1 ? nullptr : wc.get(), dims, a);
    }
    auto rg = gpu->allocate(n * sizeof(cfloat)), rc = cpu->allocate(n * sizeof(cfloat));
    gpu->reciprocalDiagonal(*rg, *dg, 0.3, &ig.buffer(), 2.0, n);
    cpu->reciprocalDiagonal(*rc, *dc, 0.3, &ic.buffer(), 2.0, n);
    CArray hd(Shape{n}), hdc(Shape{n}), hr(Shape{n}), hrc(Shape{n});
    gpu->download(hd.data(), *dg, n * sizeof(cfloat));
    cpu->download(hdc.data(), *dc, n * sizeof(cfloat));
    gpu->download(hr.data(), *rg, n * sizeof(cfloat));
    cpu->download(hrc.data(), *rc, n * sizeof(cfloat));
    index_t differ = 0;
    for (index_t i = 0; i < n; ++i) differ += (hd[i] != hdc[i]) + (hr[i] != hrc[i]);
    EXPECT_EQ(differ, 0) << "difference diagonal / reciprocal";
    gpu->reciprocalDiagonal(*rg, *dg, 0.3, nullptr, 1e-3, n);  // the constant term (GRAPPA's floor)
    cpu->reciprocalDiagonal(*rc, *dc, 0.3, nullptr, 1e-3, n);
    gpu->download(hr.data(), *rg, n * sizeof(cfloat));
    cpu->download(hrc.data(), *rc, n * sizeof(cfloat));
    differ = 0;
    for (index_t i = 0; i < n; ++i) differ += hr[i] != hrc[i];
    EXPECT_EQ(differ, 0) << "reciprocal with a constant term";
    img[n / 3] = cfloat(0.f, std::numeric_limits<float>::infinity());
    auto bad = CDeviceArray::upload(*gpu, img);
    EXPECT_FALSE(gpu->priorOps().neighbourDifferences(bad.buffer(), dims, 0).finite);
  }
}
