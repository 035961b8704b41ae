// The quality metrics against computations written here from their definitions, not from the engine's code:
// SSIM (Wang et al. 2004, 11x11 Gaussian window, sigma 1.5, window clipped at the borders and renormalised)
// as a direct, non-separable 2D weighted sum per pixel; the local-PSNR map at corners, edges and the inside
// as a brute-force window mean; the percent error / PSNR / fitted gain of compare() in double. A wrong window,
// constant, border rule or scale in quality/metrics.cpp fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "larmor/quality/metrics.hpp"

using namespace larmor;

namespace {

/// SSIM of one plane straight from the definition: for each pixel, Gaussian-weighted local means, variances
/// and covariance over the 11x11 window clipped to the image (weights renormalised over the clipped window).
double ssimDirect(const std::vector<double>& a, const std::vector<double>& b, index_t nx, index_t ny, double L) {
  const double c1 = (0.01 * L) * (0.01 * L), c2 = (0.03 * L) * (0.03 * L);
  double total = 0;
  for (index_t y = 0; y < ny; ++y)
    for (index_t x = 0; x < nx; ++x) {
      double ws = 0, ma = 0, mb = 0, saa = 0, sbb = 0, sab = 0;
      for (index_t dy = -5; dy <= 5; ++dy)
        for (index_t dx = -5; dx <= 5; ++dx) {
          const index_t xx = x + dx, yy = y + dy;
          if (xx < 0 || yy < 0 || xx >= nx || yy >= ny) continue;
          const double w = std::exp(-double(dx * dx + dy * dy) / (2 * 1.5 * 1.5));
          const double va = a[yy * nx + xx], vb = b[yy * nx + xx];
          ws += w, ma += w * va, mb += w * vb, saa += w * va * va, sbb += w * vb * vb, sab += w * va * vb;
        }
      ma /= ws, mb /= ws, saa /= ws, sbb /= ws, sab /= ws;
      const double va = saa - ma * ma, vb = sbb - mb * mb, cov = sab - ma * mb;
      total += ((2 * ma * mb + c1) * (2 * cov + c2)) / ((ma * ma + mb * mb + c1) * (va + vb + c2));
    }
  return total / static_cast<double>(nx * ny);
}

struct Pair {
  CArray test, ref;
};

/// A two-level object with a gradient (the reference) and a noisy, slightly blurred, phase-rotated copy.
Pair makePair(index_t nx, index_t ny, index_t planes) {
  Pair p{CArray(Shape{nx, ny, planes}), CArray(Shape{nx, ny, planes})};
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.f, 0.08f);
  for (index_t z = 0; z < planes; ++z)
    for (index_t y = 0; y < ny; ++y)
      for (index_t x = 0; x < nx; ++x) {
        const float r = ((x / 6 + y / 5 + z) % 3 == 0 ? 1.f : 0.3f) + 0.01f * float(x);
        p.ref(x, y, z) = cfloat(r, 0.f);
        p.test(x, y, z) = std::polar(0.9f * r + g(rng), 0.4f);
      }
  return p;
}

}  // namespace

TEST(QualityOracle, SsimEqualsTheDirectDefinition) {
  const index_t nx = 37, ny = 29, planes = 2;
  {
    // A plane smaller than the window along one axis (every output pixel a border case) and a single plane.
    const Pair q = makePair(9, 14, 1);
    const RArray mt = quality::magnitude(q.test), mr = quality::magnitude(q.ref);
    const auto [lo, hi] = std::minmax_element(mr.vec().begin(), mr.vec().end());
    std::vector<double> a(mt.vec().begin(), mt.vec().end()), b(mr.vec().begin(), mr.vec().end());
    EXPECT_NEAR(quality::ssim(mt, mr), ssimDirect(a, b, 9, 14, double(*hi) - double(*lo)), 1e-9);
  }
  const Pair p = makePair(nx, ny, planes);
  const RArray mt = quality::magnitude(p.test), mr = quality::magnitude(p.ref);
  // L: the reference's dynamic range (over all planes), as the metric defines it.
  const auto [lo, hi] = std::minmax_element(mr.vec().begin(), mr.vec().end());
  const double L = double(*hi) - double(*lo);
  double expected = 0;
  for (index_t z = 0; z < planes; ++z) {
    std::vector<double> a(nx * ny), b(nx * ny);
    for (index_t i = 0; i < nx * ny; ++i) a[i] = mt[z * nx * ny + i], b[i] = mr[z * nx * ny + i];
    expected += ssimDirect(a, b, nx, ny, L) / planes;
  }
  const double got = quality::ssim(mt, mr);
  std::printf("SSIM: metric %.9f, direct definition %.9f\n", got, expected);
  EXPECT_NEAR(got, expected, 1e-6);
  EXPECT_LT(expected, 0.95);  // the case is not trivially perfect
  EXPECT_GT(expected, 0.2);
  // compare() without the fitted gain gives the SSIM of the plain magnitudes.
  EXPECT_NEAR(quality::compare(p.test, p.ref, quality::CompareOptions{false}).ssim, expected, 1e-6);
  EXPECT_NEAR(quality::ssim(mr, mr), 1.0, 1e-12);
}

