#include "larmor/phantom/phantom.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace larmor::phantom {

namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kDeg = kPi / 180.0;

// Power series J1(x)/x = Σ_m (-1)^m (x/2)^{2m} / (2 m! (m+1)!), A&S 9.1.10. Used for |x| < 4, where
// the largest term is below 2, so cancellation costs less than one digit.
double j1OverXSeries(double x) {
  const double h2 = 0.25 * x * x;
  double term = 0.5, sum = 0.5;
  for (int m = 1; m < 60; ++m) {
    term *= -h2 / (static_cast<double>(m) * (m + 1));
    sum += term;
    if (std::fabs(term) < 1e-18) break;
  }
  return sum;
}

// Miller's backward recurrence J_{n-1} = (2n/x) J_n - J_{n+1} from n = N >> x, normalised with
// J_0 + 2 Σ_k J_{2k} = 1 (A&S 9.1.87). Starting values are arbitrary because the recurrence is stable
// downwards; N - x ≥ 38 makes the start error below 1e-17 for 4 ≤ x < 25.
double j1Miller(double x) {
  const int n0 = 2 * (static_cast<int>(x / 2) + 20);
  double above = 0, cur = 1e-30;  // J_{n+1}, J_n (unnormalised)
  double sum = 2 * cur, j1 = 0;
  for (int n = n0; n >= 1; --n) {
    const double below = 2.0 * n / x * cur - above;  // J_{n-1}
    above = cur;
    cur = below;
    const int m = n - 1;
    if (m == 1) j1 = cur;
    if (m > 0 && m % 2 == 0) sum += 2 * cur;
  }
  sum += cur;  // J_0
  return j1 / sum;
}

// Hankel's asymptotic expansion (A&S 9.2.5, 9.2.9, 9.2.10) with μ = 4ν² = 4:
// J1(x) = sqrt(2/(πx)) (P cos χ - Q sin χ), χ = x - 3π/4, a_k = Π_{j≤k} (μ - (2j-1)²) / (k! (8x)^k),
// P = Σ_{k even} (-1)^{k/2} a_k, Q = Σ_{k odd} (-1)^{(k-1)/2} a_k. For x ≥ 25 the smallest term is
// below 1e-20, so the truncated series is accurate to rounding.
double j1Hankel(double x) {
  const double mu = 4.0, z8 = 8.0 * x;
  double a = 1, p = 1, q = 0, previous = 1;
  for (int k = 1; k < 80; ++k) {
    const double odd = 2.0 * k - 1;
    a *= (mu - odd * odd) / (k * z8);
    if (std::fabs(a) > previous) break;  // the asymptotic series starts to diverge
    previous = std::fabs(a);
    if (k % 2 == 1)
      q += ((k - 1) / 2) % 2 == 0 ? a : -a;
    else
      p += (k / 2) % 2 == 0 ? a : -a;
    if (std::fabs(a) < 1e-17) break;
  }
  const double chi = x - 0.75 * kPi;
  return std::sqrt(2.0 / (kPi * x)) * (p * std::cos(chi) - q * std::sin(chi));
}

// World → local rotation A = Rz(psi) Rx(theta) Rz(phi) with passive rotations
// Rz(a) = [[c, s, 0], [-s, c, 0], [0, 0, 1]], Rx(a) = [[1, 0, 0], [0, c, s], [0, -s, c]] (row-major).
void eulerRotation(double phi, double theta, double psi, double a[9]) {
  const double cf = std::cos(phi), sf = std::sin(phi);
  const double ct = std::cos(theta), st = std::sin(theta);
  const double cp = std::cos(psi), sp = std::sin(psi);
  a[0] = cp * cf - ct * sf * sp;
  a[1] = cp * sf + ct * cf * sp;
  a[2] = sp * st;
  a[3] = -sp * cf - ct * sf * cp;
  a[4] = -sp * sf + ct * cf * cp;
  a[5] = cp * st;
  a[6] = st * sf;
  a[7] = -st * cf;
  a[8] = ct;
}

// M = Aᵀ diag(d) A for a row-major rotation A.
void congruence(const double a[9], const double d[3], double m[9]) {
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double s = 0;
      for (int l = 0; l < 3; ++l) s += a[3 * l + i] * d[l] * a[3 * l + j];
      m[3 * i + j] = s;
    }
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Parameter tables as published: classic values on [-1, 1] (half-axes, centres), y up. On loading they
// are halved into FOV units and mirrored y → -y (see phantom.hpp): the mirror image of an ellipse
// (ellipsoid with theta = 0, as all of these) has centre (x0, -y0) and the negated in-plane angle.

