#pragma once
// An oblique plane through a 3D image (multiplanar reformatting), without Qt. The plane passes through the
// point c (voxel coordinates) and starts as the axial plane (screen right = x, screen down = y, normal = z);
// it is turned by `tilt` about the x axis, then by `spin` about the y axis, in physical space (mm):
//   u = R e_x, v = R e_y, n = R e_z,  R = R_y(spin) R_x(tilt).
// Sample (a, b) of an nu x nv picture with step h (mm) lies at the physical point
//   p = c s + (a - (nu - 1)/2) h u + (b - (nv - 1)/2) h v   (s: the voxel size, componentwise),
// i.e. at voxel coordinates p / s, and its value is the trilinear interpolation of the eight voxels around that
// point (0 outside the volume). Trilinear interpolation is exact for a field linear in x, y, z: a ramp's plane
// is the ramp's values, which the unit tests check.
#include <array>

#include "larmor/array/array.hpp"

namespace larmor::model {

struct ObliquePlane {
  std::array<double, 3> centre{0, 0, 0};  ///< voxel coordinates of the point the plane passes through
  double tiltDeg = 0;                     ///< rotation about the x axis
  double spinDeg = 0;                     ///< rotation about the y axis, after the tilt
};

/// The plane's in-plane directions u (screen right) and v (screen down) and its normal n, unit vectors in mm.
struct ObliqueAxes {
  std::array<double, 3> u, v, n;
};
ObliqueAxes obliqueAxes(const ObliquePlane& p);

/// The trilinear interpolation of `volume` ([x, y, z]) at voxel coordinates (x, y, z); 0 outside [0, n-1].
double trilinear(const RArray& volume, double x, double y, double z);

/// The side (samples) and step (mm) of a picture that holds the whole volume in any orientation: the step is the
/// smallest voxel size, the side the volume's diagonal over it.
int obliqueSide(const Shape& volume, std::array<double, 3> spacingMm);
double obliqueStep(std::array<double, 3> spacingMm);

/// The voxel coordinates of sample (a, b) of the nu x nv picture with step h.
std::array<double, 3> obliquePoint(const ObliquePlane& p, std::array<double, 3> spacingMm, int nu, int nv, double h,
                                   double a, double b);

/// The picture [nu, nv] of `volume` ([x, y, z], voxel size spacingMm) on plane `p`, step h mm.
RArray resampleOblique(const RArray& volume, std::array<double, 3> spacingMm, const ObliquePlane& p, int nu, int nv, double h);

}  // namespace larmor::model
