// The locally low-rank prior of LowRankOps on the CPU (engine/src/cpu/low_rank.cpp, through makeLowRankOps):
// llrProx and nuclearNorm against a float64 reference written here from the definition in
// larmor/backend/low_rank_ops.hpp (numpy-roll shift, blocks tiling the shifted image from its origin with
// partial edge blocks, Eigen's two-sided Jacobi SVD of each Casorati matrix, U soft_t(Sigma) V^H, unshift),
// at thresholds between and above the singular values, for sizes with and without partial blocks, a
// rank-deficient case (fewer rows than frames) and one frame; t = 0 is the identity bit for bit; a rank-1
// block stays rank 1, scaled by 1 - t / sigma; the result minimises 1/2 ||u - x||^2 + t LLR(u) (the objective
// rises by at least a quarter of ||delta||^2 under perturbations, where strong convexity gives a half); and
// the argument checks. The prox is float in, float out, computed in double: it agrees with the reference to
// float rounding (bound 1e-6 relative, measured 3e-8); nuclearNorm to 1e-9 relative (zero singular values
// come out of the Gram as ~1e-8 sigma_max, so the rank-deficient case has 1e-6).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "larmor/backend/low_rank_ops.hpp"
#include "larmor/backend/registry.hpp"
#include "larmor/util/error.hpp"
#include "test_sparsity_util.hpp"

using namespace larmor;
using namespace larmor::sparsitytest;

namespace {

using Shift = std::array<index_t, 2>;
using DImage = std::vector<cd>;

struct Case {
  Shape shape;
  index_t block;
  Shift shift;
};

index_t wrap(index_t v, index_t n) { return ((v % n) + n) % n; }

/// The Casorati matrices of the shifted image, block by block, in double; write() puts matrices back.
struct Blocks {
  Blocks(const Shape& s, index_t block, Shift shift) : s(s), B(block), shift(shift) {
    nb0 = (s[0] + B - 1) / B;
    nb1 = (s[1] + B - 1) / B;
  }
  const Shape s;
  const index_t B;
  const Shift shift;
  index_t nb0, nb1;

