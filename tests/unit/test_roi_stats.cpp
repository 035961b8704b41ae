// The reading tools' measurements (ui/model/roi_stats.hpp): region statistics against a direct computation,
// the shapes' voxels, the area from the voxel size, the distance in mm, the angle in degrees,
// the freehand outline (even-odd rule, shoelace area) and the time curve of an ellipse.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "roi_stats.hpp"

using namespace larmor;
using namespace larmor::model;

namespace {

/// [8, 6, 2, 1, 1]: voxel (x, y, z) = (x + 10 y + 100 z) e^{i (x - y)}, so |x| = x + 10 y + 100 z.
CArray ramp() {
  CArray a(Shape{8, 6, 2, 1, 1});
  for (int z = 0; z < 2; ++z)
    for (int y = 0; y < 6; ++y)
      for (int x = 0; x < 8; ++x) a.data()[x + 8 * (y + 6 * z)] = std::polar(float(x + 10 * y + 100 * z), float(x - y));
  return a;
}

}  // namespace

TEST(RoiStats, RectangleMatchesADirectComputation) {
  const PlaneRoi roi{1, 2, 3, 4, 1};  // x 1..3, y 2..4 in plane 1
  const RoiStats s = roiStatistics(ramp(), roi, {0.5, 2.0, 3.0});
  std::vector<double> v;
  for (int y = 2; y <= 4; ++y)
    for (int x = 1; x <= 3; ++x) v.push_back(x + 10 * y + 100);
  double mean = 0, ss = 0;
  for (double a : v) mean += a / v.size();
  for (double a : v) ss += (a - mean) * (a - mean);
  ASSERT_EQ(s.voxels, 9u);
  EXPECT_NEAR(s.mean, mean, 1e-4);
  EXPECT_NEAR(s.sd, std::sqrt(ss / 8), 1e-4);
  EXPECT_NEAR(s.min, 121, 1e-4);
  EXPECT_NEAR(s.max, 143, 1e-4);
  EXPECT_DOUBLE_EQ(s.areaMm2, 9 * 0.5 * 2.0);  // the voxel size in the plane, not the slice thickness
}

TEST(RoiStats, EllipseIsInscribedInItsRectangle) {
  const PlaneRoi e{0, 0, 4, 4, 0, RoiShape::Ellipse, {}};  // a disc of radius 2.5 voxels about (2, 2)
  int n = 0;
  for (int y = 0; y <= 4; ++y)
    for (int x = 0; x <= 4; ++x) n += roiContains(e, x, y);
  EXPECT_EQ(n, 21);  // the 5x5 square without its 4 corners
  EXPECT_FALSE(roiContains(e, 0, 0));
  EXPECT_TRUE(roiContains(e, 2, 0));
  EXPECT_EQ(roiStatistics(ramp(), e, {1, 1, 1}).voxels, 21u);
}

TEST(RoiStats, FreehandPolygonHoldsItsInside) {
  PlaneRoi f{0, 0, 6, 4, 0, RoiShape::Freehand, {{0, 0}, {6, 0}, {0, 4}}};  // a right triangle
  EXPECT_TRUE(roiContains(f, 1, 1));
  EXPECT_FALSE(roiContains(f, 5, 3));
}

TEST(RoiStats, OutsideTheImageIsEmpty) {
  const RoiStats s = roiStatistics(ramp(), PlaneRoi{20, 20, 30, 30, 0}, {1, 1, 1});
  EXPECT_EQ(s.voxels, 0u);
  EXPECT_TRUE(std::isnan(s.mean));
  EXPECT_EQ(formatRoiStats(s), "outside the image");
  EXPECT_TRUE(std::isnan(roiMean(ramp(), PlaneRoi{0, 0, 1, 1, 5})));
}

TEST(RoiStats, FormatNamesEveryFigure) {
  const std::string t = formatRoiStats(roiStatistics(ramp(), PlaneRoi{0, 0, 1, 0, 0}, {1.5, 1.5, 1}));
  EXPECT_EQ(t, "mean 0.5, SD 0.707, min 0, max 1, area 4.5 mm\u00b2 (2 voxels)");
}

TEST(RoiStats, DistanceInMillimetres) {
  EXPECT_DOUBLE_EQ(distanceMm({0, 0, 0}, {3, 4, 0}, {1, 1, 1}), 5.0);
  EXPECT_DOUBLE_EQ(distanceMm({1, 1, 0}, {4, 5, 0}, {2, 1.5, 3}), std::sqrt(36.0 + 36.0));
  EXPECT_DOUBLE_EQ(distanceMm({0, 0, 0}, {0, 0, 2}, {1, 1, 3}), 6.0);
}

