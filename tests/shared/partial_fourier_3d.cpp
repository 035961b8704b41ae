// Shared by the unit (cpu) and GPU (cuda) binaries: partial Fourier in 3D (recon/partial_fourier.hpp), along
// pe2 and with GRAPPA's 3D paths. The simulator's 3D Shepp-Logan, 64 x 64 x 32, 8 coils in two rings along
// z (phantom/coils.hpp), no readout oversampling, a smooth 3D phase added to every coil image, then cut to
// 5/8 of pe2 (partitions 0..11 missing) or of pe1 (lines 0..23 missing). Error: relL2Error of the
// sum-of-squares images against the fully sampled FFT reconstruction (no fitted scale).
//   - FFT path, 5/8 pe2: POCS and homodyne beat zero-filling (bounds from the measurement, see the test).
//   - 2D GRAPPA (pe1 x pe2, R = 2 x 2, a 20 x 20 calibration box; kz stays in k-space) plus 5/8 of pe1 or of
//     pe2 (the cut shrinks the centred calibration box along that axis to the symmetric part).
//   - 3D GRAPPA along pe1 only (R = 2, 24 calibration lines) plus 5/8 of pe1: the per-partition path, whose
//     data the filler takes back from (kx, ky, z) to k-space (grappa.cpp fromCalibrationDomain); plus 5/8 of
//     pe2, which makes the sampling vary along pe2 and so takes the pe1 x pe2 path; improved and basic kernels.
// On the GPU the images are also compared with the CPU's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <numbers>
#include <string>

#include "larmor/backend/registry.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/grappa.hpp"
#include "larmor/recon/partial_fourier.hpp"
#include "larmor/recon/settings.hpp"
#include "support/device.hpp"
#include "support/error_norms.hpp"
#include "support/partial_fourier_recon.hpp"

using namespace larmor;
using namespace larmor::test;
using recon::PartialFourierMethod;

namespace {

class PartialFourier3D : public DeviceTest {};

constexpr index_t kN0 = 64, kN1 = 64, kN2 = 32, kCoils = 8;
// Bounds on error / zero-filled error: the measured ratios (CPU, in the tests' comments) plus margin.
constexpr double kPocsFactor = 0.35, kHomodyneFactor = 0.45;                // FFT, 5/8 pe2
constexpr double kGrappa2DPocsFactor = 0.6, kGrappa2DHomodyneFactor = 0.65;  // 2D GRAPPA + 5/8 pe1 or pe2
constexpr double kGrappaPocsFactor = 0.4, kGrappaHomodyneFactor = 0.45;      // per-partition GRAPPA + 5/8 pe2

phantom::SimulateSettings settings3d(int ry, int rz, int acs) {
  phantom::SimulateSettings s;
  s.matrix[0] = kN0, s.matrix[1] = kN1, s.matrix[2] = kN2;
  s.coils = static_cast<int>(kCoils);
  s.coilRings = 2;
  s.readoutOversampling = 1;
  s.accel = ry;
  s.accelPe2 = rz;
  s.acs = acs;
  return s;
}

/// The phase added to every coil image: 1.2 pi x^2 + 0.8 pi y + 0.9 pi z^2 - 0.4 pi z + 0.5 (FOV units).
CArray smoothPhase3d() {
  CArray p(Shape{kN0, kN1, kN2});
  for (index_t z = 0; z < kN2; ++z)
    for (index_t y = 0; y < kN1; ++y)
      for (index_t x = 0; x < kN0; ++x) {
        const double u = (static_cast<double>(x) - kN0 / 2) / kN0, v = (static_cast<double>(y) - kN1 / 2) / kN1;
        const double w = (static_cast<double>(z) - kN2 / 2) / kN2;
        const double phi = std::numbers::pi * (1.2 * u * u + 0.8 * v + 0.9 * w * w - 0.4 * w) + 0.5;
        p(x, y, z) = cfloat(static_cast<float>(std::cos(phi)), static_cast<float>(std::sin(phi)));
      }
  return p;
}

/// The fully sampled 3D data with the smooth phase (CPU backend, the test's own preparation).
const Dataset& full3d() {
  static Dataset d = [] {
    Dataset f = phantom::simulate(settings3d(1, 1, 24));
    auto cpu = makeCpuBackend();
    const Shape shape{kN0, kN1, kN2, kCoils};
    auto k = CDeviceArray::upload(*cpu, f.kspace);
    k.reshape(shape);
    auto p = CDeviceArray::upload(*cpu, smoothPhase3d());
    cpu->fft(k.buffer(), shape, 3, FftDirection::Inverse);
    cpu->multiply(k.buffer(), p.buffer(), p.size(), k.buffer(), k.size(), false);
    cpu->fft(k.buffer(), shape, 3, FftDirection::Forward);
    k.reshape(f.kspace.shape());
    f.kspace = k.download();
    f.reference.reset();
    return f;
  }();
  return d;
}

/// The simulator's pattern of (ry, rz, acs) applied to the phased full data (its header: accelerations,
/// calibration flags).
Dataset undersampled(int ry, int rz, int acs) {
  Dataset d = phantom::simulate(settings3d(ry, rz, acs));
  d.kspace = full3d().kspace;
  for (index_t c = 0; c < kCoils; ++c)
    for (index_t z = 0; z < kN2; ++z)
      for (index_t y = 0; y < kN1; ++y)
        if (!d.sampled(y, z, 0) && !d.calibration(y, z, 0))
          for (index_t x = 0; x < kN0; ++x) d.kspace[x + kN0 * (y + kN1 * (z + kN2 * c))] = cfloat(0);
  d.reference.reset();
  return d;
}

/// `f` with the first 3/8 of `axis` (1: pe1 lines, 2: pe2 partitions) removed (samples and flags).
Dataset cut(const Dataset& f, int axis) {
  Dataset d = f;
  const index_t first = axis == 1 ? kN1 * 3 / 8 : kN2 * 3 / 8;
  for (index_t c = 0; c < kCoils; ++c)
    for (index_t z = 0; z < kN2; ++z)
      for (index_t y = 0; y < kN1; ++y)
        if ((axis == 1 ? y : z) < first) {
          for (index_t x = 0; x < kN0; ++x) d.kspace[x + kN0 * (y + kN1 * (z + kN2 * c))] = cfloat(0);
          d.sampled(y, z, 0) = 0;
          d.calibration(y, z, 0) = 0;
        }
  return d;
}

CArray fft(Backend& be, const Dataset& d, PartialFourierMethod m, nlohmann::json* report = nullptr) {
  return larmor::testing::partialFourierRecon(be, d, m, false, false, report);
}

CArray grappa(Backend& be, const Dataset& d, PartialFourierMethod m, bool basic = false,
              nlohmann::json* report = nullptr) {
  return larmor::testing::partialFourierRecon(be, d, m, true, basic, report);
}

const CArray& reference() {
  static const CArray ref = fft(*makeCpuBackend(), full3d(), PartialFourierMethod::ZeroFill);
  return ref;
}

struct Errors {
  double zero, pocs, homodyne;
};

void report(const char* name, const Errors& e, ::testing::Test* t) {
  std::printf("3D %s: zero-filled %.4f, POCS %.4f, homodyne %.4f\n", name, e.zero, e.pocs, e.homodyne);
  t->RecordProperty(std::string("zero_filled ") + name, std::to_string(e.zero));
  t->RecordProperty(std::string("pocs ") + name, std::to_string(e.pocs));
  t->RecordProperty(std::string("homodyne ") + name, std::to_string(e.homodyne));
}

}  // namespace

