// --method cg end to end on a small problem (recon/iterative.hpp): the PCG result against the float64
// direct solution of (E^H E + lambda W^H W) x = E^H d for all three priors, with and without coils, 2D and
// 3D, several slices; warm start; cancellation; the L-curve; estimated coil maps; the slab decomposition
// of GPU.Multi. The plans are the dense float64 reference (test_cg_util.hpp), so these tests check the
// iterative machinery on its own; the production plans are checked against the same reference elsewhere.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "larmor/backend/registry.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/ops/regularizer.hpp"
#include "larmor/ops/sense.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/coil_maps.hpp"
#include "larmor/recon/iterative.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/settings.hpp"
#include "support/error_norms.hpp"
#include "support/iterative_problem.hpp"

using namespace larmor;
using namespace larmor::test;

namespace {

struct Case {
  int dims;
  index_t n0, n1, n2, m, coils;
  std::string reg;
  double lambda;
};

}  // namespace

TEST(IterativeRecon, MatchesTheDirectFloat64SolveForEveryPriorWithAndWithoutCoils) {
  DenseBackend be;
  const std::vector<Case> cases = {
      {2, 8, 8, 1, 120, 1, "tikhonov", 0.05}, {2, 8, 8, 1, 120, 1, "fd", 0.2},   {2, 8, 8, 1, 120, 1, "anatomical", 0.2},
      {2, 8, 7, 1, 50, 3, "tikhonov", 0.02},  {2, 8, 7, 1, 50, 3, "fd", 0.1},    {2, 8, 7, 1, 50, 3, "anatomical", 0.1},
      {3, 4, 5, 3, 150, 1, "fd", 0.1},        {3, 4, 4, 3, 40, 2, "anatomical", 0.05}};
  for (const Case& c : cases) {
    const Dataset d = makeDataset(c.dims, c.n0, c.n1, c.n2, c.m, c.coils, 1, 100 + c.m);
    const auto s = cgSettings(c.reg, c.lambda);
    Timings t;
    recon::IterativeProblem p(be, d, s, 0, t);
    const auto r = p.solve(c.lambda, 400, 1e-6, false);
    const std::string what = std::to_string(c.dims) + "D " + c.reg + " coils " + std::to_string(c.coils);
    EXPECT_TRUE(r.converged) << what << ": " << r.stopReason << " after " << r.iterations;
    const double e = relL2Error(p.solution(), directSolve(d, s, 0));
    std::printf("%s: converged CG vs float64 direct solve %.2e\n", what.c_str(), e);
    // Measured 0.7-4.1e-6 (printed); the bound was 2e-4 and is now 1e-5, the figure docs/iterative.md claims.
    EXPECT_LT(e, 1e-5) << what;
    // Objective: ||E x - d||^2 + lambda ||W x||^2 from the forward model agrees with CG's bookkeeping.
    const double res = p.residualNorm(), prior = p.priorNorm();
    const double obj = res * res + c.lambda * prior * prior;
    EXPECT_NEAR(r.history.back().objective, obj, 1e-3 * obj) << what;
    for (std::size_t k = 1; k < r.history.size(); ++k)
      EXPECT_LE(r.history[k].objective, r.history[k - 1].objective * (1 + 1e-6)) << what << " iteration " << k;
  }
}

