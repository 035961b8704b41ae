// Density compensation: the analytic ramp against its geometry, Pipe-Menon's absolute scale on uniform
// lattices, ramp and Pipe-Menon agreeing away from the centre of radial k-space, sums that equal the
// sampled area (volume), and the cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "larmor/backend/registry.hpp"
#include "larmor/traj/dcf.hpp"
#include "larmor/traj/radial.hpp"
#include "larmor/traj/spiral.hpp"

using namespace larmor;
using namespace larmor::traj;

namespace {

std::shared_ptr<Backend> cpu() { return BackendRegistry::instance().select("cpu").backend; }

double sum(const RArray& w) {
  double s = 0;
  for (index_t i = 0; i < w.size(); ++i) s += w[i];
  return s;
}

/// A Cartesian lattice of spacing `step` over [-N/2, N/2)^2: the density is 1/step^2 per (cycles/FOV)^2.
RArray lattice2D(index_t n, double step) {
  const index_t per = static_cast<index_t>(std::llround(static_cast<double>(n) / step));
  RArray k(Shape{3, per, per}, 0.f);
  for (index_t b = 0; b < per; ++b)
    for (index_t a = 0; a < per; ++a) {
      k(0, a, b) = static_cast<float>(-0.5 * static_cast<double>(n) + step * static_cast<double>(a));
      k(1, a, b) = static_cast<float>(-0.5 * static_cast<double>(n) + step * static_cast<double>(b));
    }
  return k;
}

}  // namespace

TEST(Dcf, RampMatchesRingAreas) {
  const index_t n = 32, readout = 64, spokes = 50;
  const Trajectory t = radial2D(readout, spokes, n, RadialOrder::Linear180);
  const RArray w = rampWeights(t.k, 2);
  ASSERT_EQ(w.size(), readout * spokes);
  const double dk = 0.5;
  // |k| = 5: the ring of width dk shared by 2P rays; k = 0: the disc of radius dk/2 shared by P spokes.
  EXPECT_NEAR(w[(readout / 2 + 10) + readout * 7], 2 * std::numbers::pi * 5 * dk / (2 * spokes), 1e-6);
  EXPECT_NEAR(w[readout / 2 + readout * 3], std::numbers::pi * dk * dk / (4 * spokes), 1e-7);
  // The rings tile the disc of radius N/2 (plus the half ring of the last sample, minus the missing
  // +N/2 sample): the weights add up to its area within a percent.
  EXPECT_NEAR(sum(w) / (std::numbers::pi * 16 * 16), 1.0, 0.01);
}

TEST(Dcf, Ramp3DSumsToTheBallVolume) {
  const index_t n = 16;
  const Trajectory t = radial3D(32, 600, n);
  const RArray w = rampWeights(t.k, 3);
  EXPECT_NEAR(sum(w) / (4.0 / 3 * std::numbers::pi * 8 * 8 * 8), 1.0, 0.02);
}

TEST(Dcf, RampNeedsSpokes) {
  SpiralDesign d;
  d.matrix = 16;
  try {
    rampWeights(spiral2D(d).k, 2);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ramp DCF needs radial spokes"), std::string::npos) << e.what();
  }
}

// Absolute scale: on a uniform lattice of spacing 1/2 Pipe-Menon's weights are 1/4, on one of spacing
// 1/3, 1/9 — (cycles/FOV)^2 per sample, as the ramp's. (At spacing 1 the grid-sampled kernel aliases and
// the weights come out about 9% low for W = 4, sigma = 2: see dcf.hpp.)
TEST(Dcf, PipeMenonScaleOnLattices) {
  auto be = cpu();
  for (double step : {0.5, 1.0 / 3}) {
    const RArray k = lattice2D(24, step);
    SCOPED_TRACE(step);
    const index_t image[3] = {24, 24, 1};
    NufftOptions o;
    const RArray w = pipeMenonWeights(*be, geometry(k, 2, image), 10, o);
    const auto [lo, hi] = std::minmax_element(w.data(), w.data() + w.size());
    EXPECT_NEAR(*lo, step * step, 0.01 * step * step);
    EXPECT_NEAR(*hi, step * step, 0.01 * step * step);
  }
}

