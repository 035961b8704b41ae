// Trajectory generators (radial 180/360/golden, 3D kooshball, variable-density spiral, stack of spirals)
// in cycles/FOV, the radial recogniser (TRON's RadialInfo), validation and hashing.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "larmor/traj/radial.hpp"
#include "larmor/traj/spiral.hpp"
#include "larmor/traj/trajectory.hpp"

using namespace larmor;
using namespace larmor::traj;

namespace {

void expectError(const std::function<void()>& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no error, expected one containing: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

double wrapAngle(double a) {
  a = std::fmod(a, 2 * std::numbers::pi);
  return a < 0 ? a + 2 * std::numbers::pi : a;
}

}  // namespace

TEST(Traj, Radial180Geometry) {
  const index_t n = 32, readout = 64, spokes = 50;
  const Trajectory t = radial2D(readout, spokes, n, RadialOrder::Linear180);
  EXPECT_EQ(t.kind, TrajectoryKind::Radial);
  EXPECT_EQ(t.dims, 2);
  EXPECT_EQ(t.k.shape(), (Shape{3, readout, spokes}));
  ASSERT_TRUE(t.radial);
  EXPECT_EQ(t.radial->readout, readout);
  EXPECT_EQ(t.radial->spokes, spokes);
  EXPECT_FLOAT_EQ(t.radial->kStart, -16.f);
  EXPECT_FLOAT_EQ(t.radial->kStep, 0.5f);
  for (index_t p = 0; p < spokes; ++p) {
    const double a = std::numbers::pi * static_cast<double>(p) / spokes;
    EXPECT_NEAR(t.radial->anglesRad[static_cast<std::size_t>(p)], a, 1e-6);
    // Sample R/2 at k = 0, sample 0 at -N/2 along the spoke, spacing N/R.
    EXPECT_EQ(t.k(0, readout / 2, p), 0.f);
    EXPECT_EQ(t.k(1, readout / 2, p), 0.f);
    for (index_t i = 0; i < readout; ++i) {
      const double r = (static_cast<double>(i) - readout / 2) * 0.5;
      EXPECT_NEAR(t.k(0, i, p), r * std::cos(a), 1e-5);
      EXPECT_NEAR(t.k(1, i, p), r * std::sin(a), 1e-5);
      EXPECT_EQ(t.k(2, i, p), 0.f);
    }
  }
  EXPECT_NEAR(maxRadius(t.k), 16.0, 1e-5);
}

TEST(Traj, Radial360AndGoldenAngles) {
  const Trajectory t360 = radial2D(16, 9, 8, RadialOrder::Linear360);
  for (index_t p = 0; p < 9; ++p)
    EXPECT_NEAR(t360.radial->anglesRad[static_cast<std::size_t>(p)], 2 * std::numbers::pi * p / 9.0, 1e-6);
  const Trajectory g = radial2D(16, 400, 8, RadialOrder::GoldenAngle);
  EXPECT_EQ(g.kind, TrajectoryKind::GoldenAngle);
  const double golden = kGoldenAngleDeg * std::numbers::pi / 180;
  EXPECT_NEAR(kGoldenAngleDeg, 180 * (std::sqrt(5.0) - 1) / 2, 1e-12);
  for (index_t p = 1; p < 400; ++p) {
    const double step = wrapAngle(g.radial->anglesRad[static_cast<std::size_t>(p)] -
                                  g.radial->anglesRad[static_cast<std::size_t>(p - 1)]);
    EXPECT_NEAR(step, golden, 2e-6) << p;
  }
  // Any window of consecutive golden-angle spokes covers the half circle evenly: the largest gap
  // between the 55 first directions (mod pi) is below 1.62 times the uniform gap (Winkelmann 2007).
  std::vector<double> dirs;
  for (index_t p = 0; p < 55; ++p) dirs.push_back(std::fmod(wrapAngle(g.radial->anglesRad[static_cast<std::size_t>(p)]), std::numbers::pi));
  std::sort(dirs.begin(), dirs.end());
  double gap = dirs.front() + std::numbers::pi - dirs.back();
  for (std::size_t i = 1; i < dirs.size(); ++i) gap = std::max(gap, dirs[i] - dirs[i - 1]);
  EXPECT_LT(gap, 1.62 * std::numbers::pi / 55);
}

TEST(Traj, DetectRadial) {
  for (RadialOrder o : {RadialOrder::Linear180, RadialOrder::Linear360, RadialOrder::GoldenAngle}) {
    const Trajectory t = radial2D(40, 31, 20, o);
    const auto info = detectRadial(t.k);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->readout, 40);
    EXPECT_EQ(info->spokes, 31);
    EXPECT_NEAR(info->kStart, t.radial->kStart, 1e-4);
    EXPECT_NEAR(info->kStep, t.radial->kStep, 1e-5);
    for (std::size_t p = 0; p < 31; ++p)
      EXPECT_NEAR(std::cos(info->anglesRad[p] - t.radial->anglesRad[p]), 1.0, 1e-9);
    EXPECT_TRUE(isRadialLines(t.k));
  }
  SpiralDesign sd;
  sd.matrix = 32;
  const Trajectory s = spiral2D(sd);
  EXPECT_FALSE(detectRadial(s.k));
  EXPECT_FALSE(isRadialLines(s.k));
  EXPECT_FALSE(detectRadial(radial3D(16, 20, 8).k));  // 3D
  EXPECT_TRUE(isRadialLines(radial3D(16, 20, 8).k));
}