TEST(IterativeRecon, PipelineReturnsCombinedCoilImagesAndConvergence) {
  DenseBackend be;
  const Dataset d = makeDataset(2, 8, 8, 1, 90, 2, 2, 7);  // two slices share the plan and Q
  auto s = cgSettings("fd", 0.1);
  Timings t;
  const recon::ImageSet out = recon::reconstructIterative(be, d, s, t, {});
  EXPECT_EQ(out.combined.shape(), (Shape{8, 8, 1, 1, 2}));
  EXPECT_EQ(out.coilImages.shape(), (Shape{8, 8, 1, 2, 2}));
  EXPECT_EQ(be.plansMade, 1 + 3);  // the F^H d plan and Q's (one per box of psfBySymmetry, 3 in 2D), once for both slices
  for (index_t sl = 0; sl < 2; ++sl) {
    const auto x = directSolve(d, s, sl);
    std::vector<cd> combined(64), coil(128);
    for (index_t v = 0; v < 64; ++v) {
      double sos = 0;
      for (index_t c = 0; c < 2; ++c) {
        const cd sc = (*d.coilMaps)[(sl * 2 + c) * 64 + v];
        sos += std::norm(sc);
        coil[c * 64 + v] = sc * x[v];
      }
      combined[v] = x[v] * std::sqrt(sos);
    }
    CArray cs(Shape{64}), ci(Shape{128});
    std::copy_n(out.combined.data() + sl * 64, 64, cs.data());
    std::copy_n(out.coilImages.data() + sl * 128, 128, ci.data());
    EXPECT_LT(relL2Error(cs, combined), 2e-4) << "slice " << sl;
    EXPECT_LT(relL2Error(ci, coil), 2e-4) << "slice " << sl;
  }
  ASSERT_TRUE(out.convergence.contains("slices"));
  const auto& j = out.convergence["slices"][0];
  EXPECT_EQ(j["regularizer"], "fd");
  EXPECT_EQ(j["coil_maps"], "dataset");
  EXPECT_EQ(j["q_cache"], "disabled");
  EXPECT_TRUE(j["converged"].get<bool>());
  EXPECT_EQ(j["relative_residual"].size(), j["objective"].size());
  const std::vector<std::string> stages = [&] {
    std::vector<std::string> v;
    for (const auto& st : t.stages()) v.push_back(st.stage);
    return v;
  }();
  for (const char* want : {"plan", "Q", "F^H d", "W", "CG"})
    EXPECT_NE(std::find(stages.begin(), stages.end(), want), stages.end()) << want;

  // Through recon::run with the backend injected (the GUI's way).
  recon::ReconRequest req;
  req.dataset = &d;
  req.settings = s;
  req.backend = std::make_shared<DenseBackend>();
  const auto res = recon::run(req);
  EXPECT_EQ(res.image.shape(), out.combined.shape());
  EXPECT_LT(relL2Error(res.image, std::vector<cd>(out.combined.data(), out.combined.data() + 128)), 1e-6);
}

TEST(IterativeRecon, WarmStartFromThePreviousLambdaNeedsFewerIterations) {
  DenseBackend be;
  const Dataset d = makeDataset(2, 8, 8, 1, 100, 3, 1, 9);
  auto s = cgSettings("fd", 0.2);
  s.iterative.tolerance = 1e-5;
  Timings t;
  const recon::ImageSet first = recon::reconstructIterative(be, d, s, t, {});
  s.iterative.lambda = 0.25;
  const recon::ImageSet cold = recon::reconstructIterative(be, d, s, t, {});
  s.iterative.warmStart = std::make_shared<const CArray>(first.combined);
  const recon::ImageSet warm = recon::reconstructIterative(be, d, s, t, {});
  EXPECT_EQ(warm.convergence["warm_start"], "used");
  const int nc = cold.convergence["iterations"], nw = warm.convergence["iterations"];
  EXPECT_LT(nw, nc);
  EXPECT_LT(warm.convergence["relative_residual"][0].get<double>(), 0.5);
  EXPECT_LT(relL2Error(warm.combined, std::vector<cd>(cold.combined.data(), cold.combined.data() + 64)), 1e-4);
  // The problem object keeps the solution on the device: a lambda change continues from it.
  recon::IterativeProblem p(be, d, s, 0, t);
  const auto a = p.solve(0.2, 400, 1e-5, false);
  const auto b = p.solve(0.25, 400, 1e-5, true);
  EXPECT_LT(b.iterations, a.iterations);
  // A warm start of the wrong size is ignored, not fatal.
  s.iterative.warmStart = std::make_shared<const CArray>(CArray(Shape{4, 4, 1}));
  const recon::ImageSet ignored = recon::reconstructIterative(be, d, s, t, {});
  EXPECT_NE(ignored.convergence["warm_start"].get<std::string>().find("ignored"), std::string::npos);
}

TEST(IterativeRecon, CancelStopsDuringTheIterations) {
  DenseBackend be;
  const Dataset d = makeDataset(2, 8, 8, 1, 80, 1, 1, 13);
  auto s = cgSettings("tikhonov", 0.01);
  s.iterative.tolerance = 0;
  s.iterative.iterations = 1000;
  CancelToken token;
  int iterationReports = 0;
  Progress progress(
      [&](double, const std::string& stage) {
        if (stage.find("iteration") != std::string::npos && ++iterationReports == 5) token.cancel();
      },
      &token);
  Timings t;
  EXPECT_THROW(recon::reconstructIterative(be, d, s, t, progress), Cancelled);
  EXPECT_EQ(iterationReports, 5);
}