std::vector<Ellipse> sheppLogan2DEllipses() {
  //                 value   a       b       x0     y0      angle (deg)
  static const double t[10][6] = {
      {1.0, 0.69, 0.92, 0.0, 0.0, 0},        {-0.8, 0.6624, 0.874, 0.0, -0.0184, 0},
      {-0.2, 0.11, 0.31, 0.22, 0.0, -18},    {-0.2, 0.16, 0.41, -0.22, 0.0, 18},
      {0.1, 0.21, 0.25, 0.0, 0.35, 0},       {0.1, 0.046, 0.046, 0.0, 0.1, 0},
      {0.1, 0.046, 0.046, 0.0, -0.1, 0},     {0.1, 0.046, 0.023, -0.08, -0.605, 0},
      {0.1, 0.023, 0.023, 0.0, -0.606, 0},   {0.1, 0.023, 0.046, 0.06, -0.605, 0}};
  std::vector<Ellipse> out;
  for (const auto& r : t) out.push_back({r[0], 0.5 * r[3], -0.5 * r[4], 0.5 * r[1], 0.5 * r[2], -r[5] * kDeg});
  return out;
}

std::vector<Ellipsoid> sheppLogan3DEllipsoids() {
  // value, half-axes a b c, centre x0 y0 z0, Euler phi theta psi (deg). The centre is taken in object
  // coordinates, as the tables state it; phantom3d's code subtracts it after rotating, which moves the
  // two rotated ellipsoids (3 and 4) by about 0.03.
  static const double t[10][10] = {
      {1.0, 0.69, 0.92, 0.81, 0, 0, 0, 0, 0, 0},
      {-0.8, 0.6624, 0.874, 0.78, 0, -0.0184, 0, 0, 0, 0},
      {-0.2, 0.11, 0.31, 0.22, 0.22, 0, 0, -18, 0, 10},
      {-0.2, 0.16, 0.41, 0.28, -0.22, 0, 0, 18, 0, 10},
      {0.1, 0.21, 0.25, 0.41, 0, 0.35, -0.15, 0, 0, 0},
      {0.1, 0.046, 0.046, 0.05, 0, 0.1, 0.25, 0, 0, 0},
      {0.1, 0.046, 0.046, 0.05, 0, -0.1, 0.25, 0, 0, 0},
      {0.1, 0.046, 0.023, 0.05, -0.08, -0.605, 0, 0, 0, 0},
      {0.1, 0.023, 0.023, 0.02, 0, -0.606, 0, 0, 0, 0},
      {0.1, 0.023, 0.046, 0.02, 0.06, -0.605, 0, 0, 0, 0}};
  std::vector<Ellipsoid> out;
  for (const auto& r : t) {
    Ellipsoid e;
    e.value = r[0];
    for (int i = 0; i < 3; ++i) {
      e.axes[i] = 0.5 * r[1 + i];
      e.centre[i] = 0.5 * r[4 + i];
    }
    // Mirror y: with theta = 0 the rotation is Rz(phi + psi), whose mirror image is Rz(-phi - psi).
    e.centre[1] = -e.centre[1];
    e.phi = -r[7] * kDeg;
    e.theta = r[8] * kDeg;
    e.psi = -r[9] * kDeg;
    out.push_back(e);
  }
  return out;
}

