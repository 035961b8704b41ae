// Trajectory checks and the header a trajectory implies (trajectory_input.hpp). Moved out of
// dataset_io.cpp so the twix reader applies the same rules to a trajectory given with --traj.
#include "trajectory_input.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace larmor::io::detail {

namespace {

// A straight line through the k-space origin for every profile: radial (2D or 3D).
bool looksRadial(const RArray& t) {
  const index_t n = t.shape()[1], profiles = t.shape()[2];
  if (n < 2) return false;
  for (index_t p = 0; p < profiles; ++p) {
    const float* k = t.data() + 3 * n * p;
    index_t far = 0;
    double farNorm = 0;
    for (index_t i = 0; i < n; ++i) {
      const double r = std::hypot(k[3 * i], k[3 * i + 1], k[3 * i + 2]);
      if (r > farNorm) farNorm = r, far = i;
    }
    if (farNorm == 0) return false;
    const double u[3] = {k[3 * far] / farNorm, k[3 * far + 1] / farNorm, k[3 * far + 2] / farNorm};
    for (index_t i = 0; i < n; ++i) {
      const double dot = k[3 * i] * u[0] + k[3 * i + 1] * u[1] + k[3 * i + 2] * u[2];
      const double off = std::hypot(k[3 * i] - dot * u[0], k[3 * i + 1] - dot * u[1], k[3 * i + 2] - dot * u[2]);
      if (off > 1e-3 * std::max(1.0, farNorm)) return false;
    }
  }
  return true;
}

// A number for messages: 6 significant digits, denormals and 1e30 as they are.
std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

RArray checkedTrajectory(const CArray& t, const std::string& trajName, const long matrix[3],
                         std::vector<std::string>& warnings) {
  const Shape ts = t.shape();
  for (std::size_t dim = 3; dim < ts.rank(); ++dim)
    if (ts[dim] != 1) throw Error(trajName + ": trajectory " + ts.str() + " must be [3, readout, spokes]");
  if (ts[0] != 3) throw Error(trajName + ": trajectory " + ts.str() + " must have 3 coordinates in dimension 0");
  RArray out(Shape{3, ts[1], ts[2]});
  float maxAbs = 0;
  for (index_t i = 0; i < t.size(); ++i) {
    if (t[i].imag() != 0.f)
      throw Error(trajName + ": coordinate " + std::to_string(i % 3) + " of sample " + std::to_string(i / 3) +
                  " has a non-zero imaginary part (BART trajectories are real)");
    const float v = t[i].real();
    if (!std::isfinite(v))
      throw Error(trajName + ": coordinate " + std::to_string(i % 3) + " of sample " + std::to_string(i / 3) +
                  " is " + (std::isnan(v) ? "NaN" : "Inf"));
    if (std::abs(v) > kMaxTrajectoryCycles)
      throw Error(trajName + ": coordinate " + std::to_string(i % 3) + " of sample " + std::to_string(i / 3) +
                  " is " + std::to_string(v) + " cycles/FOV, beyond any plausible k-space extent");
    out[i] = v;
    maxAbs = std::max(maxAbs, std::abs(v));
  }
  if (maxAbs == 0.f)
    throw Error(trajName + ": the trajectory is all zeros (every sample at k = 0), so it encodes no image");
  if (maxAbs >= kMinTrajectoryExtent && maxAbs < 1.f) {
    // |k| <= 0.5 everywhere: the grid's normalised units, not cycles per FOV (which would make a 2x2 image).
    if (maxAbs < 0.25f || maxAbs > 0.5f * (1.f + 1e-3f))
      throw Error(trajName + ": the largest |k| is " + number(maxAbs) +
                  " cycles/FOV, which encodes at most a 2x2 image; neither cycles per FOV nor normalised units "
                  "([-0.5, 0.5])");
    std::string by;
    for (int a = 0; a < 3; ++a) {
      const double scale = matrix[a] > 0 ? static_cast<double>(matrix[a]) : static_cast<double>(ts[1]);
      for (index_t i = a; i < out.size(); i += 3) out[i] = static_cast<float>(out[i] * scale);
      if (a < 2) by += (a ? " x " : "") + number(scale);
    }
    warnings.push_back(trajName + ": the trajectory spans [-0.5, 0.5] (largest |k| " + number(maxAbs) +
                       "): normalised units, scaled to cycles/FOV by " + by +
                       (matrix[0] > 0 ? " (--matrix)" : " (the readout's samples; --matrix sets the grid)"));
  }
  requirePlausibleTrajectory(out, trajName);
  return out;
}

void requirePlausibleTrajectory(const RArray& t, const std::string& trajName) {
  const index_t n = t.size() / 3;
  float maxAbs = 0;
  index_t at = 0;
  for (index_t i = 0; i < t.size(); ++i)
    if (std::abs(t[i]) > maxAbs) maxAbs = std::abs(t[i]), at = i;
  if (maxAbs < kMinTrajectoryExtent)
    throw Error(trajName + ": the trajectory is effectively all zero (largest |k| " + number(maxAbs) + " cycles/FOV" +
                (maxAbs > 0 && !std::isnormal(maxAbs) ? ", a denormal number" : "") + "), so it encodes no image");
  // The extent of the samples: the 99th percentile of max(|kx|, |ky|, |kz|) over up to 2^20 samples.
  const index_t stride = std::max<index_t>(1, n >> 20);
  std::vector<float> r;
  r.reserve(static_cast<std::size_t>(n / stride + 1));
  for (index_t s = 0; s < n; s += stride)
    r.push_back(std::max({std::abs(t[3 * s]), std::abs(t[3 * s + 1]), std::abs(t[3 * s + 2])}));
  const auto q = r.begin() + static_cast<std::ptrdiff_t>(0.99 * static_cast<double>(r.size() - 1));
  std::nth_element(r.begin(), q, r.end());
  const float extent = *q;
  if (maxAbs > 1.5f * extent + 1.f)
    throw Error(trajName + ": coordinate " + std::to_string(at % 3) + " of sample " + std::to_string(at / 3) + " is " +
                number(t[at]) + " cycles/FOV, outside the k-space extent of the others (99 % of the samples lie within |k| <= " +
                number(extent) + "): a corrupt coordinate");
}

void applyTrajectoryHeader(Header& h, const RArray& t, const long matrix[3]) {
  float maxAbs[3] = {0, 0, 0};
  for (index_t i = 0; i < t.size(); ++i) maxAbs[i % 3] = std::max(maxAbs[i % 3], std::abs(t[i]));
  for (int i = 0; i < 3; ++i) {
    const auto implied = maxAbs[i] > 0 ? 2 * static_cast<index_t>(std::ceil(maxAbs[i])) : index_t{1};
    h.recon[i] = matrix[i] > 0 ? matrix[i] : implied;
    h.encoded[i] = h.recon[i];
  }
  const bool threeD = maxAbs[2] > 0;
  h.trajectory = looksRadial(t) ? (threeD ? TrajectoryKind::Radial3D : TrajectoryKind::Radial) : TrajectoryKind::Other;
}

}  // namespace larmor::io::detail
