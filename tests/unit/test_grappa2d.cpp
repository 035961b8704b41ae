// 2D GRAPPA (pe1 x pe2 acceleration) on the CPU: the sampling analysis (lattice, calibration box from
// recon/calibration.hpp), the R patterns 1 x 2, 2 x 2 and 3 x 2 against the fully sampled reconstruction,
// measured points kept, ISMRMRD files with accelerationFactor pe2 > 1 written by our writer, and the data
// and settings it must refuse with one clear error. The weights against the float64 reference and the
// done criterion are in tests/shared/grappa2d.cpp (run on the CPU here and on the GPU in larmor_gpu_tests).
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "larmor/backend/registry.hpp"
#include "larmor/io/dataset_io.hpp"
#include "larmor/io/ismrmrd.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/quality/metrics.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/grappa.hpp"
#include "larmor/recon/settings.hpp"
#include "support/error_norms.hpp"
#include "support/grappa_problem.hpp"
#include "support/expect_error.hpp"

using namespace larmor;
using larmor::test::grappaSim2D;
namespace grappa = larmor::recon::grappa;

namespace {
using larmor::test::expectError;

const Dataset& cached(const std::string& key, const phantom::SimulateSettings& s) {
  static std::map<std::string, Dataset> cache;
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, phantom::simulate(s)).first;
  return it->second;
}

recon::ReconSettings grappaSettings() {
  recon::ReconSettings s;
  s.method = recon::Method::Grappa;
  return s;
}

CArray runGrappa(const Dataset& d, const recon::ReconSettings& s = grappaSettings()) {
  Timings t;
  return recon::reconstructGrappa(*makeCpuBackend(), d, s, t, {}).combined;
}

CArray runFft(const Dataset& d) {
  Timings t;
  return recon::reconstructCartesian(*makeCpuBackend(), d, recon::ReconSettings{}, t, {}).combined;
}

double nrmse(const CArray& a, const CArray& ref) { return quality::compare(a, ref).nrmse; }


}  // namespace

// The simulator's 2 x 2 data: a lattice through the centre and a 20 x 20 box; the analysis finds both.
TEST(Grappa2D, SamplingAnalysisFindsLatticeAndCentreBox) {
  const Dataset& d = cached("r22-48", grappaSim2D(48, 24, 4, 2, 2, 16));
  EXPECT_EQ(d.header.accelerationPe2, 2);
  const grappa::Sampling s = grappa::analyseSampling(d);
  EXPECT_TRUE(s.twoD());
  EXPECT_EQ(s.accel, 2);
  EXPECT_EQ(s.accelPe2, 2);
  EXPECT_EQ(s.depth, 24);
  EXPECT_EQ(s.acsCount, 16);
  EXPECT_EQ(s.acsCountPe2, 16);
  EXPECT_EQ(s.acsFirst, 24 - 8);
  EXPECT_EQ(s.acsFirstPe2, 12 - 8);
  EXPECT_EQ(s.gridFirst, 0);  // every 2nd line through the centre 24
  EXPECT_EQ(s.gridFirstPe2, 0);
}

// R = 1 x 2, 2 x 2 and 3 x 2 on 48 x 48 x 24, 6 coils, a 16 x 16 box, default kernel: each at least 2x
// better than zero-filling (measured in docs/grappa.md), and the measured points kept exactly.
TEST(Grappa2D, PatternsBeatZeroFilling) {
  const Dataset& full = cached("full-48", grappaSim2D(48, 24, 6, 1, 1, 16));
  const CArray ref = runFft(full);
  for (const auto& [ry, rz] : {std::pair{1, 2}, std::pair{2, 2}, std::pair{3, 2}}) {
    const Dataset& d = cached("p" + std::to_string(ry) + std::to_string(rz), grappaSim2D(48, 24, 6, ry, rz, 16));
    const double g = nrmse(runGrappa(d), ref), z = nrmse(runFft(d), ref);
    std::printf("2D GRAPPA %dx%d: NRMSE %.4f, zero-filled %.4f (%.1fx)\n", ry, rz, g, z, z / g);
    EXPECT_GT(z / g, 2.0) << ry << "x" << rz << ": GRAPPA " << g << ", zero-filled " << z;
    if (ry == 2) {
      // The basic calibration in hybrid space (x, ky, kz), 4 x 2 source blocks, segments of 8 columns.
      recon::ReconSettings b = grappaSettings();
      b.grappa.calibration = recon::GrappaCalibration::Basic;
      b.grappa.segment = 8;
      const double gb = nrmse(runGrappa(d, b), ref);
      std::printf("2D GRAPPA 2x2 basic: NRMSE %.4f\n", gb);
      EXPECT_GT(z / gb, 2.0) << "basic " << gb << ", zero-filled " << z;
    }
  }
}

