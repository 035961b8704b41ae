#include "larmor/phantom/coils.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

namespace larmor::phantom {

namespace {

constexpr double kPi = std::numbers::pi;

// exp(sign · 2πi m x / P) for m in [-order, order] and the pixel positions of a raster of n pixels
// ((i - floor(n/2))/n): table[(m + order) * n + i].
std::vector<cdouble> harmonicTable(int order, index_t n, double period, double sign) {
  std::vector<cdouble> t(static_cast<std::size_t>((2 * order + 1) * n));
  for (int m = -order; m <= order; ++m)
    for (index_t i = 0; i < n; ++i) {
      const double x = static_cast<double>(i - n / 2) / static_cast<double>(n);
      t[static_cast<std::size_t>((m + order) * n + i)] = std::polar(1.0, sign * 2 * kPi * m * x / period);
    }
  return t;
}

// A smooth taper: 1 on the FOV and a little beyond, falling as cos² to 0 at ±P/2 = ±1, so the
// periodic extension of the target map has no jump at the period's edge (no Gibbs ringing in the
// truncated series).
double taper(double x) {
  const double ax = std::fabs(x), flat = 0.55, end = 1.0;
  if (ax <= flat) return 1;
  if (ax >= end) return 0;
  const double c = std::cos(0.5 * kPi * (ax - flat) / (end - flat));
  return c * c;
}

// The target sensitivity of coil c of C before projection (see coils.hpp).
cdouble targetMap(int c, int coils, int dims, double x, double y, double z, int rings = 1) {
  const double angle = 2 * kPi * c / coils, radius = 0.7;
  const double px = radius * std::cos(angle), py = radius * std::sin(angle);
  const int ring = c % rings;
  const double pz = rings > 1 ? -0.3 + 0.6 * ring / (rings - 1) : 0.0;
  const double d2 = (x - px) * (x - px) + (y - py) * (y - py) + (dims == 3 ? (z - pz) * (z - pz) : 0.0);
  const double magnitude = 1.0 / (1.0 + d2 / 0.25);
  const double phase = angle + 0.5 * kPi * (-std::sin(angle) * x + std::cos(angle) * y) +
                       (rings > 1 ? (ring % 2 ? 0.5 : -0.5) * kPi * z : 0.0);
  double w = taper(x) * taper(y);
  if (dims == 3) w *= taper(z);
  return std::polar(w * magnitude, phase);
}

}  // namespace

CoilModel makeCoilModel(int coils, int dims, int order, int rings) {
  require(coils >= 1, "coil model: needs at least one coil, got " + std::to_string(coils));
  require(dims == 2 || dims == 3, "coil model: dims must be 2 or 3, got " + std::to_string(dims));
  require(order >= 0 && order <= 16, "coil model: order must be in [0, 16], got " + std::to_string(order));
  require(rings >= 1 && (rings == 1 || dims == 3), "coil model: rings must be 1, or more in 3D");
  CoilModel m;
  m.coils = coils;
  m.dims = dims;
  if (coils == 1) {
    m.terms = {{0, 0, 0}};
    m.coefficients = {1.0};
    return m;
  }
  m.order = order;
  m.orderZ = dims == 3 ? (rings > 1 ? order : std::min(order, 1)) : 0;
  for (int mz = -m.orderZ; mz <= m.orderZ; ++mz)
    for (int my = -order; my <= order; ++my)
      for (int mx = -order; mx <= order; ++mx) m.terms.push_back({mx, my, mz});
  const std::size_t nt = m.terms.size();
  m.coefficients.assign(nt * static_cast<std::size_t>(coils), 0.0);

  // a_{c,m} = P^{-d} ∫_period t_c(r) exp(-2πi m·r/P) dr by the trapezoidal rule on a Q-point periodic
  // grid, exact for the harmonics kept as long as the target's spectrum beyond Q - M is negligible.
  const int q = 64, qz = dims == 3 ? 32 : 1;
  const double P = m.period;
  auto pos = [P](int i, int n) { return -0.5 * P + (i + 0.5) * P / n; };
  auto basis = [&](int order_, int n) {
    std::vector<cdouble> t(static_cast<std::size_t>((2 * order_ + 1) * n));
    for (int mm = -order_; mm <= order_; ++mm)
      for (int i = 0; i < n; ++i)
        t[static_cast<std::size_t>((mm + order_) * n + i)] = std::polar(1.0, -2 * kPi * mm * pos(i, n) / P);
    return t;
  };
  const auto ex = basis(order, q), ey = basis(order, q), ez = basis(m.orderZ, qz);
  const double norm = 1.0 / (static_cast<double>(q) * q * qz);

#pragma omp parallel for
  for (int c = 0; c < coils; ++c) {
    std::vector<cdouble> acc(nt, 0.0), rowSum(static_cast<std::size_t>(2 * order + 1));
    for (int iz = 0; iz < qz; ++iz)
      for (int iy = 0; iy < q; ++iy) {
        std::fill(rowSum.begin(), rowSum.end(), cdouble(0));
        const double z = dims == 3 ? pos(iz, qz) : 0.0, y = pos(iy, q);
        for (int ix = 0; ix < q; ++ix) {
          const cdouble t = targetMap(c, coils, dims, pos(ix, q), y, z, rings);
          for (int mx = 0; mx <= 2 * order; ++mx) rowSum[mx] += t * ex[static_cast<std::size_t>(mx * q + ix)];
        }
        for (std::size_t ti = 0; ti < nt; ++ti) {
          const auto& f = m.terms[ti];
          acc[ti] += rowSum[f[0] + order] * ey[static_cast<std::size_t>((f[1] + order) * q + iy)] *
                     ez[static_cast<std::size_t>((f[2] + m.orderZ) * qz + iz)];
        }
      }
    for (std::size_t ti = 0; ti < nt; ++ti) m.coefficients[ti + nt * c] = acc[ti] * norm;
  }

  // Normalise: max over the FOV of the root-sum-of-squares sensitivity = 1.
  const Shape grid = dims == 3 ? Shape{48, 48, 48} : Shape{128, 128};
  const CArray maps = coilMaps(m, grid);
  const index_t voxels = grid.size();
  double peak = 0;
  for (index_t v = 0; v < voxels; ++v) {
    double s = 0;
    for (int c = 0; c < coils; ++c) s += std::norm(maps[v + voxels * c]);
    peak = std::max(peak, s);
  }
  require(peak > 0, "coil model: the sensitivities vanish on the FOV");
  const double scale = 1.0 / std::sqrt(peak);
  for (auto& a : m.coefficients) a *= scale;
  return m;
}

CoilModel sliceCoilModel(const CoilModel& model3D, double z0) {
  if (model3D.dims == 2) return model3D;
  CoilModel m;
  m.coils = model3D.coils;
  m.dims = 2;
  m.order = model3D.order;
  m.orderZ = 0;
  m.period = model3D.period;
  // Terms are ordered mz slowest, so the in-plane terms of mz = 0 give the 2D term list.
  std::vector<int> index2D(model3D.terms.size());
  for (std::size_t t = 0; t < model3D.terms.size(); ++t) {
    const auto& f = model3D.terms[t];
    int found = -1;
    for (std::size_t u = 0; u < m.terms.size(); ++u)
      if (m.terms[u][0] == f[0] && m.terms[u][1] == f[1]) found = static_cast<int>(u);
    if (found < 0) {
      found = static_cast<int>(m.terms.size());
      m.terms.push_back({f[0], f[1], 0});
    }
    index2D[t] = found;
  }
  const std::size_t nt = m.terms.size(), nt3 = model3D.terms.size();
  m.coefficients.assign(nt * static_cast<std::size_t>(m.coils), 0.0);
  for (int c = 0; c < m.coils; ++c)
    for (std::size_t t = 0; t < nt3; ++t)
      m.coefficients[index2D[t] + nt * c] +=
          model3D.coefficient(c, t) * std::polar(1.0, 2 * kPi * model3D.terms[t][2] * z0 / model3D.period);
  return m;
}

cdouble coilSensitivity(const CoilModel& model, int coil, double x, double y, double z) {
  require(coil >= 0 && coil < model.coils, "coil model: coil " + std::to_string(coil) + " is out of range");
  if (model.dims == 2) z = 0;
  cdouble s = 0;
  for (std::size_t t = 0; t < model.terms.size(); ++t) {
    const auto& f = model.terms[t];
    s += model.coefficient(coil, t) * std::polar(1.0, 2 * kPi * (f[0] * x + f[1] * y + f[2] * z) / model.period);
  }
  return s;
}

CArray coilMaps(const CoilModel& model, const Shape& imageShape) {
  require(imageShape.rank() >= 2 && imageShape.rank() <= 3,
          "coil maps: image shape must be [nx, ny] or [nx, ny, nz], got " + imageShape.str());
  const index_t nx = imageShape[0], ny = imageShape[1], nz = imageShape[2];
  CArray out(Shape{nx, ny, nz, model.coils});
  if (out.empty()) return out;
  const int mo = model.order, mzo = model.orderZ;
  const auto ex = harmonicTable(mo, nx, model.period, +1);
  const auto ey = harmonicTable(mo, ny, model.period, +1);
  const auto ez = harmonicTable(mzo, nz, model.period, +1);
  const index_t voxels = nx * ny * nz, rows = ny * nz;
  const std::size_t nt = model.terms.size();
#pragma omp parallel for
  for (index_t row = 0; row < rows; ++row) {
    const index_t iy = row % ny, iz = row / ny;
    std::vector<cdouble> b(static_cast<std::size_t>(2 * mo + 1));
    for (int c = 0; c < model.coils; ++c) {
      // s = Σ_mx exp(2πi mx x/P) · B[mx], B[mx] = Σ_{terms with this mx} a · exp(2πi (my y + mz z)/P).
      std::fill(b.begin(), b.end(), cdouble(0));
      for (std::size_t t = 0; t < nt; ++t) {
        const auto& f = model.terms[t];
        const cdouble zf = model.dims == 3 ? ez[static_cast<std::size_t>((f[2] + mzo) * nz + iz)] : cdouble(1);
        b[f[0] + mo] += model.coefficient(c, t) * ey[static_cast<std::size_t>((f[1] + mo) * ny + iy)] * zf;
      }
      for (index_t ix = 0; ix < nx; ++ix) {
        cdouble s = 0;
        for (int mx = 0; mx <= 2 * mo; ++mx) s += b[mx] * ex[static_cast<std::size_t>(mx * nx + ix)];
        out[ix + nx * row + voxels * c] = cfloat(static_cast<float>(s.real()), static_cast<float>(s.imag()));
      }
    }
  }
  return out;
}

void multiCoilKspace(const Phantom& phantom, const CoilModel& model, const double* k, index_t count,
                     cdouble* out) {
  require(model.coils == 1 || model.dims == phantom.dims(),
          "multi-coil k-space: a " + std::to_string(model.dims) + "D coil model on a " +
              std::to_string(phantom.dims()) + "D phantom");
  const std::size_t nt = model.terms.size();
  const double invP = 1.0 / model.period;
#pragma omp parallel
  {
    std::vector<cdouble> f(nt);
#pragma omp for schedule(dynamic, 64)
    for (index_t i = 0; i < count; ++i) {
      const double* ki = k + 3 * i;
      for (std::size_t t = 0; t < nt; ++t) {
        const auto& m = model.terms[t];
        f[t] = phantom.kspace(ki[0] - m[0] * invP, ki[1] - m[1] * invP, ki[2] - m[2] * invP);
      }
      for (int c = 0; c < model.coils; ++c) {
        cdouble s = 0;
        for (std::size_t t = 0; t < nt; ++t) s += model.coefficient(c, t) * f[t];
        out[i + count * c] = s;
      }
    }
  }
}

std::vector<cdouble> multiCoilKspace(const Phantom& phantom, const CoilModel& model,
                                     const std::vector<std::array<double, 3>>& k) {
  std::vector<cdouble> out(k.size() * static_cast<std::size_t>(model.coils));
  if (!k.empty()) multiCoilKspace(phantom, model, k.front().data(), static_cast<index_t>(k.size()), out.data());
  return out;
}

std::uint64_t deriveSeed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t z = seed + (stream + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void addNoise(cfloat* data, index_t n, float sigma, std::uint64_t seed) {
  require(std::isfinite(sigma) && sigma >= 0, "noise: sigma must be finite and non-negative");
  if (sigma == 0 || n <= 0) return;
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal(0.0, static_cast<double>(sigma));
  for (index_t i = 0; i < n; ++i) {
    const double re = normal(gen);
    const double im = normal(gen);
    data[i] += cfloat(static_cast<float>(re), static_cast<float>(im));
  }
}

void addNoise(CArray& data, float sigma, std::uint64_t seed) {
  require(std::isfinite(sigma) && sigma >= 0, "noise: sigma must be finite and non-negative");
  if (sigma == 0 || data.empty()) return;
  constexpr index_t block = 65536;
  const index_t n = data.size(), blocks = (n + block - 1) / block;
#pragma omp parallel for
  for (index_t b = 0; b < blocks; ++b) {
    const index_t start = b * block, len = std::min(block, n - start);
    addNoise(data.data() + start, len, sigma, deriveSeed(seed, static_cast<std::uint64_t>(b)));
  }
}

}  // namespace larmor::phantom
