// Oblique planes through a volume, resampled trilinearly (oblique_plane.hpp).
#include "oblique_plane.hpp"

#include <algorithm>
#include <cmath>

namespace larmor::model {

namespace {

constexpr double kDeg = 3.14159265358979323846 / 180.0;

}  // namespace

ObliqueAxes obliqueAxes(const ObliquePlane& p) {
  const double ct = std::cos(p.tiltDeg * kDeg), st = std::sin(p.tiltDeg * kDeg);
  const double cs = std::cos(p.spinDeg * kDeg), ss = std::sin(p.spinDeg * kDeg);
  // R = R_y(spin) R_x(tilt); its columns are the images of e_x, e_y, e_z.
  ObliqueAxes a;
  a.u = {cs, 0, -ss};
  a.v = {ss * st, ct, cs * st};
  a.n = {ss * ct, -st, cs * ct};
  return a;
}

double trilinear(const RArray& volume, double x, double y, double z) {
  const Shape& s = volume.shape();
  const index_t nx = s[0], ny = s[1], nz = volume.size() / std::max<index_t>(1, nx * ny);
  const double eps = 1e-9;  // a point on the last voxel's centre is inside
  if (!(x >= -eps && y >= -eps && z >= -eps && x <= nx - 1 + eps && y <= ny - 1 + eps && z <= nz - 1 + eps)) return 0.0;
  auto base = [](double t, index_t n) { return std::clamp<index_t>(static_cast<index_t>(std::floor(t)), 0, std::max<index_t>(0, n - 2)); };
  const index_t i = base(x, nx), j = base(y, ny), k = base(z, nz);
  const double fx = nx > 1 ? x - i : 0, fy = ny > 1 ? y - j : 0, fz = nz > 1 ? z - k : 0;
  const index_t di = nx > 1 ? 1 : 0, dj = ny > 1 ? nx : 0, dk = nz > 1 ? nx * ny : 0;
  const float* v = volume.data() + i + nx * (j + ny * k);
  const double c00 = v[0] * (1 - fx) + v[di] * fx, c10 = v[dj] * (1 - fx) + v[dj + di] * fx;
  const double c01 = v[dk] * (1 - fx) + v[dk + di] * fx, c11 = v[dk + dj] * (1 - fx) + v[dk + dj + di] * fx;
  return (c00 * (1 - fy) + c10 * fy) * (1 - fz) + (c01 * (1 - fy) + c11 * fy) * fz;
}

double obliqueStep(std::array<double, 3> spacingMm) { return std::min({spacingMm[0], spacingMm[1], spacingMm[2]}); }

int obliqueSide(const Shape& volume, std::array<double, 3> spacingMm) {
  double d2 = 0;
  for (std::size_t k = 0; k < 3; ++k) d2 += std::pow(volume[k] * spacingMm[k], 2);
  return std::max(1, static_cast<int>(std::ceil(std::sqrt(d2) / obliqueStep(spacingMm))));
}

std::array<double, 3> obliquePoint(const ObliquePlane& p, std::array<double, 3> spacingMm, int nu, int nv, double h,
                                   double a, double b) {
  const ObliqueAxes ax = obliqueAxes(p);
  const double du = (a - 0.5 * (nu - 1)) * h, dv = (b - 0.5 * (nv - 1)) * h;
  std::array<double, 3> r{};
  for (std::size_t k = 0; k < 3; ++k) r[k] = p.centre[k] + (du * ax.u[k] + dv * ax.v[k]) / spacingMm[k];
  return r;
}

RArray resampleOblique(const RArray& volume, std::array<double, 3> spacingMm, const ObliquePlane& p, int nu, int nv, double h) {
  RArray out(Shape{nu, nv});
  const std::array<double, 3> o = obliquePoint(p, spacingMm, nu, nv, h, 0, 0);
  const std::array<double, 3> da = obliquePoint(p, spacingMm, nu, nv, h, 1, 0), db = obliquePoint(p, spacingMm, nu, nv, h, 0, 1);
  for (int b = 0; b < nv; ++b)
    for (int a = 0; a < nu; ++a) {
      std::array<double, 3> q{};
      for (std::size_t k = 0; k < 3; ++k) q[k] = o[k] + a * (da[k] - o[k]) + b * (db[k] - o[k]);
      out.data()[a + static_cast<index_t>(nu) * b] = static_cast<float>(trilinear(volume, q[0], q[1], q[2]));
    }
  return out;
}

}  // namespace larmor::model
