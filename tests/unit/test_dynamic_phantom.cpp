// The dynamic phantom (phantom/dynamic.hpp): frame 0 is the static phantom; the frames differ where the motion
// is (the beating ellipse, the breathing shift) and agree elsewhere; the wash-in rises as 1 - exp(-t/tau) after
// its delay; golden-angle spokes continue across frames as one sequence, radial ones interleave; Cartesian
// frames shift their lattice; each frame's k-space is the analytic transform of its own object; and the
// single-frame simulator is unchanged (statistics of two simulations recorded before the series existed).
#include <gtest/gtest.h>

#include <cmath>

#include "larmor/phantom/coils.hpp"
#include "larmor/phantom/dynamic.hpp"
#include "larmor/phantom/phantom.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/traj/radial.hpp"
#include "support/expect_error.hpp"

using namespace larmor;
using namespace larmor::phantom;
using larmor::test::expectError;

namespace {

SimulateSettings golden(index_t n, int coils, index_t frames, index_t k) {
  SimulateSettings s;
  s.matrix[0] = s.matrix[1] = n;
  s.coils = coils;
  s.trajectory = TrajectoryKind::GoldenAngle;
  s.frames = frames;
  s.spokesPerFrame = k;
  return s;
}

DynamicModel only(bool beat, bool breath, bool wash) {
  DynamicModel m;
  if (!beat) m.beatAmplitude = 0;
  if (!breath) m.breathShiftPixels = 0;
  if (!wash) m.washInPeak = 0;
  return m;
}

struct Stats {
  double re = 0, im = 0, energy = 0;
};
Stats stats(const CArray& k) {
  Stats s;
  for (index_t i = 0; i < k.size(); ++i) {
    s.re += k[i].real(), s.im += k[i].imag();
    s.energy += std::norm(cdouble(k[i]));
  }
  return s;
}

// Reference pixel (x, y) of a [n, n, 1, 1, 1] reference.
float pixel(const Dataset& d, index_t x, index_t y) { return (*d.reference)[x + d.reference->shape()[0] * y].real(); }

}  // namespace

// Recorded with larmor-cli simulate (the same settings) before the dynamic phantom existed: single-frame output is
// unchanged (the files were byte-identical afterwards; these sums allow for another libm's last bits).
TEST(DynamicPhantom, SingleFrameSimulateUnchanged) {
  SimulateSettings c;
  c.matrix[0] = c.matrix[1] = 64;
  c.coils = 4, c.accel = 2, c.acs = 12, c.noiseSigma = 0.01f;
  const Dataset cart = simulate(c);
  const Stats a = stats(cart.kspace);
  EXPECT_NEAR(a.re, -0.17610537723521702, 1e-4);
  EXPECT_NEAR(a.im, 1.3655877804849297, 1e-4);
  EXPECT_NEAR(a.energy, 164.78915540119746, 1e-6 * 164.8);
  EXPECT_NEAR(std::abs(cdouble(cart.kspace[12345]) - cdouble(-0.025875186547636986, 0.20411725342273712)), 0, 1e-6);

  SimulateSettings g = golden(64, 4, 1, 0);
  g.spokes = 50, g.noiseSigma = 0.01f;
  const Dataset gold = simulate(g);
  const Stats b = stats(gold.kspace);
  EXPECT_NEAR(b.re, 16.134298814067733, 1e-4);
  EXPECT_NEAR(b.im, -62.89248111759662, 1e-4);
  EXPECT_NEAR(b.energy, 5365.667019691228, 1e-6 * 5365.7);
  EXPECT_NEAR(std::abs(cdouble(gold.kspace[12345]) - cdouble(-0.09058592468500137, -0.1805698722600937)), 0, 1e-6);
  EXPECT_FALSE(toJson(g).contains("frames"));  // the file's larmor_simulator parameter as before
}