TEST(IterativeRecon, LCurveTradesResidualForPrior) {
  DenseBackend be;
  const Dataset d = makeDataset(2, 8, 8, 1, 60, 1, 1, 17);
  auto s = cgSettings("fd", 0);
  const auto pts = recon::lcurve(be, d, s, {0.001, 0.01, 0.1, 1.0, 10.0});
  ASSERT_EQ(pts.size(), 5u);
  for (std::size_t i = 1; i < pts.size(); ++i) {
    EXPECT_GT(pts[i].residualNorm, pts[i - 1].residualNorm) << "lambda " << pts[i].lambda;
    EXPECT_LT(pts[i].priorNorm, pts[i - 1].priorNorm) << "lambda " << pts[i].lambda;
  }
  // The residual norm agrees with the direct solution's.
  s.iterative.lambda = 0.1;
  const auto x = directSolve(d, s, 0);
  const NufftGeometry g = [&] {
    NufftGeometry gg;
    gg.dims = 2;
    gg.image[0] = gg.image[1] = 8;
    gg.trajectory = d.trajectory;
    gg.trajectory.reshape(Shape{3, 60});
    return gg;
  }();
  const auto F = denseF(g);
  double r2 = 0;
  for (int j = 0; j < 60; ++j) {
    cd fx = 0;
    for (int v = 0; v < 64; ++v) fx += F[j * 64 + v] * x[v] / 8.0;
    r2 += std::norm(fx - cd(d.kspace[j]));
  }
  EXPECT_NEAR(pts[2].residualNorm, std::sqrt(r2), 1e-3 * std::sqrt(r2));
}

namespace {
/// d.kspace's coils (M samples each, in order) = the exact DFT (g) of the dataset's map c times `object`, scaled.
void exactCoilSamples(Backend& be, const NufftGeometry& g, Dataset& d, const CArray& object, float scale) {
  const index_t n = object.size(), m = g.samples(), coils = d.header.coils;
  DenseDftPlan plan(g);
  auto img = be.allocate(static_cast<std::size_t>(n) * sizeof(cfloat)), smp = be.allocate(static_cast<std::size_t>(m) * sizeof(cfloat));
  std::vector<cfloat> sc(static_cast<std::size_t>(n));
  for (index_t c = 0; c < coils; ++c) {
    for (index_t v = 0; v < n; ++v) sc[v] = (*d.coilMaps)[c * n + v] * object[v] * scale;
    be.upload(*img, sc.data(), static_cast<std::size_t>(n) * sizeof(cfloat));
    plan.forward(*img, *smp, 1);
    be.download(d.kspace.data() + c * m, *smp, static_cast<std::size_t>(m) * sizeof(cfloat));
  }
}
}  // namespace

TEST(IterativeRecon, EstimatedMapsPipelineRunsAndRecoversTheCombinedObject) {
  // Noise-free data of a smooth object with several coils: CG-SENSE with estimated maps should give
  // the object weighted by sqrt(sum |s_c|^2) (docs/conventions.md), up to a global phase. The CPU backend: the
  // maps' density compensation (Pipe-Menon for these scattered points) needs a real NUFFT plan.
  auto cpu = makeCpuBackend();
  Backend& be = *cpu;
  const index_t n = 12, coils = 3, m = 400;
  Dataset d = makeDataset(2, n, n, 1, m, coils, 1, 21);
  CArray object(Shape{n, n, 1});
  for (index_t y = 0; y < n; ++y)
    for (index_t x = 0; x < n; ++x) {
      const double r2 = std::pow(pixelPos(x, n), 2) + std::pow(pixelPos(y, n), 2);
      object(x, y, 0) = cfloat(static_cast<float>(std::exp(-r2 / 0.05)), 0.f);
    }
  NufftGeometry g;
  g.dims = 2;
  g.image[0] = g.image[1] = n;
  g.trajectory = d.trajectory;
  g.trajectory.reshape(Shape{3, m});
  exactCoilSamples(be, g, d, object, 1.f / static_cast<float>(n));
  auto s = cgSettings("tikhonov", 1e-4);
  s.iterative.coilMaps = recon::CoilMapSource::Walsh;
  s.iterative.calibrationRadius = 4;
  s.iterative.iterations = 100;
  Timings t;
  const recon::ImageSet out = recon::reconstructIterative(be, d, s, t, {});
  EXPECT_EQ(out.convergence["coil_maps"], "walsh");
  double e = 0, r = 0;
  for (index_t v = 0; v < n * n; ++v) {
    double sos = 0;
    for (index_t c = 0; c < coils; ++c) sos += std::norm(cd((*d.coilMaps)[c * n * n + v]));
    const double truth = std::abs(object[v]) * std::sqrt(sos);
    e += std::pow(std::abs(out.combined[v]) - truth, 2);
    r += truth * truth;
  }
  EXPECT_LT(std::sqrt(e / r), 0.05);
}