  /// The flat index in x of shifted pixel (c0, c1): (S x)[c] = x[(c - s) mod n].
  index_t source(index_t c0, index_t c1) const {
    return wrap(c0 - shift[0], s[0]) + s[0] * wrap(c1 - shift[1], s[1]);
  }
  template <class F>
  void forPixels(index_t b, F&& f) const {
    const index_t b0 = b % nb0, b1 = b / nb0;
    index_t r = 0;
    for (index_t c1 = b1 * B; c1 < std::min(s[1], b1 * B + B); ++c1)
      for (index_t c0 = b0 * B; c0 < std::min(s[0], b0 * B + B); ++c0) f(r++, source(c0, c1));
  }
  index_t rows(index_t b) const {
    index_t r = 0;
    forPixels(b, [&](index_t, index_t) { ++r; });
    return r;
  }
  Eigen::MatrixXcd read(const DImage& x, index_t b) const {
    Eigen::MatrixXcd c(rows(b), s[2]);
    forPixels(b, [&](index_t r, index_t v) {
      for (index_t k = 0; k < s[2]; ++k) c(r, k) = x[static_cast<std::size_t>(v + s[0] * s[1] * k)];
    });
    return c;
  }
  void write(DImage& x, index_t b, const Eigen::MatrixXcd& c) const {
    forPixels(b, [&](index_t r, index_t v) {
      for (index_t k = 0; k < s[2]; ++k) x[static_cast<std::size_t>(v + s[0] * s[1] * k)] = c(r, k);
    });
  }
  index_t count() const { return nb0 * nb1; }
};

Eigen::VectorXd singularValues(const Eigen::MatrixXcd& c) { return Eigen::JacobiSVD<Eigen::MatrixXcd>(c).singularValues(); }

DImage toDouble(const Image& x) { return DImage(x.begin(), x.end()); }

/// prox_{t LLR}(x) in double from the definition: each block's U soft_t(Sigma) V^H.
DImage referenceProx(const Image& x, const Case& c, double t) {
  const Blocks blocks(c.shape, c.block, c.shift);
  DImage out = toDouble(x);
  for (index_t b = 0; b < blocks.count(); ++b) {
    const Eigen::MatrixXcd m = blocks.read(out, b);
    Eigen::JacobiSVD<Eigen::MatrixXcd> svd(m, Eigen::ComputeThinU | Eigen::ComputeThinV);
    Eigen::VectorXd s = svd.singularValues();
    for (Eigen::Index i = 0; i < s.size(); ++i) s(i) = std::max(0.0, s(i) - t);
    blocks.write(out, b, svd.matrixU() * s.asDiagonal() * svd.matrixV().adjoint());
  }
  return out;
}

/// LLR(x) in double, and every block's singular values (for choosing thresholds).
double referenceNorm(const DImage& x, const Case& c, std::vector<double>* all = nullptr) {
  const Blocks blocks(c.shape, c.block, c.shift);
  double sum = 0;
  for (index_t b = 0; b < blocks.count(); ++b) {
    const Eigen::VectorXd s = singularValues(blocks.read(x, b));
    for (Eigen::Index i = 0; i < s.size(); ++i) {
      sum += s(i);
      if (all) all->push_back(s(i));
    }
  }
  return sum;
}

/// 1/2 ||u - x||^2 + t LLR(u).
double objective(const DImage& u, const Image& x, const Case& c, double t) {
  double d = 0;
  for (std::size_t i = 0; i < u.size(); ++i) d += std::norm(u[i] - cd(x[i]));
  return 0.5 * d + t * referenceNorm(u, c, nullptr);
}

/// The p-quantile of the singular values of all blocks.
double quantile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

class LowRank : public ::testing::Test {
 protected:
  void SetUp() override {
    be = makeCpuBackend();
    ops = makeLowRankOps(*be);
  }
  Image prox(const Image& x, const Case& c, double t) {
    auto b = toBackend(*be, x);
    ops->llrProx(*b, c.shape, c.block, t, c.shift);
    return fromBackend(*be, *b, x.size());
  }
  double norm(const Image& x, const Case& c) {
    auto b = toBackend(*be, x);
    return ops->nuclearNorm(*b, c.shape, c.block, c.shift);
  }
  std::shared_ptr<Backend> be;
  std::unique_ptr<LowRankOps> ops;
};

const Case kCases[] = {
    {Shape{16, 16, 10}, 8, {0, 0}},  {Shape{16, 16, 10}, 8, {3, 5}}, {Shape{16, 16, 10}, 8, {15, 1}},
    {Shape{16, 16, 10}, 8, {8, 8}},  {Shape{13, 10, 6}, 4, {0, 0}},  {Shape{13, 10, 6}, 8, {7, 9}},
    {Shape{9, 7, 1}, 4, {2, 6}},     {Shape{6, 5, 20}, 2, {1, 4}},   {Shape{12, 8, 64}, 8, {5, 2}},
};

std::string describe(const Case& c, double t) {
  return c.shape.str() + " block " + std::to_string(c.block) + " shift (" + std::to_string(c.shift[0]) + ", " +
         std::to_string(c.shift[1]) + ") t " + std::to_string(t);
}

}  // namespace

TEST_F(LowRank, ProxMatchesSvdReference) {
  double worst = 0;
  for (const Case& c : kCases) {
    const Image x = randomImage(c.shape.size(), 11 + static_cast<unsigned>(c.shift[0] + 7 * c.shift[1]));
    std::vector<double> sigmas;
    referenceNorm(toDouble(x), c, &sigmas);
    for (double p : {0.25, 0.5, 0.9}) {
      const double t = quantile(sigmas, p);
      const double e = relL2Error(prox(x, c, t), referenceProx(x, c, t));
      EXPECT_LT(e, 1e-6) << describe(c, t);
      worst = std::max(worst, e);
    }
    // Above every singular value: every block is 0, exactly (f = 0).
    const double above = 1.01 * *std::max_element(sigmas.begin(), sigmas.end());
    const Image zero = prox(x, c, above);
    EXPECT_TRUE(std::all_of(zero.begin(), zero.end(), [](cfloat v) { return v == cfloat(0.f, 0.f); }))
        << describe(c, above);
  }
  RecordProperty("worst_relative_error", std::to_string(worst));
}

