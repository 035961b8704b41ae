// The Toeplitz normal operator (ops/toeplitz.hpp): one FFT pair on the 2N grid equals F^H F of the exact
// DFT (float64 dense reference) to float tolerance, in 2D and 3D, even and odd sizes, batched; Q by the
// plan interface; the disk cache (hit, miss, corrupt files recomputed, unwritable folders tolerated).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "larmor/ops/toeplitz.hpp"
#include "support/dense_reference.hpp"
#include "support/error_norms.hpp"

using namespace larmor;
using namespace larmor::test;
namespace fs = std::filesystem;

namespace {

NufftGeometry makeGeometry(int dims, index_t n0, index_t n1, index_t n2, index_t m, unsigned seed) {
  NufftGeometry g;
  g.dims = dims;
  g.image[0] = n0;
  g.image[1] = n1;
  g.image[2] = dims == 3 ? n2 : 1;
  g.trajectory = randomTrajectory(m, g.image, dims, seed);
  return g;
}

/// Q[p] = sum_j w_j exp(2 pi i k_j . (p - N)/N) on the 2N grid, in double.
CArray densePsf(const NufftGeometry& g, const std::vector<double>* w = nullptr) {
  const Shape s = ops::psfShape(g);
  CArray q(s);
  for (index_t z = 0; z < s[2]; ++z)
    for (index_t y = 0; y < s[1]; ++y)
      for (index_t x = 0; x < s[0]; ++x) {
        const double u[3] = {static_cast<double>(x - g.image[0]) / g.image[0],
                             static_cast<double>(y - g.image[1]) / g.image[1],
                             g.dims == 3 ? static_cast<double>(z - g.image[2]) / g.image[2] : 0.0};
        cd sum = 0;
        for (index_t j = 0; j < g.samples(); ++j) {
          const double ph = 2 * M_PI * (g.trajectory[3 * j] * u[0] + g.trajectory[3 * j + 1] * u[1] +
                                        g.trajectory[3 * j + 2] * u[2]);
          sum += (w ? (*w)[j] : 1.0) * cd(std::cos(ph), std::sin(ph));
        }
        q(x, y, z) = cfloat(sum);
      }
  return q;
}

/// scale * F^H F x, densely in double.
std::vector<cd> denseNormal(const NufftGeometry& g, const std::vector<cfloat>& x, double scale) {
  const auto F = denseF(g);
  const index_t m = g.samples(), n = static_cast<index_t>(x.size());
  std::vector<cd> fx(static_cast<std::size_t>(m), 0.0), out(static_cast<std::size_t>(n), 0.0);
  for (index_t j = 0; j < m; ++j)
    for (index_t v = 0; v < n; ++v) fx[j] += F[j * n + v] * cd(x[v]);
  for (index_t v = 0; v < n; ++v)
    for (index_t j = 0; j < m; ++j) out[v] += std::conj(F[j * n + v]) * fx[j] * scale;
  return out;
}

struct Sizes {
  int dims;
  index_t n0, n1, n2, m;
};

}  // namespace

TEST(Toeplitz, EqualsExactNormalOperatorEvenAndOddSizes) {
  auto be = makeCpuBackend();
  for (const Sizes& c : {Sizes{2, 8, 8, 1, 150}, Sizes{2, 7, 6, 1, 90}, Sizes{3, 6, 5, 4, 200}, Sizes{3, 5, 4, 3, 80}}) {
    const NufftGeometry g = makeGeometry(c.dims, c.n0, c.n1, c.n2, c.m, 17 + c.n0);
    const index_t n = c.n0 * c.n1 * (c.dims == 3 ? c.n2 : 1);
    const double scale = 1.0 / static_cast<double>(n);
    ops::ToeplitzOperator T(*be, g, densePsf(g), scale);
    EXPECT_EQ(T.voxels(), n);
    EXPECT_NEAR(T.diagonal(), scale * c.m, 1e-4 * scale * c.m);
    const auto x = randomComplex(n, 3);
    auto bx = toBuffer(*be, x), by = be->allocate(n * sizeof(cfloat));
    T.apply(*bx, *by);
    EXPECT_LT(relL2Error(fromBuffer(*be, *by, n), denseNormal(g, x, scale)), 2e-5)
        << c.dims << "D " << c.n0 << "x" << c.n1 << "x" << c.n2;
    // In place, as the SENSE operator uses it.
    T.apply(*bx, *bx);
    EXPECT_LT(relL2Error(fromBuffer(*be, *bx, n), denseNormal(g, x, scale)), 2e-5);
  }
}

