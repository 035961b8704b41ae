// The noise level of a slice's samples (recon/noise_level.hpp): noise scans, else the outer k-space's median.
#include "larmor/recon/noise_level.hpp"

#include <algorithm>
#include <cmath>
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
  return level;
}

}  // namespace larmor::recon