TEST_P(PartialFourier3D, DetectsPe2) {
  const PartialFourierRegion r = detectPartialFourier(cut(full3d(), 2));
  EXPECT_TRUE(!r.partial[0] && !r.partial[1] && r.partial[2]) << r.describe();
  EXPECT_EQ(r.lo[2], 12);
  EXPECT_EQ(r.hi[2], 31);
  EXPECT_NEAR(r.fraction(2), 0.625, 1e-9);
}

// FFT path, 5/8 of pe2. Measured on the CPU: zero-filled 0.2442, POCS 0.0567 (ratio 0.23), homodyne 0.0766
// (0.31). (Worse than 5/8 of pe1 in 2D, 0.012: the phase comes from the 9 symmetric partitions of 32.)
TEST_P(PartialFourier3D, PocsAndHomodyneBeatZeroFillingAlongPe2) {
  const Dataset d = cut(full3d(), 2);
  nlohmann::json rep;
  Errors e{relL2Error(fft(be(), d, PartialFourierMethod::ZeroFill), reference()),
           relL2Error(fft(be(), d, PartialFourierMethod::Pocs, &rep), reference()),
           relL2Error(fft(be(), d, PartialFourierMethod::Homodyne), reference())};
  report("5/8 pe2", e, this);
  EXPECT_EQ(rep.value("method", ""), "pocs");
  EXPECT_LT(e.pocs, kPocsFactor * e.zero);
  EXPECT_LT(e.homodyne, kHomodyneFactor * e.zero);
  if (onGpu()) {
    auto cpu = makeCpuBackend();
    for (auto m : {PartialFourierMethod::Pocs, PartialFourierMethod::Homodyne})
      EXPECT_LT(relL2Error(fft(be(), d, m), fft(*cpu, d, m)), 1e-4);
  }
}

