// Shared by the unit (cpu) and GPU (cuda) binaries: ESPIRiT of several slices with the Grams' eigen-decompositions
// batched (ops::espiritBatch, recon::espiritMapsForSlices) against each slice's own espirit(). On the CPU the
// batch is the same decompositions one by one (the same bits); on CUDA one batched cuSOLVER call, which agrees with
// zheevd to double rounding up to each eigenvector's phase: the maps (phase-fixed by the calibration's principal
// component) within 1e-5 of the per-slice ones, the kernels kept the same.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <random>
#include <vector>

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
      EXPECT_EQ(infos[static_cast<std::size_t>(sl)]["espirit_group"], 5) << sl;
      for (const char* step : {"calibration", "espirit", "to_output"})  // where the group's time went
        EXPECT_GE(infos[static_cast<std::size_t>(sl)]["espirit_group_ms"][step].get<double>(), 0.0) << sl << " " << step;
      if (onGpu()) {
        EXPECT_GT(infos[static_cast<std::size_t>(sl)]["espirit_eigen_batch"].get<int>(), 1) << sl;
      } else {
        EXPECT_EQ(infos[static_cast<std::size_t>(sl)]["espirit_eigen_batch"], 1) << sl;
      }
      if (onGpu()) {
        EXPECT_LT(relativeDifference(a, b), 1e-5) << "slice " << sl;
      } else {
        EXPECT_EQ(std::memcmp(a.data(), b.data(), static_cast<std::size_t>(n) * sizeof(cfloat)), 0) << "slice " << sl;
      }
    }
  }
}

TEST_P(EspiritBatch, AGramsKernelsDependOnItselfAlone) {
  // EspiritOps::gramKernelsBatched: whatever the other Grams of the list, their number and its place there (CUDA:
  // batched cuSOLVER calls of a size fixed by n, the last padded), a Gram's eigenvalues and kernels are the same
  // bits: what makes a slice's maps independent of how a call's slices were grouped and split over devices.
  const index_t n = 72, rows = 90;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<std::unique_ptr<Buffer>> grams;
  for (int g = 0; g < 40; ++g) {
    std::vector<cfloat> a(static_cast<std::size_t>(rows * n));
    for (auto& v : a) v = cfloat(normal(rng), normal(rng));
    std::vector<cfloat> gram(static_cast<std::size_t>(n * n));
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < n; ++i) {
        std::complex<double> sum = 0;
        for (index_t r = 0; r < rows; ++r)
          sum += std::conj(std::complex<double>(a[static_cast<std::size_t>(r + rows * i)])) *
                 std::complex<double>(a[static_cast<std::size_t>(r + rows * j)]);
        gram[static_cast<std::size_t>(i + n * j)] = cfloat(sum);
      }
    grams.push_back(be().allocate(gram.size() * sizeof(cfloat)));
    be().upload(*grams.back(), gram.data(), gram.size() * sizeof(cfloat));
  }
  struct Out {
    std::vector<double> values;
    CArray kernels;
  };
  auto solve = [&](const std::vector<int>& which) {
    std::vector<const Buffer*> g;
    std::vector<std::unique_ptr<Buffer>> k;
    std::vector<Buffer*> kp;
    for (int w : which) {
      g.push_back(grams[static_cast<std::size_t>(w)].get());
      k.push_back(be().allocate(static_cast<std::size_t>(n * n) * sizeof(cfloat)));
      kp.push_back(k.back().get());
    }
    std::vector<std::vector<double>> values;
    (void)be().espiritOps().gramKernelsBatched(g, n, values, kp);
    std::vector<Out> out;
    for (std::size_t i = 0; i < which.size(); ++i) out.push_back({values[i], download(be(), *k[i], n * n)});
    return out;
  };
  std::vector<int> all(40);
  for (int i = 0; i < 40; ++i) all[static_cast<std::size_t>(i)] = i;
  const auto reference = solve(all);  // on CUDA a full chunk and a padded one
  for (const std::vector<int>& which : std::vector<std::vector<int>>{{5}, {3, 5, 9}, {39, 38, 5}, {0, 1, 2, 3, 4, 5, 6, 7}}) {
    const auto got = solve(which);
    for (std::size_t i = 0; i < which.size(); ++i) {
      const Out& r = reference[static_cast<std::size_t>(which[i])];
      EXPECT_EQ(got[i].values, r.values) << "Gram " << which[i] << " of a list of " << which.size();
      EXPECT_EQ(std::memcmp(got[i].kernels.data(), r.kernels.data(), static_cast<std::size_t>(n * n) * sizeof(cfloat)), 0)
          << "Gram " << which[i] << " of a list of " << which.size();
    }
  }
}

}  // namespace

LARMOR_INSTANTIATE_ON_TEST_DEVICE(EspiritBatch);
