// Trajectory checks and the header a trajectory implies (trajectory_input.hpp). Moved out of
// dataset_io.cpp so the twix reader applies the same rules to a trajectory given with --traj.
#include "trajectory_input.hpp"

#include <algorithm>
#include <cmath>

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

}  // namespace

RArray checkedTrajectory(const CArray& t, const std::string& trajName) {
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
  return out;
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
