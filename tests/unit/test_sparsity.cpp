// The Daubechies-4 wavelet prior of SparsityOps on the CPU backend (engine/src/cpu/wavelet.cpp): the filter
// facts, perfect reconstruction and orthonormality, the transform, prox and l1 norm against an independent
// float64 reference written here (dense one-level matrices built from the taps' closed form, applied line
// by line), the shift (cycle spinning) semantics, the geometry rule of sparsity_ops.hpp, and argument
// checks. TV is in test_sparsity_tv.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "larmor/backend/registry.hpp"
#include "larmor/backend/sparsity_ops.hpp"
#include "larmor/util/error.hpp"
#include "test_sparsity_util.hpp"

using namespace larmor;
using namespace larmor::sparsitytest;
using kernels::WaveletGeometry;

namespace {

/// The D4 taps from their closed form (not from the engine's table).
std::array<double, 4> lowPass() {
  const double r3 = std::sqrt(3.0), c = 4.0 * std::sqrt(2.0);
  return {(1 + r3) / c, (3 + r3) / c, (3 - r3) / c, (1 - r3) / c};
}

/// One periodic analysis level of length m as a dense matrix (rows: m/2 approximations, m/2 details).
std::vector<double> levelMatrix(index_t m) {
  const auto h = lowPass();
  std::vector<double> M(static_cast<std::size_t>(m * m), 0.0);
  for (index_t k = 0; k < m / 2; ++k)
    for (int j = 0; j < 4; ++j) {
      const index_t col = (2 * k + j) % m;
      M[static_cast<std::size_t>(k * m + col)] += h[static_cast<std::size_t>(j)];
      const double g = (j % 2 ? -1.0 : 1.0) * h[static_cast<std::size_t>(3 - j)];
      M[static_cast<std::size_t>((m / 2 + k) * m + col)] += g;
    }
  return M;
}

/// Psi (or Psi^T) of a padded array in double: every level, every transformed dim, line by line.
std::vector<cd> referenceTransform(std::vector<cd> w, const WaveletGeometry& g, bool inverse) {
  const index_t P[3] = {g.padded[0], g.padded[1], g.padded[2]};
  for (int step = 0; step < g.levels; ++step) {
    const int level = inverse ? g.levels - 1 - step : step;
    const index_t ext[3] = {g.block(0, level), g.block(1, level), g.block(2, level)};
    for (int d = 0; d < 3; ++d) {
      if (!g.transformed[d]) continue;
      const index_t m = ext[d];
      const auto M = levelMatrix(m);
      const index_t stride = d == 0 ? 1 : d == 1 ? P[0] : P[0] * P[1];
      for (index_t c2 = 0; c2 < (d == 2 ? 1 : ext[2]); ++c2)
        for (index_t c1 = 0; c1 < (d == 1 ? 1 : ext[1]); ++c1)
          for (index_t c0 = 0; c0 < (d == 0 ? 1 : ext[0]); ++c0) {
            const index_t base = c0 + P[0] * (c1 + P[1] * c2);
            std::vector<cd> line(static_cast<std::size_t>(m)), out(static_cast<std::size_t>(m));
            for (index_t i = 0; i < m; ++i) line[static_cast<std::size_t>(i)] = w[static_cast<std::size_t>(base + i * stride)];
            for (index_t r = 0; r < m; ++r)
              for (index_t c = 0; c < m; ++c)
                out[static_cast<std::size_t>(r)] +=
                    (inverse ? M[static_cast<std::size_t>(c * m + r)] : M[static_cast<std::size_t>(r * m + c)]) *
                    line[static_cast<std::size_t>(c)];
            for (index_t i = 0; i < m; ++i) w[static_cast<std::size_t>(base + i * stride)] = out[static_cast<std::size_t>(i)];
          }
    }
  }
  return w;
}

bool isDetail(const WaveletGeometry& g, index_t i) {
  const index_t c0 = i % g.padded[0], c1 = (i / g.padded[0]) % g.padded[1], c2 = i / (g.padded[0] * g.padded[1]);
  return !(c0 < g.block(0, g.levels) && c1 < g.block(1, g.levels) && c2 < g.block(2, g.levels));
}

/// y[v] = x[(v - s) mod N] (numpy's roll), or its inverse.
Image roll(const Image& x, const Shape& s, const std::array<index_t, 3>& sh, bool inverse) {
  Image y(x.size());
  for (index_t z = 0; z < s[2]; ++z)
    for (index_t v = 0; v < s[1]; ++v)
      for (index_t u = 0; u < s[0]; ++u) {
        const index_t c[3] = {u, v, z};
        index_t src[3];
        for (int d = 0; d < 3; ++d) {
          const index_t n = s[static_cast<std::size_t>(d)], k = sh[static_cast<std::size_t>(d)];
          src[d] = inverse ? (c[d] + k) % n : (c[d] - k + n) % n;
        }
        y[static_cast<std::size_t>(u + s[0] * (v + s[1] * z))] =
            x[static_cast<std::size_t>(src[0] + s[0] * (src[1] + s[1] * src[2]))];
      }
  return y;
}

/// The prox in double: roll, zero-pad, Psi, complex soft threshold of the details, Psi^T, crop, unroll.
Image referenceProx(const Image& x, const Shape& s, double t, const std::array<index_t, 3>& sh) {
  const WaveletGeometry g = SparsityOps::waveletGeometry(s);
  const Image r = roll(x, s, sh, false);
  std::vector<cd> w(static_cast<std::size_t>(g.paddedVoxels()), 0.0);
  for (index_t z = 0; z < s[2]; ++z)
    for (index_t v = 0; v < s[1]; ++v)
      for (index_t u = 0; u < s[0]; ++u)
        w[static_cast<std::size_t>(u + g.padded[0] * (v + g.padded[1] * z))] = r[static_cast<std::size_t>(u + s[0] * (v + s[1] * z))];
  w = referenceTransform(w, g, false);
  for (index_t i = 0; i < g.paddedVoxels(); ++i) {
    auto& c = w[static_cast<std::size_t>(i)];
    if (isDetail(g, i)) c = std::abs(c) > t ? c * (1.0 - t / std::abs(c)) : cd(0.0);
  }
  w = referenceTransform(w, g, true);
  Image cropped(x.size());
  for (index_t z = 0; z < s[2]; ++z)
    for (index_t v = 0; v < s[1]; ++v)
      for (index_t u = 0; u < s[0]; ++u)
        cropped[static_cast<std::size_t>(u + s[0] * (v + s[1] * z))] =
            cfloat(w[static_cast<std::size_t>(u + g.padded[0] * (v + g.padded[1] * z))]);
  return roll(cropped, s, sh, true);
}

struct Fixture : ::testing::Test {
  std::shared_ptr<Backend> be = makeCpuBackend();
  SparsityOps& ops() { return be->sparsityOps(); }
  Image transform(const Image& x, const Shape& s, bool inverse) {
    auto b = toBackend(*be, x);
    ops().waveletTransform(*b, s, inverse);
    return fromBackend(*be, *b, x.size());
  }
  Image prox(const Image& x, const Shape& s, double t, std::array<index_t, 3> sh) {
    auto b = toBackend(*be, x);
    ops().waveletProx(*b, s, t, sh);
    return fromBackend(*be, *b, x.size());
  }
};

using SparsityWavelet = Fixture;

}  // namespace

