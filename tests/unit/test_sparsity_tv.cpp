// Total variation of SparsityOps on the CPU backend (engine/src/cpu/sparsity.cpp): TV(u) against a
// brute-force double loop; prox_{t TV} against a long run of Chambolle's projection algorithm in double
// written here (Chambolle, J. Math. Imaging Vis. 20:89, 2004, eq. 9: a different algorithm from the
// engine's FGP), optimality against random perturbations, the warm-started dual's fixed point, 2D, 3D,
// [1, Ny, Nz] and 1-D shapes, constants, and argument checks.
#include <gtest/gtest.h>

#include <cmath>

#include "larmor/backend/registry.hpp"
#include "larmor/backend/sparsity_ops.hpp"
#include "larmor/util/error.hpp"
#include "test_sparsity_util.hpp"

using namespace larmor;
using namespace larmor::sparsitytest;

namespace {

/// TV(u) = sum_v sqrt(sum_d |u(v + e_d) - u(v)|^2) by explicit coordinates, in double.
template <class T>
double bruteTv(const std::vector<T>& u, const Shape& s) {
  double tv = 0;
  for (index_t z = 0; z < s[2]; ++z)
    for (index_t y = 0; y < s[1]; ++y)
      for (index_t x = 0; x < s[0]; ++x) {
        const index_t c[3] = {x, y, z};
        const index_t i = x + s[0] * (y + s[1] * z);
        double s2 = 0;
        for (int d = 0; d < 3; ++d) {
          if (c[d] + 1 >= s[static_cast<std::size_t>(d)]) continue;
          const index_t j = i + (d == 0 ? 1 : d == 1 ? s[0] : s[0] * s[1]);
          s2 += std::norm(cd(u[static_cast<std::size_t>(j)]) - cd(u[static_cast<std::size_t>(i)]));
        }
        tv += std::sqrt(s2);
      }
  return tv;
}

template <class T>
double objective(const std::vector<T>& u, const Image& x, const Shape& s, double t) {
  double r = 0;
  for (std::size_t i = 0; i < x.size(); ++i) r += std::norm(cd(u[i]) - cd(x[i]));
  return 0.5 * r + t * bruteTv(u, s);
}

/// prox_{t TV}(x) in double by Chambolle's projection algorithm (signs as sparsity_ops.hpp: u = x - t D^H p,
/// p <- (p + tau D u / t) / (1 + tau |D u / t|)), tau = 1 / (4 d), `iterations` steps from p = 0.
std::vector<cd> chambolle(const Image& x, const Shape& s, double t, int iterations) {
  const index_t n = s.size(), st[3] = {1, s[0], s[0] * s[1]};
  int dims = 0;
  for (int d = 0; d < 3; ++d) dims += s[static_cast<std::size_t>(d)] > 1 ? 1 : 0;
  const double tau = 1.0 / (4.0 * dims);
  std::vector<cd> p(static_cast<std::size_t>(3 * n), 0.0), u(static_cast<std::size_t>(n));
  auto coord = [&](index_t i, int d) { return d == 0 ? i % s[0] : d == 1 ? (i / s[0]) % s[1] : i / (s[0] * s[1]); };
  auto primal = [&] {
    for (index_t i = 0; i < n; ++i) {
      cd a = 0;
      for (int d = 0; d < 3; ++d) {
        const index_t c = coord(i, d), len = s[static_cast<std::size_t>(d)];
        if (len == 1) continue;
        if (c > 0) a += p[static_cast<std::size_t>(d * n + i - st[d])];
        if (c < len - 1) a -= p[static_cast<std::size_t>(d * n + i)];
      }
      u[static_cast<std::size_t>(i)] = cd(x[static_cast<std::size_t>(i)]) - t * a;
    }
  };
  for (int k = 0; k < iterations; ++k) {
    primal();
    for (index_t i = 0; i < n; ++i) {
      cd g[3] = {0, 0, 0};
      double mag2 = 0;
      for (int d = 0; d < 3; ++d) {
        const index_t c = coord(i, d), len = s[static_cast<std::size_t>(d)];
        if (len > 1 && c < len - 1) g[d] = (u[static_cast<std::size_t>(i + st[d])] - u[static_cast<std::size_t>(i)]) / t;
        mag2 += std::norm(g[d]);
      }
      const double den = 1.0 + tau * std::sqrt(mag2);
      for (int d = 0; d < 3; ++d) p[static_cast<std::size_t>(d * n + i)] = (p[static_cast<std::size_t>(d * n + i)] + tau * g[d]) / den;
    }
  }
  primal();
  return u;
}

struct SparsityTv : ::testing::Test {
  std::shared_ptr<Backend> be = makeCpuBackend();
  SparsityOps& ops() { return be->sparsityOps(); }
  /// prox by the engine from the dual `dual` (updated), `iterations` FGP steps.
  Image prox(const Image& x, const Shape& s, double t, int iterations, Image& dual) {
    auto bx = toBackend(*be, x), bp = toBackend(*be, dual);
    ops().tvProx(*bx, s, t, iterations, *bp);
    dual = fromBackend(*be, *bp, dual.size());
    return fromBackend(*be, *bx, x.size());
  }
  Image prox(const Image& x, const Shape& s, double t, int iterations) {
    Image dual(static_cast<std::size_t>(SparsityOps::tvDualElements(s)), cfloat(0.f, 0.f));
    return prox(x, s, t, iterations, dual);
  }
  double tv(const Image& x, const Shape& s) {
    auto b = toBackend(*be, x);
    return ops().totalVariation(*b, s);
  }
};

const Shape kShapes[] = {Shape{16, 12, 1}, Shape{6, 5, 4}, Shape{1, 10, 8}, Shape{24, 1, 1}, Shape{9, 7}};

}  // namespace

