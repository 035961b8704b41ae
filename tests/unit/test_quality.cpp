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

