// Shared by the unit (cpu) and GPU (cuda) binaries: QualityOps (backend/quality_ops.hpp) against
// quality::compare on the host, the reference (its own float64 oracle: tests/unit/test_quality_oracles.cpp):
// percent error, PSNR, SSIM and the least-squares scale on several planes, and the errors for non-finite
// voxels and an all-zero reference.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "larmor/data/dataset.hpp"
#include "larmor/quality/display.hpp"
#include "larmor/quality/metrics.hpp"
#include "support/device.hpp"
#include "support/random_data.hpp"

using namespace larmor;
using larmor::test::randomArray;

namespace {
class QualityOnDevice : public larmor::test::DeviceTest {};

/// A smooth image (so SSIM is not trivially ~0) and a scaled, noisy copy of it.
std::pair<CArray, CArray> images(const Shape& s, unsigned seed) {
  CArray ref(s), test(s);
  const CArray noise = randomArray(s, seed);
  for (index_t i = 0; i < ref.size(); ++i) {
    const index_t x = i % s[0], y = (i / s[0]) % s[1], p = i / (s[0] * s[1]);
    ref[i] = cfloat(static_cast<float>(1.0 + std::sin(0.2 * x) * std::cos(0.13 * y) + 0.3 * p), 0.2f);
    test[i] = 2.5f * ref[i] + 0.05f * noise[i];
  }
  return {test, ref};
}
}  // namespace

TEST_P(QualityOnDevice, MetricsMatchTheHostReference) {
  for (const Shape& s : {Shape{64, 48, 3}, Shape{256, 256}, Shape{13, 11}}) {
    const auto [test, ref] = images(s, 81);
    for (bool lsq : {true, false}) {
      quality::CompareOptions o;
      o.leastSquaresScale = lsq;
      const quality::Metrics host = quality::compare(test, ref, o);
      const quality::Metrics dev = quality::compareOn(be(), test, ref, o);
      const double tol = 1e-11;
      EXPECT_NEAR(dev.scale, host.scale, tol * std::abs(host.scale)) << s.str();
      EXPECT_NEAR(dev.nrmse, host.nrmse, tol * host.nrmse) << s.str();
      EXPECT_NEAR(dev.percentError, host.percentError, tol * host.percentError) << s.str();
      EXPECT_NEAR(dev.psnrDb, host.psnrDb, tol * std::abs(host.psnrDb)) << s.str();
      // SSIM's local variances are differences of nearly equal moments (E a^2 - (E a)^2 on a smooth image), so
      // the GPU's fused multiply-adds and the float magnitudes of a scale that differs in its last bit move it
      // by ~1e-10 (seen on the H100: 6e-11 to 3e-10, with and without the scale); the other metrics by ~1e-15.
      EXPECT_NEAR(dev.ssim, host.ssim, 2e-9) << s.str();
      EXPECT_EQ(dev.voxels, host.voxels);
      EXPECT_GT(host.ssim, 0.05) << "the case must exercise SSIM";
    }
  }
}

TEST_P(QualityOnDevice, NonFiniteVoxelsAndAZeroReferenceAreErrors) {
  auto [test, ref] = images(Shape{32, 32, 2}, 82);
  CArray badTest = test, badRef = ref, zero(ref.shape());
  badTest[700] = cfloat(std::numeric_limits<float>::quiet_NaN(), 0.f);
  badTest[900] = cfloat(std::numeric_limits<float>::infinity(), 0.f);
  badRef[1500] = cfloat(0.f, std::numeric_limits<float>::infinity());
  auto message = [&](const CArray& t, const CArray& r) {
    try {
      quality::compareOn(be(), t, r);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(badTest, ref), "compare: the test image has a non-finite value at voxel 700");
  EXPECT_EQ(message(test, badRef), "compare: the reference has a non-finite value at voxel 1500");
  EXPECT_EQ(message(test, zero), "compare: the reference image is all zero");
}

LARMOR_INSTANTIATE_ON_TEST_DEVICE(QualityOnDevice);

// recon::run's metrics compare against comparisonTruthOn (the true maps' root sum of squares made on the
// backend): its magnitudes are comparisonTruth's (the host's, in double) to float rounding, for one and several
// slices, and the metrics against it are the host metrics against comparisonTruth.
TEST_P(QualityOnDevice, TruthOnTheBackendMatchesTheHostTruth) {
  for (const index_t slices : {1, 3}) {
    Dataset d;
    d.source = "truth";
    d.header.coils = 5;
    d.header.slices = slices;
    const Shape img{24, 20, 1, 1, slices};
    d.reference = randomArray(img, 91);
    d.coilMaps = randomArray(Shape{24, 20, 1, 5, slices}, 92);
    const CArray host = quality::comparisonTruth(d);
    const CArray dev = quality::comparisonTruthOn(be(), d).download();
    ASSERT_EQ(dev.shape(), host.shape());
    for (index_t i = 0; i < host.size(); ++i)
      ASSERT_NEAR(std::abs(dev[i]), std::abs(host[i]), 1e-6 * std::abs(host[i]) + 1e-12) << i;
    const CArray test = randomArray(img, 93);
    const quality::Metrics a = quality::compare(test, host);
    const quality::Metrics b = quality::compareOn(be(), test, quality::comparisonTruthOn(be(), d));
    EXPECT_NEAR(b.nrmse, a.nrmse, 1e-6 * a.nrmse);
    EXPECT_NEAR(b.ssim, a.ssim, 1e-6);
    // One coil or no maps: the reference itself.
    d.coilMaps.reset();
    const CArray plain = quality::comparisonTruthOn(be(), d).download();
    for (index_t i = 0; i < plain.size(); ++i) ASSERT_EQ(plain[i], (*d.reference)[i]) << i;
  }
}
