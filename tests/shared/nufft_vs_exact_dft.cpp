// Shared by the unit (cpu) and GPU (cuda) binaries: the NUFFT plan on one device against the float64 exact DFT
// (support/exact_dft.hpp): the accuracy curve over kernel width W and oversampling sigma (printed; the issue's
// two points asserted), odd and non-square sizes, 3D, batches, band-edge samples, adjointness, table vs direct
// kernel, spreadInterpolate's symmetry. Outputs are poisoned with NaN first. Device-specific checks (thread
// determinism on the CPU; both GPU spreaders, crowded sectors, GPU vs CPU) stay in tests/unit/test_nufft.cpp
// and tests/gpu/test_gpu_nufft.cpp.
//
// W is NufftOptions::width, the FULL kernel width in oversampled grid points (larmor/kernels/kernel_math.hpp,
// Beatty et al. 2005). The "1e-2 at W=2, sigma=1.25" cannot hold for a full width of 2: a 2-point
// kernel at sigma = 1.25 aliases at about 1e-1 whatever its shape (the 1D optimum over beta is 0.099,
// docs/nufft.md), and the measured value is ~0.19. It does hold in TRON's convention, where w is the
// half-width (Smith et al. 2019: beta = 2.34 J with J = 2w points, Fessler's notation), i.e. a full width of 4
// points; that is the point asserted. "1e-4 at W=6, sigma=2" holds with W as the full width.
#include <gtest/gtest.h>

#include <cstdio>

#include "support/buffers.hpp"
#include "support/device.hpp"
#include "support/error_norms.hpp"
#include "support/exact_dft.hpp"
#include "support/nc_problem.hpp"
#include "support/random_data.hpp"

using namespace larmor;
using namespace larmor::test;

namespace {

class NufftVsExactDft : public DeviceTest {
 protected:
  PlanRun run(const Problem& p, const NufftOptions& o, const std::vector<cfloat>& img, const std::vector<cfloat>& data,
              index_t batch) {
    auto plan = be().makeNufftPlan(p.geometry(), o);
    EXPECT_EQ(plan->samples(), p.m);
    EXPECT_EQ(plan->imageShape(), (Shape{p.n[0], p.n[1], p.n[2]}));
    return runPlan(be(), *plan, img, data, batch);
  }
};

NufftOptions options(int width, double sigma, KernelEvaluation k = KernelEvaluation::Table) {
  NufftOptions o;
  o.width = width;
  o.oversampling = sigma;
  o.kernel = k;
  return o;
}

}  // namespace

// 2D, 32x32 image, 2000 samples uniform over the band; relative 2-norm error of forward and adjoint.
TEST_P(NufftVsExactDft, AccuracyCurveAgainstExactDft) {
  const Problem p = randomProblem(2, 32, 32, 1, 2000, 7);
  const auto img = randomComplex(p.voxels(), 1), data = randomComplex(p.m, 2);
  const ExactDft exact(p.geometry());
  const auto exF = exact.forward(img, 1), exA = exact.adjoint(data, 1);
  std::printf("%s NUFFT relative error vs exact DFT (2D 32x32, 2000 random samples), forward / adjoint;\n"
              "W = full kernel width in oversampled grid points:\n",
              GetParam().c_str());
  std::printf("   W   sigma=1.25             sigma=1.5              sigma=2\n");
  const double sigmas[3] = {1.25, 1.5, 2.0};
  double err[7][3];
  for (int w = 2; w <= 6; ++w) {
    std::printf("  %2d", w);
    for (int si = 0; si < 3; ++si) {
      const PlanRun r = run(p, options(w, sigmas[si]), img, data, 1);
      const double ef = relL2Error(r.forward, exF), ea = relL2Error(r.adjoint, exA);
      std::printf("   %.2e / %.2e", ef, ea);
      err[w][si] = std::max(ef, ea);
    }
    std::printf("\n");
  }
  EXPECT_LE(err[4][0], 1e-2);  // TRON's w = 2 (full width 4), sigma 1.25
  EXPECT_LE(err[6][2], 1e-4);  // W = 6, sigma 2
  EXPECT_LE(err[2][0], 0.25);  // full width 2: near the Kaiser-Bessel limit (regression bound, not a requirement)
  // More width or more oversampling always helps.
  for (int w = 2; w <= 6; ++w)
    for (int si = 0; si < 3; ++si) {
      if (w > 2) EXPECT_LT(err[w][si], err[w - 1][si]) << "W " << w << " sigma " << sigmas[si];
      if (si > 0) EXPECT_LT(err[w][si], err[w][si - 1]) << "W " << w << " sigma " << sigmas[si];
    }
}