TEST(Traj, Radial3DKooshball) {
  const index_t n = 16, readout = 32, spokes = nyquistSpokes(n, 3);
  EXPECT_EQ(spokes, std::llround(std::numbers::pi / 2 * 256));
  EXPECT_EQ(nyquistSpokes(256, 2), 402);
  const Trajectory t = radial3D(readout, spokes, n);
  EXPECT_EQ(t.kind, TrajectoryKind::Radial3D);
  EXPECT_EQ(t.dims, 3);
  EXPECT_NEAR(maxRadius(t.k), 8.0, 1e-5);
  EXPECT_NEAR(kGoldenMean2 * kGoldenMean2 * kGoldenMean2 + kGoldenMean2, 1.0, 1e-15);
  EXPECT_NEAR(kGoldenMean1, kGoldenMean2 * kGoldenMean2, 1e-15);
  // Directions (the tip of each spoke, sample 0 at -N/2) cover the sphere: z of the +direction in [0, 1),
  // and the mean of the directions' z over the hemisphere is 1/2 (uniform in z, as on a sphere).
  double meanZ = 0;
  for (index_t p = 0; p < spokes; ++p) {
    const double z = -t.k(2, 0, p) / 8.0;
    EXPECT_GE(z, -1e-6);
    EXPECT_LT(z, 1.0);
    meanZ += z;
  }
  EXPECT_NEAR(meanZ / static_cast<double>(spokes), 0.5, 0.01);
}

TEST(Traj, VariableDensitySpiral) {
  SpiralDesign d;
  d.matrix = 32;
  d.interleaves = 8;
  const Trajectory t = spiral2D(d);
  EXPECT_EQ(t.kind, TrajectoryKind::Spiral);
  const index_t readout = t.readout();
  EXPECT_EQ(readout, spiralReadout(d));
  EXPECT_EQ(t.profiles(), 8);
  // From k = 0 to exactly kmax = N/2, equal arc-length steps of at most 1/2 (the 2x oversampled readout).
  double step0 = 0;
  for (index_t i = 0; i < 8; ++i) {
    EXPECT_EQ(t.k(0, 0, i), 0.f);
    EXPECT_NEAR(std::hypot(t.k(0, readout - 1, i), t.k(1, readout - 1, i)), 16.0, 1e-4);
    for (index_t j = 1; j < readout; ++j) {
      const double step = std::hypot(t.k(0, j, i) - t.k(0, j - 1, i), t.k(1, j, i) - t.k(1, j - 1, i));
      EXPECT_LE(step, 0.5 + 1e-6);
      // Chords of equal arcs: equal where the curvature is small (|k| > 2), shorter near the centre.
      if (std::hypot(t.k(0, j, i), t.k(1, j, i)) < 2) continue;
      if (step0 == 0) step0 = step;
      EXPECT_NEAR(step, step0, 0.01 * step0) << "interleave " << i << " sample " << j;
    }
  }
  EXPECT_NEAR(maxRadius(t.k), 16.0, 1e-4);
  // Interleave i is interleave 0 rotated by 2 pi i / I.
  for (index_t j = 0; j < readout; j += 7) {
    const double a = 2 * std::numbers::pi * 3 / 8;
    EXPECT_NEAR(t.k(0, j, 3), std::cos(a) * t.k(0, j, 0) - std::sin(a) * t.k(1, j, 0), 1e-4);
    EXPECT_NEAR(t.k(1, j, 3), std::sin(a) * t.k(0, j, 0) + std::cos(a) * t.k(1, j, 0), 1e-4);
  }
  // Coverage: the design is Nyquist (1/FOV between turns) at the edge and twice that at the centre, so
  // every point of the disc is within about half a turn gap of a sample: <= 0.5 + half a readout step
  // outside, <= 0.25 + ... near the centre.
  double worstOuter = 0, worstInner = 0;
  for (double x = -15; x <= 15; x += 0.5)
    for (double y = -15; y <= 15; y += 0.5) {
      const double r = std::hypot(x, y);
      if (r > 15.5) continue;
      double best = 1e9;
      for (index_t s = 0; s < t.samples(); ++s)
        best = std::min(best, std::hypot(t.k[3 * s] - x, t.k[3 * s + 1] - y));
      (r < 4 ? worstInner : worstOuter) = std::max(r < 4 ? worstInner : worstOuter, best);
    }
  EXPECT_LT(worstOuter, 0.62);
  EXPECT_LT(worstInner, 0.45);
}