// Cross-section of {r : (r-c)ᵀ Q (r-c) ≤ 1}, Q = Aᵀ D⁻² A, with the plane z = z0. Write r - c = (p, δ),
// δ = z0 - c_z, and complete the square in p: with G = Q⁻¹ = Aᵀ D² A,
//   p = p0 + w,  p0 = δ (G_xz, G_yz) / G_zz,  wᵀ Q₂ w ≤ 1 - δ² / G_zz,
// where Q₂ is the in-plane 2×2 block of Q and 1/G_zz is the Schur complement Q_zz - q_zᵀ Q₂⁻¹ q_z.
// The ellipse's axes and angle come from the eigen-decomposition of S = Q₂ / (1 - δ²/G_zz).
std::optional<Ellipse> crossSection(const Ellipsoid& e, double z0) {
  double a[9], g[9], q[9];
  eulerRotation(e.phi, e.theta, e.psi, a);
  const double d2[3] = {e.axes[0] * e.axes[0], e.axes[1] * e.axes[1], e.axes[2] * e.axes[2]};
  const double inv2[3] = {1 / d2[0], 1 / d2[1], 1 / d2[2]};
  congruence(a, d2, g);
  congruence(a, inv2, q);
  const double delta = z0 - e.centre[2];
  const double s = 1 - delta * delta / g[8];
  if (!(s > 0)) return std::nullopt;
  const double alpha = q[0] / s, beta = q[1] / s, gamma = q[4] / s;
  const double mean = 0.5 * (alpha + gamma), rho = std::hypot(0.5 * (alpha - gamma), beta);
  Ellipse out;
  out.value = e.value;
  out.cx = e.centre[0] + delta * g[2] / g[8];
  out.cy = e.centre[1] + delta * g[5] / g[8];
  out.a = 1 / std::sqrt(mean + rho);  // along the eigenvector at `angle` (eigenvalue mean + rho)
  out.b = 1 / std::sqrt(mean - rho);
  out.angle = 0.5 * std::atan2(2 * beta, alpha - gamma);
  return out;
}

// ---------------------------------------------------------------------------------------------------

double besselJ1(double x) {
  const double ax = std::fabs(x);
  double r;
  if (ax < 4)
    r = ax * j1OverXSeries(ax);
  else if (ax < 25)
    r = j1Miller(ax);
  else
    r = j1Hankel(ax);
  return x < 0 ? -r : r;
}

double unitDiskFourier(double q) {
  // ∫_{|u|<1} exp(-2πi κ·u) du = J1(2π|κ|)/|κ| = 2π · J1(x)/x at x = 2π|κ|.
  const double x = 2 * kPi * std::fabs(q);
  if (x < 4) return 2 * kPi * j1OverXSeries(x);
  return besselJ1(x) / std::fabs(q);
}

double unitBallFourier(double q) {
  // 4π (sin u - u cos u)/u³. Below u = 1 the difference cancels, so use its series
  // Σ_{n≥1} (-1)^{n+1} 2n/(2n+1)! u^{2n-2} = 1/3 - u²/30 + u⁴/840 - ..., term ratio -u²/(2n(2n+3)).
  const double u = 2 * kPi * std::fabs(q);
  if (u < 1) {
    const double u2 = u * u;
    double term = 1.0 / 3.0, sum = term;
    for (int n = 1; n < 12; ++n) {
      term *= -u2 / (2.0 * n * (2.0 * n + 3));
      sum += term;
    }
    return 4 * kPi * sum;
  }
  return 4 * kPi * (std::sin(u) - u * std::cos(u)) / (u * u * u);
}

// ---------------------------------------------------------------------------------------------------

Phantom::Part Phantom::makePart(int dims, double value, const double centre[3], const double axes[3],
                                const double rot[9]) {
  Part p;
  p.value = value;
  p.weight = value;
  for (int i = 0; i < 3; ++i) {
    p.centre[i] = centre[i];
    p.invAxes[i] = 1 / axes[i];
  }
  for (int i = 0; i < 9; ++i) p.rot[i] = rot[i];
  double d2[3] = {0, 0, 0};
  for (int i = 0; i < dims; ++i) {
    require(axes[i] > 0 && std::isfinite(axes[i]), "phantom: ellipse half-axes must be positive");
    d2[i] = axes[i] * axes[i];
    p.weight *= axes[i];
  }
  congruence(p.rot, d2, p.gram);
  for (int i = 0; i < 3; ++i) p.extent[i] = std::sqrt(std::max(0.0, p.gram[4 * i]));
  return p;
}

Phantom::Phantom(const std::vector<Ellipse>& ellipses) : dims_(2) {
  for (const auto& e : ellipses) {
    const double c = std::cos(e.angle), s = std::sin(e.angle);
    const double rot[9] = {c, s, 0, -s, c, 0, 0, 0, 1};
    const double centre[3] = {e.cx, e.cy, 0};
    const double axes[3] = {e.a, e.b, 1};
    parts_.push_back(makePart(2, e.value, centre, axes, rot));
  }
}

Phantom::Phantom(const std::vector<Ellipsoid>& ellipsoids) : dims_(3) {
  for (const auto& e : ellipsoids) {
    double rot[9];
    eulerRotation(e.phi, e.theta, e.psi, rot);
    parts_.push_back(makePart(3, e.value, e.centre, e.axes, rot));
  }
}