TEST(DynamicPhantom, FrameZeroIsTheStaticPhantom) {
  const auto a = dynamicEllipses(DynamicModel{}, 0, 64);
  const auto b = sheppLogan2DEllipses();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_DOUBLE_EQ(a[i].value, b[i].value);
    EXPECT_DOUBLE_EQ(a[i].cx, b[i].cx);
    EXPECT_DOUBLE_EQ(a[i].cy, b[i].cy);
    EXPECT_DOUBLE_EQ(a[i].a, b[i].a);
    EXPECT_DOUBLE_EQ(a[i].b, b[i].b);
  }
}

// Beating alone: the references differ inside the beating ellipse's largest extent and agree exactly outside.
TEST(DynamicPhantom, FramesDifferOnlyWhereTheBeatingEllipseIs) {
  const index_t n = 64;
  const auto frames = simulateSeries(golden(n, 1, 2, 4), only(true, false, false));
  ASSERT_EQ(frames.size(), 2u);
  const Ellipse e = sheppLogan2DEllipses()[kBeatingEllipse];
  const double reach = 1.25 * std::max(e.a, e.b) + 1.0 / n;  // beat 1.2 plus a pixel
  index_t inside = 0, changed = 0;
  for (index_t y = 0; y < n; ++y)
    for (index_t x = 0; x < n; ++x) {
      const double rx = static_cast<double>(x - n / 2) / n, ry = static_cast<double>(y - n / 2) / n;
      const bool near = std::hypot(rx - e.cx, ry - e.cy) <= reach;
      const float d = std::fabs(pixel(frames[1], x, y) - pixel(frames[0], x, y));
      if (!near) {
        EXPECT_EQ(d, 0.f) << "pixel " << x << ", " << y << " changed away from the beating ellipse";
      } else {
        inside += 1;
        changed += d > 0.01f ? 1 : 0;
      }
    }
  EXPECT_GT(changed, 20) << "of " << inside;  // radii 1.2x: a ring of the ventricle turns to brain
}

// Breathing alone, a quarter period in: the whole object moves 3 pixels along y.
TEST(DynamicPhantom, BreathingShiftsTheObjectAlongY) {
  const index_t n = 64;
  DynamicModel m = only(false, true, false);
  m.breathPeriod = 4, m.breathShiftPixels = 3;
  EXPECT_NEAR(breathShift(m, 1, n), 3.0 / n, 1e-15);
  const auto frames = simulateSeries(golden(n, 1, 2, 4), m);
  index_t off = 0;
  double moved = 0;
  for (index_t y = 3; y < n; ++y)
    for (index_t x = 0; x < n; ++x) {
      off += std::fabs(pixel(frames[1], x, y) - pixel(frames[0], x, y - 3)) > 1e-4f ? 1 : 0;
      moved += std::fabs(pixel(frames[1], x, y) - pixel(frames[0], x, y));
    }
  EXPECT_LE(off, 4);  // sub-samples exactly on an edge may round either way
  EXPECT_GT(moved, 10.0);
}

TEST(DynamicPhantom, WashInRisesAfterItsDelay) {
  DynamicModel m = only(false, false, true);
  m.washInDelay = 1, m.washInTau = 2, m.washInPeak = 0.5;
  EXPECT_EQ(washIn(m, 0), 0.0);
  EXPECT_EQ(washIn(m, 1), 0.0);
  EXPECT_NEAR(washIn(m, 3), 1 - std::exp(-1.0), 1e-15);
  for (int f = 1; f < 12; ++f) EXPECT_GT(washIn(m, f + 1), washIn(m, f));
  EXPECT_LT(washIn(m, 40), 1.0);
  const index_t n = 64;
  const auto frames = simulateSeries(golden(n, 1, 6, 4), m);
  const Ellipse e = sheppLogan2DEllipses()[kWashInEllipse];
  const index_t cx = n / 2 + std::lround(e.cx * n), cy = n / 2 + std::lround(e.cy * n);
  for (index_t f = 0; f < 6; ++f)  // skull 1, brain -0.8, the ellipse 0.1 + 0.5 w(f)
    EXPECT_NEAR(pixel(frames[static_cast<std::size_t>(f)], cx, cy), 0.3 + 0.5 * washIn(m, static_cast<double>(f)), 1e-6);
  EXPECT_GT(pixel(frames[5], cx, cy), pixel(frames[3], cx, cy) + 0.05);
}