TEST_F(SparsityWavelet, D4FilterFacts) {
  const auto h = lowPass();
  double sum = 0, sum2 = 0, gsum = 0, gmoment = 0;
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(kernels::d4Low(j), h[static_cast<std::size_t>(j)], 1e-15);
    sum += kernels::d4Low(j);
    sum2 += kernels::d4Low(j) * kernels::d4Low(j);
    gsum += kernels::d4High(j);
    gmoment += j * kernels::d4High(j);
  }
  EXPECT_NEAR(sum, std::sqrt(2.0), 1e-15);  // low-pass sums to sqrt 2
  EXPECT_NEAR(sum2, 1.0, 1e-15);            // unit norm
  EXPECT_NEAR(gsum, 0.0, 1e-15);            // high-pass: two vanishing moments
  EXPECT_NEAR(gmoment, 0.0, 1e-15);
  // A linear ramp in a 1-D row: the finest details (the upper half after any number of levels) vanish except
  // where the periodic filter wraps around the end (the last coefficient).
  const Shape s{64, 1, 1};
  Image ramp(64);
  for (int n = 0; n < 64; ++n) ramp[static_cast<std::size_t>(n)] = {0.5f + 0.25f * n, -1.f + 0.125f * n};
  ASSERT_GE(SparsityOps::waveletGeometry(s).levels, 1);
  const Image c = transform(ramp, s, false);
  for (int k = 32; k < 63; ++k) EXPECT_LT(std::abs(c[static_cast<std::size_t>(k)]), 2e-5f) << "detail " << k;
  EXPECT_GT(std::abs(c[63]), 1.f);  // the wrap sees the jump from 16 back to 0.5
}

