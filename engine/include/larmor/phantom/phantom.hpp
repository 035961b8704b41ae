#pragma once
// Analytic Shepp-Logan phantoms (2D and 3D) in image and k-space.
//
// Coordinates: the object lives in FOV units. The image FOV is the cube [-0.5, 0.5)^d, i.e. the
// classic [-1, 1] definition of Shepp & Logan (1974) scaled by 1/2. x is dimension 0, y dimension 1,
// z dimension 2. The published tables have y pointing up; Larmor's pictures (PNG writer, GUI) draw
// dimension 1 downwards, so the tables are mirrored y → -y on loading (as MATLAB's phantom and
// ImagePhantoms' yflip do), and the head shows upright: the small "mouth" ellipses at the bottom.
//
// k-space: F(k) = ∫ ρ(r) exp(-2πi k·r) dr with k in cycles per FOV. A sum of constant ellipses
// (ellipsoids) has an exact transform: for the shape r = c + Aᵀ D u, |u| ≤ 1 (A the rotation, D the
// half-axes), F(k) = value · det(D) · exp(-2πi k·c) · U(|D A k|), where U is the transform of the unit
// disk (ball) at radius q:
//   disk: U(q) = J1(2πq) / q                          → π as q → 0
//   ball: U(q) = 4π (sin u - u cos u) / u³, u = 2πq    → 4π/3 as q → 0
// (Bracewell, The Fourier Transform and its Applications; Koay et al., MRM 58:430, 2007).
#include <optional>
#include <vector>

#include "larmor/array/array.hpp"

namespace larmor::phantom {

/// A constant ellipse: `value` inside, half-axes a (along `angle`) and b, centre (cx, cy); angle in
/// radians, counter-clockwise from +x (MATLAB phantom's convention).
struct Ellipse {
  double value = 0;
  double cx = 0, cy = 0;
  double a = 0, b = 0;
  double angle = 0;
};

/// A constant ellipsoid. Local coordinates are u = A (r - centre) with A = Rz(psi) Rx(theta) Rz(phi)
/// (passive z-x-z Euler rotations, the matrix of Schabel's phantom3d); inside when Σ (u_i/axes_i)² ≤ 1.
/// Angles in radians.
struct Ellipsoid {
  double value = 0;
  double centre[3] = {0, 0, 0};
  double axes[3] = {1, 1, 1};
  double phi = 0, theta = 0, psi = 0;
};

/// The 10 ellipses of the modified Shepp-Logan phantom (Toft 1996, pp. 199-200: the intensities
/// 1, -0.8, -0.2, -0.2, 0.1 ... that give visible contrast), in FOV units, y mirrored.
std::vector<Ellipse> sheppLogan2DEllipses();
/// The 10 ellipsoids of the 3D modified Shepp-Logan phantom (Kak & Slaney's 3D head with Toft's
/// intensities, the table of Schabel's phantom3d), in FOV units, y mirrored.
std::vector<Ellipsoid> sheppLogan3DEllipsoids();

/// The ellipsoid's cross-section with the plane z = z0 (exact), or nothing when the plane misses it.
std::optional<Ellipse> crossSection(const Ellipsoid& e, double z0);

/// Bessel function of the first kind, order 1, to about 1e-15 absolute for all x.
double besselJ1(double x);
/// Transform of the unit disk at |k| = q: J1(2πq)/q (π at q = 0).
double unitDiskFourier(double q);
/// Transform of the unit ball at |k| = q: 4π (sin u - u cos u)/u³, u = 2πq (4π/3 at q = 0).
double unitBallFourier(double q);

/// A phantom made of constant ellipses (2D) or ellipsoids (3D) that add up where they overlap.
class Phantom {
 public:
  explicit Phantom(const std::vector<Ellipse>& ellipses);
  explicit Phantom(const std::vector<Ellipsoid>& ellipsoids);

  static Phantom sheppLogan2D();
  static Phantom sheppLogan3D();
  /// The 2D cross-section z = z0 of the 3D phantom (multi-slice 2D imaging of the 3D head).
  static Phantom sheppLogan3DSlice(double z0);

  int dims() const { return dims_; }
  std::size_t components() const { return parts_.size(); }

  /// ρ(r); z is ignored by a 2D phantom.
  double value(double x, double y, double z = 0) const;
  /// F(k), k in cycles per FOV; kz is ignored by a 2D phantom.
  cdouble kspace(double kx, double ky, double kz = 0) const;
  /// ∫ ρ dr = F(0).
  double integral() const;

  /// Pixel n of a dimension of N pixels sits at r = (n - floor(N/2)) / N, the sample positions of the
  /// centred FFT (X[k] = N^{-1/2} Σ x[n] exp(-2πi (k-c)(n-c)/N), c = floor(N/2)), so the image of a
  /// Cartesian k-space simulated from F lines up with this raster. Each value is the mean of ρ over the
  /// pixel (s×s(×s) sub-samples): a pixel is an area, and at an edge it holds a mixture of both sides
  /// (partial volume), which is also what a band-limited acquisition converges to; point sampling would
  /// put edges on the wrong side by up to half a pixel. Pixels whose every point lies on one side of an
  /// edge are filled exactly without sub-sampling. `shape`: [nx, ny] or [nx, ny, 1] for 2D,
  /// [nx, ny, nz] for 3D. Returns that shape, imaginary part 0.
  CArray rasterize(const Shape& shape, int supersampling = 4) const;

  /// Readout-line evaluation (the Cartesian simulator's inner loop): with phases = readoutPhases(k0),
  /// kspaceLine writes F(k0[i], k1, k2) for every i. The phase along k0 becomes a table lookup, so a
  /// sample costs one sqrt and one Bessel evaluation per shape.
  std::vector<cdouble> readoutPhases(const std::vector<double>& k0) const;
  void kspaceLine(const std::vector<double>& k0, const std::vector<cdouble>& phases, double k1, double k2,
                  cdouble* out) const;

 private:
  struct Part {
    double value = 0;
    double weight = 0;      // value × product of half-axes
    double centre[3] = {0, 0, 0};
    double rot[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};  // world → local, row-major
    double invAxes[3] = {1, 1, 1};
    double gram[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};  // G = Aᵀ D² A: q² = kᵀ G k, extent_i = sqrt(G_ii)
    double extent[3] = {0, 0, 0};
  };
  static Part makePart(int dims, double value, const double centre[3], const double axes[3], const double rot[9]);
  bool inside(const Part& p, const double r[3]) const;

  int dims_ = 2;
  std::vector<Part> parts_;
};

/// The modified Shepp-Logan phantom at a point (2D) and its transform.
double sheppLogan2D(double x, double y);
double sheppLogan3D(double x, double y, double z);
cdouble sheppLogan2DKspace(double kx, double ky);
cdouble sheppLogan3DKspace(double kx, double ky, double kz);
/// 2D transform (kx, ky) of the slice z = z0 of the 3D phantom.
cdouble sheppLogan3DSliceKspace(double kx, double ky, double z0);

}  // namespace larmor::phantom
