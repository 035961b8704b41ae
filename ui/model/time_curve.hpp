#pragma once
// The time-intensity curve of a series (the DCE / perfusion view): the mean magnitude of the image in a
// rectangle of one plane over the frames, c(t) = (1/|R|) sum_{(x,y) in R} |x_t(x, y, z)|, beside the truth's
// curve when the data carry one (a simulated series: each frame's rasterised object).
#include <vector>

#include "larmor/array/array.hpp"

namespace larmor::model {

/// A rectangle of voxels, inclusive: x0..x1 along the image's x, y0..y1 along its y, in plane z of the
/// image's [x, y, z x slices] stack (the viewer's axial planes).
struct PlaneRoi {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0, z = 0;
  int voxels() const { return (x1 - x0 + 1) * (y1 - y0 + 1); }
};

struct TimeCurve {
  std::vector<double> values;  ///< per frame; NaN where the frame has no image
  std::vector<double> truth;   ///< per frame, the truth's; empty without a truth
};

/// The mean magnitude of `image` ([x, y, z, 1, slices]) in `roi`, clipped to the image; NaN when nothing of
/// the rectangle lies inside it.
double roiMean(const CArray& image, PlaneRoi roi);

}  // namespace larmor::model