TEST_F(SparsityWavelet, Geometry) {
  auto check = [](Shape s, int levels, std::array<index_t, 3> padded, std::array<bool, 3> tr) {
    const WaveletGeometry g = SparsityOps::waveletGeometry(s);
    EXPECT_EQ(g.levels, levels) << s.str();
    for (int d = 0; d < 3; ++d) {
      EXPECT_EQ(g.padded[d], padded[static_cast<std::size_t>(d)]) << s.str() << " dim " << d;
      EXPECT_EQ(g.transformed[d], tr[static_cast<std::size_t>(d)]) << s.str() << " dim " << d;
    }
  };
  check(Shape{256, 256, 1}, 5, {256, 256, 1}, {true, true, false});
  check(Shape{180, 230, 1}, 4, {192, 240, 1}, {true, true, false});
  check(Shape{1, 180, 230}, 4, {1, 192, 240}, {false, true, true});
  check(Shape{128, 128, 128}, 4, {128, 128, 128}, {true, true, true});
  check(Shape{256, 256, 4}, 5, {256, 256, 4}, {true, true, false});
  check(Shape{7, 5, 1}, 0, {7, 5, 1}, {false, false, false});
  check(Shape{40, 27, 1}, 1, {40, 28, 1}, {true, true, false});
}

TEST_F(SparsityWavelet, PerfectReconstructionAndOrthonormality) {
  for (const Shape& s : {Shape{64, 64, 1}, Shape{256, 256, 1}, Shape{32, 48, 16}, Shape{1, 64, 48}, Shape{96, 1, 1}}) {
    const WaveletGeometry g = SparsityOps::waveletGeometry(s);
    ASSERT_EQ(g.paddedVoxels(), s.size()) << s.str();
    ASSERT_GE(g.levels, 1) << s.str();
    const Image x = randomImage(s.size(), 11);
    const Image c = transform(x, s, false);
    EXPECT_NEAR(norm(c) / norm(x), 1.0, 1e-6) << s.str();  // ||Psi x|| = ||x||
    EXPECT_GT(relL2Error(c, x), 0.5) << s.str();               // it did transform
    EXPECT_LT(relL2Error(transform(c, s, true), x), 1e-6) << s.str();
  }
}

TEST_F(SparsityWavelet, TransformMatchesDenseFloat64Reference) {
  for (const Shape& s : {Shape{32, 48, 1}, Shape{16, 32, 16}, Shape{1, 40, 64}}) {
    const WaveletGeometry g = SparsityOps::waveletGeometry(s);
    const Image x = randomImage(s.size(), 12);
    const auto ref = referenceTransform(std::vector<cd>(x.begin(), x.end()), g, false);
    EXPECT_LT(relL2Error(transform(x, s, false), ref), 2e-7) << s.str();
    const auto back = referenceTransform(std::vector<cd>(x.begin(), x.end()), g, true);
    EXPECT_LT(relL2Error(transform(x, s, true), back), 2e-7) << s.str();
  }
}

TEST_F(SparsityWavelet, ProxMatchesFloat64Reference) {
  // Divisible sizes (exact prox) and padded ones (40x27: dim 1 padded to 28; 180x230 to 192x240).
  for (const Shape& s : {Shape{32, 48, 1}, Shape{16, 32, 16}, Shape{40, 27, 1}, Shape{180, 230, 1}}) {
    const Image x = randomImage(s.size(), 13);
    for (double t : {0.05, 0.5, 3.0}) {
      const std::array<index_t, 3> sh = {3 % s[0], 5 % s[1], 1 % s[2]};
      const Image got = prox(x, s, t, sh);
      EXPECT_LT(relL2Error(got, referenceProx(x, s, t, sh)), 1e-5) << s.str() << " t " << t;
      EXPECT_GT(relL2Error(got, x), 1e-3) << s.str() << " t " << t;  // something was shrunk
    }
  }
}