TEST(Toeplitz, BatchedApplicationTreatsEachImageAlone) {
  auto be = makeCpuBackend();
  const NufftGeometry g = makeGeometry(2, 6, 8, 1, 70, 5);
  ops::ToeplitzOperator T(*be, g, densePsf(g), 1.0);
  const auto x = randomComplex(3 * 48, 9);
  auto bx = toBuffer(*be, x), by = be->allocate(3 * 48 * sizeof(cfloat));
  T.apply(*bx, *by, 3);
  const auto y = fromBuffer(*be, *by, 3 * 48);
  for (int b = 0; b < 3; ++b) {
    std::vector<cfloat> xb(x.begin() + 48 * b, x.begin() + 48 * (b + 1)), yb(y.begin() + 48 * b, y.begin() + 48 * (b + 1));
    EXPECT_LT(relL2Error(yb, denseNormal(g, xb, 1.0)), 2e-5) << "batch " << b;
  }
}

TEST(Toeplitz, WeightedPsfGivesTheWeightedNormalOperator) {
  auto be = makeCpuBackend();
  const NufftGeometry g = makeGeometry(2, 6, 6, 1, 60, 8);
  std::vector<double> w(60);
  RArray wr(Shape{60});
  for (int j = 0; j < 60; ++j) wr[j] = static_cast<float>(w[j] = 0.5 + (j % 7) / 7.0);
  DenseBackend dense;
  const CArray q = ops::computePsf(dense, g, &wr, {});
  const CArray ref = densePsf(g, &w);
  double e = 0, r = 0;
  for (index_t i = 0; i < q.size(); ++i) {
    e += std::norm(cd(q[i]) - cd(ref[i]));
    r += std::norm(cd(ref[i]));
  }
  EXPECT_LT(std::sqrt(e / r), 1e-5);
  // F^H diag(w) F x, densely.
  ops::ToeplitzOperator T(*be, g, q, 1.0);
  const auto x = randomComplex(36, 2);
  auto bx = toBuffer(*be, x), by = be->allocate(36 * sizeof(cfloat));
  T.apply(*bx, *by);
  const auto F = denseF(g);
  std::vector<cd> expect(36, 0.0);
  for (int j = 0; j < 60; ++j) {
    cd fx = 0;
    for (int v = 0; v < 36; ++v) fx += F[j * 36 + v] * cd(x[v]);
    for (int v = 0; v < 36; ++v) expect[v] += std::conj(F[j * 36 + v]) * w[j] * fx;
  }
  EXPECT_LT(relL2Error(fromBuffer(*be, *by, 36), expect), 2e-5);
}

TEST(Toeplitz, PsfFromTheProductionExactDftMatchesTheDenseFormula) {
  auto be = makeCpuBackend();
  for (const Sizes& c : {Sizes{2, 8, 7, 1, 120}, Sizes{3, 5, 6, 4, 90}}) {
    const NufftGeometry g = makeGeometry(c.dims, c.n0, c.n1, c.n2, c.m, 23);
    const CArray q = ops::computePsf(*be, g, nullptr, {});
    EXPECT_LT(relL2Error(q, densePsf(g)), 1e-4) << c.dims << "D";
  }
}

