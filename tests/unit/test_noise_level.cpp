// The noise level of a slice (recon/noise_level.hpp): noise scans, else the median of the outer k-space's
// power; on the simulator's radial and Cartesian data with known noise, and the cs rule that uses it
// (LambdaRule::Noise raises lambda with the noise; an explicit lambda with LambdaRule::Fixed is used as given).
#include <gtest/gtest.h>

#include <cmath>

#include "larmor/backend/registry.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/iterative.hpp"
#include "larmor/recon/noise_level.hpp"
#include "larmor/recon/settings_table.hpp"

using namespace larmor;

namespace {
Dataset simulated(TrajectoryKind t, float sigma, index_t n = 128, int accel = 1) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = n;
  s.coils = 4;
  s.trajectory = t;
  s.accel = accel;
  s.noiseSigma = sigma;
  s.seed = 11;
  return phantom::simulate(s);
}
}  // namespace

// The simulator's sigma is per real and imaginary part: a complex sample's variance is 2 sigma^2. Where the noise
// is well above what is left of the object's spectrum at the k-space edge, the estimate is the noise's.
TEST(NoiseLevel, OuterKSpaceOfRadialAndCartesianData) {
  for (TrajectoryKind t : {TrajectoryKind::GoldenAngle, TrajectoryKind::Cartesian})
    for (float sigma : {0.03f, 0.05f}) {
      const recon::NoiseLevel l = recon::estimateNoiseLevel(simulated(t, sigma), 0);
      const double expect = 2.0 * sigma * sigma;
      if (t != TrajectoryKind::Cartesian) EXPECT_EQ(l.source, "outer k-space");
      EXPECT_GT(l.samples, 100);
      EXPECT_NEAR(l.variance / expect, 1.0, 0.15) << toString(t) << " sigma " << sigma;
    }
  // Noiseless: what is left of the object's spectrum out there reads as noise; below the noise above here.
  for (TrajectoryKind t : {TrajectoryKind::GoldenAngle, TrajectoryKind::Cartesian})
    EXPECT_LT(recon::estimateNoiseLevel(simulated(t, 0), 0).variance, 0.5 * 2 * 0.03 * 0.03) << toString(t);
}

// Cartesian data also have a calibration matrix, whose Marchenko-Pastur estimate does not read the object's
// spectrum as noise: noiseless data give ~0 (below 2 % of 1 % noise's variance), noisy data the noise from above
// (the object's components raise the median: up to 1.7 x the variance at 0.3 % noise, measured), fully sampled or
// accelerated with a calibration region (the box is found inside the sampled lines).
TEST(NoiseLevel, CalibrationMatrixOfCartesianData) {
  for (int accel : {1, 3}) {
    const Dataset clean = simulated(TrajectoryKind::Cartesian, 0, 128, accel);
    const recon::NoiseLevel quiet = recon::estimateNoiseLevel(clean, 0);
    EXPECT_EQ(quiet.source, "calibration matrix") << "accel " << accel;
    EXPECT_LT(quiet.variance, 0.02 * 2 * 0.01 * 0.01) << "accel " << accel;
    for (float sigma : {0.003f, 0.01f, 0.03f}) {
      const recon::NoiseLevel l = recon::estimateNoiseLevel(simulated(TrajectoryKind::Cartesian, sigma, 128, accel), 0);
      const double ratio = l.variance / (2.0 * sigma * sigma);
      EXPECT_GT(ratio, 0.85) << "accel " << accel << " sigma " << sigma << " " << l.source;
      EXPECT_LT(ratio, 2.0) << "accel " << accel << " sigma " << sigma << " " << l.source;
    }
  }
}

TEST(NoiseLevel, NoiseScansWhenTheDatasetHasThem) {
  Dataset d = simulated(TrajectoryKind::Cartesian, 0.01f);
  d.noise = CArray(Shape{100, 4});
  for (index_t i = 0; i < d.noise->size(); ++i) (*d.noise)[i] = cfloat(i % 2 ? 0.5f : -0.5f, 0.5f);
  const recon::NoiseLevel l = recon::estimateNoiseLevel(d, 0);
  EXPECT_EQ(l.source, "noise scans");
  EXPECT_EQ(l.samples, 400);
  EXPECT_DOUBLE_EQ(l.variance, 0.5);
}

// cs with the noise rule: lambda grows with the data's noise and is never below the given one (the floor);
// the fixed rule uses the given lambda.
TEST(NoiseLevel, CsLambdaRuleFollowsTheNoise) {
  auto cpu = makeCpuBackend();
  auto used = [&](float sigma, recon::LambdaRule rule) {
    const Dataset d = simulated(TrajectoryKind::GoldenAngle, sigma, 64);
    recon::ReconSettings s;
    s.method = recon::Method::Cs;
    recon::settings::applyMethodDefaults(s);
    s.iterative.lambdaRule = rule;
    s.iterative.iterations = 3;
    s.iterative.cacheDirectory = "none";
    Timings t;
    const recon::ImageSet out = recon::reconstructIterative(*cpu, d, s, t, {});
    return out.convergence["lambda_used"].get<double>();
  };
  const double quiet = used(0.01f, recon::LambdaRule::Noise), loud = used(0.1f, recon::LambdaRule::Noise);
  EXPECT_GE(quiet, 3e-4);
  EXPECT_GT(loud, 2 * quiet);
  EXPECT_DOUBLE_EQ(used(0.1f, recon::LambdaRule::Fixed), 3e-4);
}