// Frame f holds spokes fK .. fK + K - 1 of one golden-angle sequence.
TEST(DynamicPhantom, GoldenAnglesContinueAcrossFrames) {
  const index_t n = 32, k = 5, frames = 3;
  const auto series = simulateSeries(golden(n, 2, frames, k));
  const RArray all = traj::radial2D(2 * n, frames * k, n, traj::RadialOrder::GoldenAngle).k;
  for (index_t f = 0; f < frames; ++f) {
    const RArray& t = series[static_cast<std::size_t>(f)].trajectory;
    ASSERT_EQ(t.shape(), (Shape{3, 2 * n, k}));
    for (index_t i = 0; i < t.size(); ++i) ASSERT_EQ(t[i], all[i + t.size() * f]) << "frame " << f;
    // The first spoke's angle: (fK) x 111.246 degrees.
    const float* last = t.data() + 3 * (2 * n - 1);
    const double deg = std::fmod(static_cast<double>(f * k) * traj::kGoldenAngleDeg, 360.0);
    double got = std::atan2(last[1], last[0]) * 180 / std::acos(-1.0);
    if (got < 0) got += 360;
    EXPECT_NEAR(got, deg, 1e-3) << "frame " << f;
  }
}

TEST(DynamicPhantom, RadialFramesInterleave) {
  SimulateSettings s = golden(32, 1, 3, 4);
  s.trajectory = TrajectoryKind::Radial;
  const auto series = simulateSeries(s);
  const RArray all = traj::radial2D(64, 12, 32, traj::RadialOrder::Linear180).k;
  for (index_t f = 0; f < 3; ++f)
    for (index_t p = 0; p < 4; ++p)
      for (index_t i = 0; i < 3 * 64; ++i)
        ASSERT_EQ(series[static_cast<std::size_t>(f)].trajectory[i + 3 * 64 * p], all[i + 3 * 64 * (f + 3 * p)]);
}

// Each frame's k-space is the analytic multi-coil transform of its own object, scaled by sqrt(N0 N1).
TEST(DynamicPhantom, FrameKspaceIsItsObjectsTransform) {
  const index_t n = 32;
  const DynamicModel m;
  const auto series = simulateSeries(golden(n, 3, 4, 3), m);
  const CoilModel coils = makeCoilModel(3, 2);
  for (index_t f : {0, 3}) {
    const Dataset& d = series[static_cast<std::size_t>(f)];
    EXPECT_NO_THROW(d.validate());
    const Phantom ph(dynamicEllipses(m, static_cast<double>(f), n));
    const index_t samples = d.trajectory.size() / 3;
    for (index_t j : {index_t{0}, samples / 2 + 7, samples - 1}) {
      const std::vector<cdouble> want =
          multiCoilKspace(ph, coils, {{d.trajectory[3 * j], d.trajectory[3 * j + 1], 0.0}});
      for (int c = 0; c < 3; ++c)
        EXPECT_NEAR(std::abs(cdouble(d.kspace[j + samples * c]) - want[static_cast<std::size_t>(c)] * double(n)), 0,
                    1e-4 * std::abs(want[static_cast<std::size_t>(c)] * double(n)) + 1e-6);
    }
  }
  // The shared true coil maps, the same in every frame.
  ASSERT_TRUE(series[0].coilMaps && series[3].coilMaps);
  EXPECT_EQ(series[0].coilMaps->shape(), (Shape{n, n, 1, 3, 1}));
  for (index_t i = 0; i < series[0].coilMaps->size(); ++i) ASSERT_EQ((*series[0].coilMaps)[i], (*series[3].coilMaps)[i]);
}