TEST(Toeplitz, PsfCacheHitMissCorruptAndUnwritable) {
  const fs::path dir = fs::path(LARMOR_TEST_TMP) / "toeplitz-cache";
  fs::remove_all(dir);
  DenseBackend be;
  const NufftGeometry g = makeGeometry(2, 6, 5, 1, 40, 31);
  const CArray ref = densePsf(g);
  ops::PsfCacheStatus st{};
  const CArray q1 = ops::cachedPsf(be, g, nullptr, {}, dir.string(), &st);
  EXPECT_EQ(st, ops::PsfCacheStatus::Miss);
  // One computation of Q makes a plan per box of the 2N grid (ops::psfBySymmetry: 3 in 2D).
  const int perQ = be.plansMade;
  EXPECT_EQ(perQ, 3);
  const std::string key = ops::psfCacheKey(g, nullptr, {});
  EXPECT_EQ(key.size(), 16u);
  EXPECT_TRUE(fs::exists(dir / ("q-" + key + ".cfl")));
  EXPECT_TRUE(fs::exists(dir / ("q-" + key + ".json")));
  const CArray q2 = ops::cachedPsf(be, g, nullptr, {}, dir.string(), &st);
  EXPECT_EQ(st, ops::PsfCacheStatus::Hit);
  EXPECT_EQ(be.plansMade, perQ);  // not recomputed
  ASSERT_EQ(q2.size(), q1.size());
  EXPECT_EQ(q2.shape(), ops::psfShape(g));
  for (index_t i = 0; i < q1.size(); ++i) EXPECT_EQ(q1[i], q2[i]);

  // A flipped byte in the data: the checksum catches it, Q is recomputed and the file replaced.
  {
    std::fstream f(dir / ("q-" + key + ".cfl"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(100);
    const char c = static_cast<char>(f.get());
    f.seekp(100);
    f.put(static_cast<char>(c ^ 0x5a));
  }
  const CArray q3 = ops::cachedPsf(be, g, nullptr, {}, dir.string(), &st);
  EXPECT_EQ(st, ops::PsfCacheStatus::Rejected);
  EXPECT_EQ(be.plansMade, 2 * perQ);
  for (index_t i = 0; i < q1.size(); ++i) EXPECT_EQ(q1[i], q3[i]);
  ops::cachedPsf(be, g, nullptr, {}, dir.string(), &st);
  EXPECT_EQ(st, ops::PsfCacheStatus::Hit);

  // Truncated data, and garbage metadata.
  fs::resize_file(dir / ("q-" + key + ".cfl"), 64);
  ops::cachedPsf(be, g, nullptr, {}, dir.string(), &st);
  EXPECT_EQ(st, ops::PsfCacheStatus::Rejected);
  { std::ofstream(dir / ("q-" + key + ".json")) << "{not json"; }
  ops::cachedPsf(be, g, nullptr, {}, dir.string(), &st);
  EXPECT_EQ(st, ops::PsfCacheStatus::Rejected);
  ops::cachedPsf(be, g, nullptr, {}, dir.string(), &st);
  EXPECT_EQ(st, ops::PsfCacheStatus::Hit);

  // Another trajectory, method or weights: another key.
  NufftGeometry g2 = g;
  g2.trajectory[4] += 0.25f;
  EXPECT_NE(ops::psfCacheKey(g2, nullptr, {}), key);
  ops::PsfOptions nufft;
  nufft.method = ops::PsfMethod::Nufft;
  EXPECT_NE(ops::psfCacheKey(g, nullptr, nufft), key);
  RArray w(Shape{40}, 1.f);
  EXPECT_NE(ops::psfCacheKey(g, &w, {}), key);

  // No cache, and a folder that cannot be created (a file is in the way): computed, never fatal.
  ops::cachedPsf(be, g, nullptr, {}, "", &st);
  EXPECT_EQ(st, ops::PsfCacheStatus::Disabled);
  { std::ofstream(dir / "blocker") << "x"; }
  const CArray q4 = ops::cachedPsf(be, g, nullptr, {}, (dir / "blocker" / "sub").string(), &st);
  EXPECT_EQ(st, ops::PsfCacheStatus::Unwritable);
  EXPECT_EQ(q4.size(), ref.size());
}

TEST(Toeplitz, DefaultCacheFolderFollowsXdg) {
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old ? old : "";
  setenv("XDG_CACHE_HOME", "/tmp/xdg-test", 1);
  EXPECT_EQ(ops::defaultPsfCacheDirectory(), "/tmp/xdg-test/larmor");
  unsetenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (home) EXPECT_EQ(ops::defaultPsfCacheDirectory(), std::string(home) + "/.cache/larmor");
  if (old) setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}

TEST(Toeplitz, EqualsAdjointOfForwardWithTheProductionDftPlan) {
  // The statement of the issue, literally: T x == N^{-1} adjoint(forward(x)) with the CPU backend's exact DFT.
  auto be = makeCpuBackend();
  for (const Sizes& c : {Sizes{2, 16, 12, 1, 400}, Sizes{3, 8, 6, 5, 300}}) {
    const NufftGeometry g = makeGeometry(c.dims, c.n0, c.n1, c.n2, c.m, 41);
    const index_t n = c.n0 * c.n1 * (c.dims == 3 ? c.n2 : 1);
    std::unique_ptr<NufftPlan> plan = be->makeDftPlan(g, {});
    const CArray q = ops::computePsf(*be, g, nullptr, {});
    ops::ToeplitzOperator T(*be, g, q, 1.0 / n);
    const auto x = randomComplex(n, 5);
    auto bx = toBuffer(*be, x), by = be->allocate(n * sizeof(cfloat)), bs = be->allocate(c.m * sizeof(cfloat));
    auto bz = be->allocate(n * sizeof(cfloat));
    T.apply(*bx, *by);
    plan->forward(*bx, *bs, 1);
    plan->adjoint(*bs, *bz, 1);
    be->scale(*bz, cfloat(1.f / static_cast<float>(n)), n);
    const auto y = fromBuffer(*be, *by, n), z = fromBuffer(*be, *bz, n);
    std::vector<cd> zd(z.begin(), z.end());
    EXPECT_LT(relL2Error(y, zd), 2e-5) << c.dims << "D";
  }
}