TEST(IterativeRecon, WalshMapsOfRadialDataComeFromTheFittedBox) {
  // Radial spokes sample the k-space centre ~1/|k| more densely; the Walsh estimate's low-resolution coil images
  // come from the calibration box fitted to the samples (recon/calibration.hpp), so the density does not blur
  // them, and the density compensation setting does not change them. Exact data of a disc with a soft edge,
  // 4 coils, 48 full spokes of 64 samples; the estimate against S_c / ||S|| inside the disc.
  auto cpu = makeCpuBackend();
  Backend& be = *cpu;
  const index_t n = 32, coils = 4, readout = 64, spokes = 48, m = readout * spokes;
  Dataset d = makeDataset(2, n, n, 1, m, coils, 1, 31);  // its smooth maps; trajectory and data replaced
  d.header.trajectory = TrajectoryKind::Radial;
  d.trajectory = RArray(Shape{3, readout, spokes});
  for (index_t p = 0; p < spokes; ++p)
    for (index_t j = 0; j < readout; ++j) {
      const double a = M_PI * static_cast<double>(p) / static_cast<double>(spokes), k = 0.5 * static_cast<double>(j - readout / 2);
      float* kj = d.trajectory.data() + 3 * (j + readout * p);
      kj[0] = static_cast<float>(k * std::cos(a));
      kj[1] = static_cast<float>(k * std::sin(a));
      kj[2] = 0.f;
    }
  CArray object(Shape{n, n, 1});
  for (index_t y = 0; y < n; ++y)
    for (index_t x = 0; x < n; ++x) {
      const double r = std::hypot(pixelPos(x, n), pixelPos(y, n));
      object(x, y, 0) = cfloat(static_cast<float>(1.0 / (1.0 + std::exp((r - 0.32) / 0.02))), 0.f);
    }
  NufftGeometry g;
  g.dims = 2;
  g.image[0] = g.image[1] = n;
  g.trajectory = d.trajectory;
  g.trajectory.reshape(Shape{3, m});
  d.kspace = CArray(Shape{readout, spokes, 1, coils, 1});
  exactCoilSamples(be, g, d, object, 1.f);
  d.validate();
  auto error = [&](recon::DensityCompensation dcf) {  // relative error of |S_c| / ||S|| inside the disc
    auto s = cgSettings("tikhonov", 0);
    s.iterative.coilMaps = recon::CoilMapSource::Walsh;
    s.iterative.calibrationRadius = 6;
    s.nufft.dcf = dcf;
    const index_t out[3] = {n, n, 1};
    const CArray maps = recon::coilMapsForSlice(be, d, 0, out, s);
    double e = 0, r = 0;
    for (index_t v = 0; v < n * n; ++v) {
      if (std::abs(object[v]) < 0.5) continue;
      double trueSos = 0;
      for (index_t c = 0; c < coils; ++c) trueSos += std::norm(cd((*d.coilMaps)[c * n * n + v]));
      for (index_t c = 0; c < coils; ++c) {
        const double expect = std::abs((*d.coilMaps)[c * n * n + v]) / std::sqrt(trueSos);
        e += std::pow(std::abs(maps[c * n * n + v]) - expect, 2);
        r += expect * expect;
      }
    }
    return std::sqrt(e / r);
  };
  const double ramp = error(recon::DensityCompensation::Auto), none = error(recon::DensityCompensation::None);
  RecordProperty("error", std::to_string(ramp));
  EXPECT_LT(ramp, 0.03);
  EXPECT_EQ(ramp, none);
}