TEST_F(SparsityTv, ValueMatchesBruteForce) {
  for (const Shape& s : {Shape{16, 12, 1}, Shape{6, 5, 4}, Shape{1, 10, 8}, Shape{24, 1, 1}, Shape{1, 1, 1},
                         Shape{180, 230, 1}, Shape{33, 17, 9}}) {
    const Image x = randomImage(s.size(), 21);
    const double ref = bruteTv(x, s);
    EXPECT_NEAR(tv(x, s), ref, 1e-8 * std::max(ref, 1.0)) << s.str();  // differences taken in float
  }
}

TEST_F(SparsityTv, ConstantImageHasNoVariationAndIsAFixedPoint) {
  for (const Shape& s : kShapes) {
    const Image c(static_cast<std::size_t>(s.size()), cfloat(1.5f, -0.5f));
    EXPECT_EQ(tv(c, s), 0.0) << s.str();
    Image dual(static_cast<std::size_t>(SparsityOps::tvDualElements(s)), cfloat(0.f, 0.f));
    EXPECT_EQ(prox(c, s, 0.7, 20, dual), c) << s.str();
    for (auto v : dual) EXPECT_EQ(v, cfloat(0.f, 0.f));
  }
}

TEST_F(SparsityTv, ZeroThresholdAndSingleVoxelAreIdentity) {
  const Shape s{16, 12, 1};
  const Image x = randomImage(s.size(), 22);
  EXPECT_EQ(prox(x, s, 0.0, 10), x);
  const Image one = randomImage(1, 23);
  EXPECT_EQ(prox(one, Shape{1, 1, 1}, 1.0, 10), one);
}

TEST_F(SparsityTv, ProxMatchesLongChambolleRun) {
  // 1000 FGP steps in float against 20000 Chambolle steps in double: within 1e-4 of ||x|| (400 steps gave
  // up to 6e-5 at t = 0.3; Chambolle's run itself is not fully converged there: FGP's objective is lower).
  for (const Shape& s : kShapes) {
    const Image x = blockyImage(s, 24, 0.2f);
    for (double t : {0.05, 0.3}) {
      const auto ref = chambolle(x, s, t, 20000);
      const Image got = prox(x, s, t, 1000);
      EXPECT_LT(relL2Error(got, ref) * norm(Image(ref.begin(), ref.end())) / norm(x), 1e-4) << s.str() << " t " << t;
      // and its objective is as low as the reference's, up to float rounding of u
      EXPECT_LT(objective(got, x, s, t), objective(ref, x, s, t) * (1 + 1e-6)) << s.str() << " t " << t;
      EXPECT_GT(relL2Error(got, x), 1e-3) << s.str() << " t " << t;  // it did denoise
    }
  }
}

TEST_F(SparsityTv, ProxBeatsPerturbationsAndTheInput) {
  std::mt19937 rng(25);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (const Shape& s : kShapes) {
    const Image x = blockyImage(s, 26, 0.2f);
    const double t = 0.2;
    const Image u = prox(x, s, t, 500);
    const double fu = objective(u, x, s, t);
    EXPECT_LT(fu, objective(x, x, s, t)) << s.str();
    for (int trial = 0; trial < 100; ++trial) {
      Image v = u;
      const float eps = trial < 50 ? 1e-2f : 1e-1f;
      for (auto& e : v) e += eps * cfloat(nd(rng), nd(rng));
      EXPECT_LT(fu, objective(v, x, s, t)) << s.str() << " trial " << trial;
    }
  }
}

