// The joint reconstruction of a series (recon/dynamic.hpp) on the GPU against the CPU, every temporal prior. 100
// FISTA iterations amplify rounding differences, so the yardstick is as test_gpu_iterative.cpp's: how far the CPU
// itself moves when its input changes by float rounding (every sample times 1 + 2^-23 u, u in [-1, 1]); the GPU must
// stay within 10 times that (or 1e-4) of the CPU, and its error against each frame's truth within 0.05 %.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "larmor/phantom/dynamic.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/settings_table.hpp"
#include "../support/device.hpp"

using namespace larmor;

namespace {

class GpuDynamic : public test::GpuTest {
 protected:
  std::vector<recon::ReconResult> run(std::shared_ptr<Backend> be, const std::vector<Dataset>& frames,
                                      const std::string& prior) {
    recon::ReconRequest r;
    r.backend = std::move(be);
    r.settings.method = recon::Method::Cs;
    recon::settings::applyMethodDefaults(r.settings);
    recon::settings::set(r.settings, recon::settings::find("dynamic.temporal_prior"), prior);
    return recon::runFrames(frames, r);
  }
};

double relativeDifference(const CArray& a, const CArray& b) {
  double d = 0, e = 0;
  for (index_t i = 0; i < a.size(); ++i) {
    d += std::norm(cdouble(a[i]) - cdouble(b[i]));
    e += std::norm(cdouble(b[i]));
  }
  return std::sqrt(d / e);
}

}  // namespace

TEST_F(GpuDynamic, JointFramesMatchTheCpu) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 96;
  s.coils = 6;
  s.trajectory = TrajectoryKind::GoldenAngle;
  s.frames = 10;
  s.spokesPerFrame = 17;
  s.noiseSigma = 0.01f;
  const std::vector<Dataset> frames = phantom::simulateSeries(s);
  std::vector<Dataset> rounded = frames;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (Dataset& f : rounded)
    for (index_t i = 0; i < f.kspace.size(); ++i) f.kspace[i] *= 1.f + 1.1920929e-7f * u(rng);
  for (const std::string prior : {"ttv", "sttv", "llr"}) {
    const auto c = run(cpu_, frames, prior), g = run(gpu_, frames, prior), cp = run(cpu_, rounded, prior);
    ASSERT_EQ(c.size(), g.size());
    double worstGpu = 0, worstCpu = 0;
    for (std::size_t t = 0; t < c.size(); ++t) {
      worstGpu = std::max(worstGpu, relativeDifference(g[t].image, c[t].image));
      worstCpu = std::max(worstCpu, relativeDifference(cp[t].image, c[t].image));
      EXPECT_NEAR(g[t].metrics["percent_error"].get<double>(), c[t].metrics["percent_error"].get<double>(), 0.05)
          << prior << " frame " << t;
    }
    std::printf("dynamic %s: GPU vs CPU %.2e (worst frame); CPU vs CPU with input rounding %.2e\n", prior.c_str(),
                worstGpu, worstCpu);
    EXPECT_LT(worstGpu, std::max(10 * worstCpu, 1e-4)) << prior;
    EXPECT_EQ(g[0].device.rfind("cuda", 0), 0u) << g[0].device;
  }
}

// --lambda-rule cv on a series (recon/dynamic.hpp): the temporal lambda from held-out spokes within 5 % of the best of
// a sweep of fixed lambdas, on the case (128^2 x 8 coils x 20 frames of 21 golden-angle spokes, 1 % noise).
TEST_F(GpuDynamic, CrossValidatedTemporalLambdaIsNearTheBest) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 128;
  s.coils = 8;
  s.trajectory = TrajectoryKind::GoldenAngle;
  s.frames = 20;
  s.spokesPerFrame = 21;
  s.noiseSigma = 0.01f;
  const std::vector<Dataset> frames = phantom::simulateSeries(s);
  auto mean = [](const std::vector<recon::ReconResult>& rs) {
    double sum = 0;
    for (const auto& r : rs) sum += r.metrics["percent_error"].get<double>();
    return sum / static_cast<double>(rs.size());
  };
  auto with = [&](const std::string& key, const std::string& value) {
    recon::ReconRequest r;
    r.backend = gpu_;
    r.settings.method = recon::Method::Cs;
    recon::settings::applyMethodDefaults(r.settings);
    recon::settings::set(r.settings, recon::settings::find(key), value);
    return recon::runFrames(frames, r);
  };
  double best = 1e300;
  for (const char* lambda : {"1e-3", "2e-3", "4e-3", "8e-3", "1.6e-2"})
    best = std::min(best, mean(with("dynamic.temporal_lambda", lambda)));
  const double cv = mean(with("iterative.lambda_rule", "cv"));
  std::printf("dynamic cv: %.3f %% against the sweep's best %.3f %%\n", cv, best);
  EXPECT_LT(cv, 1.05 * best);
}
