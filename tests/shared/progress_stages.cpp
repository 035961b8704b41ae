// Shared by the unit (cpu) and GPU (cuda) binaries: the long stages report fractional progress
// (progress everywhere) through Progress::Sub (util/progress.hpp): the Pipe-Menon density compensation per
// iteration, the exact-DFT Toeplitz kernel Q per box of the 2N grid, GRAPPA per batch and per
// calibration / fill step. For each: the fractions never fall, stay in [0, 1], end at exactly 1, and a
// cancelled token stops the stage at its next report (Cancelled), with no report after the cancel.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "larmor/ops/toeplitz.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/grappa.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/traj/dcf.hpp"
#include "larmor/util/progress.hpp"
#include "support/device.hpp"
#include "support/grappa_problem.hpp"
#include "support/nc_problem.hpp"

using namespace larmor;
using namespace larmor::test;

namespace {

class ProgressStages : public DeviceTest {};

/// Records every report; cancels `token` at the first report whose stage contains `cancelAt`.
struct Recorder {
  std::vector<double> fractions;
  std::vector<std::string> stages;
  CancelToken token;
  std::string cancelAt;
  int afterCancel = 0;
  Progress progress() {
    return Progress(
        [this](double f, const std::string& st) {
          if (token.cancelled()) ++afterCancel;
          fractions.push_back(f);
          stages.push_back(st);
          if (!cancelAt.empty() && st.find(cancelAt) != std::string::npos) token.cancel();
        },
        &token);
  }
};

void expectRisingToOne(const Recorder& r, std::size_t minReports) {
  ASSERT_GE(r.fractions.size(), minReports);
  for (std::size_t i = 0; i < r.fractions.size(); ++i) {
    EXPECT_GE(r.fractions[i], 0.0) << r.stages[i];
    EXPECT_LE(r.fractions[i], 1.0) << r.stages[i];
    if (i > 0) EXPECT_GE(r.fractions[i], r.fractions[i - 1]) << r.stages[i - 1] << " -> " << r.stages[i];
  }
  EXPECT_DOUBLE_EQ(r.fractions.back(), 1.0) << r.stages.back();
}

}  // namespace

TEST_P(ProgressStages, PipeMenonDcfReportsEachIteration) {
  const Problem p = radialProblem(32, 64, 40, traj::RadialOrder::GoldenAngle);
  Recorder r;
  const RArray w = traj::pipeMenonWeights(be(), p.geometry(), 6, NufftOptions{}, r.progress());
  EXPECT_EQ(w.size(), p.m);
  expectRisingToOne(r, 6);
  EXPECT_EQ(r.stages[2], "iteration 3/6");
  EXPECT_DOUBLE_EQ(r.fractions[2], 0.5);
  // The cached front: the same fractions on a miss, 1 at once on a hit.
  traj::clearDcfCache();
  traj::DcfOptions o;
  o.iterations = 4;
  Recorder miss, hit;
  traj::densityCompensation(be(), p.geometry(), o, miss.progress());
  expectRisingToOne(miss, 4);
  traj::densityCompensation(be(), p.geometry(), o, hit.progress());
  ASSERT_EQ(hit.fractions.size(), 1u);
  EXPECT_DOUBLE_EQ(hit.fractions[0], 1.0);
  // Cancel after iteration 2: the next report throws, nothing is cached.
  traj::clearDcfCache();
  Recorder c;
  c.cancelAt = "iteration 2/";
  EXPECT_THROW(traj::densityCompensation(be(), p.geometry(), o, c.progress()), Cancelled);
  EXPECT_EQ(c.fractions.size(), 2u);
  EXPECT_EQ(c.afterCancel, 0);
  EXPECT_EQ(traj::dcfCacheEntries(), 0u);
}