TEST_F(SparsityTv, WarmStartReachesTheSameFixedPoint) {
  for (const Shape& s : kShapes) {
    const Image x = blockyImage(s, 27, 0.2f);
    const double t = 0.3;
    Image cold(static_cast<std::size_t>(SparsityOps::tvDualElements(s)), cfloat(0.f, 0.f));
    const Image converged = prox(x, s, t, 2000, cold);
    // From the converged dual, one more step stays there.
    Image warm = cold;
    EXPECT_LT(relL2Error(prox(x, s, t, 1, warm), converged), 1e-4) << s.str();
    // 20 steps, then 20 more from the returned dual, beat 20 steps from cold; 200 + 200 land on the fixed point.
    Image d1(cold.size(), cfloat(0.f, 0.f));
    const Image first = prox(x, s, t, 20, d1);
    const Image second = prox(x, s, t, 20, d1);
    EXPECT_LT(relL2Error(second, converged), relL2Error(first, converged)) << s.str();
    Image d2(cold.size(), cfloat(0.f, 0.f));
    (void)prox(x, s, t, 200, d2);
    EXPECT_LT(relL2Error(prox(x, s, t, 200, d2), converged), 1e-3) << s.str();
    // The dual stays in the unit ball.
    const index_t n = s.size();
    for (index_t i = 0; i < n; ++i) {
      double m2 = 0;
      for (int d = 0; d < 3; ++d)
        if (s[static_cast<std::size_t>(d)] > 1) m2 += std::norm(cd(d2[static_cast<std::size_t>(d * n + i)]));
      EXPECT_LE(m2, 1.0 + 1e-5);
    }
  }
}

TEST_F(SparsityTv, PlaneLayoutsGiveTheSameResult) {
  // [1, Ny, Nz] holds the same numbers as [Ny, Nz, 1]: same prox, same TV.
  const Image x = blockyImage(Shape{10, 8, 1}, 28, 0.2f);
  EXPECT_EQ(prox(x, Shape{1, 10, 8}, 0.2, 30), prox(x, Shape{10, 8, 1}, 0.2, 30));
  EXPECT_DOUBLE_EQ(tv(x, Shape{1, 10, 8}), tv(x, Shape{10, 8, 1}));
  // A 2-D image as [Nx, Ny] (rank 2) and [Nx, Ny, 1].
  EXPECT_EQ(prox(x, Shape{10, 8}, 0.2, 30), prox(x, Shape{10, 8, 1}, 0.2, 30));
}

TEST_F(SparsityTv, RejectsBadArguments) {
  const Shape s{16, 12, 1};
  auto bx = toBackend(*be, randomImage(s.size(), 29));
  auto bp = be->allocate(static_cast<std::size_t>(SparsityOps::tvDualElements(s)) * sizeof(cfloat));
  auto small = be->allocate(static_cast<std::size_t>(s.size()) * sizeof(cfloat));
  EXPECT_THROW(ops().tvProx(*bx, s, 0.1, 0, *bp), Error);
  EXPECT_THROW(ops().tvProx(*bx, s, -0.1, 5, *bp), Error);
  EXPECT_THROW(ops().tvProx(*bx, s, 0.1, 5, *small), Error);  // dual of 1 instead of 3 components
  EXPECT_THROW(ops().tvProx(*bx, s, 0.1, 5, *bx), Error);
  EXPECT_THROW(ops().totalVariation(*bx, Shape{16, 12, 2}), Error);
}

namespace {

/// TV_w by brute force in double (sparsity_ops.hpp, weighted TV).
double bruteWeightedTv(const Image& x, const Shape& s, const SparsityOps::TvWeights& w) {
  const index_t n = s.size(), st[3] = {1, s[0], s[0] * s[1]};
  double total = 0;
  for (index_t i = 0; i < n; ++i) {
    const index_t c[3] = {i % s[0], (i / s[0]) % s[1], i / (s[0] * s[1])};
    double s2 = 0;
    for (int d = 0; d < 3; ++d)
      if (c[d] < s[static_cast<std::size_t>(d)] - 1)
        s2 += double(w[d]) * w[d] * std::norm(cd(x[static_cast<std::size_t>(i + st[d])]) - cd(x[static_cast<std::size_t>(i)]));
    total += std::sqrt(s2);
  }
  return total;
}

}  // namespace