TEST_P(NufftVsExactDft, OddNonSquareAnd3D) {
  const NufftOptions o = options(6, 2.0);
  for (int dims : {2, 3}) {
    const Problem p = dims == 2 ? randomProblem(2, 15, 22, 1, 700, 11) : randomProblem(3, 9, 12, 7, 600, 12);
    const ExactDft exact(p.geometry());
    for (index_t batch : {index_t{1}, index_t{2}}) {
      const auto img = randomComplex(p.voxels() * batch, 5), data = randomComplex(p.m * batch, 6);
      const PlanRun r = run(p, o, img, data, batch);
      const double ef = relL2Error(r.forward, exact.forward(img, batch));
      const double ea = relL2Error(r.adjoint, exact.adjoint(data, batch));
      std::printf("%s %dD W=6 sigma=2, batch %ld: forward %.2e adjoint %.2e\n", GetParam().c_str(), dims,
                  static_cast<long>(batch), ef, ea);
      EXPECT_LE(ef, 1e-4) << dims << "D batch " << batch;
      EXPECT_LE(ea, 1e-4) << dims << "D batch " << batch;
    }
  }
  // 3D at the low-accuracy point too.
  const Problem p = randomProblem(3, 12, 10, 8, 1500, 13);
  const auto img = randomComplex(p.voxels(), 7), data = randomComplex(p.m, 8);
  const ExactDft exact(p.geometry());
  const PlanRun r = run(p, options(4, 1.25), img, data, 1);
  EXPECT_LE(relL2Error(r.forward, exact.forward(img, 1)), 1e-2);
  EXPECT_LE(relL2Error(r.adjoint, exact.adjoint(data, 1)), 1e-2);
}

// Samples exactly on the band edge k = -N/2 and a little beyond (the periodic wrap of the grid matches
// the DFT's periodicity in k).
TEST_P(NufftVsExactDft, BandEdgeSamples) {
  Problem p = randomProblem(2, 16, 16, 1, 200, 13);
  p.k[0] = -8.f, p.k[1] = -8.f;
  p.k[3] = 8.05f, p.k[4] = -8.07f;
  const auto img = randomComplex(p.voxels(), 7), data = randomComplex(p.m, 8);
  const ExactDft exact(p.geometry());
  const PlanRun r = run(p, options(6, 2.0), img, data, 1);
  EXPECT_LE(relL2Error(r.forward, exact.forward(img, 1)), 1e-4);
  EXPECT_LE(relL2Error(r.adjoint, exact.adjoint(data, 1)), 1e-4);
}

// <F x, y> = <x, F^H y>: the adjoint is the exact transpose of the forward (spread = interp^T, IFFT = FFT^H,
// crop = pad^T, real diagonal deapodization), to float rounding; both normalisations of the mismatch.
TEST_P(NufftVsExactDft, Adjointness) {
  for (int dims : {2, 3}) {
    const Problem p = dims == 2 ? randomProblem(2, 32, 24, 1, 2000, 21) : randomProblem(3, 12, 10, 14, 1500, 22);
    const auto x = randomComplex(p.voxels(), 9), y = randomComplex(p.m, 10);
    const PlanRun r = run(p, options(4, 1.5), x, y, 1);
    EXPECT_LE(adjointMismatchRelative(x, r.forward, y, r.adjoint), 1e-5) << "dims " << dims;
    EXPECT_LE(adjointMismatch(x, r.forward, y, r.adjoint), 1e-5) << "dims " << dims;
  }
}

// Kaiser-Bessel from the table and evaluated directly: the same sums to float rounding (CPU measured in 2D
// under 2e-6; the GPU bound, 2D and 3D, 3e-6).
TEST_P(NufftVsExactDft, TableMatchesDirectKernel) {
  const double bound = onGpu() ? 3e-6 : 2e-6;
  for (int dims : {2, 3}) {
    const Problem p = dims == 2 ? randomProblem(2, 24, 24, 1, 800, 41) : randomProblem(3, 10, 10, 10, 800, 42);
    const auto img = randomComplex(p.voxels(), 13), data = randomComplex(p.m, 14);
    const PlanRun table = run(p, options(5, 2.0), img, data, 1);
    const PlanRun direct = run(p, options(5, 2.0, KernelEvaluation::Direct), img, data, 1);
    EXPECT_LE(relL2Error(table.forward, direct.forward), bound) << dims << "D";
    EXPECT_LE(relL2Error(table.adjoint, direct.adjoint), bound) << dims << "D";
  }
}

// interp(spread(.)) is a real symmetric operator with a positive diagonal: <SI a, b> = <a, SI b>.
TEST_P(NufftVsExactDft, SpreadInterpolateIsSymmetric) {
  const Problem p = randomProblem(2, 32, 32, 1, 1000, 61);
  auto plan = be().makeNufftPlan(p.geometry(), NufftOptions{});
  auto si = [&](const std::vector<cfloat>& w) {
    auto in = toBuffer(be(), w);
    auto out = poisoned(be(), p.m);
    plan->spreadInterpolate(*in, *out);
    return fromBuffer(be(), *out, p.m);
  };
  const auto a = randomComplex(p.m, 17), b = randomComplex(p.m, 18);
  const cdouble l = dot(si(a), b), r = dot(a, si(b));
  EXPECT_LE(std::abs(l - r) / std::abs(l), 1e-5);
  for (const cfloat& v : si(std::vector<cfloat>(static_cast<std::size_t>(p.m), cfloat(1)))) {
    ASSERT_GT(v.real(), 0.f);
    ASSERT_NEAR(v.imag(), 0.f, 1e-5f * v.real());
  }
}

LARMOR_INSTANTIATE_ON_TEST_DEVICE(NufftVsExactDft);
