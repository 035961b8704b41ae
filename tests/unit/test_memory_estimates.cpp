// The resource planner's formulas (recon/resources.cpp) against what the code allocates (issue 15, item 3).
// The CPU backend counts its buffers exactly like the CUDA backend (Backend::memoryStats), so each
// workload's estimated working set is checked against the measured peak of a real run on the CPU: within
// 0.8-1.3x. GRAPPA's estimate is the pipeline's own batch rule (grappa::batchPlan), pinned here for a
// given device memory, and a GPU too small for all slices at once gets fewer slices per batch.
#include <gtest/gtest.h>

#include "larmor/backend/registry.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/grappa.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/resources.hpp"
#include "larmor/recon/settings_table.hpp"

using namespace larmor;

namespace {

Dataset grappaData() {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 128;
  s.slices = 6;
  s.coils = 8;
  s.accel = 2;
  return phantom::simulate(s);
}

recon::ReconSettings settingsFor(recon::Method m) {
  recon::ReconSettings s;
  s.method = m;
  recon::settings::applyMethodDefaults(s);
  return s;
}

// The measured peak of the backend's buffers during recon::run on the CPU over the planner's estimate.
double measuredOverEstimate(const Dataset& d, const recon::ReconSettings& s) {
  recon::ReconRequest req;
  req.dataset = &d;
  req.device = "cpu";
  req.settings = s;
  const recon::ReconResult r = recon::run(req);
  const double live = r.provenance["memory"]["backend_peak_live_bytes"].get<double>();
  const double estimate = recon::estimateMemory(d, s, false).workBytes;
  EXPECT_GT(estimate, 0);
  return live / estimate;
}

}  // namespace

// One rule: the planner's GRAPPA estimate on a GPU is the batch the pipeline takes on it (40 % of its
// memory), and the pipeline sizes its batch by the same function.
TEST(MemoryEstimates, GrappaEstimateIsThePipelinesBatchRule) {
  const Dataset d = grappaData();
  const recon::ReconSettings s = settingsFor(recon::Method::Grappa);
  DeviceInfo gpu;
  gpu.id = "cuda:0", gpu.gpu = true, gpu.memoryBytes = std::size_t{80} << 30;
  const recon::grappa::BatchPlan big = recon::grappa::batchPlan(d, s, gpu);
  EXPECT_EQ(big.slices, 6);  // all slices fit 32 GB
  EXPECT_DOUBLE_EQ(big.budgetBytes, 0.4 * static_cast<double>(gpu.memoryBytes));
  EXPECT_DOUBLE_EQ(recon::estimateMemory(d, s, gpu).workBytes, big.bytes);

  // A GPU with room for about two slices: fewer slices per batch, an estimate that fits its memory.
  const double perSlice = big.bytes / 6;
  gpu.memoryBytes = static_cast<std::size_t>(2.2 * perSlice / 0.4);
  const recon::grappa::BatchPlan small = recon::grappa::batchPlan(d, s, gpu);
  EXPECT_GE(small.slices, 1);
  EXPECT_LT(small.slices, 6);
  const recon::MemoryEstimate e = recon::estimateMemory(d, s, gpu);
  EXPECT_DOUBLE_EQ(e.workBytes, small.bytes);
  EXPECT_LT(e.deviceBytes(), static_cast<double>(gpu.memoryBytes));
  EXPECT_NE(e.rule.find(std::to_string(small.slices) + " slices per batch"), std::string::npos) << e.rule;
  EXPECT_NO_THROW((void)recon::planMemory(d, s, gpu, false, true));

  // The pipeline takes the batch the rule gives for the same budget.
  auto cpu = BackendRegistry::instance().select("cpu").backend;
  const std::size_t budget = static_cast<std::size_t>(small.budgetBytes);
  recon::grappa::Pipeline p(*cpu, d, s, 0, budget);
  EXPECT_EQ(p.slicesPerBatch(), recon::grappa::batchPlan(d, s, cpu->info(), budget).slices);
  EXPECT_EQ(p.slicesPerBatch(), small.slices);
}

// GRAPPA on the CPU (2 GiB budget: all slices of this small set in one batch): the estimate is what the
// pipeline allocates.
TEST(MemoryEstimates, GrappaMatchesTheMeasuredPeak) {
  const double r = measuredOverEstimate(grappaData(), settingsFor(recon::Method::Grappa));
  EXPECT_GT(r, 0.8);
  EXPECT_LT(r, 1.25);
}

TEST(MemoryEstimates, FftMatchesTheMeasuredPeak) {
  phantom::SimulateSettings ps;
  ps.matrix[0] = 64, ps.matrix[1] = 64, ps.matrix[2] = 32;
  ps.coils = 8;
  const double r = measuredOverEstimate(phantom::simulate(ps), settingsFor(recon::Method::Fft));
  EXPECT_GT(r, 0.8);
  EXPECT_LT(r, 1.25);
}

TEST(MemoryEstimates, GriddingMatchesTheMeasuredPeak) {
  phantom::SimulateSettings ps;
  ps.matrix[0] = ps.matrix[1] = 128;
  ps.coils = 8;
  ps.slices = 2;
  ps.trajectory = TrajectoryKind::Radial;
  ps.spokes = 200;
  const double r = measuredOverEstimate(phantom::simulate(ps), settingsFor(recon::Method::Gridding));
  EXPECT_GT(r, 0.8);
  EXPECT_LT(r, 1.25);
}

// 3D Cartesian SENSE with ESPIRiT maps: the peak is the maps' covariance interpolation on the
// oversampled grid (not per-coil Gram buffers, which the old formula counted: 3.3x on the H100).
TEST(MemoryEstimates, CartesianSense3dMatchesTheMeasuredPeak) {
  phantom::SimulateSettings ps;
  ps.matrix[0] = ps.matrix[1] = ps.matrix[2] = 32;
  ps.coils = 8;
  ps.accel = 2;
  recon::ReconSettings s = settingsFor(recon::Method::Cg);
  s.iterative.iterations = 2;
  const Dataset d = phantom::simulate(ps);
  const double r = measuredOverEstimate(d, s);
  EXPECT_GT(r, 0.8);
  EXPECT_LT(r, 1.25);
  EXPECT_NE(recon::estimateMemory(d, s, false).rule.find("Cartesian SENSE, 3D"), std::string::npos);
}
