#pragma once
// The time-intensity curve of a series (the DCE / perfusion view): the mean magnitude of the image in a
// rectangle of one plane over the frames, c(t) = (1/|R|) sum_{(x,y) in R} |x_t(x, y, z)|, beside the truth's
// curve when the data carry one (a simulated series: each frame's rasterised object).
#include <algorithm>
#include <array>
#include <vector>

#include "larmor/array/array.hpp"

namespace larmor::model {

/// The shape of a region of interest (roi_stats.hpp says which voxels each holds).
enum class RoiShape { Rectangle, Ellipse, Freehand };

/// A region of voxels in plane z of the image's [x, y, z x slices] stack (the viewer's axial planes): the
/// rectangle x0..x1 along the image's x, y0..y1 along its y (inclusive), the ellipse inscribed in it, or a
/// freehand polygon through voxel centres (x0..y1 then its bounding box).
struct PlaneRoi {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0, z = 0;
  RoiShape shape = RoiShape::Rectangle;
  std::vector<std::array<int, 2>> polygon;  ///< Freehand only: the outline's voxels, in drawing order
  int voxels() const { return (x1 - x0 + 1) * (y1 - y0 + 1); }
  /// The rectangle around the region, corners ordered.
  PlaneRoi bounds() const {
    return {std::min(x0, x1), std::min(y0, y1), std::max(x0, x1), std::max(y0, y1), z, RoiShape::Rectangle, {}};
  }
};

struct TimeCurve {
  std::vector<double> values;  ///< per frame; NaN where the frame has no image
  std::vector<double> truth;   ///< per frame, the truth's; empty without a truth
};

/// The mean magnitude of `image` ([x, y, z, 1, slices]) in `roi` (of its shape), clipped to the image; NaN when
/// nothing of the region lies inside it.
double roiMean(const CArray& image, PlaneRoi roi);

}  // namespace larmor::model
