// Shared by the unit (cpu) and GPU (cuda) binaries: the PCG of a 3D Toeplitz problem split over devices by z slabs
// (recon/split_cg.hpp) against the same problem on one device (ops::NormalOperator, solve::conjugateGradient).
// On the CPU the devices are further CPU backends; on a GPU the other GPUs, and with one GPU further backends
// of the same one (separate streams, copies between them as between peers), so the split's exchanges, halos and
// sums are checked on any machine. Uneven splits (16 planes over 3 devices, 32 grid rows over 3) and every prior.
#include <gtest/gtest.h>

#include <cmath>

#include "larmor/backend/registry.hpp"
#include "larmor/ops/regularizer.hpp"
#include "larmor/ops/sense.hpp"
#include "larmor/ops/toeplitz.hpp"
#include "larmor/recon/split_cg.hpp"
#include "larmor/solve/cg.hpp"
#include "larmor/util/progress.hpp"
#include "support/device.hpp"
#include "support/nc_problem.hpp"
#include "support/random_data.hpp"

using namespace larmor;

namespace {

class SplitCg : public larmor::test::DeviceTest {
 protected:
  /// `count` backends, be() first (support/device.hpp: splitDevices).
  std::vector<Backend*> devices(int count) { return larmor::test::splitDevices(be(), count, owned_); }
  std::vector<std::shared_ptr<Backend>> owned_;
};

std::vector<cfloat> download(Backend& be, const Buffer& b, index_t n) {
  std::vector<cfloat> v(static_cast<std::size_t>(n));
  be.download(v.data(), b, v.size() * sizeof(cfloat));
  return v;
}

double relativeError(const std::vector<cfloat>& got, const std::vector<cfloat>& want) {
  double e = 0, r = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    e += std::norm(std::complex<double>(got[i]) - std::complex<double>(want[i]));
    r += std::norm(std::complex<double>(want[i]));
  }
  return std::sqrt(e / r);
}