TEST(RoiStats, TimeCurveMeanFollowsTheShape) {
  const PlaneRoi rect{0, 0, 4, 4, 0};
  PlaneRoi ell = rect;
  ell.shape = RoiShape::Ellipse;
  // The ellipse drops the corners (0,0), (4,0), (0,4), (4,4): |x| = 0, 4, 40, 44, mean 22 = the square's mean.
  EXPECT_NEAR(roiMean(ramp(), rect), 22.0, 1e-5);
  EXPECT_NEAR(roiMean(ramp(), ell), 22.0, 1e-5);
  const PlaneRoi corner{0, 0, 1, 1, 0, RoiShape::Ellipse, {}};
  EXPECT_NEAR(roiMean(ramp(), corner), (0 + 1 + 10 + 11) / 4.0, 1e-5);  // radius 1: all four centres inside
}

TEST(RoiStats, FreehandEvenOddRuleMatchesABruteForceCount) {
  // A concave outline (an arrow head pointing left, its notch at (4, 3)) and the voxels by the crossing count.
  const PlaneRoi f = freehandRoi({{0, 3}, {7, 0}, {4, 3}, {4, 3}, {7, 6}, {0, 3}}, 0);
  ASSERT_EQ(f.polygon.size(), 4u);  // the repeated point and the closing vertex dropped
  EXPECT_EQ(f.x0, 0);
  EXPECT_EQ(f.x1, 7);
  EXPECT_EQ(f.y0, 0);
  EXPECT_EQ(f.y1, 6);
  EXPECT_TRUE(roiContains(f, 2, 3));
  EXPECT_FALSE(roiContains(f, 5, 3));  // in the notch
  EXPECT_FALSE(roiContains(f, 6, 4));  // outside the lower barb
  std::size_t n = 0;
  double sum = 0;
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 8; ++x) {
      int crossings = 0;  // a ray along +x from the centre through the four edges
      for (std::size_t i = 0; i < 4; ++i) {
        const auto& p = f.polygon[i];
        const auto& q = f.polygon[(i + 1) % 4];
        if ((p[1] > y) != (q[1] > y) && x < double(q[0] - p[0]) * (y - p[1]) / double(q[1] - p[1]) + p[0]) ++crossings;
      }
      if (crossings % 2) ++n, sum += x + 10 * y;
    }
  const RoiStats s = roiStatistics(ramp(), f, {0.5, 2.0, 3.0});
  EXPECT_EQ(s.voxels, n);
  EXPECT_NEAR(s.mean, sum / n, 1e-4);
  EXPECT_DOUBLE_EQ(s.areaMm2, n * 0.5 * 2.0);
}

TEST(RoiStats, PolygonAreaIsTheShoelace) {
  EXPECT_DOUBLE_EQ(polygonAreaMm2({{0, 0}, {4, 0}, {4, 3}, {0, 3}}, {1, 1, 1}), 12.0);
  EXPECT_DOUBLE_EQ(polygonAreaMm2({{0, 0}, {0, 3}, {4, 3}, {4, 0}}, {0.5, 2, 9}), 12.0);  // either winding
  EXPECT_DOUBLE_EQ(polygonAreaMm2({{0, 3}, {7, 0}, {4, 3}, {7, 6}}, {1, 1, 1}), 12.0);  // two triangles of 6
  EXPECT_FALSE(insidePolygon({{0, 0}, {4, 0}}, 1, 0));  // fewer than three vertices: nothing inside
}

TEST(RoiStats, AngleIsInPhysicalSpace) {
  EXPECT_NEAR(angleDeg({2, 0, 0}, {0, 0, 0}, {0, 3, 0}, {1, 1, 1}), 90.0, 1e-12);
  EXPECT_NEAR(angleDeg({1, 0, 0}, {0, 0, 0}, {1, 1, 0}, {1, 1, 1}), 45.0, 1e-12);
  // 0.5 x 1.5 mm voxels: the "45°" of the voxel grid is atan(1.5 / 0.5) = 71.57° in the patient.
  EXPECT_NEAR(angleDeg({1, 0, 0}, {0, 0, 0}, {1, 1, 0}, {0.5, 1.5, 1}), std::atan(3.0) * 180 / std::numbers::pi, 1e-12);
  EXPECT_NEAR(angleDeg({5, 5, 0}, {3, 2, 0}, {1, 5, 0}, {1, 1, 1}), 2 * std::atan(2.0 / 3.0) * 180 / std::numbers::pi, 1e-12);
  EXPECT_NEAR(angleDeg({1, 0, 0}, {0, 0, 0}, {-4, 0, 0}, {1, 1, 1}), 180.0, 1e-12);
  EXPECT_TRUE(std::isnan(angleDeg({1, 1, 0}, {1, 1, 0}, {2, 2, 0}, {1, 1, 1})));
}