// Without readout oversampling the forward FFT of the coil images is the filled k-space: the measured points
// (lattice and box) are the input's, the missing ones are filled.
TEST(Grappa2D, KeepsMeasuredPoints) {
  phantom::SimulateSettings ss = grappaSim2D(32, 16, 4, 2, 2, 12);
  ss.readoutOversampling = 1;
  const Dataset& d = cached("no-os", ss);
  recon::ReconSettings s = grappaSettings();
  s.grappa.kernelPe = 2;
  Timings t;
  const auto img = recon::reconstructGrappa(*makeCpuBackend(), d, s, t, {});
  auto cpu = makeCpuBackend();
  CDeviceArray k = CDeviceArray::upload(*cpu, img.coilImages);
  cpu->fft(k.buffer(), Shape{32, 32, 16, 4}, 3, FftDirection::Forward);
  const CArray ks = k.download();
  double diff = 0, norm = 0, filled = 0;
  for (index_t c = 0; c < 4; ++c)
    for (index_t z = 0; z < 16; ++z)
      for (index_t y = 0; y < 32; ++y)
        for (index_t x = 0; x < 32; ++x) {
          const cdouble got = ks[x + 32 * (y + 32 * (z + 16 * c))], in = d.kspace(x, y, z, c, 0);
          if (d.sampled(y, z, 0)) {
            diff += std::norm(got - in);
            norm += std::norm(in);
          } else {
            filled += std::norm(got);
          }
        }
  EXPECT_LT(std::sqrt(diff / norm), 1e-5);
  EXPECT_GT(filled, 0.0);
}

#ifdef LARMOR_HAVE_IO  // the GPU machine's build has no ISMRMRD
// An ISMRMRD file with accelerationFactor 2 x 2 written by our writer loads and reconstructs as the
// simulated dataset does.
TEST(Grappa2D, IsmrmrdFileWithPe2AccelerationLoads) {
  const Dataset& d = cached("r22-48", grappaSim2D(48, 24, 4, 2, 2, 16));
  std::filesystem::create_directories(LARMOR_TEST_TMP);
  const std::string file = std::string(LARMOR_TEST_TMP) + "/grappa2d-r22.h5";
  std::filesystem::remove(file);
  io::writeIsmrmrd(d, file);
  const Dataset back = io::loadDataset(file);
  EXPECT_EQ(back.header.accelerationPe1, 2);
  EXPECT_EQ(back.header.accelerationPe2, 2);
  const grappa::Sampling s = grappa::analyseSampling(back);
  EXPECT_EQ(s.accelPe2, 2);
  EXPECT_EQ(s.acsCountPe2, 16);
  EXPECT_LT(test::relL2Error(runGrappa(back), runGrappa(d)), 1e-5);
}
#endif

TEST(Grappa2D, RefusesWhatItCannotUse) {
  const Dataset& d = cached("r22-48", grappaSim2D(48, 24, 4, 2, 2, 16));
  // A kernel wider than the box along pe2: 8 partitions 2 apart span 15 > ... 9 partitions span 17 > 16.
  recon::ReconSettings big = grappaSettings();
  big.grappa.kernelPe2 = 9;
  expectError([&] { runGrappa(d, big); }, "more than the fully sampled centre 16x16");
  // No calibration box.
  phantom::SimulateSettings noAcs = grappaSim2D(48, 24, 4, 2, 2, 0);
  const Dataset& n = cached("no-acs", noAcs);
  expectError([&] { grappa::analyseSampling(n); }, "calibration (ACS)");
  // A point off the lattice.
  Dataset off = d;
  ASSERT_FALSE(off.sampled(1, 1, 0));
  off.sampled(1, 1, 0) = 1;
  expectError([&] { grappa::analyseSampling(off); }, "regular undersampling");
  // Slices with different points.
  phantom::SimulateSettings two = grappaSim2D(48, 24, 4, 2, 2, 16);
  Dataset ms = d;
  (void)two;
  ms.header.accelerationPe2 = 2;
  ms.header.encoded[2] = 1;
  expectError([&] { grappa::analyseSampling(ms); }, "one pe2 partition");
}

// The simulator's pe2 acceleration needs 3D.
TEST(Grappa2D, SimulatorRefusesPe2AccelerationIn2D) {
  phantom::SimulateSettings s = larmor::test::grappaSim(32, 2, 2);
  s.accelPe2 = 2;
  expectError([&] { phantom::simulate(s); }, "needs 3D Cartesian data");
}

