// The noise level of a slice's samples (recon/noise_level.hpp): noise scans, else the smaller of the outer
// k-space's median and the calibration matrix's Marchenko-Pastur estimate.
#include "larmor/recon/noise_level.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <vector>

#include "larmor/util/error.hpp"

namespace larmor::recon {

namespace {
constexpr double kOuter = 0.9;  ///< normalised position from which a sample counts as outer k-space

/// sigma^2 from the median of |y|^2 (exponential distribution: median = sigma^2 ln 2).
double medianVariance(std::vector<double>& power) {
  auto mid = power.begin() + static_cast<std::ptrdiff_t>(power.size() / 2);
  std::nth_element(power.begin(), mid, power.end());
  return *mid / std::log(2.0);
}

/// Non-Cartesian: the trajectory's samples with max_i |k_i| / k_max,i >= kOuter.
std::vector<index_t> outerSamples(const RArray& trajectory) {
  const index_t m = trajectory.size() / 3;
  float extent[3] = {0, 0, 0};
  for (index_t j = 0; j < m; ++j)
    for (int a = 0; a < 3; ++a) extent[a] = std::max(extent[a], std::abs(trajectory[3 * j + a]));
  std::vector<index_t> out;
  for (index_t j = 0; j < m; ++j) {
    double r = 0;
    for (int a = 0; a < 3; ++a)
      if (extent[a] > 0) r = std::max(r, static_cast<double>(std::abs(trajectory[3 * j + a]) / extent[a]));
    if (r >= kOuter) out.push_back(j);
  }
  return out;
}

/// The median of the Marchenko-Pastur law of aspect ratio beta (0 < beta <= 1) and unit variance: the density
/// sqrt((b - x)(x - a)) / (2 pi beta x) on [a, b] = [(1 - sqrt beta)^2, (1 + sqrt beta)^2], integrated by the
/// midpoint rule (4096 cells: the median to ~1e-4, far below the estimate's own scatter).
double marchenkoPasturMedian(double beta) {
  const double a = std::pow(1 - std::sqrt(beta), 2), b = std::pow(1 + std::sqrt(beta), 2);
  constexpr int kCells = 4096;
  const double h = (b - a) / kCells;
  std::vector<double> cdf(kCells);
  double sum = 0;
  for (int i = 0; i < kCells; ++i) {
    const double x = a + (i + 0.5) * h;
    sum += std::sqrt(std::max(0.0, (b - x) * (x - a))) / x;
    cdf[i] = sum;
  }
  const auto it = std::lower_bound(cdf.begin(), cdf.end(), 0.5 * sum);
  return a + (static_cast<double>(it - cdf.begin()) + 0.5) * h;
}

constexpr index_t kCalibrationSide = 24;  ///< the largest calibration box side looked for
constexpr index_t kCalibrationKernel = 5;  ///< the patch side along each dimension longer than 1
constexpr index_t kCalibrationRows = 64;  ///< fewer patches than this: no estimate

/// Cartesian: the noise variance from the calibration matrix of the largest fully sampled centred box (side at most
/// 24 along each dimension longer than 1, at least two kernels). Rows are the box's 5^D patches, columns the patch
/// times the coils; noise alone would make (1/m) A^H A a Wishart matrix whose eigenvalues follow Marchenko-Pastur
/// with scale sigma^2, so sigma^2 = median eigenvalue / the law's median. The object's few strong components sit
/// above the median and raise it a little (an estimate from above, as the outer k-space's is).
std::optional<double> calibrationVariance(const Dataset& d, index_t slice) {
  const Shape& s = d.kspace.shape();
  const index_t coils = std::max<index_t>(1, d.header.coils);
  const std::array<index_t, 3> n = {s[0], s[1], s.rank() > 2 ? s[2] : 1};
  const bool masked = d.sampled.size() > 0;
  const index_t maskSlice = masked && d.sampled.shape().rank() > 2 && d.sampled.shape()[2] > slice ? slice : 0;
  auto sampled = [&](index_t y, index_t z) { return !masked || d.sampled(y, z, maskSlice) != 0; };
  std::array<index_t, 3> box{}, k{};
  for (index_t side = kCalibrationSide; side >= 2 * kCalibrationKernel; --side) {
    for (int a = 0; a < 3; ++a) {
      box[a] = std::min(side, n[a]);
      k[a] = box[a] > 1 ? kCalibrationKernel : 1;
    }
    if ((box[0] > 1 && box[0] < 2 * k[0]) || (box[1] > 1 && box[1] < 2 * k[1]) || (box[2] > 1 && box[2] < 2 * k[2]))
      return std::nullopt;
    bool full = true;
    for (index_t z = n[2] / 2 - box[2] / 2; full && z < n[2] / 2 - box[2] / 2 + box[2]; ++z)
      for (index_t y = n[1] / 2 - box[1] / 2; full && y < n[1] / 2 - box[1] / 2 + box[1]; ++y) full = sampled(y, z);
    if (full) break;
    if (side == 2 * kCalibrationKernel) return std::nullopt;
  }
  const index_t rows = (box[0] - k[0] + 1) * (box[1] - k[1] + 1) * (box[2] - k[2] + 1);
  const index_t cols = k[0] * k[1] * k[2] * coils;
  if (rows < kCalibrationRows) return std::nullopt;
  Eigen::MatrixXcd A(rows, cols);
  const index_t plane = n[0] * n[1] * n[2];
  const cfloat* y0 = d.kspace.data() + plane * coils * slice;
  std::array<index_t, 3> lo{};
  for (int a = 0; a < 3; ++a) lo[a] = n[a] / 2 - box[a] / 2;
  index_t r = 0;
  for (index_t pz = 0; pz + k[2] <= box[2]; ++pz)
    for (index_t py = 0; py + k[1] <= box[1]; ++py)
      for (index_t px = 0; px + k[0] <= box[0]; ++px, ++r) {
        index_t col = 0;
        for (index_t c = 0; c < coils; ++c)
          for (index_t kz = 0; kz < k[2]; ++kz)
            for (index_t ky = 0; ky < k[1]; ++ky)
              for (index_t kx = 0; kx < k[0]; ++kx, ++col) {
                const index_t x = lo[0] + px + kx, y = lo[1] + py + ky, z = lo[2] + pz + kz;
                A(r, col) = cdouble(y0[x + n[0] * (y + n[1] * z) + plane * c]);
              }
      }
  const index_t big = std::max(rows, cols), small = std::min(rows, cols);
  const Eigen::MatrixXcd gram = rows >= cols ? Eigen::MatrixXcd(A.adjoint() * A) : Eigen::MatrixXcd(A * A.adjoint());
  Eigen::VectorXd ev = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXcd>(gram, Eigen::EigenvaluesOnly).eigenvalues();
  std::vector<double> e(ev.data(), ev.data() + ev.size());
  auto mid = e.begin() + static_cast<std::ptrdiff_t>(e.size() / 2);
  std::nth_element(e.begin(), mid, e.end());
  const double median = std::max(0.0, *mid) / static_cast<double>(big);
  return median / marchenkoPasturMedian(static_cast<double>(small) / static_cast<double>(big));
}

/// |centred index| / half the length along one dimension (0 for a dimension of length 1).
double position(index_t i, index_t n) {
  return n > 1 ? std::abs(static_cast<double>(i - n / 2)) / (0.5 * static_cast<double>(n)) : 0.0;
}
}  // namespace

NoiseLevel estimateNoiseLevel(const Dataset& d, index_t slice) {
  const index_t coils = std::max<index_t>(1, d.header.coils);
  NoiseLevel level;
  if (d.noise && d.noise->size() > 0) {
    double sum = 0;
    for (index_t i = 0; i < d.noise->size(); ++i) sum += std::norm(cdouble((*d.noise)[i]));
    level.variance = sum / static_cast<double>(d.noise->size());
    level.samples = d.noise->size();
    level.source = "noise scans";
    return level;
  }
  std::vector<double> power;
  if (d.header.trajectory != TrajectoryKind::Cartesian) {
    const index_t m = d.trajectory.size() / 3;
    require(m > 0 && d.kspace.size() >= m * coils * (slice + 1), d.source + ": no samples to estimate the noise from");
    const std::vector<index_t> outer = outerSamples(d.trajectory);
    for (index_t c = 0; c < coils; ++c) {
      const cfloat* y = d.kspace.data() + m * (c + coils * slice);
      for (index_t j : outer) power.push_back(std::norm(cdouble(y[j])));
    }
  } else {
    const Shape& s = d.kspace.shape();
    const index_t n0 = s[0], n1 = s[1], n2 = s.rank() > 2 ? s[2] : 1, plane = n0 * n1 * n2;
    const bool masked = d.sampled.size() > 0;
    for (index_t z = 0; z < n2; ++z)
      for (index_t y = 0; y < n1; ++y) {
        if (masked && !d.sampled(y, z, d.sampled.shape().rank() > 2 ? slice : 0)) continue;
        const double py = std::max(position(y, n1), position(z, n2));
        for (index_t x = 0; x < n0; ++x) {
          if (std::max(py, position(x, n0)) < kOuter) continue;
          for (index_t c = 0; c < coils; ++c)
            power.push_back(std::norm(cdouble(d.kspace[x + n0 * (y + n1 * z) + plane * (c + coils * slice)])));
        }
      }
  }
  require(!power.empty(), d.source + ": no outer k-space samples to estimate the noise from");
  level.samples = static_cast<index_t>(power.size());
  level.variance = medianVariance(power);
  level.source = "outer k-space";
  if (d.header.trajectory == TrajectoryKind::Cartesian)
    if (const std::optional<double> calibration = calibrationVariance(d, slice); calibration && *calibration < level.variance) {
      level.variance = *calibration;
      level.source = "calibration matrix";
    }
  return level;
}

}  // namespace larmor::recon
