// The mean magnitude in a rectangle (time_curve.hpp).
#include "time_curve.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace larmor::model {

double roiMean(const CArray& image, PlaneRoi roi) {
  const Shape& s = image.shape();
  const index_t nx = s[0], ny = s[1], nz = s[2] * s[4];
  const index_t x0 = std::max<index_t>(0, std::min(roi.x0, roi.x1)), x1 = std::min<index_t>(nx - 1, std::max(roi.x0, roi.x1));
  const index_t y0 = std::max<index_t>(0, std::min(roi.y0, roi.y1)), y1 = std::min<index_t>(ny - 1, std::max(roi.y0, roi.y1));
  if (x0 > x1 || y0 > y1 || roi.z < 0 || roi.z >= nz) return std::numeric_limits<double>::quiet_NaN();
  // [x, y, z, 1, slices] is stored x fastest; plane k of the stack starts at k nx ny (z then slices).
  const cfloat* plane = image.data() + static_cast<index_t>(roi.z) * nx * ny;
  double sum = 0;
  for (index_t y = y0; y <= y1; ++y)
    for (index_t x = x0; x <= x1; ++x) sum += std::abs(plane[y * nx + x]);
  return sum / static_cast<double>((x1 - x0 + 1) * (y1 - y0 + 1));
}

}  // namespace larmor::model
