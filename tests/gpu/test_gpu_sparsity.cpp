// The sparsity priors on the GPU (cuda/sparsity.cu, cuda/wavelet.cu) against the CPU backend, the
// reference tested in tests/unit/test_sparsity*.cpp, on the same inputs: tvProx with the same number of
// FGP steps and the same warm dual, waveletProx with shifts (divisible and padded sizes), the wavelet
// transform itself, TV and the wavelet l1 norm. Sizes 256x256x1, 180x230x1 (padded), 64^3, 1x180x230 and
// 7x5x1. The twins do the same float operations in the same order, up to FMA contraction, so they agree to
// ~1e-6; the bound is 1e-5 relative (norms: 1e-9, both are double sums of the same float terms). Skipped
// without a CUDA device.
#include <gtest/gtest.h>

#include <array>
#include <memory>

#include "larmor/backend/registry.hpp"
#include "larmor/backend/sparsity_ops.hpp"
#include "../support/device.hpp"
#include "../unit/test_sparsity_util.hpp"

using namespace larmor;
using namespace larmor::sparsitytest;

namespace {

// The GPU and the CPU backend; skips only on a machine without any GPU (tests/support/device.hpp).
class GpuSparsity : public ::testing::Test {
 protected:
  void SetUp() override {
    test::selectOrSkip("cuda", gpu);
    cpu = test::backendNamed("cpu");
  }
  std::shared_ptr<Backend> gpu, cpu;

  /// tvProx on `be` from `dual` (updated): the image after, the dual after.
  std::pair<Image, Image> tv(Backend& be, const Image& x, Image dual, const Shape& s, double t, int iterations) {
    auto bx = toBackend(be, x), bp = toBackend(be, dual);
    be.sparsityOps().tvProx(*bx, s, t, iterations, *bp);
    return {fromBackend(be, *bx, x.size()), fromBackend(be, *bp, dual.size())};
  }
  Image wavelet(Backend& be, const Image& x, const Shape& s, double t, std::array<index_t, 3> shift) {
    auto b = toBackend(be, x);
    be.sparsityOps().waveletProx(*b, s, t, shift);
    return fromBackend(be, *b, x.size());
  }
};

const Shape kShapes[] = {Shape{256, 256, 1}, Shape{180, 230, 1}, Shape{64, 64, 64}, Shape{1, 180, 230},
                         Shape{7, 5, 1}};

/// Components of the dual along dims of length 1 are never touched: compare only the others.
Image activeDual(const Image& p, const Shape& s) {
  Image out;
  const auto n = static_cast<std::size_t>(s.size());
  for (int d = 0; d < 3; ++d)
    if (s[static_cast<std::size_t>(d)] > 1) out.insert(out.end(), p.begin() + d * n, p.begin() + (d + 1) * n);
  return out;
}

}  // namespace

TEST_F(GpuSparsity, TvProxMatchesCpuColdAndWarm) {
  for (const Shape& s : kShapes) {
    const Image x = blockyImage(s, 31, 0.3f);
    const Image zero(static_cast<std::size_t>(SparsityOps::tvDualElements(s)), cfloat(0.f, 0.f));
    for (int iterations : {1, 10, 50}) {
      const auto [uc, pc] = tv(*cpu, x, zero, s, 0.2, iterations);
      const auto [ug, pg] = tv(*gpu, x, zero, s, 0.2, iterations);
      EXPECT_LT(relL2Error(ug, uc), 1e-5) << s.str() << " cold, " << iterations << " steps";
      EXPECT_LT(relL2Error(activeDual(pg, s), activeDual(pc, s)), 1e-5) << s.str();
      // Warm: the CPU's dual handed to both for 10 more steps.
      const auto [wc, qc] = tv(*cpu, x, pc, s, 0.2, 10);
      const auto [wg, qg] = tv(*gpu, x, pc, s, 0.2, 10);
      EXPECT_LT(relL2Error(wg, wc), 1e-5) << s.str() << " warm after " << iterations;
      EXPECT_LT(relL2Error(activeDual(qg, s), activeDual(qc, s)), 1e-5) << s.str();
    }
  }
}

TEST_F(GpuSparsity, TotalVariationMatchesCpu) {
  for (const Shape& s : kShapes) {
    const Image x = randomImage(s.size(), 32);
    auto bc = toBackend(*cpu, x), bg = toBackend(*gpu, x);
    const double c = cpu->sparsityOps().totalVariation(*bc, s), g = gpu->sparsityOps().totalVariation(*bg, s);
    EXPECT_NEAR(g, c, 1e-9 * c) << s.str();
    // Deterministic: the same bits twice.
    EXPECT_EQ(gpu->sparsityOps().totalVariation(*bg, s), g) << s.str();
  }
}