TEST_F(LowRank, NuclearNormMatchesSvdReference) {
  for (const Case& c : kCases) {
    const Image x = randomImage(c.shape.size(), 5 + static_cast<unsigned>(c.shape[2]));
    const double ref = referenceNorm(toDouble(x), c);
    // A block with fewer rows than frames: the Gram's zero eigenvalues give sigma ~1e-8 sigma_max each.
    const Blocks blocks(c.shape, c.block, c.shift);
    index_t fewest = c.shape[2];
    for (index_t b = 0; b < blocks.count(); ++b) fewest = std::min(fewest, blocks.rows(b));
    const double bound = fewest < c.shape[2] ? 1e-6 : 1e-9;
    EXPECT_NEAR(norm(x, c), ref, bound * ref) << describe(c, 0);
  }
}

TEST_F(LowRank, ShiftMovesTheBlocks) {
  // The prox depends on the shift (the blocks move), and shifting the image moves the blocks with it:
  // prox_0(roll(x, d)) = roll(prox_d(x), d).
  const Case c0{Shape{16, 16, 10}, 8, {0, 0}}, c1{Shape{16, 16, 10}, 8, {3, 5}};
  const Image x = randomImage(c0.shape.size(), 3);
  std::vector<double> sigmas;
  referenceNorm(toDouble(x), c0, &sigmas);
  const double t = quantile(sigmas, 0.5);
  EXPECT_GT(relL2Error(prox(x, c1, t), prox(x, c0, t)), 1e-2);
  Image rolled(x.size());
  const Blocks roll(c0.shape, 8, {3, 5});
  for (index_t k = 0; k < 10; ++k)
    for (index_t c = 0; c < 256; ++c)
      rolled[static_cast<std::size_t>(c + 256 * k)] = x[static_cast<std::size_t>(roll.source(c % 16, c / 16) + 256 * k)];
  const Image a = prox(rolled, c0, t), b = prox(x, c1, t);
  Image bRolled(b.size());
  for (index_t k = 0; k < 10; ++k)
    for (index_t c = 0; c < 256; ++c)
      bRolled[static_cast<std::size_t>(c + 256 * k)] = b[static_cast<std::size_t>(roll.source(c % 16, c / 16) + 256 * k)];
  EXPECT_LT(relL2Error(a, bRolled), 1e-6);
}

TEST_F(LowRank, ZeroThresholdIsTheIdentity) {
  const Case c{Shape{13, 10, 6}, 4, {7, 9}};
  const Image x = randomImage(c.shape.size(), 8);
  EXPECT_EQ(prox(x, c, 0.0), x);
}

TEST_F(LowRank, RankOneBlockStaysRankOneShrunk) {
  // One 8 x 8 block (any shift wraps onto the same pixels) holding u v^H: sigma = ||u|| ||v||.
  for (const Shift shift : {Shift{0, 0}, Shift{3, 6}}) {
    const Case c{Shape{8, 8, 12}, 8, shift};
    const Image u = randomImage(64, 21), v = randomImage(12, 22);
    Image x(64 * 12);
    for (index_t k = 0; k < 12; ++k)
      for (index_t r = 0; r < 64; ++r)
        x[static_cast<std::size_t>(r + 64 * k)] = u[static_cast<std::size_t>(r)] * std::conj(v[static_cast<std::size_t>(k)]);
    const double sigma = larmor::sparsitytest::norm(u) * larmor::sparsitytest::norm(v);
    const double t = 0.3 * sigma;
    const Image got = prox(x, c, t);
    Image want(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] * static_cast<float>(1.0 - t / sigma);
    EXPECT_LT(relL2Error(got, want), 1e-6);
    const Eigen::VectorXd s = singularValues(Blocks(c.shape, 8, {0, 0}).read(toDouble(got), 0));
    EXPECT_NEAR(s(0), sigma - t, 1e-5 * sigma);
    EXPECT_LT(s(1), 1e-6 * s(0));
    const Image gone = prox(x, c, 1.5 * sigma);
    EXPECT_EQ(relL2Error(gone, Image(x.size(), cfloat(0.f, 0.f))), 0.0);
  }
}

