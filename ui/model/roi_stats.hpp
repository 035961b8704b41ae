#pragma once
// Reading tools without Qt: statistics of the magnitude |x| inside a region of interest of one plane, and the
// distance between two voxels in millimetres.
//   mean = (1/n) sum |x_i|,  SD = sqrt((1/(n-1)) sum (|x_i| - mean)^2)  (the sample SD, as NumPy's std(ddof=1)),
//   area = n dx dy  (n voxels whose centres lie inside the region; dx, dy the voxel size in mm),
//   distance = sqrt(sum_k ((a_k - b_k) s_k)^2)  over the three axes with voxel sizes s_k.
// A rectangle is its corner voxels inclusive; an ellipse is the one inscribed in that rectangle (a voxel is in
// when its centre satisfies ((x - cx)/rx)^2 + ((y - cy)/ry)^2 <= 1 with the radii reaching the outer voxel edges);
// a freehand region is a closed polygon through voxel centres (even-odd rule on the voxel centres).
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "larmor/array/array.hpp"
#include "time_curve.hpp"

namespace larmor::model {

struct RoiStats {
  std::size_t voxels = 0;  ///< 0: the region lies outside the image (the other fields are NaN)
  double mean = 0, sd = 0, min = 0, max = 0;
  double areaMm2 = 0;
};

/// Whether voxel (x, y) of the plane lies in `roi` (its shape, its corners, its polygon).
bool roiContains(const PlaneRoi& roi, int x, int y);

/// The statistics of |image| ([x, y, z, 1, slices]) in `roi` of plane roi.z; spacingMm: the voxel size.
RoiStats roiStatistics(const CArray& image, const PlaneRoi& roi, std::array<double, 3> spacingMm);

/// "mean 0.512, SD 0.031, min 0.41, max 0.60, area 123.4 mm² (82 voxels)"; "outside the image" when empty.
std::string formatRoiStats(const RoiStats& s);

/// The distance between the centres of voxels a and b, in mm.
double distanceMm(std::array<int, 3> a, std::array<int, 3> b, std::array<double, 3> spacingMm);

}  // namespace larmor::model
