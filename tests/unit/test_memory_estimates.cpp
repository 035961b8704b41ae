// The resource planner's GRAPPA estimate is the pipeline's own batch rule (grappa::batchPlan), pinned here for
// a given device memory; a GPU too small for all slices at once gets fewer slices per
// batch. The measured-against-estimated checks of every method are tests/shared/memory_estimates.cpp.
#include <gtest/gtest.h>

#include "larmor/backend/registry.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/grappa.hpp"
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
