// Region statistics and distances (roi_stats.hpp).
#include "roi_stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace larmor::model {

bool insidePolygon(const std::vector<std::array<int, 2>>& poly, double x, double y) {
  if (poly.size() < 3) return false;
  bool in = false;
  for (std::size_t i = 0, j = poly.size() - 1; i < poly.size(); j = i++) {
    const double xi = poly[i][0], yi = poly[i][1], xj = poly[j][0], yj = poly[j][1];
    if ((yi > y) != (yj > y) && x < (xj - xi) * (y - yi) / (yj - yi) + xi) in = !in;
  }
  return in;
}

double polygonAreaMm2(const std::vector<std::array<int, 2>>& poly, std::array<double, 3> spacingMm) {
  double twice = 0;
  for (std::size_t i = 0, j = poly.size() - 1; i < poly.size(); j = i++)
    twice += static_cast<double>(poly[j][0]) * poly[i][1] - static_cast<double>(poly[i][0]) * poly[j][1];
  return 0.5 * std::abs(twice) * spacingMm[0] * spacingMm[1];
}

PlaneRoi freehandRoi(const std::vector<std::array<int, 2>>& outline, int z) {
  PlaneRoi r;
  r.z = z;
  r.shape = RoiShape::Freehand;
  for (const auto& p : outline)
    if (r.polygon.empty() || r.polygon.back() != p) r.polygon.push_back(p);
  if (r.polygon.size() > 1 && r.polygon.front() == r.polygon.back()) r.polygon.pop_back();
  if (r.polygon.empty()) return r;
  r.x0 = r.x1 = r.polygon[0][0];
  r.y0 = r.y1 = r.polygon[0][1];
  for (const auto& p : r.polygon) {
    r.x0 = std::min(r.x0, p[0]);
    r.x1 = std::max(r.x1, p[0]);
    r.y0 = std::min(r.y0, p[1]);
    r.y1 = std::max(r.y1, p[1]);
  }
  return r;
}

bool roiContains(const PlaneRoi& roi, int x, int y) {
  const int x0 = std::min(roi.x0, roi.x1), x1 = std::max(roi.x0, roi.x1);
  const int y0 = std::min(roi.y0, roi.y1), y1 = std::max(roi.y0, roi.y1);
  switch (roi.shape) {
    case RoiShape::Rectangle:
      return x >= x0 && x <= x1 && y >= y0 && y <= y1;
    case RoiShape::Ellipse: {
      const double cx = 0.5 * (x0 + x1), cy = 0.5 * (y0 + y1), rx = 0.5 * (x1 - x0 + 1), ry = 0.5 * (y1 - y0 + 1);
      const double u = (x - cx) / rx, v = (y - cy) / ry;
      return u * u + v * v <= 1.0;
    }
    case RoiShape::Freehand:
      return insidePolygon(roi.polygon, x, y);
  }
  return false;
}

RoiStats roiStatistics(const CArray& image, const PlaneRoi& roi, std::array<double, 3> spacingMm) {
  const Shape& s = image.shape();
  const index_t nx = s[0], ny = s[1], nz = s[2] * s[4];
  RoiStats st;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  st.mean = st.sd = st.min = st.max = st.areaMm2 = nan;
  if (roi.z < 0 || roi.z >= nz) return st;
  const PlaneRoi box = roi.bounds();
  const cfloat* plane = image.data() + static_cast<index_t>(roi.z) * nx * ny;
  std::vector<double> v;
  for (index_t y = std::max<index_t>(0, box.y0); y <= std::min<index_t>(ny - 1, box.y1); ++y)
    for (index_t x = std::max<index_t>(0, box.x0); x <= std::min<index_t>(nx - 1, box.x1); ++x)
      if (roiContains(roi, static_cast<int>(x), static_cast<int>(y))) v.push_back(std::abs(plane[y * nx + x]));
  st.voxels = v.size();
  if (v.empty()) return st;
  double sum = 0;
  for (double a : v) sum += a;
  st.mean = sum / static_cast<double>(v.size());
  double ss = 0;
  for (double a : v) ss += (a - st.mean) * (a - st.mean);
  st.sd = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0.0;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  st.min = *lo;
  st.max = *hi;
  st.areaMm2 = static_cast<double>(v.size()) * spacingMm[0] * spacingMm[1];
  return st;
}

std::string formatRoiStats(const RoiStats& s) {
  if (s.voxels == 0) return "outside the image";
  char buf[200];
  std::snprintf(buf, sizeof buf, "mean %.4g, SD %.3g, min %.4g, max %.4g, area %.1f mm\u00b2 (%zu voxels)", s.mean, s.sd, s.min,
                s.max, s.areaMm2, s.voxels);
  return buf;
}

double distanceMm(std::array<int, 3> a, std::array<int, 3> b, std::array<double, 3> spacingMm) {
  double d2 = 0;
  for (std::size_t k = 0; k < 3; ++k) {
    const double d = (a[k] - b[k]) * spacingMm[k];
    d2 += d * d;
  }
  return std::sqrt(d2);
}

double angleDeg(std::array<int, 3> a, std::array<int, 3> vertex, std::array<int, 3> b, std::array<double, 3> spacingMm) {
  double pq = 0, pp = 0, qq = 0;
  for (std::size_t k = 0; k < 3; ++k) {
    const double p = (a[k] - vertex[k]) * spacingMm[k], q = (b[k] - vertex[k]) * spacingMm[k];
    pq += p * q;
    pp += p * p;
    qq += q * q;
  }
  if (pp == 0 || qq == 0) return std::numeric_limits<double>::quiet_NaN();
  return std::acos(std::clamp(pq / std::sqrt(pp * qq), -1.0, 1.0)) * 180.0 / 3.14159265358979323846;
}

}  // namespace larmor::model