TEST_P(SplitCg, MatchesTheOneDeviceOperatorAndSolve) {
  Backend& b0 = be();
  const index_t n = 16, dims[3] = {n, n, n}, voxels = n * n * n, m = 6000;
  NufftGeometry g;
  g.dims = 3;
  g.image[0] = g.image[1] = g.image[2] = n;
  g.trajectory = larmor::test::randomTrajectory(m, dims, 3, 7);
  ops::PsfOptions po;
  po.method = ops::PsfMethod::Nufft;
  const CArray psf = ops::computePsf(b0, g, nullptr, po);
  ops::ToeplitzOperator toeplitz(b0, g, psf, 1.0 / static_cast<double>(voxels));
  ASSERT_TRUE(b0.canFftGramColumns(toeplitz.gridShape()[0], toeplitz.gridShape()[2]));

  auto up = [&](const std::vector<cfloat>& v) {
    auto buf = b0.allocate(v.size() * sizeof(cfloat));
    b0.upload(*buf, v.data(), buf->bytes());
    return buf;
  };
  const auto x = up(larmor::test::randomComplex(voxels, 11)), rhs = up(larmor::test::randomComplex(voxels, 12));
  CArray reference(Shape{n, n, n});
  {
    const auto r = larmor::test::randomComplex(voxels, 13);
    for (index_t i = 0; i < voxels; ++i) reference[i] = cfloat(std::abs(r[i]) > 1.f ? 1.f : 0.3f, 0.f);
  }
  auto refBuffer = up(std::vector<cfloat>(reference.data(), reference.data() + voxels));
  const double lambda = 0.05;
  for (const auto kind : {ops::RegularizerKind::Tikhonov, ops::RegularizerKind::FiniteDifference,
                          ops::RegularizerKind::Anatomical}) {
    double delta = 0;
    std::unique_ptr<ops::Regularizer> prior =
        kind == ops::RegularizerKind::Tikhonov           ? ops::makeTikhonov(b0, dims)
        : kind == ops::RegularizerKind::FiniteDifference ? ops::makeFiniteDifference(b0, dims)
                                                         : ops::makeAnatomical(b0, dims, *refBuffer, 0, &delta);
    ops::NormalOperator A(b0, toeplitz, nullptr, prior.get(), lambda);
    auto y = b0.allocate(static_cast<std::size_t>(voxels) * sizeof(cfloat));
    A.apply(*x, *y);
    const auto want = download(b0, *y, voxels);
    // The one-device PCG, 20 iterations.
    auto priorDiagonal = b0.allocate(static_cast<std::size_t>(voxels) * sizeof(cfloat));
    prior->diagonal(*priorDiagonal);
    auto encoding = b0.allocate(static_cast<std::size_t>(voxels) * sizeof(cfloat));
    b0.fill(*encoding, cfloat(static_cast<float>(toeplitz.diagonal()), 0.f), voxels);
    solve::DiagonalPreconditioner M(b0, *encoding, 1.0, priorDiagonal.get(), lambda, voxels);
    solve::CgOptions o;
    o.maxIterations = 20;  // float CG runs drift apart past ~20 iterations on such problems, whatever their order of sums
    auto xs = b0.allocate(static_cast<std::size_t>(voxels) * sizeof(cfloat));
    const solve::CgResult one = solve::conjugateGradient(b0, A, *rhs, *xs, o, &M);
    const auto oneX = download(b0, *xs, voxels);
    for (int count : {1, 2, 3}) {
      SCOPED_TRACE("prior " + std::to_string(static_cast<int>(kind)) + ", " + std::to_string(count) + " devices");
      const std::vector<Backend*> all = devices(count);
      ASSERT_TRUE(recon::SplitToeplitzCg::applies(all, dims, toeplitz.gridShape(), kind));
      recon::SplitToeplitzCg split(all, dims, toeplitz.kernel(), toeplitz.gridShape(), toeplitz.diagonal(),
                                   {kind, &reference, delta});
      auto ys = b0.allocate(static_cast<std::size_t>(voxels) * sizeof(cfloat));
      split.apply(lambda, *x, *ys);
      EXPECT_LT(relativeError(download(b0, *ys, voxels), want), 2e-6);
      auto xp = b0.allocate(static_cast<std::size_t>(voxels) * sizeof(cfloat));
      const solve::CgResult res = split.solve(lambda, *rhs, *xp, o, true);
      ASSERT_EQ(res.iterations, one.iterations);
      ASSERT_EQ(res.history.size(), one.history.size());
      for (std::size_t k = 0; k < res.history.size(); ++k) {
        EXPECT_NEAR(res.history[k].relativeResidual, one.history[k].relativeResidual,
                    1e-4 * one.history[k].relativeResidual + 1e-7) << "iteration " << k;
        EXPECT_NEAR(res.history[k].objective, one.history[k].objective, 1e-4 * std::abs(one.history[k].objective))
            << "iteration " << k;
      }
      EXPECT_LT(relativeError(download(b0, *xp, voxels), oneX), 1e-4);
      // Deterministic: the same bits again; and a warm start from the solution barely moves.
      auto xq = b0.allocate(static_cast<std::size_t>(voxels) * sizeof(cfloat));
      split.solve(lambda, *rhs, *xq, o, true);
      EXPECT_EQ(download(b0, *xq, voxels), download(b0, *xp, voxels));
      solve::CgOptions warm = o;
      warm.warmStart = true;
      warm.maxIterations = 1;
      const solve::CgResult w = split.solve(lambda, *rhs, *xq, warm, true);
      EXPECT_NEAR(w.history[0].relativeResidual, res.history.back().relativeResidual,
                  1e-3 * res.history.back().relativeResidual + 1e-6);
    }
  }
}