TEST_F(LowRank, ProxMinimisesTheObjective) {
  for (const Case& c : {Case{Shape{16, 16, 10}, 8, {5, 3}}, Case{Shape{13, 10, 6}, 4, {2, 1}}}) {
    const Image x = randomImage(c.shape.size(), 31);
    std::vector<double> sigmas;
    referenceNorm(toDouble(x), c, &sigmas);
    const double t = quantile(sigmas, 0.5);
    const DImage u = toDouble(prox(x, c, t));
    const double f0 = objective(u, x, c, t);
    const double scale = larmor::sparsitytest::norm(x);
    EXPECT_LT(f0, objective(toDouble(x), x, c, t));
    EXPECT_LT(f0, objective(DImage(x.size(), cd(0, 0)), x, c, t));
    // Random directions, the result itself (scaling) and towards x, a few sizes each: F rises by >= |d|^2 / 4.
    const Image noise = randomImage(c.shape.size(), 32);
    std::vector<DImage> directions{toDouble(noise), u, DImage(u.size())};
    for (std::size_t i = 0; i < u.size(); ++i) directions[2][i] = cd(x[i]) - u[i];
    for (DImage& d : directions) {
      double dn = 0;
      for (const cd& v : d) dn += std::norm(v);
      for (cd& v : d) v /= std::sqrt(dn);
    }
    for (const DImage& d : directions)
      for (double eps : {0.1, 0.03, 0.01, -0.01, -0.03, -0.1}) {
        DImage moved = u;
        const double step = eps * scale;
        for (std::size_t i = 0; i < u.size(); ++i) moved[i] += step * d[i];
        EXPECT_GE(objective(moved, x, c, t) - f0, 0.25 * step * step) << describe(c, t) << " eps " << eps;
      }
  }
}

TEST_F(LowRank, RejectsBadArguments) {
  const Shape s{8, 8, 4};
  auto x = toBackend(*be, randomImage(s.size(), 1));
  EXPECT_THROW(ops->llrProx(*x, s, 0, 1.0, {0, 0}), Error);
  EXPECT_THROW(ops->llrProx(*x, s, 8, 1.0, {8, 0}), Error);
  EXPECT_THROW(ops->llrProx(*x, s, 8, 1.0, {0, -1}), Error);
  EXPECT_THROW(ops->llrProx(*x, s, 8, -1.0, {0, 0}), Error);
  EXPECT_THROW(ops->llrProx(*x, s, 8, std::nan(""), {0, 0}), Error);
  EXPECT_THROW(ops->llrProx(*x, Shape{8, 8, 8}, 8, 1.0, {0, 0}), Error);  // more than the buffer holds
  EXPECT_THROW(ops->nuclearNorm(*x, Shape{2, 2, 2, 2}, 2, {0, 0}), Error);
  auto big = toBackend(*be, randomImage(2 * 65, 1));
  EXPECT_THROW(ops->llrProx(*big, Shape{2, 1, 65}, 2, 1.0, {0, 0}), Error);
  try {
    ops->llrProx(*big, Shape{2, 1, 65}, 2, 1.0, {0, 0});
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("65 frames exceed the 64"), std::string::npos) << e.what();
  }
}
