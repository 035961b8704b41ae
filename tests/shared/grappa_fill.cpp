// Shared by the unit (cpu) and GPU (cuda) binaries: GRAPPA's filling from given weights (grappa::fillFromWeights)
// on one device. The calibration's own weights (calibrationWeights) filled into the scan and reconstructed by the
// Cartesian FFT give the pipeline's image (reconstructGrappa, what `larmor-cli recon --method grappa` runs): bit for
// bit where both take the same transforms (the improved kernel on 2D slices: k-space filled in place, then the same
// inverse FFT, crop and sum of squares), within float32 rounding where the pipeline leaves the calibration domain
// by another route (the basic kernel's hybrid space and 3D's pe2 partitions: the fill returns k-space, a forward
// FFT more than the pipeline's image path). Measured lines are kept; weights of another scan are used as given
// (they fill that scan's coils, not this one's); weights of the wrong shape and coil compression are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <map>
#include <string>

#include "larmor/backend/registry.hpp"
#include "larmor/quality/metrics.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/grappa.hpp"
#include "larmor/recon/settings.hpp"
#include "support/device.hpp"
#include "support/error_norms.hpp"
#include "support/expect_error.hpp"
#include "support/grappa_problem.hpp"

using namespace larmor;
using namespace larmor::test;
namespace grappa = larmor::recon::grappa;

namespace {

class GrappaFill : public DeviceTest {
 protected:
  /// calibrationWeights of d on this device, filled back into d by fillFromWeights.
  CArray ownFill(const Dataset& d, const recon::GrappaSettings& s) {
    const CArray w = grappa::calibrationWeights(be(), grappa::calibrationDomain(d, s), grappa::analyseSampling(d), s);
    return grappa::fillFromWeights(be(), d, s, w);
  }
  CArray fftImage(const Dataset& d, const CArray& kspace) {
    Dataset f = d;
    f.kspace = kspace;
    Timings t;
    return recon::reconstructCartesian(be(), f, recon::ReconSettings{}, t, {}).combined;
  }
  CArray grappaImage(const Dataset& d, const recon::GrappaSettings& g) {
    recon::ReconSettings s;
    s.method = recon::Method::Grappa;
    s.grappa = g;
    Timings t;
    return recon::reconstructGrappa(be(), d, s, t, {}).combined;
  }
};

const Dataset& cachedFill(const std::string& key, const phantom::SimulateSettings& s) {
  static std::map<std::string, Dataset> cache;
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, phantom::simulate(s)).first;
  return it->second;
}

recon::GrappaSettings basic() {
  recon::GrappaSettings s;
  s.calibration = recon::GrappaCalibration::Basic;
  s.segment = 32;
  return s;
}

double maxAbsDiff(const CArray& a, const CArray& b) {
  double m = 0;
  for (index_t i = 0; i < a.size(); ++i) m = std::max(m, static_cast<double>(std::abs(a[i] - b[i])));
  return m;
}

}  // namespace

// The improved kernel (the default) on 2D slices, one and three: the pipeline's image bit for bit.
TEST_P(GrappaFill, OwnWeightsGiveThePipelinesImageBitForBit) {
  for (const index_t slices : {index_t{1}, index_t{3}}) {
    const Dataset& d = cachedFill("2d" + std::to_string(slices), grappaSim(64, 6, 2, 0.01f, slices));
    const recon::GrappaSettings s;
    const CArray filled = ownFill(d, s);
    ASSERT_EQ(filled.shape(), d.kspace.shape());
    const CArray a = fftImage(d, filled), b = grappaImage(d, s);
    ASSERT_EQ(a.shape(), b.shape());
    // The GPU's batched products may take another algorithm for another batch of problems (the calibration's
    // all slices, the pipeline's batch): there, float32 rounding.
    if (onGpu()) EXPECT_LT(relL2Error(a, b), 1e-5) << slices << " slices";
    else EXPECT_EQ(maxAbsDiff(a, b), 0.0) << slices << " slices";
  }
}

