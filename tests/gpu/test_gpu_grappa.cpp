// GRAPPA on the GPU: the weights on the thesis's Table 5.1 configuration exactly (512 columns, 32 coils,
// R = 4, 24 ACS lines, Nb = 4, Δs = 128, χ = 1e-4, η = 1) against the float64 reference, and the whole
// reconstruction (calibration, filling, inverse FFT, crop, combination) against the CPU backend's. Skipped
// without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "larmor/backend/registry.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/grappa.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/recon/cartesian.hpp"
#include "support/device.hpp"
#include "support/error_norms.hpp"
#include "support/grappa_problem.hpp"
#include "support/grappa_reference.hpp"

using namespace larmor;
using namespace larmor::test;
using recon::GrappaCalibration;
namespace grappa = larmor::recon::grappa;

namespace {

// Weights: the thesis's bound (sec. 5.3.3: "the relative error of the final reconstruction weights adds up
// to 1e-4"); the CPU measures 1.2e-5 on 8 coils. Images: GPU vs CPU, both float32 pipelines with the same
// double-precision solve; the FFTs and products differ in summation order only.
constexpr double kWeightTol = 1e-4;
constexpr double kImageTol = 1e-4;

class GpuGrappa : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    gpu = gpu_;
    cpu = cpu_;
  }
  std::shared_ptr<Backend> gpu, cpu;

  /// The reconstruction on both backends; every GPU stage must have run on the GPU.
  void compare(const Dataset& d, const recon::ReconSettings& s, const std::string& what, std::size_t budget = 0) {
    Timings tg, tc;
    const auto g = grappa::Pipeline(*gpu, d, s, 0, budget).run(d, tg);
    const auto c = grappa::Pipeline(*cpu, d, s, 0, budget).run(d, tc);
    EXPECT_LT(relL2Error(g.combined, c.combined), kImageTol) << what;
    if (s.keepCoilImages) EXPECT_LT(relL2Error(g.coilImages, c.coilImages), kImageTol) << what;
    for (const auto& st : tg.stages())
      if (st.stage.find("host") == std::string::npos)
        EXPECT_EQ(st.device.rfind("cuda", 0), 0u) << what << ": " << st.stage << " ran on " << st.device;
  }
};

recon::ReconSettings settings(GrappaCalibration cal) {
  recon::ReconSettings s;
  s.method = recon::Method::Grappa;
  s.grappa.calibration = cal;
  return s;
}

}  // namespace

// Noise σ = 0.01 of the phantom's peak as in the CPU test (see test_grappa.cpp for why not zero).
TEST_F(GpuGrappa, Table51WeightsMatchFloat64Reference) {
  const Dataset d = phantom::simulate(grappaSim(256, 32, 4, 0.01f));
  recon::GrappaSettings s;
  s.calibration = GrappaCalibration::Basic;
  ASSERT_EQ(d.header.encoded[0], 512);
  const grappa::Sampling smp = grappa::analyseSampling(d);
  const CArray planes = grappa::calibrationDomain(d, s);
  const CArray wg = grappa::calibrationWeights(*gpu, planes, smp, s);
  ASSERT_EQ(wg.shape(), (Shape{128, 96, 4}));
  const Array<cdouble> ref = larmor::test::grappaLsWeights(planes, smp, s);
  const double fro = relL2Error(wg, ref), eq51 = meanRelError(wg, ref);
  EXPECT_LE(fro, kWeightTol);
  EXPECT_LE(eq51, kWeightTol);
  RecordProperty("frobenius", std::to_string(fro));
  RecordProperty("eq51", std::to_string(eq51));
  // And the CPU's fast path agrees with the GPU's.
  EXPECT_LT(relL2Error(wg, grappa::calibrationWeights(*cpu, planes, smp, s)), kWeightTol);
}

// The improved kernel (4 x 5, 16 coils: 320 unknowns per target, the one-at-a-time Cholesky path) with
// clipping.
TEST_F(GpuGrappa, ImprovedWeightsMatchFloat64Reference) {
  const Dataset d = phantom::simulate(grappaSim(128, 16, 3, 0.01f));
  recon::GrappaSettings s;
  s.kappa = 0.05;
  const grappa::Sampling smp = grappa::analyseSampling(d);
  const CArray planes = grappa::calibrationDomain(d, s);
  const CArray wg = grappa::calibrationWeights(*gpu, planes, smp, s);
  EXPECT_LE(relL2Error(wg, larmor::test::grappaLsWeights(planes, smp, s)), kWeightTol);
}

TEST_F(GpuGrappa, ReconstructionMatchesCpu2D) {
  const Dataset d = phantom::simulate(grappaSim(128, 8, 3, 0.01f));
  compare(d, settings(GrappaCalibration::Improved), "2D improved");
  compare(d, settings(GrappaCalibration::Basic), "2D basic");
  recon::ReconSettings interp = settings(GrappaCalibration::Basic);
  interp.grappa.interpolateSegments = true;
  compare(d, interp, "2D basic, interpolated segments");
  recon::ReconSettings cc = settings(GrappaCalibration::Improved);
  cc.grappa.outCoils = 5;
  compare(d, cc, "2D improved, 5 virtual coils");
  recon::ReconSettings resampled = settings(GrappaCalibration::Improved);
  resampled.matrix[0] = resampled.matrix[1] = 96;
  resampled.keepCoilImages = false;
  compare(d, resampled, "2D improved, 96 matrix");
}

TEST_F(GpuGrappa, ReconstructionMatchesCpuMultiSliceAnd3D) {
  compare(phantom::simulate(grappaSim(64, 8, 2, 0.01f, 5)), settings(GrappaCalibration::Improved), "5 slices");
  const Dataset v = phantom::simulate(grappaSim(48, 8, 2, 0.01f, 1, 16));
  compare(v, settings(GrappaCalibration::Improved), "3D");
  compare(v, settings(GrappaCalibration::Basic), "3D basic");
  compare(v, settings(GrappaCalibration::Improved), "3D in sub-batches", std::size_t{16} << 20);
}

// 2D GRAPPA (pe1 x pe2 acceleration): 3D volumes 2 x 2, 1 x 2 and 3 x 2 through the whole pipeline
// on both devices, improved (k-space kernel) and basic (hybrid space); the same kImageTol. The weights against
// the float64 reference and the done criterion run on the GPU in tests/shared/grappa2d.cpp.
TEST_F(GpuGrappa, ReconstructionMatchesCpu2DAcceleration) {
  const Dataset v = phantom::simulate(grappaSim2D(48, 24, 8, 2, 2, 16, 0.01f));
  compare(v, settings(GrappaCalibration::Improved), "3D 2x2");
  compare(v, settings(GrappaCalibration::Basic), "3D 2x2 basic");
  compare(phantom::simulate(grappaSim2D(48, 24, 8, 1, 2, 16, 0.01f)), settings(GrappaCalibration::Improved), "3D 1x2");
  compare(phantom::simulate(grappaSim2D(48, 24, 8, 3, 2, 16, 0.01f)), settings(GrappaCalibration::Improved), "3D 3x2");
}

// The Table 5.1 slice through the whole pipeline on both devices (the benchmark's workload).
TEST_F(GpuGrappa, Table51SliceMatchesCpu) {
  const Dataset d = phantom::simulate(grappaSim(256, 32, 4, 0.01f));
  recon::ReconSettings s = settings(GrappaCalibration::Basic);
  s.keepCoilImages = false;
  compare(d, s, "Table 5.1 slice");
}
