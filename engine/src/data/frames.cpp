// Frame binning (larmor/data/frames.hpp): each frame copies its window of profiles out of the k-space
// [readout, P, 1, coils, slices] (one run of readout x K samples per coil and slice) and of the trajectory
// [3, readout, P].
#include "larmor/data/frames.hpp"

#include <algorithm>
#include <string>

#include "larmor/util/error.hpp"

namespace larmor {

namespace {

std::string sourceName(const Dataset& d) { return d.source.empty() ? std::string("data") : d.source; }

void checkWindow(const std::string& name, index_t k, index_t overlap) {
  require(k >= 1, name + ": cannot bin into frames of " + std::to_string(k) + " profiles (at least 1)");
  require(overlap >= 0 && overlap < k, name + ": a frame overlap of " + std::to_string(overlap) +
                                           " profiles must be 0 to " + std::to_string(k - 1) + " (below " +
                                           std::to_string(k) + " profiles per frame)");
}

Dataset frameOf(const Dataset& d, index_t first, index_t k) {
  const Shape& s = d.kspace.shape();
  const index_t readout = s[0], profiles = s[1], coils = s[3], slices = s[4];
  Dataset f;
  f.source = d.source;
  f.header = d.header;
  f.kspace = CArray(Shape{readout, k, 1, coils, slices});
  for (index_t cs = 0; cs < coils * slices; ++cs) {
    const cfloat* src = d.kspace.data() + readout * (first + profiles * cs);
    std::copy(src, src + readout * k, f.kspace.data() + readout * k * cs);
  }
  f.trajectory = RArray(Shape{3, readout, k});
  const float* t = d.trajectory.data() + 3 * readout * first;
  std::copy(t, t + 3 * readout * k, f.trajectory.data());
  f.coilMaps = d.coilMaps;
  f.noise = d.noise;
  f.noiseScans = d.noiseScans;
  f.warnings = d.warnings;
  return f;
}

}  // namespace

index_t framesFor(index_t profiles, index_t spokesPerFrame, index_t overlap) {
  checkWindow("frames", spokesPerFrame, overlap);
  if (profiles < spokesPerFrame) return 0;
  return (profiles - spokesPerFrame) / (spokesPerFrame - overlap) + 1;
}

std::vector<Dataset> binFrames(const Dataset& d, index_t k, index_t overlap) {
  const std::string name = sourceName(d);
  require(d.header.trajectory != TrajectoryKind::Cartesian && !d.trajectory.empty(),
          name + ": cannot bin Cartesian data into frames (binning cuts non-Cartesian profiles in acquisition order)");
  checkWindow(name, k, overlap);
  const Shape& s = d.kspace.shape();
  require(s.rank() == 5 && s[2] == 1 && d.trajectory.shape().rank() == 3 && d.trajectory.shape()[2] == s[1],
          name + ": cannot bin k-space " + s.str() + " with trajectory " + d.trajectory.shape().str() +
              " (expected [readout, profiles, 1, coils, slices] and [3, readout, profiles])");
  const index_t profiles = s[1];
  require(profiles >= k, name + ": " + std::to_string(profiles) + " profiles are fewer than one frame of " +
                             std::to_string(k));
  const index_t n = framesFor(profiles, k, overlap), step = k - overlap;
  const index_t dropped = profiles - (n - 1) * step - k;
  std::vector<Dataset> out;
  out.reserve(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) {
    out.push_back(frameOf(d, i * step, k));
    if (dropped > 0)
      out.back().warnings.push_back(name + ": the last " + std::to_string(dropped) + " of " + std::to_string(profiles) +
                                    " profiles do not fill a frame of " + std::to_string(k) + " and are dropped");
  }
  return out;
}

std::vector<Dataset> binFramesByCount(const Dataset& d, index_t frames) {
  const std::string name = sourceName(d);
  const index_t profiles = d.kspace.shape().rank() >= 2 ? d.kspace.shape()[1] : 0;
  require(d.header.trajectory != TrajectoryKind::Cartesian && !d.trajectory.empty(),
          name + ": cannot bin Cartesian data into frames (binning cuts non-Cartesian profiles in acquisition order)");
  require(frames >= 1 && frames <= profiles, name + ": cannot bin " + std::to_string(profiles) + " profiles into " +
                                                 std::to_string(frames) + " frames (1 to " +
                                                 std::to_string(profiles) + ")");
  return binFrames(d, profiles / frames, 0);
}

}  // namespace larmor
