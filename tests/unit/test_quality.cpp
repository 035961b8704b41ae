#include <gtest/gtest.h>

#include <cmath>

#include "larmor/quality/metrics.hpp"

using namespace larmor;

TEST(Quality, IdenticalImagesArePerfect) {
  CArray a(Shape{16, 16});
  for (index_t i = 0; i < a.size(); ++i) a[i] = cfloat(float(i % 7), 0);
  const auto m = quality::compare(a, a);
  EXPECT_NEAR(m.percentError, 0, 1e-9);
  EXPECT_TRUE(std::isinf(m.psnrDb));
  EXPECT_NEAR(m.ssim, 1.0, 1e-9);
}

TEST(Quality, LeastSquaresScaleRemovesGlobalGain) {
  // Stone et al. scale the gridding magnitude before the percent error; a pure gain is no error.
  CArray a(Shape{8, 8}), b(Shape{8, 8});
  for (index_t i = 0; i < a.size(); ++i) {
    a[i] = cfloat(float(1 + i % 5), 0);
    b[i] = 3.f * a[i] * std::polar(1.f, 0.3f);  // gain and a global phase: magnitudes compared
  }
  const auto m = quality::compare(b, a);
  EXPECT_NEAR(m.scale, 1.0 / 3.0, 1e-6);
  EXPECT_NEAR(m.percentError, 0, 1e-4);
}

TEST(Quality, PercentErrorAndPsnrFollowTheirDefinitions) {
  CArray ref(Shape{10, 10}, cfloat(2.f)), test(Shape{10, 10}, cfloat(2.f));
  ref(0, 0) = 4.f;  // peak 4
  test(0, 0) = 4.f;
  test(5, 5) = 3.f;  // one voxel off by 1
  quality::CompareOptions noScale{false};
  const auto m = quality::compare(test, ref, noScale);
  const double rmsRef = std::sqrt((99 * 4.0 + 16.0) / 100.0);
  EXPECT_NEAR(m.percentError, 100.0 * std::sqrt(1.0 / 100.0) / rmsRef, 1e-9);
  EXPECT_NEAR(m.psnrDb, 20 * std::log10(4.0 / std::sqrt(1.0 / 100.0)), 1e-9);
}

TEST(Quality, SsimDropsWithNoiseAndMapsHaveTheShape) {
  CArray ref(Shape{32, 32, 2}), test(Shape{32, 32, 2});
  for (index_t i = 0; i < ref.size(); ++i) {
    ref[i] = cfloat(float((i / 32) % 8 < 4 ? 1 : 0), 0);
    test[i] = ref[i] + cfloat(0.2f * float((i * 7919) % 13) / 13.f, 0);
  }
  const auto m = quality::compare(test, ref);
  EXPECT_LT(m.ssim, 0.99);
  EXPECT_GT(m.ssim, 0.0);
  EXPECT_EQ(quality::errorMap(test, ref, 1).shape(), ref.shape());
  const RArray lp = quality::localPsnrMap(test, ref, 1, 8);
  EXPECT_EQ(lp.shape(), ref.shape());
  EXPECT_GT(lp[100], 0.f);
}

TEST(Quality, MismatchedOrEmptyIsAnError) {
  EXPECT_THROW(quality::compare(CArray(Shape{4, 4}), CArray(Shape{4, 5})), Error);
  EXPECT_THROW(quality::compare(CArray(Shape{4, 4}), CArray(Shape{4, 4})), Error);  // all-zero reference
  CArray nan(Shape{2, 2}, cfloat(1.f));
  nan[1] = cfloat(NAN, 0);
  EXPECT_THROW(quality::compare(nan, CArray(Shape{2, 2}, cfloat(1.f))), Error);
}

namespace {
/// SSIM (Wang et al. 2004) by its definition, in float64, with no separability: at every pixel the 11 x 11
/// Gaussian window (sigma 1.5) over the taps inside the plane, renormalised by their weight sum; the mean of
/// the SSIM map over every plane. The oracle for quality::ssim's fused separable passes.
double bruteForceSsim(const RArray& t, const RArray& r, index_t nx, index_t ny) {
  double lo = r[0], hi = r[0];
  for (index_t i = 0; i < r.size(); ++i) lo = std::min(lo, double(r[i])), hi = std::max(hi, double(r[i]));
  const double L = hi - lo, c1 = (0.01 * L) * (0.01 * L), c2 = (0.03 * L) * (0.03 * L);
  const index_t planes = r.size() / (nx * ny);
  double total = 0;
  for (index_t p = 0; p < planes; ++p) {
    double s = 0;
    for (index_t y = 0; y < ny; ++y)
      for (index_t x = 0; x < nx; ++x) {
        double ws = 0, ma = 0, mb = 0, aa = 0, bb = 0, ab = 0;
        for (int j = -5; j <= 5; ++j)
          for (int i = -5; i <= 5; ++i) {
            if (x + i < 0 || x + i >= nx || y + j < 0 || y + j >= ny) continue;
            const double w = std::exp(-(i * i + j * j) / (2 * 1.5 * 1.5));
            const double a = t[p * nx * ny + (y + j) * nx + x + i], b = r[p * nx * ny + (y + j) * nx + x + i];
            ws += w, ma += w * a, mb += w * b, aa += w * a * a, bb += w * b * b, ab += w * a * b;
          }
        ma /= ws, mb /= ws, aa /= ws, bb /= ws, ab /= ws;
        s += ((2 * ma * mb + c1) * (2 * (ab - ma * mb) + c2)) / ((ma * ma + mb * mb + c1) * (aa - ma * ma + bb - mb * mb + c2));
      }
    total += s / static_cast<double>(nx * ny);
  }
  return total / static_cast<double>(planes);
}
}  // namespace

TEST(Quality, SsimMatchesTheFloat64DefinitionOnEveryPlaneAndBorder) {
  // Non-square planes smaller and larger than the window, two planes: borders on every side are exercised.
  for (const auto [nx, ny] : {std::pair<index_t, index_t>{37, 23}, {9, 14}}) {
    RArray ref(Shape{nx, ny, 2}), test(Shape{nx, ny, 2});
    for (index_t i = 0; i < ref.size(); ++i) {
      ref[i] = float(((i % nx) / 5 + (i / nx) / 3) % 4) + 0.1f * float(i % 3);
      test[i] = ref[i] + 0.3f * std::sin(0.7f * float(i)) + 0.05f * float((i * 7919) % 11);
    }
    const double want = bruteForceSsim(test, ref, nx, ny);
    EXPECT_NEAR(quality::ssim(test, ref), want, 1e-12 * std::abs(want)) << nx << "x" << ny;
    EXPECT_LT(want, 0.95);  // a test that an SSIM of 1 would not pass
  }
}
