#include "larmor/io/image_geometry.hpp"

#include <cmath>
#include <sstream>

namespace larmor::io {

namespace {

Vec3 toVec(const float v[3]) { return {v[0], v[1], v[2]}; }
double dot(const Vec3& a, const Vec3& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
Vec3 cross(const Vec3& a, const Vec3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
Vec3 axpy(const Vec3& y, double a, const Vec3& x) { return {y[0] + a * x[0], y[1] + a * x[1], y[2] + a * x[2]}; }
double norm(const Vec3& a) { return std::sqrt(dot(a, a)); }
bool finite(const Vec3& a) { return std::isfinite(a[0]) && std::isfinite(a[1]) && std::isfinite(a[2]); }

}  // namespace

Vec3 ImageGeometry::normal() const { return cross(row, column); }

Vec3 ImageGeometry::position(index_t plane, double x, double y) const {
  return axpy(axpy(topLeft.at(static_cast<std::size_t>(plane)), x * spacingX, row), y * spacingY, column);
}

namespace {

/// Pixel spacing and slice thickness: the recon FOV (fov, mm; a missing one falls back to one mm a pixel, with a
/// warning) spread over the matrix actually reconstructed.
void setSpacing(ImageGeometry& g, const Header& h, const Shape& s, double fov[3]) {
  for (int i = 0; i < 3; ++i) fov[i] = h.reconFovMm[i];
  for (int i = 0; i < 3; ++i)
    if (!(std::isfinite(fov[i]) && fov[i] > 0)) {
      const double fallback = i < 2 ? static_cast<double>(s[static_cast<std::size_t>(i)]) : 1.0;
      std::ostringstream w;
      w << "the field of view in dimension " << i << " is " << fov[i] << " mm; using " << fallback << " mm";
      g.warnings.push_back(w.str());
      fov[i] = fallback;
    }
  g.spacingX = fov[0] / static_cast<double>(g.nx);
  g.spacingY = fov[1] / static_cast<double>(g.ny);
  g.sliceThickness = g.threeD ? fov[2] / static_cast<double>(g.nz) : fov[2];
}

/// Row, column and slice directions (and fromData) from the data's geometry; returns the group's centre.
Vec3 setOrientation(ImageGeometry& g, const Geometry& in) {
  // Orientation: read and phase directions made orthonormal (Gram-Schmidt; scanners store floats that
  // are orthonormal only to ~1e-7, and DICOM readers check). Anything degenerate means no geometry.
  bool usable = in.present;
  Vec3 row = toVec(in.readDir), col = toVec(in.phaseDir), sl = toVec(in.sliceDir);
  Vec3 centre = toVec(in.position);
  if (usable) {
    const double nr = norm(row);
    if (!finite(row) || !finite(col) || !finite(centre) || nr < 1e-3) usable = false;
    if (usable) {
      for (auto& v : row) v /= nr;
      col = axpy(col, -dot(col, row), row);
      const double nc = norm(col);
      if (nc < 1e-3 * norm(toVec(in.phaseDir)) || nc < 1e-6) usable = false;
      else
        for (auto& v : col) v /= nc;
    }
    if (!usable)
      g.warnings.push_back("the data's read/phase directions are missing or degenerate; wrote an axial plane at the "
                           "isocentre instead");
  } else {
    g.warnings.push_back("the data carry no geometry (position, orientation); wrote axial planes centred at the "
                         "isocentre with the header's field of view");
  }
  if (!usable) {
    row = {1, 0, 0}, col = {0, 1, 0}, sl = {0, 0, 1}, centre = {0, 0, 0};
  }
  g.row = row, g.column = col;
  const Vec3 n = cross(row, col);
  // The slice direction must leave the image plane; scanners give it parallel to the normal, possibly
  // with the opposite sign (a left-handed read/phase/slice triple), which we keep.
  const double along = finite(sl) ? dot(sl, n) / std::max(norm(sl), 1e-30) : 0.0;
  if (usable && std::abs(along) < 0.5)
    g.warnings.push_back("the data's slice direction lies close to the image plane; using the plane's normal");
  g.sliceDir = along < 0 ? Vec3{-n[0], -n[1], -n[2]} : n;
  g.fromData = usable;
  return centre;
}

/// Each slice's (or slab's) offset from `centre` along g.sliceDir: the data's slice positions where every one is
/// usable, else one fovZ apart around the centre (with a warning).
std::vector<double> sliceOffsets(ImageGeometry& g, const Geometry& in, const Vec3& centre, double fovZ) {
  // Slice (or slab) centres: the group's position moved along the slice direction to each slice's
  // position (ISMRMRD gives slice positions as projections onto slice_dir).
  std::vector<double> slicePos(static_cast<std::size_t>(g.slices));
  bool havePositions = in.slicePositions.size() == static_cast<std::size_t>(g.slices);
  for (std::size_t i = 0; havePositions && i < in.slicePositions.size(); ++i)
    havePositions = std::isfinite(in.slicePositions[i]);
  if (!havePositions && g.slices > 1)
    g.warnings.push_back("the data give no usable slice positions; slices are spaced one slice thickness apart");
  const double base = g.fromData ? dot(centre, g.sliceDir) : 0.0;
  for (index_t i = 0; i < g.slices; ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (havePositions) {
      // slicePositions are projections onto the file's slice_dir, whose sign g.sliceDir keeps.
      slicePos[k] = in.slicePositions[k] - base;
    } else {
      slicePos[k] = (static_cast<double>(i) - 0.5 * static_cast<double>(g.slices - 1)) * fovZ;
    }
  }
  return slicePos;
}

/// g.topLeft: every plane's first pixel, slice by slice, the planes of a slab around its centre.
void placePlanes(ImageGeometry& g, const Vec3& centre, const std::vector<double>& slicePos) {
  const double c0 = std::floor(static_cast<double>(g.nx) / 2), c1 = std::floor(static_cast<double>(g.ny) / 2);
  const double c2 = std::floor(static_cast<double>(g.nz) / 2);
  g.topLeft.reserve(static_cast<std::size_t>(g.planes()));
  for (index_t sIdx = 0; sIdx < g.slices; ++sIdx) {
    const Vec3 slab = axpy(centre, slicePos[static_cast<std::size_t>(sIdx)], g.sliceDir);
    for (index_t z = 0; z < g.nz; ++z) {
      const Vec3 planeCentre = axpy(slab, (static_cast<double>(z) - c2) * g.sliceThickness, g.sliceDir);
      g.topLeft.push_back(axpy(axpy(planeCentre, -c0 * g.spacingX, g.row), -c1 * g.spacingY, g.column));
    }
  }
}

/// g.planeSpacing: the planes' spacing where they lie evenly spaced along one line (what NIfTI's affine and
/// DICOM's SpacingBetweenSlices can express), else 0.
void setPlaneSpacing(ImageGeometry& g) {
  if (g.planes() <= 1) return;
  const Vec3& a = g.topLeft[0];
  const Vec3 step{g.topLeft[1][0] - a[0], g.topLeft[1][1] - a[1], g.topLeft[1][2] - a[2]};
  bool even = norm(step) > 1e-6;
  for (index_t p = 1; even && p < g.planes(); ++p) {
    const Vec3 expect = axpy(a, static_cast<double>(p), step);
    const Vec3& got = g.topLeft[static_cast<std::size_t>(p)];
    even = norm(Vec3{got[0] - expect[0], got[1] - expect[1], got[2] - expect[2]}) <= 1e-3 + 1e-5 * norm(step) * p;
  }
  g.planeSpacing = even ? norm(step) : 0.0;
}

}  // namespace

ImageGeometry imageGeometry(const Header& h, const Shape& s) {
  require(s.rank() >= 2 && s[0] > 0 && s[1] > 0 && s[2] > 0 && s[4] > 0 && s.span(5, s.rank()) == 1,
          "image " + s.str() + " is not [x, y, z, 1, slices]");
  require(s[3] == 1, "image " + s.str() + " has " + std::to_string(s[3]) + " coils; export needs a combined image");
  ImageGeometry g;
  g.nx = s[0], g.ny = s[1], g.nz = s[2], g.slices = s[4];
  g.threeD = g.nz > 1;
  double fov[3];
  setSpacing(g, h, s, fov);
  const Vec3 centre = setOrientation(g, h.geometry);
  placePlanes(g, centre, sliceOffsets(g, h.geometry, centre, fov[2]));
  setPlaneSpacing(g);
  return g;
}

}  // namespace larmor::io
