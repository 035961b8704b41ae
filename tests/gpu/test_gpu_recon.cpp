// The GPU Cartesian reconstruction against the CPU one on the same simulated data: the whole pipeline
// (upload, inverse FFT, oversampling crop, resampling, SoS, download) must agree to 1e-5 (relative L2).
#include <gtest/gtest.h>

#include <cmath>

#include "larmor/backend/registry.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/recon.hpp"
#include "support/device.hpp"
#include "support/error_norms.hpp"

using namespace larmor;

namespace {

class GpuRecon : public larmor::test::GpuTest {};

recon::ReconResult runOn(const Dataset& d, const std::string& device, long matrix = 0) {
  recon::ReconRequest req;
  req.dataset = &d;
  req.device = device;
  if (matrix) req.settings.matrix[0] = req.settings.matrix[1] = matrix;
  return recon::run(req);
}

}  // namespace

TEST_F(GpuRecon, Cartesian2DMultiCoilMatchesCpu) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 128;
  s.coils = 8;
  s.accel = 2;
  s.acs = 24;
  s.noiseSigma = 0.01f;
  const Dataset d = phantom::simulate(s);
  const auto cpu = runOn(d, "cpu"), gpu = runOn(d, "cuda");
  EXPECT_EQ(gpu.device.rfind("cuda", 0), 0u) << gpu.device;
  for (const auto& st : gpu.timings.stages())
    if (st.stage != "metrics") EXPECT_EQ(st.device.rfind("cuda", 0), 0u) << st.stage << " ran on " << st.device;
  EXPECT_LT(larmor::test::relL2Error(gpu.coilImages, cpu.coilImages), 1e-5);
  EXPECT_LT(larmor::test::relL2Error(gpu.image, cpu.image), 1e-5);
}

TEST_F(GpuRecon, MultiSliceAnd3DAndResamplingMatchCpu) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 64;
  s.slices = 4;
  s.coils = 4;
  const Dataset multi = phantom::simulate(s);
  EXPECT_LT(larmor::test::relL2Error(runOn(multi, "cuda").image, runOn(multi, "cpu").image), 1e-5);
  EXPECT_LT(larmor::test::relL2Error(runOn(multi, "cuda", 96).image, runOn(multi, "cpu", 96).image), 1e-5);

  phantom::SimulateSettings v;
  v.matrix[0] = v.matrix[1] = v.matrix[2] = 32;
  v.coils = 2;
  const Dataset vol = phantom::simulate(v);
  EXPECT_LT(larmor::test::relL2Error(runOn(vol, "cuda").image, runOn(vol, "cpu").image), 1e-5);
}