TEST_P(ProgressStages, ExactToeplitzKernelReportsEachBox) {
  // 2D, N_L = 64: the half in 8 boxes of 8 rows, then the plane u_L = -N_L and the column u_0 = -N_0.
  const Problem p = randomProblem(2, 64, 64, 1, 300, 7);
  ops::PsfOptions o;
  o.method = ops::PsfMethod::Dft;
  Recorder r;
  const CArray q = ops::computePsf(be(), p.geometry(), nullptr, o, r.progress());
  expectRisingToOne(r, 10);
  EXPECT_EQ(r.fractions.size(), 10u);
  EXPECT_EQ(r.stages.front(), "Q: 1/10");
  // The split changes nothing: Q(u) = sum_j exp(2 pi i k_j . u / N) in double, at a point of each box.
  const Shape s = q.shape();
  for (const index_t uy : {-64, -37, -1, 0, 1, 9, 17, 30, 41, 50, 63}) {
    const index_t ux = (uy * 5) % 64;
    std::complex<double> ref = 0;
    for (index_t j = 0; j < p.m; ++j)
      ref += std::polar(1.0, 2 * M_PI * (p.k[3 * j] * ux + p.k[3 * j + 1] * uy) / 64.0);
    const cfloat got = q[(64 + ux) + s[0] * (64 + uy)];
    EXPECT_LT(std::abs(std::complex<double>(got) - ref), 300.0 * 1e-4) << "u = (" << ux << ", " << uy << ")";
  }
  // 3D, N_L = 24: three halvings would leave 3 planes, so two boxes of 12, then three planes.
  const Problem p3 = randomProblem(3, 8, 8, 24, 200, 3);
  Recorder r3;
  ops::computePsf(be(), p3.geometry(), nullptr, o, r3.progress());
  EXPECT_EQ(r3.fractions.size(), 5u);
  expectRisingToOne(r3, 5);
  // Small grids are not split (one box for the half): N_L = 8.
  Recorder small;
  ops::computePsf(be(), randomProblem(2, 8, 8, 1, 50, 5).geometry(), nullptr, o, small.progress());
  EXPECT_EQ(small.fractions.size(), 3u);
  // NUFFT: 0 and 1.
  o.method = ops::PsfMethod::Nufft;
  Recorder rn;
  ops::computePsf(be(), p.geometry(), nullptr, o, rn.progress());
  expectRisingToOne(rn, 2);
  // Cancelled after the third box.
  o.method = ops::PsfMethod::Dft;
  Recorder c;
  c.cancelAt = "Q: 3/";
  EXPECT_THROW(ops::computePsf(be(), p.geometry(), nullptr, o, c.progress()), Cancelled);
  EXPECT_EQ(c.fractions.size(), 3u);
  EXPECT_EQ(c.afterCancel, 0);
}

TEST_P(ProgressStages, GrappaReportsCalibrationAndFillPerBatch) {
  const Dataset d = phantom::simulate(grappaSim(64, 4, 2, 0.01f, 3));
  recon::ReconSettings s;
  s.method = recon::Method::Grappa;
  recon::grappa::Pipeline pipeline(be(), d, s, 1);  // one slice per batch: three batches
  Recorder r;
  Timings t;
  pipeline.run(d, t, r.progress());
  int calibrations = 0;
  for (const auto& st : r.stages) calibrations += st.find(": calibration") != std::string::npos ? 1 : 0;
  EXPECT_EQ(calibrations, 3);
  expectRisingToOne(r, 9);
  // Cancel at the second slice's calibration: the fill of that batch never reports.
  recon::grappa::Pipeline again(be(), d, s, 1);
  Recorder c;
  c.cancelAt = "slices 2-2 of 3: calibration";
  EXPECT_THROW(again.run(d, t, c.progress()), Cancelled);
  EXPECT_EQ(c.afterCancel, 0);
  EXPECT_NE(c.stages.back().find("slices 2-2 of 3: calibration"), std::string::npos);
}

LARMOR_INSTANTIATE_ON_TEST_DEVICE(ProgressStages);