// Ramp and Pipe-Menon describe the same density for radial sampling away from the centre (where the
// ramp's ring model is exact and Pipe-Menon's kernel smoothing does not reach k = 0) and from the edge
// (where Pipe-Menon raises the last samples, which have neighbours on one side only). Measured for
// linear 180-degree radial, 64 matrix, Nyquist spokes, W = 4, sigma = 2, 15 iterations: mean ratio
// 0.999, worst sample 2.3% off for 0.1 < |k|/kmax < 0.7. For golden-angle spokes the two split the area
// differently between neighbouring spokes (the ramp by exact angular sectors, Pipe-Menon smoothed over
// its kernel, 2 cycles/FOV wide, wider than the gaps), so only the total over the annulus is compared:
// measured ratio 0.993 (mean of per-sample ratios 0.995, single samples up to 47% apart).
TEST(Dcf, RampAndPipeMenonAgreeForRadial) {
  auto be = cpu();
  const index_t n = 64;
  const index_t image[3] = {n, n, 1};
  for (RadialOrder order : {RadialOrder::Linear180, RadialOrder::GoldenAngle}) {
    const Trajectory t = radial2D(2 * n, nyquistSpokes(n, 2), n, order);
    const RArray ramp = rampWeights(t.k, 2);
    const RArray pm = pipeMenonWeights(*be, geometry(t.k, 2, image, t.radial), 15, NufftOptions{});
    double worst = 0, meanRatio = 0, sumPm = 0, sumRamp = 0;
    index_t count = 0;
    for (index_t j = 0; j < t.samples(); ++j) {
      const double r = std::hypot(t.k[3 * j], t.k[3 * j + 1]);
      if (r < 0.1 * 32 || r > 0.7 * 32) continue;
      const double ratio = pm[j] / ramp[j];
      worst = std::max(worst, std::abs(ratio - 1));
      meanRatio += ratio;
      sumPm += pm[j];
      sumRamp += ramp[j];
      ++count;
    }
    meanRatio /= static_cast<double>(count);
    const bool golden = order == RadialOrder::GoldenAngle;
    std::printf("Pipe-Menon / ramp, %s, 0.1 kmax < |k| < 0.7 kmax: mean %.4f, worst deviation %.3f, sums %.4f\n",
                golden ? "golden angle" : "linear 180", meanRatio, worst, sumPm / sumRamp);
    EXPECT_NEAR(sumPm / sumRamp, 1.0, 0.02);
    if (!golden) {
      EXPECT_NEAR(meanRatio, 1.0, 0.01);
      EXPECT_LT(worst, 0.05);
    }
  }
}

// Stacks are weighted separably: the plane's 2D weights times the kz spacing, for both methods.
TEST(Dcf, StacksAreSeparable) {
  auto be = cpu();
  clearDcfCache();
  SpiralDesign d;
  d.matrix = 32;
  d.interleaves = 4;
  const Trajectory plane = spiral2D(d);
  const Trajectory t = stackOfSpirals(d, 4);
  const index_t image2[3] = {32, 32, 1}, image3[3] = {32, 32, 4};
  DcfOptions o;
  const RArray w2 = densityCompensation(*be, geometry(plane.k, 2, image2), o);
  const RArray w3 = densityCompensation(*be, geometry(t.k, 3, image3), o);
  const index_t m = plane.samples();
  ASSERT_EQ(w3.size(), 4 * m);
  for (index_t p = 0; p < 4; ++p)
    for (index_t j = 0; j < m; ++j) EXPECT_EQ(w3[j + m * p], w2[j]);
  // A stack of stars takes the ramp of its plane.
  const Trajectory star = radial2D(32, 25, 16, RadialOrder::GoldenAngle);
  RArray stars(Shape{3, 32, 75});
  for (index_t p = 0; p < 3; ++p)
    for (index_t s = 0; s < 25; ++s)
      for (index_t i = 0; i < 32; ++i) {
        stars(0, i, s + 25 * p) = star.k(0, i, s);
        stars(1, i, s + 25 * p) = star.k(1, i, s);
        stars(2, i, s + 25 * p) = static_cast<float>(2 * p) - 2.f;  // kz spacing 2
      }
  o.method = DcfMethod::Ramp;
  const index_t image3s[3] = {16, 16, 6};
  const RArray ws = densityCompensation(*be, geometry(stars, 3, image3s), o);
  const RArray wr = rampWeights(star.k, 2);
  for (index_t j = 0; j < 32 * 75; ++j) EXPECT_FLOAT_EQ(ws[j], 2 * wr[j % (32 * 25)]);
  clearDcfCache();
}

TEST(Dcf, CachedPerTrajectoryAndOptions) {
  auto be = cpu();
  clearDcfCache();
  const Trajectory t = radial2D(32, 30, 16, RadialOrder::Linear180);
  const index_t image[3] = {16, 16, 1};
  const NufftGeometry g = geometry(t.k, 2, image, t.radial);
  DcfOptions o;
  o.method = DcfMethod::PipeMenon;
  const RArray a = densityCompensation(*be, g, o);
  EXPECT_EQ(dcfCacheEntries(), 1u);
  const RArray b = densityCompensation(*be, g, o);
  EXPECT_EQ(dcfCacheEntries(), 1u);
  EXPECT_EQ(a.vec(), b.vec());
  o.iterations = 3;
  const RArray c = densityCompensation(*be, g, o);
  EXPECT_EQ(dcfCacheEntries(), 2u);
  EXPECT_NE(a.vec(), c.vec());
  o.method = DcfMethod::Ramp;
  EXPECT_EQ(densityCompensation(*be, g, o).vec(), rampWeights(t.k, 2).vec());
  EXPECT_EQ(dcfCacheEntries(), 3u);
  const Trajectory t2 = radial2D(32, 31, 16, RadialOrder::Linear180);
  densityCompensation(*be, geometry(t2.k, 2, image), o);
  EXPECT_EQ(dcfCacheEntries(), 4u);
  clearDcfCache();
  EXPECT_EQ(dcfCacheEntries(), 0u);
}