TEST(Traj, StackOfSpirals) {
  SpiralDesign d;
  d.matrix = 16;
  d.interleaves = 4;
  d.readout = 50;
  const Trajectory plane = spiral2D(d);
  const Trajectory t = stackOfSpirals(d, 5);
  EXPECT_EQ(t.kind, TrajectoryKind::StackOfSpirals);
  EXPECT_EQ(t.dims, 3);
  EXPECT_EQ(t.k.shape(), (Shape{3, 50, 20}));
  for (index_t p = 0; p < 5; ++p)
    for (index_t i = 0; i < 4; ++i)
      for (index_t j = 0; j < 50; ++j) {
        EXPECT_EQ(t.k(0, j, i + 4 * p), plane.k(0, j, i));
        EXPECT_EQ(t.k(1, j, i + 4 * p), plane.k(1, j, i));
        EXPECT_EQ(t.k(2, j, i + 4 * p), static_cast<float>(p - 2));
      }
}

TEST(Traj, DetectStack) {
  SpiralDesign d;
  d.matrix = 16;
  d.interleaves = 3;
  d.readout = 40;
  const Trajectory plane = spiral2D(d);
  const Trajectory t = stackOfSpirals(d, 6);
  const auto st = detectStack(t.k);
  ASSERT_TRUE(st);
  EXPECT_DOUBLE_EQ(st->kzSpacing, 1.0);
  EXPECT_EQ(st->plane.vec(), plane.k.vec());
  for (index_t p = 0; p < 18; ++p) EXPECT_EQ(st->profileInPlane[static_cast<std::size_t>(p)], p % 3);
  EXPECT_FALSE(detectStack(plane.k));                 // one plane: not a stack
  EXPECT_FALSE(detectStack(radial3D(16, 20, 8).k));  // kz varies along the spokes
  RArray other = t.k;
  other(0, 5, 7) += 0.5f;  // one plane differs
  EXPECT_FALSE(detectStack(other));
}

TEST(Traj, ValidateAndHash) {
  const Trajectory t = radial2D(32, 20, 16, RadialOrder::GoldenAngle);
  const index_t image[3] = {16, 16, 1};
  EXPECT_NO_THROW(validate(t.k, 2, image));
  RArray scaled = t.k;
  for (index_t i = 0; i < scaled.size(); ++i) scaled[i] *= 2 * static_cast<float>(std::numbers::pi) / 16;  // radians/pixel
  EXPECT_NO_THROW(validate(scaled, 2, image));  // |k| <= pi: inside the band, nothing to detect
  for (index_t i = 0; i < scaled.size(); ++i) scaled[i] = t.k[i] * 16;  // 1/m-like: far too large
  expectError([&] { validate(scaled, 2, image, "traj.cfl"); }, "traj.cfl: sample 0 of profile 0 has k = (-128");
  expectError([&] { validate(scaled, 2, image); }, "wrong trajectory scale?");
  RArray bad = t.k;
  bad(1, 3, 2) = std::numeric_limits<float>::infinity();
  expectError([&] { validate(bad, 2, image); }, "coordinate 1 of sample 67 is Inf");
  expectError([&] { validate(RArray(), 2, image); }, "empty");
  // kz is ignored in 2D, checked in 3D.
  RArray z = t.k;
  z(2, 0, 0) = 100.f;
  EXPECT_NO_THROW(validate(z, 2, image));
  const index_t image3[3] = {16, 16, 8};
  expectError([&] { validate(z, 3, image3); }, "16x16x8 matrix");

  EXPECT_EQ(hash(t.k), hash(radial2D(32, 20, 16, RadialOrder::GoldenAngle).k));
  EXPECT_NE(hash(t.k), hash(radial2D(32, 20, 16, RadialOrder::Linear180).k));
  RArray nudged = t.k;
  nudged[100] = std::nextafter(nudged[100], 1e9f);
  EXPECT_NE(hash(t.k), hash(nudged));
}

TEST(Traj, BadArguments) {
  expectError([] { radial2D(1, 10, 16, RadialOrder::Linear180); }, "readout");
  expectError([] { radial2D(32, 0, 16, RadialOrder::Linear180); }, "spokes");
  expectError([] { radial3D(32, 10, 1); }, "matrix");
  SpiralDesign d;
  d.interleaves = 0;
  expectError([&] { spiral2D(d); }, "interleaves");
  d = SpiralDesign{};
  d.fovEdge = 0;
  expectError([&] { spiral2D(d); }, "FOV");
  expectError([] { stackOfSpirals(SpiralDesign{}, 0); }, "partitions");
}
