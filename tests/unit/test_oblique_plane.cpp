// The oblique plane of a volume (ui/model/oblique_plane.hpp) against analytic references: trilinear
// interpolation reproduces a linear ramp exactly, so the plane through a ramp f(x, y, z) = 1 + 2x + 3y + 5z is
// f at each sample's physical point; the untilted plane through a voxel centre is that axial slice; the axes
// are orthonormal. And the image tab's layouts (ui/model/hanging.hpp): their text form and the swap.
#include <gtest/gtest.h>

#include <cmath>

#include "hanging.hpp"
#include "oblique_plane.hpp"

using namespace larmor;
using namespace larmor::model;

namespace {

double rampValue(double x, double y, double z) { return 1 + 2 * x + 3 * y + 5 * z; }

RArray ramp(int nx, int ny, int nz) {
  RArray a(Shape{nx, ny, nz});
  for (int z = 0; z < nz; ++z)
    for (int y = 0; y < ny; ++y)
      for (int x = 0; x < nx; ++x) a.data()[x + nx * (y + ny * z)] = static_cast<float>(rampValue(x, y, z));
  return a;
}

double dot(const std::array<double, 3>& a, const std::array<double, 3>& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

}  // namespace

TEST(ObliquePlane, AxesAreOrthonormalAndFollowTheAngles) {
  const ObliqueAxes a = obliqueAxes({{0, 0, 0}, 25, -40});
  for (const auto* p : {&a.u, &a.v, &a.n}) EXPECT_NEAR(dot(*p, *p), 1.0, 1e-12);
  EXPECT_NEAR(dot(a.u, a.v), 0.0, 1e-12);
  EXPECT_NEAR(dot(a.u, a.n), 0.0, 1e-12);
  EXPECT_NEAR(dot(a.v, a.n), 0.0, 1e-12);
  const ObliqueAxes t = obliqueAxes({{0, 0, 0}, 90, 0});  // tilted a quarter turn: the coronal plane
  EXPECT_NEAR(t.v[2], 1.0, 1e-12);
  EXPECT_NEAR(t.n[1], -1.0, 1e-12);
  const ObliqueAxes s = obliqueAxes({{0, 0, 0}, 0, 90});  // spun a quarter turn: the sagittal plane
  EXPECT_NEAR(s.u[2], -1.0, 1e-12);
  EXPECT_NEAR(s.n[0], 1.0, 1e-12);
}

TEST(ObliquePlane, TrilinearIsExactOnARampAndZeroOutside) {
  const RArray r = ramp(5, 4, 3);
  EXPECT_NEAR(trilinear(r, 1.25, 2.5, 0.75), rampValue(1.25, 2.5, 0.75), 1e-5);
  EXPECT_NEAR(trilinear(r, 4, 3, 2), rampValue(4, 3, 2), 1e-5);  // the last voxel's centre
  EXPECT_EQ(trilinear(r, 4.5, 1, 1), 0.0);
  EXPECT_EQ(trilinear(r, 1, -0.2, 1), 0.0);
}

TEST(ObliquePlane, UntiltedPlaneIsTheAxialSlice) {
  const RArray r = ramp(6, 5, 4);
  const std::array<double, 3> sp{1, 1, 2.5};
  const ObliquePlane p{{2.5, 2, 3}, 0, 0};  // centre between x = 2 and 3: an even picture lands on voxel centres
  const RArray pic = resampleOblique(r, sp, p, 6, 5, 1.0);
  for (int b = 0; b < 5; ++b)
    for (int a = 0; a < 6; ++a) EXPECT_NEAR(pic.data()[a + 6 * b], rampValue(a, b, 3), 1e-5) << a << " " << b;
}

TEST(ObliquePlane, TiltedPlaneThroughARampIsTheRampAtEachPoint) {
  const RArray r = ramp(16, 14, 12);
  const std::array<double, 3> sp{0.8, 1.1, 2.0};  // anisotropic: the angles are in mm, not in voxels
  const ObliquePlane p{{7.5, 6.2, 5.4}, 30, -20};
  const int nu = 21, nv = 17;
  const double h = 0.7;
  const RArray pic = resampleOblique(r, sp, p, nu, nv, h);
  const ObliqueAxes ax = obliqueAxes(p);
  int inside = 0;
  for (int b = 0; b < nv; ++b)
    for (int a = 0; a < nu; ++a) {
      // The analytic point: centre (mm) plus the in-plane offsets, back in voxel coordinates.
      std::array<double, 3> q{};
      for (std::size_t k = 0; k < 3; ++k)
        q[k] = (p.centre[k] * sp[k] + (a - 10) * h * ax.u[k] + (b - 8) * h * ax.v[k]) / sp[k];
      const bool in = q[0] >= 0 && q[0] <= 15 && q[1] >= 0 && q[1] <= 13 && q[2] >= 0 && q[2] <= 11;
      inside += in;
      EXPECT_NEAR(pic.data()[a + nu * b], in ? rampValue(q[0], q[1], q[2]) : 0.0, 1e-4) << a << " " << b;
    }
  EXPECT_GT(inside, nu * nv / 2);
  // The plane's normal: every sample's point lies in it.
  const auto c = obliquePoint(p, sp, nu, nv, h, 3, 11);
  double off = 0;
  for (std::size_t k = 0; k < 3; ++k) off += (c[k] - p.centre[k]) * sp[k] * ax.n[k];
  EXPECT_NEAR(off, 0.0, 1e-12);
}

TEST(ObliquePlane, PictureHoldsTheWholeVolume) {
  EXPECT_DOUBLE_EQ(obliqueStep({1.5, 0.5, 2}), 0.5);
  EXPECT_EQ(obliqueSide(Shape{10, 10, 10}, {1, 1, 1}), 18);  // ceil(10 sqrt 3)
}

TEST(Hanging, TextFormRoundTripsAndBadTextIsTheDefault) {
  Hanging h;
  EXPECT_EQ(toString(h), "2x2:axial,coronal,sagittal,volume");
  h.layout = PaneLayout::OneByTwo;
  h = withPane(h, 1, PaneView::Oblique);
  EXPECT_EQ(toString(h), "1x2:axial,oblique,sagittal,volume");
  EXPECT_EQ(hangingFromString(toString(h)), h);
  for (const char* bad : {"", "3x3:axial,coronal,sagittal,volume", "1x1:axial,axial,sagittal,volume", "1x1:axial,coronal",
                          "2x2:axial,coronal,sagittal,fish"})
    EXPECT_EQ(hangingFromString(bad), Hanging{}) << bad;
}

TEST(Hanging, PuttingAViewInAPaneSwapsIt) {
  const Hanging h = withPane(Hanging{}, 0, PaneView::Sagittal);
  EXPECT_EQ(h.panes[0], PaneView::Sagittal);
  EXPECT_EQ(h.panes[2], PaneView::Axial);
  EXPECT_EQ(paneCount(PaneLayout::One), 1);
  EXPECT_EQ(paneCount(PaneLayout::OneByTwo), 2);
  EXPECT_EQ(paneRows(PaneLayout::OneByTwo), 1);
  EXPECT_EQ(paneCount(PaneLayout::TwoByTwo), 4);
}