TEST_F(GpuSparsity, WaveletTransformMatchesCpu) {
  for (const Shape& s : {Shape{256, 256, 1}, Shape{64, 64, 64}, Shape{1, 128, 96}}) {
    const Image x = randomImage(s.size(), 33);
    for (bool inverse : {false, true}) {
      auto bc = toBackend(*cpu, x), bg = toBackend(*gpu, x);
      cpu->sparsityOps().waveletTransform(*bc, s, inverse);
      gpu->sparsityOps().waveletTransform(*bg, s, inverse);
      EXPECT_LT(relL2Error(fromBackend(*gpu, *bg, x.size()), fromBackend(*cpu, *bc, x.size())), 1e-5)
          << s.str() << (inverse ? " inverse" : " forward");
    }
  }
}

TEST_F(GpuSparsity, WaveletProxMatchesCpuWithShifts) {
  for (const Shape& s : kShapes) {
    const Image x = randomImage(s.size(), 34);
    const std::array<std::array<index_t, 3>, 3> shifts = {
        {{0, 0, 0}, {s[0] / 3, s[1] / 2, s[2] / 4}, {s[0] - 1, s[1] - 1, s[2] - 1}}};
    for (const auto& sh : shifts)
      for (double t : {0.1, 1.0}) {
        const Image c = wavelet(*cpu, x, s, t, sh), g = wavelet(*gpu, x, s, t, sh);
        EXPECT_LT(relL2Error(g, c), 1e-5) << s.str() << " t " << t << " shift " << sh[0] << "," << sh[1] << "," << sh[2];
      }
  }
}

TEST_F(GpuSparsity, WaveletL1MatchesCpu) {
  for (const Shape& s : kShapes) {
    const Image x = randomImage(s.size(), 35);
    auto bc = toBackend(*cpu, x), bg = toBackend(*gpu, x);
    const double c = cpu->sparsityOps().waveletL1(*bc, s), g = gpu->sparsityOps().waveletL1(*bg, s);
    EXPECT_NEAR(g, c, 1e-6 * std::max(c, 1.0)) << s.str();
    EXPECT_EQ(gpu->sparsityOps().waveletL1(*bg, s), g) << s.str();
  }
}

TEST_F(GpuSparsity, WorkspaceIsReusedAcrossSizes) {
  // Alternating sizes (the cache grows, then serves the smaller image) gives the same results as fresh calls.
  const Shape big{180, 230, 1}, small{64, 48, 1};
  const Image xb = randomImage(big.size(), 36), xs = randomImage(small.size(), 37);
  const Image first = wavelet(*gpu, xs, small, 0.3, {5, 6, 0});
  (void)wavelet(*gpu, xb, big, 0.3, {5, 6, 0});
  EXPECT_EQ(wavelet(*gpu, xs, small, 0.3, {5, 6, 0}), first);
}

// Weighted TV (temporal and spatio-temporal priors of dynamic imaging): the GPU's prox and value against the CPU's.
TEST_F(GpuSparsity, WeightedTvMatchesCpu) {
  for (const Shape& s : {Shape{128, 128, 20}, Shape{64, 48, 7}}) {
    const Image x = blockyImage(s, 34, 0.3f);
    for (const SparsityOps::TvWeights& w : {SparsityOps::TvWeights{0, 0, 1}, SparsityOps::TvWeights{1, 1, 0.5f}}) {
      auto run = [&](Backend& be) {
        const Image zero(static_cast<std::size_t>(SparsityOps::tvDualElements(s)), cfloat(0.f, 0.f));
        auto bx = toBackend(be, x), bp = toBackend(be, zero);
        be.sparsityOps().tvProx(*bx, s, 0.2, 10, *bp, w);
        const double value = be.sparsityOps().totalVariation(*bx, s, w);
        return std::make_pair(fromBackend(be, *bx, x.size()), value);
      };
      const auto [uc, vc] = run(*cpu);
      const auto [ug, vg] = run(*gpu);
      EXPECT_LT(relL2Error(ug, uc), 1e-5) << s.str() << " w " << w[0] << "," << w[1] << "," << w[2];
      EXPECT_NEAR(vg, vc, 1e-6 * vc) << s.str();
    }
  }
}