// Cartesian frames: the R-lattice shifted by one line per frame, the ACS block in every frame.
TEST(DynamicPhantom, CartesianFramesShiftTheirLattice) {
  SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 32;
  s.coils = 2, s.accel = 4, s.acs = 6, s.frames = 5;
  const auto series = simulateSeries(s);
  ASSERT_EQ(series.size(), 5u);
  for (index_t f = 0; f < 5; ++f) {
    const Dataset& d = series[static_cast<std::size_t>(f)];
    EXPECT_NO_THROW(d.validate());
    for (index_t j = 0; j < 32; ++j) {
      const bool acs = j >= 16 - 3 && j < 16 + 3, lattice = ((j - 16 - f) % 4 + 4) % 4 == 0;
      EXPECT_EQ(d.calibration[j] != 0, acs) << "frame " << f << " line " << j;
      EXPECT_EQ(d.sampled[j] != 0, acs || lattice) << "frame " << f << " line " << j;
      const cfloat v = d.kspace[64 * j + 5];  // a sample of coil 0 on line j (readout 64)
      if (!d.sampled[j]) EXPECT_EQ(v, cfloat(0));
    }
  }
  for (index_t j = 0; j < 32; ++j) EXPECT_EQ(series[0].sampled[j], series[4].sampled[j]);  // period R
}

TEST(DynamicPhantom, NoiseIsSeededPerFrame) {
  SimulateSettings s = golden(16, 2, 2, 3);
  s.noiseSigma = 0.1f;
  DynamicModel still = only(false, false, false);
  const auto a = simulateSeries(s, still), b = simulateSeries(s, still);
  index_t same = 0;
  for (index_t i = 0; i < a[0].kspace.size(); ++i) {
    ASSERT_EQ(a[1].kspace[i], b[1].kspace[i]);  // deterministic
    same += a[0].kspace[i] == a[1].kspace[i] ? 1 : 0;
  }
  EXPECT_EQ(same, 0);  // other spokes and other noise
}

TEST(DynamicPhantom, SpokesPerFrame) {
  EXPECT_EQ(resolvedSpokesPerFrame(golden(32, 1, 4, 0)), kDefaultSpokesPerFrame);
  SimulateSettings s = golden(32, 1, 4, 0);
  s.spokes = 40;
  EXPECT_EQ(resolvedSpokesPerFrame(s), 10);
  s.spokesPerFrame = 10;
  EXPECT_EQ(resolvedSpokesPerFrame(s), 10);
  s.spokesPerFrame = 9;
  expectError([&] { (void)resolvedSpokesPerFrame(s); }, "40 spokes are not 4 frames x 9 spokes per frame");
  s.spokesPerFrame = 0, s.spokes = 3;
  expectError([&] { (void)resolvedSpokesPerFrame(s); }, "3 spokes are fewer than 4 frames");
  EXPECT_EQ(simulateSeries(golden(16, 1, 2, 0))[1].kspace.shape()[1], kDefaultSpokesPerFrame);
}

TEST(DynamicPhantom, Errors) {
  SimulateSettings s = golden(16, 1, 2, 3);
  s.matrix[2] = 16;
  expectError([&] { (void)simulateSeries(s); }, "frames need a 2D single-slice simulation");
  s = golden(16, 1, 2, 3);
  s.slices = 2;
  expectError([&] { (void)simulateSeries(s); }, "frames need a 2D single-slice simulation");
  s = golden(16, 1, 2, 3);
  s.trajectory = TrajectoryKind::Spiral;
  expectError([&] { (void)simulateSeries(s); }, "frames support cartesian, radial and golden, not spiral");
  s = golden(16, 1, 2, 3);
  expectError([&] { (void)simulate(s); }, "2 frames are a series (phantom::simulateSeries)");
  s.frames = 0;
  expectError([&] { (void)simulateSeries(s); }, "frames must be 1 to 65536");
  DynamicModel m;
  m.washInTau = 0;
  expectError([&] { (void)simulateSeries(golden(16, 1, 2, 3), m); }, "the dynamic model needs positive periods");
}