TEST(QualityOracle, LocalPsnrMapEqualsBruteForceAtCornersEdgesAndInside) {
  const index_t nx = 24, ny = 19, planes = 2;
  const Pair p = makePair(nx, ny, planes);
  const double scale = 1.07;
  for (int window : {1, 4, 7}) {
    const RArray map = quality::localPsnrMap(p.test, p.ref, scale, window);
    ASSERT_EQ(map.shape(), p.ref.shape());
    double peak = 0;
    for (index_t i = 0; i < p.ref.size(); ++i) peak = std::max(peak, std::abs(cdouble(p.ref[i])));
    const int h = window / 2;
    const index_t pts[][3] = {{0, 0, 0}, {nx - 1, ny - 1, 0}, {0, ny - 1, 1}, {nx - 1, 0, 1},
                              {11, 0, 0}, {0, 9, 1},           {12, 9, 0},     {5, 14, 1}};
    for (const auto& pt : pts) {
      const index_t x = pt[0], y = pt[1], z = pt[2];
      double s = 0;
      int cnt = 0;
      for (index_t yy = y - h; yy < y - h + window; ++yy)
        for (index_t xx = x - h; xx < x - h + window; ++xx) {
          if (xx < 0 || yy < 0 || xx >= nx || yy >= ny) continue;
          const double e = scale * std::abs(cdouble(p.test(xx, yy, z))) - std::abs(cdouble(p.ref(xx, yy, z)));
          s += e * e;
          ++cnt;
        }
      const double expected = std::min(100.0, 20 * std::log10(peak / std::sqrt(s / cnt)));
      EXPECT_NEAR(map(x, y, z), expected, 1e-4 * std::abs(expected))
          << "window " << window << " at (" << x << ", " << y << ", " << z << ")";
    }
  }
  // A perfect match is capped at 100 dB.
  EXPECT_EQ(quality::localPsnrMap(p.ref, p.ref, 1.0, 3)[7], 100.f);
}

// compare(): the fitted gain is the least-squares factor sum|t||r| / sum|t|^2, reported; the percent error and
// PSNR are those of the scaled magnitudes (in double here).
TEST(QualityOracle, CompareReportsTheFittedGainAndItsErrors) {
  const Pair p = makePair(20, 20, 1);
  double tr = 0, tt = 0, rr = 0, peak = 0;
  for (index_t i = 0; i < p.ref.size(); ++i) {
    const double t = std::abs(cdouble(p.test[i])), r = std::abs(cdouble(p.ref[i]));
    tr += t * r, tt += t * t, rr += r * r, peak = std::max(peak, r);
  }
  const double gain = tr / tt;
  double err = 0;
  for (index_t i = 0; i < p.ref.size(); ++i) {
    const double e = gain * std::abs(cdouble(p.test[i])) - std::abs(cdouble(p.ref[i]));
    err += e * e;
  }
  const auto m = quality::compare(p.test, p.ref);
  EXPECT_NEAR(m.scale, gain, 1e-9 * gain);
  EXPECT_NEAR(m.percentError, 100 * std::sqrt(err / rr), 1e-7);
  EXPECT_NEAR(m.psnrDb, 20 * std::log10(peak / std::sqrt(err / double(p.ref.size()))), 1e-7);
}