TEST_F(SparsityTv, WeightedValueMatchesBruteForce) {
  for (const Shape& s : {Shape{16, 12, 5}, Shape{6, 5, 4}, Shape{33, 17, 9}}) {
    const Image x = randomImage(s.size(), 41);
    for (const SparsityOps::TvWeights& w : {SparsityOps::TvWeights{0, 0, 1}, SparsityOps::TvWeights{1, 1, 0.25f},
                                            SparsityOps::TvWeights{0.5f, 0, 2}}) {
      auto b = toBackend(*be, x);
      const double ref = bruteWeightedTv(x, s, w);
      EXPECT_NEAR(ops().totalVariation(*b, s, w), ref, 1e-7 * std::max(ref, 1.0)) << s.str();
    }
  }
}

TEST_F(SparsityTv, UnitWeightsAreThePlainProxBitForBit) {
  const Shape s{16, 12, 5};
  const Image x = blockyImage(s, 42, 0.3f);
  Image d1(static_cast<std::size_t>(SparsityOps::tvDualElements(s)), cfloat(0.f, 0.f)), d2 = d1;
  auto a = toBackend(*be, x), b = toBackend(*be, x), pa = toBackend(*be, d1), pb = toBackend(*be, d2);
  ops().tvProx(*a, s, 0.2, 10, *pa);
  ops().tvProx(*b, s, 0.2, 10, *pb, SparsityOps::TvWeights{1, 1, 1});
  EXPECT_EQ(fromBackend(*be, *a, x.size()), fromBackend(*be, *b, x.size()));
}

// Temporal TV, w = (0, 0, 1) on [Nx, Ny, T]: every voxel's time curve denoised alone, as the plain prox of that
// curve laid out as a 1-D image [T] (same float operations: same bits).
TEST_F(SparsityTv, TimeOnlyWeightsAreTheProxOfEachTimeCurve) {
  const Shape s{7, 5, 12};
  const Image x = blockyImage(s, 43, 0.3f);
  Image dual(static_cast<std::size_t>(SparsityOps::tvDualElements(s)), cfloat(0.f, 0.f));
  auto bx = toBackend(*be, x), bp = toBackend(*be, dual);
  ops().tvProx(*bx, s, 0.15, 20, *bp, SparsityOps::TvWeights{0, 0, 1});
  const Image joint = fromBackend(*be, *bx, x.size());
  const index_t plane = s[0] * s[1];
  for (index_t v = 0; v < plane; ++v) {
    Image curve;
    for (index_t t = 0; t < s[2]; ++t) curve.push_back(x[static_cast<std::size_t>(v + t * plane)]);
    const Image alone = prox(curve, Shape{s[2], 1, 1}, 0.15, 20);
    for (index_t t = 0; t < s[2]; ++t)
      ASSERT_EQ(joint[static_cast<std::size_t>(v + t * plane)], alone[static_cast<std::size_t>(t)]) << "voxel " << v;
  }
}

// The weighted prox solves its problem: the objective 1/2||u - x||^2 + t TV_w(u) at the prox's output is below
// that at nearby images (random perturbations) and at x itself.
TEST_F(SparsityTv, WeightedProxMinimisesItsObjective) {
  const Shape s{12, 10, 6};
  const SparsityOps::TvWeights w{1, 1, 0.5f};
  const Image x = blockyImage(s, 44, 0.3f);
  Image dual(static_cast<std::size_t>(SparsityOps::tvDualElements(s)), cfloat(0.f, 0.f));
  auto bx = toBackend(*be, x), bp = toBackend(*be, dual);
  ops().tvProx(*bx, s, 0.1, 300, *bp, w);
  const Image u = fromBackend(*be, *bx, x.size());
  auto objective = [&](const Image& v) {
    double d2 = 0;
    for (std::size_t i = 0; i < v.size(); ++i) d2 += std::norm(cd(v[i]) - cd(x[i]));
    return 0.5 * d2 + 0.1 * bruteWeightedTv(v, s, w);
  };
  const double at = objective(u);
  EXPECT_LT(at, objective(x));
  for (unsigned seed = 1; seed <= 8; ++seed) {
    const Image noise = randomImage(s.size(), 100 + seed);
    Image v = u;
    for (std::size_t i = 0; i < v.size(); ++i) v[i] += 1e-3f * noise[i];
    EXPECT_LE(at, objective(v) + 1e-6) << "perturbation " << seed;
  }
}

TEST_F(SparsityTv, RejectsNegativeOrNonFiniteWeights) {
  const Shape s{6, 5, 4};
  auto bx = toBackend(*be, randomImage(s.size(), 45));
  auto bp = be->allocate(static_cast<std::size_t>(SparsityOps::tvDualElements(s)) * sizeof(cfloat));
  EXPECT_THROW(ops().tvProx(*bx, s, 0.1, 5, *bp, SparsityOps::TvWeights{1, -1, 1}), Error);
  EXPECT_THROW(ops().totalVariation(*bx, s, SparsityOps::TvWeights{1, 1, NAN}), Error);
}