TEST_F(SparsityWavelet, ProxWithZeroThresholdIsIdentity) {
  for (const Shape& s : {Shape{64, 48, 1}, Shape{40, 27, 1}, Shape{180, 230, 1}, Shape{20, 16, 18}}) {
    const Image x = randomImage(s.size(), 14);
    EXPECT_EQ(prox(x, s, 0.0, {1, 2, 0}), x) << s.str();  // t = 0: returned untouched
    // A threshold below every coefficient: pad, Psi, Psi^H, crop give x back (padding included).
    EXPECT_LT(relL2Error(prox(x, s, 1e-12, {1, 2, 0}), x), 1e-6) << s.str();
  }
}

TEST_F(SparsityWavelet, ShiftIsCycleSpinning) {
  // prox(x, shift s) = roll^-1(prox(roll(x, s), 0)), divisible and padded sizes.
  for (const Shape& s : {Shape{64, 48, 1}, Shape{40, 27, 1}, Shape{20, 16, 18}}) {
    const Image x = randomImage(s.size(), 15);
    const std::array<index_t, 3> sh = {s[0] - 3, 7, s[2] > 1 ? 5 : 0};
    const Image direct = prox(x, s, 0.4, sh);
    const Image viaRoll = roll(prox(roll(x, s, sh, false), s, 0.4, {0, 0, 0}), s, sh, true);
    EXPECT_LT(relL2Error(direct, viaRoll), 1e-7) << s.str();
    EXPECT_GT(relL2Error(direct, prox(x, s, 0.4, {0, 0, 0})), 1e-3) << s.str();  // the shift matters
  }
}

TEST_F(SparsityWavelet, L1MatchesReferenceAndConstantsHaveNoDetails) {
  for (const Shape& s : {Shape{32, 48, 1}, Shape{40, 27, 1}, Shape{16, 32, 16}}) {
    const WaveletGeometry g = SparsityOps::waveletGeometry(s);
    const Image x = randomImage(s.size(), 16);
    std::vector<cd> w(static_cast<std::size_t>(g.paddedVoxels()), 0.0);
    for (index_t z = 0; z < s[2]; ++z)
      for (index_t v = 0; v < s[1]; ++v)
        for (index_t u = 0; u < s[0]; ++u)
          w[static_cast<std::size_t>(u + g.padded[0] * (v + g.padded[1] * z))] = x[static_cast<std::size_t>(u + s[0] * (v + s[1] * z))];
    w = referenceTransform(w, g, false);
    double ref = 0;
    for (index_t i = 0; i < g.paddedVoxels(); ++i)
      if (isDetail(g, i)) ref += std::abs(w[static_cast<std::size_t>(i)]);
    auto b = toBackend(*be, x);
    EXPECT_NEAR(ops().waveletL1(*b, s), ref, 1e-6 * ref) << s.str();
  }
  const Shape s{64, 32, 1};
  auto c = toBackend(*be, Image(static_cast<std::size_t>(s.size()), cfloat(2.f, -1.f)));
  EXPECT_LT(ops().waveletL1(*c, s), 1e-4 * s.size());
  const Image before = fromBackend(*be, *c, static_cast<std::size_t>(s.size()));
  ops().waveletProx(*c, s, 0.5, {3, 4, 0});
  EXPECT_LT(relL2Error(fromBackend(*be, *c, static_cast<std::size_t>(s.size())), before), 1e-6);
}

TEST_F(SparsityWavelet, TooSmallImagesAreLeftAlone) {
  const Shape s{7, 5, 1};
  const Image x = randomImage(s.size(), 17);
  EXPECT_EQ(prox(x, s, 1.0, {3, 2, 0}), x);
  auto b = toBackend(*be, x);
  EXPECT_EQ(ops().waveletL1(*b, s), 0.0);
}

TEST_F(SparsityWavelet, RejectsBadArguments) {
  const Shape s{32, 32, 1};
  auto b = toBackend(*be, randomImage(s.size(), 18));
  EXPECT_THROW(ops().waveletProx(*b, s, 1.0, {32, 0, 0}), Error);  // shift outside [0, N)
  EXPECT_THROW(ops().waveletProx(*b, s, 1.0, {0, 0, 1}), Error);
  EXPECT_THROW(ops().waveletProx(*b, s, -1.0, {0, 0, 0}), Error);
  EXPECT_THROW(ops().waveletProx(*b, Shape{64, 32, 1}, 1.0, {0, 0, 0}), Error);  // buffer too small
  EXPECT_THROW(ops().waveletL1(*b, Shape{32, 32, 1, 2}), Error);                  // not an image
}