Phantom Phantom::sheppLogan2D() { return Phantom(sheppLogan2DEllipses()); }
Phantom Phantom::sheppLogan3D() { return Phantom(sheppLogan3DEllipsoids()); }
Phantom Phantom::sheppLogan3DSlice(double z0) {
  std::vector<Ellipse> sections;
  for (const auto& e : sheppLogan3DEllipsoids())
    if (auto s = crossSection(e, z0)) sections.push_back(*s);
  return Phantom(sections);
}

bool Phantom::inside(const Part& p, const double r[3]) const {
  double sum = 0;
  for (int i = 0; i < dims_; ++i) {
    double u = 0;
    for (int j = 0; j < dims_; ++j) u += p.rot[3 * i + j] * (r[j] - p.centre[j]);
    u *= p.invAxes[i];
    sum += u * u;
  }
  return sum <= 1;
}

double Phantom::value(double x, double y, double z) const {
  const double r[3] = {x, y, z};
  double v = 0;
  for (const auto& p : parts_)
    if (inside(p, r)) v += p.value;
  return v;
}

cdouble Phantom::kspace(double kx, double ky, double kz) const {
  const double k[3] = {kx, ky, dims_ == 3 ? kz : 0.0};
  cdouble sum = 0;
  for (const auto& p : parts_) {
    double q2 = 0, kc = 0;
    for (int i = 0; i < 3; ++i) {
      kc += k[i] * p.centre[i];
      for (int j = 0; j < 3; ++j) q2 += k[i] * p.gram[3 * i + j] * k[j];
    }
    const double q = std::sqrt(std::max(0.0, q2));
    const double u = dims_ == 2 ? unitDiskFourier(q) : unitBallFourier(q);
    sum += p.weight * u * std::polar(1.0, -2 * kPi * kc);
  }
  return sum;
}

double Phantom::integral() const { return kspace(0, 0, 0).real(); }

std::vector<cdouble> Phantom::readoutPhases(const std::vector<double>& k0) const {
  std::vector<cdouble> out(k0.size() * parts_.size());
  for (std::size_t p = 0; p < parts_.size(); ++p)
    for (std::size_t i = 0; i < k0.size(); ++i)
      out[i + k0.size() * p] = std::polar(1.0, -2 * kPi * k0[i] * parts_[p].centre[0]);
  return out;
}

void Phantom::kspaceLine(const std::vector<double>& k0, const std::vector<cdouble>& phases, double k1,
                         double k2, cdouble* out) const {
  const std::size_t n = k0.size();
  require(phases.size() == n * parts_.size(), "phantom: readout phase table does not match the readout");
  if (dims_ == 2) k2 = 0;
  std::fill(out, out + n, cdouble(0));
  for (std::size_t pi = 0; pi < parts_.size(); ++pi) {
    const Part& p = parts_[pi];
    const double* g = p.gram;
    // q² = kᵀ G k as a quadratic in k0 along the line.
    const double lin = g[1] * k1 + g[2] * k2;
    const double con = g[4] * k1 * k1 + 2 * g[5] * k1 * k2 + g[8] * k2 * k2;
    const cdouble line = p.weight * std::polar(1.0, -2 * kPi * (k1 * p.centre[1] + k2 * p.centre[2]));
    const double lr = line.real(), li = line.imag();
    const cdouble* ph = phases.data() + n * pi;
    auto accumulate = [&](auto unitFourier) {
      for (std::size_t i = 0; i < n; ++i) {
        const double q = std::sqrt(std::max(0.0, g[0] * k0[i] * k0[i] + 2 * lin * k0[i] + con));
        const double u = unitFourier(q);
        // Real arithmetic: complex operator* carries NaN-recovery branches this loop does not need.
        const double pr = ph[i].real(), pim = ph[i].imag();
        out[i] += cdouble(u * (lr * pr - li * pim), u * (lr * pim + li * pr));
      }
    };
    if (dims_ == 2)
      accumulate(unitDiskFourier);
    else
      accumulate(unitBallFourier);
  }
}