TEST(IterativeRecon, ErrorsNameTheProblem) {
  DenseBackend be;
  Timings t;
  Dataset d = makeDataset(2, 8, 8, 1, 40, 1, 1, 5);
  auto s = cgSettings("anatomical", 0.1);
  d.reference.reset();
  EXPECT_THROW(recon::reconstructIterative(be, d, s, t, {}), Error);
  s = cgSettings("fd", 0.1);
  // Unknown names are refused where they are read: the settings table.
  EXPECT_THROW(recon::settings::set(s, recon::settings::find("iterative.fhd"), "fft"), Error);
  EXPECT_THROW(cgSettings("l1", 0.1), Error);
  // A sparsity prior belongs to --method cs: refused by the one validation, before any work.
  EXPECT_THROW(recon::reconstructIterative(be, d, cgSettings("tv", 0.1), t, {}), Error);
  // A header that calls the data Cartesian while the k-space is laid out as samples: refused.
  Dataset c = d;
  c.header.trajectory = TrajectoryKind::Cartesian;
  s = cgSettings("fd", 0.1);
  EXPECT_THROW(recon::reconstructIterative(be, c, s, t, {}), Error);
  Dataset two = makeDataset(2, 8, 8, 1, 40, 2, 1, 5);
  two.coilMaps.reset();
  EXPECT_THROW(recon::reconstructIterative(be, two, s, t, {}), Error);  // coil maps "dataset" without maps
}

TEST(IterativeRecon, SlabAdjointEqualsTheFullAdjoint) {
  // GPU.Multi's decomposition: slabs with a scaled trajectory and offset-phase-modulated samples.
  DenseBackend a, b;
  const auto c0 = makeCpuBackend(), c1 = makeCpuBackend();
  for (const auto& dimsCase : {std::array<index_t, 4>{2, 7, 9, 1}, std::array<index_t, 4>{3, 5, 4, 7}}) {
    NufftGeometry g;
    g.dims = static_cast<int>(dimsCase[0]);
    g.image[0] = dimsCase[1];
    g.image[1] = dimsCase[2];
    g.image[2] = dimsCase[3];
    const index_t m = 70, batch = 2, n = g.image[0] * g.image[1] * g.image[2];
    g.trajectory = randomTrajectory(m, g.image, g.dims, 3);
    const auto samples = randomComplex(m * batch, 4);
    CArray s(Shape{m, batch});
    std::copy(samples.begin(), samples.end(), s.data());
    DenseDftPlan full(g);
    auto in = toBuffer(a, samples), out = a.allocate(n * batch * sizeof(cfloat));
    full.adjoint(*in, *out, batch);
    const auto expect = fromBuffer(a, *out, n * batch);
    auto factory = [](Backend& be, const NufftGeometry& gg) { return be.makeDftPlan(gg, {}); };
    const auto error = [&](const CArray& got) {
      double e = 0, r = 0;
      for (index_t i = 0; i < got.size(); ++i) {
        e += std::norm(cd(got[i]) - cd(expect[i]));
        r += std::norm(cd(expect[i]));
      }
      return std::sqrt(e / r);
    };
    for (int slabs : {1, 3}) {
      // Two dense backends (no peer path: the device output goes through the host) and two CPU backends (a
      // peer copy between them, ExecutionOps::copyFromPeer).
      for (const std::vector<Backend*>& list :
           {std::vector<Backend*>{&a}, std::vector<Backend*>{&a, &b}, std::vector<Backend*>{c0.get(), c1.get()}}) {
        const CArray got = recon::slabAdjoint(list, g, s, batch, factory, slabs);
        ASSERT_EQ(got.size(), n * batch);
        EXPECT_LT(error(got), 1e-5) << g.dims << "D, " << list.size() << " backends, " << slabs << " slabs";
        // The same gathered into a buffer of the first backend.
        Backend& primary = *list.front();
        auto dev = primary.allocate(static_cast<std::size_t>(n * batch) * sizeof(cfloat));
        recon::SlabAdjoint(list, g, factory, slabs).adjoint(s, batch, primary, *dev);
        CArray onDevice(Shape{n * batch});
        primary.download(onDevice.data(), *dev, static_cast<std::size_t>(n * batch) * sizeof(cfloat));
        EXPECT_LT(error(onDevice), 1e-5) << g.dims << "D, " << list.size() << " backends, " << slabs
                                         << " slabs, into a buffer";
      }
    }
  }
}
