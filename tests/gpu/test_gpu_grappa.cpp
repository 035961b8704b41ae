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

using namespace larmor;
using recon::GrappaCalibration;
namespace grappa = larmor::recon::grappa;

namespace {

// Weights: the thesis's bound (sec. 5.3.3: "the relative error of the final reconstruction weights adds up
// to 1e-4"); the CPU measures 1.2e-5 on 8 coils. Images: GPU vs CPU, both float32 pipelines with the same
// double-precision solve; the FFTs and products differ in summation order only.
constexpr double kWeightTol = 1e-4;
constexpr double kImageTol = 1e-4;

double relDiff(const CArray& a, const CArray& b) {
  double e = 0, n = 0;
  for (index_t i = 0; i < a.size(); ++i) {
    e += std::norm(cdouble(a[i]) - cdouble(b[i]));
    n += std::norm(cdouble(b[i]));
  }
  return std::sqrt(e / n);
}

std::pair<double, double> weightErrors(const CArray& fast, const Array<cdouble>& ref) {
  double e = 0, n = 0, mean = 0;
  for (index_t i = 0; i < fast.size(); ++i) {
    const cdouble d = cdouble(fast[i]) - ref[i];
    e += std::norm(d);
    n += std::norm(ref[i]);
    mean += std::abs(d) / std::abs(ref[i]);
  }
  return {std::sqrt(e / n), mean / static_cast<double>(fast.size())};
}

phantom::SimulateSettings sim(index_t n, int coils, int accel, float noise = 0, index_t slices = 1, index_t nz = 1) {
  phantom::SimulateSettings s;
  s.matrix[0] = n, s.matrix[1] = n, s.matrix[2] = nz;
  s.slices = slices;
  s.coils = coils;
  s.accel = accel;
  s.acs = 24;
  s.noiseSigma = noise;
  return s;
}

class GpuGrappa : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& reg = BackendRegistry::instance();
    const std::string why = reg.whyNoGpu();
    if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;
    gpu = reg.select("cuda").backend;
    cpu = makeCpuBackend();
  }
  std::shared_ptr<Backend> gpu, cpu;

  /// The reconstruction on both backends; every GPU stage must have run on the GPU.
  void compare(const Dataset& d, const recon::ReconSettings& s, const std::string& what, std::size_t budget = 0) {
    Timings tg, tc;
    const auto g = grappa::Pipeline(*gpu, d, s, 0, budget).run(d, tg);
    const auto c = grappa::Pipeline(*cpu, d, s, 0, budget).run(d, tc);
    EXPECT_LT(relDiff(g.combined, c.combined), kImageTol) << what;
    if (s.keepCoilImages) EXPECT_LT(relDiff(g.coilImages, c.coilImages), kImageTol) << what;
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
  const Dataset d = phantom::simulate(sim(256, 32, 4, 0.01f));
  recon::GrappaSettings s;
  s.calibration = GrappaCalibration::Basic;
  ASSERT_EQ(d.header.encoded[0], 512);
  const grappa::Sampling smp = grappa::analyseSampling(d);
  const CArray planes = grappa::calibrationDomain(d, s);
  const CArray wg = grappa::calibrationWeights(*gpu, planes, smp, s);
  ASSERT_EQ(wg.shape(), (Shape{128, 96, 4}));
  const auto [fro, eq51] = weightErrors(wg, grappa::referenceWeights(planes, smp, s));
  EXPECT_LE(fro, kWeightTol);
  EXPECT_LE(eq51, kWeightTol);
  RecordProperty("frobenius", std::to_string(fro));
  RecordProperty("eq51", std::to_string(eq51));
  // And the CPU's fast path agrees with the GPU's.
  EXPECT_LT(relDiff(wg, grappa::calibrationWeights(*cpu, planes, smp, s)), kWeightTol);
}

// The improved kernel (4 x 5, 16 coils: 320 unknowns per target, the one-at-a-time Cholesky path) with
// clipping.
TEST_F(GpuGrappa, ImprovedWeightsMatchFloat64Reference) {
  const Dataset d = phantom::simulate(sim(128, 16, 3, 0.01f));
  recon::GrappaSettings s;
  s.kappa = 0.05;
  const grappa::Sampling smp = grappa::analyseSampling(d);
  const CArray planes = grappa::calibrationDomain(d, s);
  const CArray wg = grappa::calibrationWeights(*gpu, planes, smp, s);
  EXPECT_LE(weightErrors(wg, grappa::referenceWeights(planes, smp, s)).first, kWeightTol);
}

TEST_F(GpuGrappa, ReconstructionMatchesCpu2D) {
  const Dataset d = phantom::simulate(sim(128, 8, 3, 0.01f));
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
  compare(phantom::simulate(sim(64, 8, 2, 0.01f, 5)), settings(GrappaCalibration::Improved), "5 slices");
  const Dataset v = phantom::simulate(sim(48, 8, 2, 0.01f, 1, 16));
  compare(v, settings(GrappaCalibration::Improved), "3D");
  compare(v, settings(GrappaCalibration::Basic), "3D basic");
  compare(v, settings(GrappaCalibration::Improved), "3D in sub-batches", std::size_t{16} << 20);
}

// The Table 5.1 slice through the whole pipeline on both devices (the benchmark's workload).
TEST_F(GpuGrappa, Table51SliceMatchesCpu) {
  const Dataset d = phantom::simulate(sim(256, 32, 4, 0.01f));
  recon::ReconSettings s = settings(GrappaCalibration::Basic);
  s.keepCoilImages = false;
  compare(d, s, "Table 5.1 slice");
}
