// Stone et al. 2008's phantom experiment at CI size (32^3, CPU): a 3D non-Cartesian acquisition of the 3D
// Shepp-Logan phantom with the paper's sample density (284,592 samples for 128^3, M/N = 0.136; here 3D radial,
// 33 samples x 135 spokes = 4,455 for 32^3), noiseless and noisy, gridding against the advanced
// reconstruction (exact F^H d and Q, anatomical W from a reference image, 60 PCG iterations).
// Targets: advanced error <= 1/3 of gridding's; fast trigonometry costs <= 0.1 dB.
// The numbers at 32^3, 64^3 and 128^3 are in docs/iterative.md.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/recon.hpp"

using namespace larmor;

namespace {

struct Row {
  double error = 0, psnr = 0;
};

Row reconstruct(const Dataset& d, recon::ReconSettings s, const char* label) {
  recon::ReconRequest req;
  req.dataset = &d;
  req.settings = s;
  req.device = "cpu";
  const auto r = recon::run(req);
  Row row{r.metrics["percent_error"].get<double>(), r.metrics["psnr_db"].get<double>()};
  std::printf("  %-44s %6.2f %%  %6.2f dB\n", label, row.error, row.psnr);
  return row;
}

}  // namespace

TEST(CgPaper, AdvancedReconstructionBeatsGriddingThreefoldAt32Cubed) {
  for (float sigma : {0.f, 0.1f}) {
    phantom::SimulateSettings ss;
    ss.matrix[0] = ss.matrix[1] = ss.matrix[2] = 32;
    ss.coils = 1;
    ss.trajectory = TrajectoryKind::Radial3D;
    ss.readout = 33;
    ss.spokes = 135;
    ss.noiseSigma = sigma;
    const Dataset d = phantom::simulate(ss);
    ASSERT_EQ(d.trajectory.size() / 3, 4455);
    std::printf("%s, 32^3, 4455 samples:\n", sigma > 0 ? "noisy (sigma 0.1)" : "noiseless");

    recon::ReconSettings grid;
    grid.method = recon::Method::Gridding;
    const Row gridding = reconstruct(d, grid, "gridding");

    recon::ReconSettings cg;
    cg.method = recon::Method::Cg;
    cg.iterative.regularizer = ops::RegularizerKind::Anatomical;  // W from the dataset's reference (the phantom's raster)
    cg.iterative.lambda = sigma > 0 ? 10.0 : 3.0;
    // Q depends on the trajectory (and trig mode) only: the noisy run reuses the noiseless run's file.
    cg.iterative.cacheDirectory = std::string(LARMOR_TEST_TMP) + "/cg-paper-q";
    const Row advanced = reconstruct(d, cg, "advanced (exact, anatomical W)");
    cg.nufft.trig = TrigMode::Fast;
    const Row fast = reconstruct(d, cg, "advanced, fast trigonometry");

    EXPECT_LE(advanced.error, gridding.error / 3) << "noise " << sigma;
    EXPECT_LE(advanced.psnr - fast.psnr, 0.1) << "noise " << sigma;
  }
}