TEST_P(SplitCg, CancelToleranceAndZeroRightHandSide) {
  Backend& b0 = be();
  const index_t n = 16, dims[3] = {n, n, n}, voxels = n * n * n;
  NufftGeometry g;
  g.dims = 3;
  g.image[0] = g.image[1] = g.image[2] = n;
  g.trajectory = larmor::test::randomTrajectory(6000, dims, 3, 5);
  ops::PsfOptions po;
  po.method = ops::PsfMethod::Nufft;
  ops::ToeplitzOperator toeplitz(b0, g, ops::computePsf(b0, g, nullptr, po), 1.0 / static_cast<double>(voxels));
  recon::SplitToeplitzCg split(devices(2), dims, toeplitz.kernel(), toeplitz.gridShape(), toeplitz.diagonal(),
                               {ops::RegularizerKind::FiniteDifference, nullptr, 0});
  const auto rhs = larmor::test::randomComplex(voxels, 21);
  auto b = b0.allocate(static_cast<std::size_t>(voxels) * sizeof(cfloat)),
       x = b0.allocate(static_cast<std::size_t>(voxels) * sizeof(cfloat));
  b0.upload(*b, rhs.data(), b->bytes());
  // Cancel: the solve stops at the next iteration's start, x the last completed iterate (as solve/cg.cpp).
  CancelToken token;
  Progress progress([](double, const std::string&) {}, &token);
  solve::CgOptions o;
  o.maxIterations = 50;
  o.readEvery = 1;  // the host reads the scalars after every iteration: the observer sees each one as it ends
  int seen = 0;
  auto observer = [&](const solve::CgIterate& it) {
    seen = it.iteration;
    if (it.iteration == 3) token.cancel();
  };
  EXPECT_THROW(split.solve(0.1, *b, *x, o, true, progress, observer), Cancelled);
  EXPECT_EQ(seen, 3);
  const auto cancelled = download(b0, *x, voxels);
  solve::CgOptions three = o;
  three.maxIterations = 3;
  split.solve(0.1, *b, *x, three, true);
  EXPECT_EQ(download(b0, *x, voxels), cancelled);
  // Tolerance: stops at the first iterate whose relative residual is within it.
  solve::CgOptions tol = o;
  tol.tolerance = 1e-2;
  const solve::CgResult r = split.solve(0.1, *b, *x, tol, true);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.stopReason, "tolerance");
  EXPECT_LE(r.history.back().relativeResidual, 1e-2);
  EXPECT_GT(r.history[r.history.size() - 2].relativeResidual, 1e-2);
  // The scalars read every iteration or once per window of 7 (the devices stop themselves): the same bits, the
  // same history, the same stop.
  solve::CgOptions every = tol, windowed = tol;
  windowed.readEvery = 7;
  const solve::CgResult r1 = split.solve(0.1, *b, *x, every, true);
  const auto x1 = download(b0, *x, voxels);
  const solve::CgResult r7 = split.solve(0.1, *b, *x, windowed, true);
  EXPECT_EQ(download(b0, *x, voxels), x1);
  EXPECT_EQ(r7.iterations, r1.iterations);
  EXPECT_EQ(r7.stopReason, r1.stopReason);
  ASSERT_EQ(r7.history.size(), r1.history.size());
  for (std::size_t k = 0; k < r1.history.size(); ++k)
    EXPECT_EQ(r7.history[k].relativeResidual, r1.history[k].relativeResidual) << k;
  // A zero right-hand side: x = 0 whatever it held.
  b0.fill(*b, cfloat(0.f), voxels);
  const solve::CgResult z = split.solve(0.1, *b, *x, o, true);
  EXPECT_EQ(z.stopReason, "zero right-hand side");
  EXPECT_EQ(download(b0, *x, voxels), std::vector<cfloat>(static_cast<std::size_t>(voxels), cfloat(0.f)));
}

TEST_P(SplitCg, RefusesWhatItCannotSplit) {
  const index_t flat[3] = {16, 16, 1}, cube[3] = {16, 16, 16};
  const std::vector<Backend*> one{&be()};
  EXPECT_FALSE(recon::SplitToeplitzCg::applies(one, flat, Shape{32, 32, 1}, ops::RegularizerKind::Tikhonov));
  EXPECT_FALSE(recon::SplitToeplitzCg::applies(one, cube, Shape{32, 32, 32}, ops::RegularizerKind::Tv));
  EXPECT_TRUE(recon::SplitToeplitzCg::applies(one, cube, Shape{32, 32, 32}, ops::RegularizerKind::Anatomical));
}

}  // namespace

LARMOR_INSTANTIATE_ON_TEST_DEVICE(SplitCg);
