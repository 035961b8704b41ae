// Shared by the unit (cpu) and GPU (cuda) binaries: ESPIRiT of several slices with the Grams' eigen-decompositions
// batched (ops::espiritBatch, recon::espiritMapsForSlices) against each slice's own espirit(). On the CPU the
// batch is the same decompositions one by one (the same bits); on CUDA one batched cuSOLVER call, which agrees with
// zheevd to double rounding up to each eigenvector's phase: the maps (phase-fixed by the calibration's principal
// component) within 1e-5 of the per-slice ones, the kernels kept the same.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "larmor/ops/espirit.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/calibration.hpp"
#include "larmor/recon/coil_maps.hpp"
#include "larmor/recon/settings_table.hpp"
#include "support/device.hpp"

using namespace larmor;

namespace {

class EspiritBatch : public larmor::test::DeviceTest {};

CArray download(Backend& be, const Buffer& b, index_t n) {
  CArray out(Shape{n});
  be.download(out.data(), b, static_cast<std::size_t>(n) * sizeof(cfloat));
  return out;
}

double relativeDifference(const CArray& a, const CArray& b) {
  double e = 0, r = 0;
  for (index_t i = 0; i < a.size(); ++i) {
    e += std::norm(std::complex<double>(a[i]) - std::complex<double>(b[i]));
    r += std::norm(std::complex<double>(b[i]));
  }
  return std::sqrt(e / r);
}

TEST_P(EspiritBatch, EverySliceAsItsOwnEspirit) {
  for (const TrajectoryKind kind : {TrajectoryKind::Cartesian, TrajectoryKind::GoldenAngle}) {
    SCOPED_TRACE(kind == TrajectoryKind::Cartesian ? "cartesian" : "golden-angle radial");
    phantom::SimulateSettings sim;
    sim.matrix[0] = sim.matrix[1] = 64;
    sim.slices = 5;
    sim.coils = 6;
    sim.trajectory = kind;
    if (kind == TrajectoryKind::Cartesian) {
      sim.accel = 2;
      sim.acs = 20;
    } else {
      sim.spokes = 80;
    }
    sim.noiseSigma = 0.002f;
    const Dataset d = phantom::simulate(sim);
    recon::ReconSettings s;
    s.method = recon::Method::Cg;
    recon::settings::applyMethodDefaults(s);
    s.iterative.calibrationSize = 20;
    const index_t out[3] = {64, 64, 1};  // Cartesian: maps on the 2x readout grid, cropped to the FOV
    const index_t n = out[0] * out[1] * out[2] * 6;
    const std::vector<index_t> slices = {0, 1, 2, 3, 4};
    std::vector<nlohmann::json> infos;
    const auto batched = recon::espiritMapsForSlices(be(), d, slices, out, s, &infos);
    ASSERT_EQ(batched.size(), slices.size());
    ASSERT_EQ(infos.size(), slices.size());
    for (index_t sl : slices) {
      nlohmann::json alone;
      const auto own = recon::coilMapsForSliceOnBackend(be(), d, sl, out, s, &alone);
      const CArray a = download(be(), *batched[static_cast<std::size_t>(sl)], n), b = download(be(), *own, n);
      EXPECT_EQ(infos[static_cast<std::size_t>(sl)]["espirit_kernels"], alone["espirit_kernels"]) << sl;
      EXPECT_EQ(infos[static_cast<std::size_t>(sl)]["calibration_region"], alone["calibration_region"]) << sl;
      EXPECT_EQ(infos[static_cast<std::size_t>(sl)]["espirit_batch"], 5) << sl;
      if (onGpu()) {
        EXPECT_LT(relativeDifference(a, b), 1e-5) << "slice " << sl;
      } else {
        EXPECT_EQ(std::memcmp(a.data(), b.data(), static_cast<std::size_t>(n) * sizeof(cfloat)), 0) << "slice " << sl;
      }
    }
  }
}

}  // namespace

LARMOR_INSTANTIATE_ON_TEST_DEVICE(EspiritBatch);