// The basic kernel works in hybrid space (x, ky) and 3D data accelerated along pe1 in (kx, ky, z): the fill returns
// k-space, so its image takes a forward and an inverse FFT that the pipeline's image path does not (it transforms
// from the calibration domain straight to the image). The same filled values up to float32 rounding: relative
// L2 differences measured on the CPU 9e-8 (basic), 7e-8 (3D, pe1), 0 (3D, pe1 x pe2: k-space throughout); bound 1e-5.
TEST_P(GrappaFill, OwnWeightsGiveThePipelinesImageWithinRoundingInHybridSpace) {
  const Dataset& d2 = cachedFill("2d1", grappaSim(64, 6, 2, 0.01f, 1));
  const double eb = relL2Error(fftImage(d2, ownFill(d2, basic())), grappaImage(d2, basic()));
  const Dataset& d3 = cachedFill("3d", grappaSim(48, 6, 2, 0.01f, 1, 8));
  const double e3 = relL2Error(fftImage(d3, ownFill(d3, {})), grappaImage(d3, {}));
  const Dataset& dz = cachedFill("2x2", grappaSim2D(32, 16, 4, 2, 2, 12, 0.01f));
  const double ez = relL2Error(fftImage(dz, ownFill(dz, {})), grappaImage(dz, {}));
  std::printf("fill from own weights vs pipeline: basic %.2e, 3D %.2e, 2x2 %.2e\n", eb, e3, ez);
  EXPECT_LT(eb, 1e-5);
  EXPECT_LT(e3, 1e-5);
  EXPECT_LT(ez, 1e-5);
}

TEST_P(GrappaFill, KeepsMeasuredLines) {
  const Dataset& d = cachedFill("2d1", grappaSim(64, 6, 2, 0.01f, 1));
  const CArray filled = ownFill(d, {});
  const grappa::Sampling smp = grappa::analyseSampling(d);
  index_t measured = 0, filledLines = 0;
  for (index_t c = 0; c < d.header.coils; ++c)
    for (index_t y = 0; y < smp.lines; ++y) {
      const bool acquired = smp.isAcquired(y, 0);
      for (index_t x = 0; x < d.header.encoded[0]; ++x) {
        if (acquired) EXPECT_EQ(filled(x, y, 0, c, 0), d.kspace(x, y, 0, c, 0));
        else filledLines += std::abs(filled(x, y, 0, c, 0)) > 0;
      }
      measured += c == 0 && acquired;
    }
  EXPECT_LT(measured, smp.lines);
  EXPECT_GT(filledLines, 0);
}

// Scan B: scan A's k-space with each coil's phase turned (other coil sensitivities, the same object). B's own
// weights rebuild the image (its sum of squares is A's); A's weights, used as given, fill B with A's coils:
// a different k-space and a worse image.
TEST_P(GrappaFill, WeightsOfAnotherScanAreUsedAsGiven) {
  const Dataset& a = cachedFill("2d1", grappaSim(64, 6, 2, 0.01f, 1));
  Dataset b = a;
  const index_t perCoil = a.header.encoded[0] * a.header.encoded[1];
  for (index_t c = 0; c < a.header.coils; ++c)
    for (index_t i = 0; i < perCoil; ++i) b.kspace[i + perCoil * c] *= std::polar(1.0f, 0.9f * static_cast<float>(c));
  const recon::GrappaSettings s;
  const grappa::Sampling smp = grappa::analyseSampling(a);
  const CArray wa = grappa::calibrationWeights(be(), grappa::calibrationDomain(a, s), smp, s);
  const CArray wb = grappa::calibrationWeights(be(), grappa::calibrationDomain(b, s), smp, s);
  EXPECT_GT(relL2Error(wa, wb), 0.1);
  const CArray ownB = grappa::fillFromWeights(be(), b, s, wb), aOnB = grappa::fillFromWeights(be(), b, s, wa);
  EXPECT_GT(relL2Error(aOnB, ownB), 1e-2);
  const CArray reference = grappaImage(a, s);
  const double eOwn = relL2Error(fftImage(b, ownB), reference), eOther = relL2Error(fftImage(b, aOnB), reference);
  std::printf("scan B: own weights %.2e, scan A's %.2e from A's image\n", eOwn, eOther);
  EXPECT_LT(eOwn, 1e-3);
  EXPECT_GT(eOther, 10 * eOwn);
}

TEST_P(GrappaFill, RefusesWeightsOfAnotherShapeAndCoilCompression) {
  const Dataset& d = cachedFill("2d1", grappaSim(64, 6, 2, 0.01f, 1));
  const recon::GrappaSettings s;
  const CArray w = grappa::calibrationWeights(be(), grappa::calibrationDomain(d, s), grappa::analyseSampling(d), s);
  const CArray wrong(Shape{w.shape()[0], w.shape()[1], 2});
  expectError([&] { grappa::fillFromWeights(be(), d, s, wrong); }, "this data and kernel need");
  recon::GrappaSettings small = s;
  small.kernelPe = 2;
  expectError([&] { grappa::fillFromWeights(be(), d, small, w); }, "the weights are");
  recon::GrappaSettings cc = s;
  cc.outCoils = 4;
  expectError([&] { grappa::fillFromWeights(be(), d, cc, w); }, "coil compression");
}

LARMOR_INSTANTIATE_ON_TEST_DEVICE(GrappaFill);