CArray Phantom::rasterize(const Shape& shape, int supersampling) const {
  require(supersampling >= 1, "phantom: supersampling must be at least 1");
  require(shape.rank() >= 2 && shape.rank() <= 3,
          "phantom: rasterize needs a shape [nx, ny] or [nx, ny, nz], got " + shape.str());
  require(dims_ == 3 || shape[2] == 1, "phantom: a 2D phantom rasterizes to [nx, ny] or [nx, ny, 1], got " +
                                           shape.str());
  const index_t n[3] = {shape[0], shape[1], shape[2]};
  CArray out(shape, cfloat(0));
  if (out.empty()) return out;
  const int s = supersampling;
  double half[3], rho2 = 0;
  std::vector<double> offsets[3];
  for (int i = 0; i < 3; ++i) {
    half[i] = 0.5 / static_cast<double>(n[i]);
    for (int j = 0; j < s; ++j) offsets[i].push_back(((j + 0.5) / s - 0.5) / static_cast<double>(n[i]));
    if (i < dims_) rho2 += half[i] * half[i];
  }
  const double rho = std::sqrt(rho2);
  const int sz = dims_ == 3 ? s : 1;
  const double perSample = 1.0 / (static_cast<double>(s) * s * sz);
  // g(r) = |D⁻¹ A (r - c)| is Lipschitz with constant max(1/axis): a pixel whose centre has
  // |g - 1| > rho·max(1/axis) lies entirely inside or outside, and needs no sub-samples.
  std::vector<double> lipschitz(parts_.size());
  for (std::size_t p = 0; p < parts_.size(); ++p)
    lipschitz[p] = *std::max_element(parts_[p].invAxes, parts_[p].invAxes + dims_);

  const index_t rows = n[1] * n[2];
#pragma omp parallel for schedule(dynamic, 4)
  for (index_t row = 0; row < rows; ++row) {
    const index_t iy = row % n[1], iz = row / n[1];
    double r[3];
    r[1] = static_cast<double>(iy - n[1] / 2) / static_cast<double>(n[1]);
    r[2] = dims_ == 3 ? static_cast<double>(iz - n[2] / 2) / static_cast<double>(n[2]) : 0.0;
    for (index_t ix = 0; ix < n[0]; ++ix) {
      r[0] = static_cast<double>(ix - n[0] / 2) / static_cast<double>(n[0]);
      double v = 0;
      for (std::size_t pi = 0; pi < parts_.size(); ++pi) {
        const Part& p = parts_[pi];
        bool outside = false;
        for (int i = 0; i < dims_; ++i)
          if (std::fabs(r[i] - p.centre[i]) > p.extent[i] + half[i]) outside = true;
        if (outside) continue;
        double g2 = 0;
        for (int i = 0; i < dims_; ++i) {
          double u = 0;
          for (int j = 0; j < dims_; ++j) u += p.rot[3 * i + j] * (r[j] - p.centre[j]);
          u *= p.invAxes[i];
          g2 += u * u;
        }
        const double g = std::sqrt(g2), margin = lipschitz[pi] * rho;
        if (g - margin > 1) continue;
        if (g + margin < 1) {
          v += p.value;
          continue;
        }
        int count = 0;
        double q[3] = {r[0], r[1], r[2]};
        for (int a = 0; a < sz; ++a) {
          if (dims_ == 3) q[2] = r[2] + offsets[2][a];
          for (int b = 0; b < s; ++b) {
            q[1] = r[1] + offsets[1][b];
            for (int c = 0; c < s; ++c) {
              q[0] = r[0] + offsets[0][c];
              count += inside(p, q) ? 1 : 0;
            }
          }
        }
        v += p.value * count * perSample;
      }
      out[ix + n[0] * row] = cfloat(static_cast<float>(v), 0.f);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------

namespace {
const Phantom& sl2() {
  static const Phantom p = Phantom::sheppLogan2D();
  return p;
}
const Phantom& sl3() {
  static const Phantom p = Phantom::sheppLogan3D();
  return p;
}
}  // namespace

double sheppLogan2D(double x, double y) { return sl2().value(x, y); }
double sheppLogan3D(double x, double y, double z) { return sl3().value(x, y, z); }
cdouble sheppLogan2DKspace(double kx, double ky) { return sl2().kspace(kx, ky); }
cdouble sheppLogan3DKspace(double kx, double ky, double kz) { return sl3().kspace(kx, ky, kz); }
cdouble sheppLogan3DSliceKspace(double kx, double ky, double z0) {
  return Phantom::sheppLogan3DSlice(z0).kspace(kx, ky);
}

}  // namespace larmor::phantom
