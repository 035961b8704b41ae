#pragma once
// Reading tools without Qt: statistics of the magnitude |x| inside a region of interest of one plane, the
// distance between two voxels and the angle at a vertex, in millimetres and degrees.
//   mean = (1/n) sum |x_i|,  SD = sqrt((1/(n-1)) sum (|x_i| - mean)^2)  (the sample SD, as NumPy's std(ddof=1)),
//   area = n dx dy  (n voxels whose centres lie inside the region; dx, dy the voxel size in mm),
//   distance = sqrt(sum_k ((a_k - b_k) s_k)^2)  over the three axes with voxel sizes s_k,
//   angle at v = acos(<p, q> / (|p| |q|)),  p_k = (a_k - v_k) s_k, q_k = (b_k - v_k) s_k  (physical space: with
//   anisotropic voxels the angle on screen in voxels is not the angle in the patient).
// A rectangle is its corner voxels inclusive; an ellipse is the one inscribed in that rectangle (a voxel is in
// when its centre satisfies ((x - cx)/rx)^2 + ((y - cy)/ry)^2 <= 1 with the radii reaching the outer voxel edges);
// a freehand region is a closed polygon through voxel centres (even-odd rule on the voxel centres: a voxel is in
// when a ray from its centre along +x crosses the outline an odd number of times).
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

/// The even-odd rule: whether point (x, y) lies inside the closed polygon `poly` (vertices in order, >= 3).
bool insidePolygon(const std::vector<std::array<int, 2>>& poly, double x, double y);

/// The area enclosed by the closed polygon `poly` in mm² (the shoelace formula, |sum x_i y_{i+1} - x_{i+1} y_i| / 2
/// dx dy): the outline's area, beside the voxel count x voxel area that the statistics give.
double polygonAreaMm2(const std::vector<std::array<int, 2>>& poly, std::array<double, 3> spacingMm);

/// A freehand region of plane z through `outline` (voxel centres in drawing order; repeated points dropped),
/// x0..y1 its bounding box.
PlaneRoi freehandRoi(const std::vector<std::array<int, 2>>& outline, int z);

/// Whether voxel (x, y) of the plane lies in `roi` (its shape, its corners, its polygon).
bool roiContains(const PlaneRoi& roi, int x, int y);

/// The statistics of |image| ([x, y, z, 1, slices]) in `roi` of plane roi.z; spacingMm: the voxel size.
RoiStats roiStatistics(const CArray& image, const PlaneRoi& roi, std::array<double, 3> spacingMm);

/// "mean 0.512, SD 0.031, min 0.41, max 0.60, area 123.4 mm² (82 voxels)"; "outside the image" when empty.
std::string formatRoiStats(const RoiStats& s);

/// The distance between the centres of voxels a and b, in mm.
double distanceMm(std::array<int, 3> a, std::array<int, 3> b, std::array<double, 3> spacingMm);

/// The angle a-vertex-b at `vertex` between the segments to a and b, in degrees (0..180) in physical space;
/// NaN when a or b is the vertex.
double angleDeg(std::array<int, 3> a, std::array<int, 3> vertex, std::array<int, 3> b, std::array<double, 3> spacingMm);

}  // namespace larmor::model
