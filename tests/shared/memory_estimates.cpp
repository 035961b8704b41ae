// Shared by the unit (cpu) and GPU (cuda) binaries: the resource planner's working-set estimate
// (recon/resources.cpp) against the backend's measured peak of its buffers (ExecutionOps::memoryStats) during a
// real recon::run, within 0.8-1.25x. Both backends count their buffers the same way;
// the formulas count the buffers each path allocates. On the GPU the peak is taken above what was live
// before the run, and the lower bound is 0.7: the FFT engine keeps the largest cuFFT work area it has
// needed (cuda/fft.cu), so after the process's earlier tests a transform may take no new one, while the
// estimate counts it (f X / 2, about a quarter of the fft job's peak). tests/gpu/memory_estimates.sh
// measures each workload in a fresh process.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/resources.hpp"
#include "larmor/recon/settings_table.hpp"
#include "support/device.hpp"

using namespace larmor;

namespace {

class MemoryEstimate : public larmor::test::DeviceTest {
 protected:
  // The measured peak over the estimate for `s` on this device.
  double measuredOverEstimate(const Dataset& d, recon::ReconSettings s) {
    recon::settings::applyMethodDefaults(s);
    recon::ReconRequest req;
    req.dataset = &d;
    req.backend = be_;
    req.settings = s;
    be().synchronize();
    const double before = static_cast<double>(be().executionOps().memoryStats().liveBytes);
    const recon::ReconResult r = recon::run(req);
    const double peak = r.provenance["memory"]["backend_peak_live_bytes"].get<double>() - before;
    const double estimate = recon::estimateMemory(d, s, be().info()).workBytes;
    EXPECT_GT(estimate, 0);
    std::printf("  %s: measured %.1f MB, estimate %.1f MB [%s]\n", recon::toString(s.method).c_str(), peak / 1e6,
                estimate / 1e6, r.provenance["memory"]["rule"].get<std::string>().c_str());
    return peak / estimate;
  }
  double lowest() const { return onGpu() ? 0.7 : 0.8; }
};

Dataset simulated(index_t nx, index_t ny, index_t nz, index_t slices, int coils, int accel,
                  TrajectoryKind traj = TrajectoryKind::Cartesian) {
  phantom::SimulateSettings s;
  s.matrix[0] = nx, s.matrix[1] = ny, s.matrix[2] = nz;
  s.slices = slices;
  s.coils = coils;
  s.accel = accel;
  s.trajectory = traj;
  if (traj != TrajectoryKind::Cartesian) s.spokes = 200;
  return phantom::simulate(s);
}

recon::ReconSettings method(recon::Method m) {
  recon::ReconSettings s;
  s.method = m;
  return s;
}

}  // namespace

TEST_P(MemoryEstimate, Fft3d) {
  const double r = measuredOverEstimate(simulated(64, 64, 32, 1, 8, 1), method(recon::Method::Fft));
  EXPECT_GT(r, lowest());
  EXPECT_LT(r, 1.25);
}

// GRAPPA's estimate is the pipeline's own batch (grappa::batchPlan); it used to be 0.11 of the H100's peak.
TEST_P(MemoryEstimate, Grappa) {
  const double r = measuredOverEstimate(simulated(128, 128, 1, 6, 8, 2), method(recon::Method::Grappa));
  EXPECT_GT(r, lowest());
  EXPECT_LT(r, 1.25);
}

// Gridding: the k-space, the images, the trajectory and the oversampled grid of up to 8 coils (was 1.77x).
TEST_P(MemoryEstimate, Gridding) {
  const double r =
      measuredOverEstimate(simulated(128, 128, 1, 2, 8, 1, TrajectoryKind::Radial), method(recon::Method::Gridding));
  EXPECT_GT(r, lowest());
  EXPECT_LT(r, 1.25);
}

// 3D Cartesian SENSE with ESPIRiT maps: the peak is the maps' covariance interpolation on the map grid
// (the old formula counted per-coil Gram buffers the batched operator does not keep: 3.3x on the H100).
TEST_P(MemoryEstimate, CartesianSense3d) {
  recon::ReconSettings s = method(recon::Method::Cg);
  s.iterative.iterations = 2;
  const Dataset d = simulated(32, 32, 32, 1, 8, 2);
  const double r = measuredOverEstimate(d, s);
  EXPECT_GT(r, lowest());
  EXPECT_LT(r, 1.25);
  EXPECT_NE(recon::estimateMemory(d, s, be().info()).rule.find("Cartesian SENSE, 3D"), std::string::npos);
}

LARMOR_INSTANTIATE_ON_TEST_DEVICE(MemoryEstimate);