// 2D GRAPPA (R = 2 x 2, 20 x 20 calibration box) with 5/8 of pe1 or of pe2: GRAPPA fills the lattice gaps,
// POCS and homodyne the missing edge (kz stays in k-space: no fromCalibrationDomain for the improved
// kernel; the basic kernel's readout goes back from x first). Measured on the CPU (GRAPPA 2 x 2 alone 0.0365):
//   + 5/8 pe1:          edge zero-filled 0.1868, POCS 0.0544 (0.29), homodyne 0.0671 (0.36)
//   + 5/8 pe1, basic:   edge zero-filled 0.1950, POCS 0.0783 (0.40), homodyne 0.0874 (0.45)
//   + 5/8 pe2:          edge zero-filled 0.2402, POCS 0.0979 (0.41), homodyne 0.1118 (0.47)
//   + 5/8 pe2, basic:   edge zero-filled 0.2479, POCS 0.1148 (0.46), homodyne 0.1270 (0.51)
// (Along pe2 the centred calibration box shrinks to the 8 symmetric partitions, and lattice points next to the
// missing edge have zero sources: the likely causes of the larger error there; not measured apart.)
TEST_P(PartialFourier3D, FillsTheEdgeAfter2DGrappa) {
  const Dataset r22 = undersampled(2, 2, 20);
  const double eg = relL2Error(grappa(be(), r22, PartialFourierMethod::ZeroFill), reference());
  std::printf("3D 2D-GRAPPA 2x2 alone: %.4f\n", eg);
  for (int axis : {1, 2}) {
    const Dataset d = cut(r22, axis);
    ASSERT_TRUE(detectPartialFourier(d).partial[axis]);
    const std::string name = "2D GRAPPA 2x2 + 5/8 pe" + std::to_string(axis);
    for (bool basic : {false, true}) {
      nlohmann::json rep;
      Errors e{relL2Error(grappa(be(), d, PartialFourierMethod::ZeroFill, basic), reference()),
               relL2Error(grappa(be(), d, PartialFourierMethod::Pocs, basic, &rep), reference()),
               relL2Error(grappa(be(), d, PartialFourierMethod::Homodyne, basic), reference())};
      report((name + (basic ? " (basic)" : "")).c_str(), e, this);
      EXPECT_EQ(rep.value("method", ""), "pocs");
      EXPECT_LT(e.pocs, kGrappa2DPocsFactor * e.zero) << name << (basic ? " basic" : "");
      EXPECT_LT(e.homodyne, kGrappa2DHomodyneFactor * e.zero) << name << (basic ? " basic" : "");
    }
    if (onGpu()) {
      auto cpu = makeCpuBackend();
      EXPECT_LT(relL2Error(grappa(be(), d, PartialFourierMethod::Pocs), grappa(*cpu, d, PartialFourierMethod::Pocs)),
                1e-4);
    }
  }
}

// 3D GRAPPA along pe1 only (R = 2, 24 calibration lines).
//   + 5/8 pe1: the per-partition path, in (kx, ky, z), which the filler takes back to (kx, ky, kz)
//     (grappa.cpp fromCalibrationDomain) before filling the missing 3/8 of pe1.
//   + 5/8 pe2: the sampling then differs along pe2, so GRAPPA takes its pe1 x pe2 path (R = 2 x 1, kz in
//     k-space, the calibration box the 8 symmetric partitions); asserted, so that a change of path is seen.
// Measured on the CPU (GRAPPA R 2 alone 0.0118; edge zero-filled, POCS, homodyne, ratios to zero-filled):
//   + 5/8 pe1:        0.1811, 0.0391 (0.22), 0.0547 (0.30);  basic: 0.1818, 0.0504 (0.28), 0.0633 (0.35)
//   + 5/8 pe2:        0.2444, 0.0586 (0.24), 0.0780 (0.32);  basic: 0.2477, 0.0726 (0.29), 0.0893 (0.36)
// Skipping the pe2 back-transform in fromCalibrationDomain gives POCS 0.80 (checked): the test sees it.
TEST_P(PartialFourier3D, FillsTheEdgeAfterPe1OnlyGrappa) {
  const Dataset r2 = undersampled(2, 1, 24);
  const double eg = relL2Error(grappa(be(), r2, PartialFourierMethod::ZeroFill), reference());
  std::printf("3D GRAPPA R 2 (pe1) alone: %.4f\n", eg);
  for (int axis : {1, 2}) {
    const Dataset d = cut(r2, axis);
    ASSERT_TRUE(detectPartialFourier(d).partial[axis]);
    EXPECT_EQ(recon::grappa::analyseSampling(d).twoD(), axis == 2);
    for (bool basic : {false, true}) {
      const std::string name = "GRAPPA R 2 (pe1) + 5/8 pe" + std::to_string(axis) + (basic ? " (basic)" : "");
      nlohmann::json rep;
      Errors e{relL2Error(grappa(be(), d, PartialFourierMethod::ZeroFill, basic), reference()),
               relL2Error(grappa(be(), d, PartialFourierMethod::Pocs, basic, &rep), reference()),
               relL2Error(grappa(be(), d, PartialFourierMethod::Homodyne, basic), reference())};
      report(name.c_str(), e, this);
      EXPECT_EQ(rep.value("method", ""), "pocs");
      EXPECT_LT(e.pocs, kGrappaPocsFactor * e.zero) << name;
      EXPECT_LT(e.homodyne, kGrappaHomodyneFactor * e.zero) << name;
    }
    if (onGpu()) {
      auto cpu = makeCpuBackend();
      for (bool basic : {false, true})
        EXPECT_LT(relL2Error(grappa(be(), d, PartialFourierMethod::Homodyne, basic),
                             grappa(*cpu, d, PartialFourierMethod::Homodyne, basic)), 1e-4);
    }
  }
}

LARMOR_INSTANTIATE_ON_TEST_DEVICE(PartialFourier3D);
