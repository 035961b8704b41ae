// Finite differences (the backend op) and the priors W of ops/regularizer.hpp on the CPU backend:
// adjointness, values at the boundary, W^H W / ||W x||^2 / diag(W^H W) against explicit dense matrices,
// and the anatomical weights' behaviour at edges.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "larmor/backend/registry.hpp"
#include "larmor/ops/regularizer.hpp"
#include "support/dense_reference.hpp"
#include "support/error_norms.hpp"

using namespace larmor;
using namespace larmor::test;

namespace {

cd dotHost(const std::vector<cfloat>& a, const std::vector<cfloat>& b) {
  cd s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += std::conj(cd(a[i])) * cd(b[i]);
  return s;
}

/// |mag(i + e_a) - mag(i)| over every neighbour pair inside the volume, every axis, by explicit coordinates.
std::vector<float> neighbourDifferencesOf(const std::vector<float>& mag, const index_t dims[3]) {
  std::vector<float> diffs;
  const index_t n = dims[0] * dims[1] * dims[2];
  for (int a = 0; a < 3; ++a) {
    const index_t stride = a == 0 ? 1 : a == 1 ? dims[0] : dims[0] * dims[1];
    for (index_t i = 0; i < n; ++i) {
      const index_t c = a == 0 ? i % dims[0] : a == 1 ? (i / dims[0]) % dims[1] : i / (dims[0] * dims[1]);
      if (c + 1 < dims[a]) diffs.push_back(std::abs(mag[i + stride] - mag[i]));
    }
  }
  return diffs;
}

struct FdCase {
  index_t dims[3];
  index_t batch;
};

}  // namespace

TEST(FiniteDifference, AdjointIdentityEveryAxis) {
  auto be = makeCpuBackend();
  for (const FdCase& c : {FdCase{{7, 5, 1}, 2}, FdCase{{4, 6, 5}, 1}, FdCase{{1, 9, 3}, 3}, FdCase{{5, 1, 1}, 1}}) {
    const index_t n = c.dims[0] * c.dims[1] * c.dims[2] * c.batch;
    const auto x = randomComplex(n, 1), y = randomComplex(n, 2);
    auto bx = toBuffer(*be, x), by = toBuffer(*be, y), out = be->allocate(n * sizeof(cfloat));
    for (int axis = 0; axis < 3; ++axis) {
      be->priorOps().finiteDifference(*out, *bx, c.dims, c.batch, axis, false);
      const auto dx = fromBuffer(*be, *out, n);
      be->priorOps().finiteDifference(*out, *by, c.dims, c.batch, axis, true);
      const auto dhy = fromBuffer(*be, *out, n);
      const cd lhs = dotHost(dx, y), rhs = dotHost(x, dhy);
      EXPECT_NEAR(std::abs(lhs - rhs), 0.0, 1e-4 * (1 + std::abs(lhs))) << "axis " << axis << " dims " << c.dims[0]
                                                                          << "x" << c.dims[1] << "x" << c.dims[2];
    }
  }
}

TEST(FiniteDifference, ForwardValuesAndNeumannBoundary) {
  auto be = makeCpuBackend();
  const index_t dims[3] = {3, 2, 1};
  // x[i] = i along a 3x2 image: differences along x are 1 (0 on the last column), along y 3 (0 on the last row).
  std::vector<cfloat> x(6);
  for (int i = 0; i < 6; ++i) x[i] = cfloat(static_cast<float>(i), static_cast<float>(-2 * i));
  auto bx = toBuffer(*be, x), out = be->allocate(6 * sizeof(cfloat));
  be->priorOps().finiteDifference(*out, *bx, dims, 1, 0, false);
  const auto d0 = fromBuffer(*be, *out, 6);
  const cfloat one(1.f, -2.f), three(3.f, -6.f), zero(0.f, 0.f);
  EXPECT_EQ(d0, (std::vector<cfloat>{one, one, zero, one, one, zero}));
  be->priorOps().finiteDifference(*out, *bx, dims, 1, 1, false);
  const auto d1 = fromBuffer(*be, *out, 6);
  EXPECT_EQ(d1, (std::vector<cfloat>{three, three, three, zero, zero, zero}));
  // An axis of length 1 has no differences.
  be->priorOps().finiteDifference(*out, *bx, dims, 1, 2, false);
  EXPECT_EQ(fromBuffer(*be, *out, 6), std::vector<cfloat>(6, zero));
  EXPECT_THROW(be->priorOps().finiteDifference(*bx, *bx, dims, 1, 0, false), Error);  // in place is refused
  EXPECT_THROW(be->priorOps().finiteDifference(*out, *bx, dims, 1, 3, false), Error);
}

namespace {

/// Dense W (rows: one per axis of extent > 1 and voxel) with optional weights, for checking.
std::vector<std::vector<cd>> denseW(const index_t dims[3], const ops::AnatomicalWeights* w) {
  const index_t n = dims[0] * dims[1] * dims[2];
  std::vector<std::vector<cd>> rows;
  for (int a = 0; a < 3; ++a) {
    if (dims[a] <= 1) continue;
    const index_t stride = a == 0 ? 1 : a == 1 ? dims[0] : dims[0] * dims[1];
    for (index_t i = 0; i < n; ++i) {
      std::vector<cd> r(static_cast<std::size_t>(n), 0.0);
      if ((i / stride) % dims[a] < dims[a] - 1) {
        const double wi = w ? w->weights[a][i] : 1.0;
        r[i + stride] = wi;
        r[i] = -wi;
      }
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

void checkAgainstDense(Backend& be, ops::Regularizer& reg, const std::vector<std::vector<cd>>& W, index_t n) {
  const auto x = randomComplex(n, 7);
  auto bx = toBuffer(be, x), by = be.allocate(n * sizeof(cfloat));
  reg.applyNormal(*bx, *by);
  const auto y = fromBuffer(be, *by, n);
  // W^H W x and ||W x||^2, densely.
  std::vector<cd> wx(W.size(), 0.0), expect(static_cast<std::size_t>(n), 0.0);
  double norm2 = 0;
  for (std::size_t r = 0; r < W.size(); ++r) {
    for (index_t i = 0; i < n; ++i) wx[r] += W[r][i] * cd(x[i]);
    norm2 += std::norm(wx[r]);
    for (index_t i = 0; i < n; ++i) expect[i] += std::conj(W[r][i]) * wx[r];
  }
  double err = 0, ref = 0;
  for (index_t i = 0; i < n; ++i) {
    err += std::norm(cd(y[i]) - expect[i]);
    ref += std::norm(expect[i]);
  }
  EXPECT_LT(std::sqrt(err / ref), 1e-5);
  // y0 + alpha W^H W x in one pass (the normal operator's lambda term).
  const auto y0 = randomComplex(n, 8);
  auto bacc = toBuffer(be, y0);
  reg.applyNormalAdd(*bx, *bacc, -0.75);
  const auto acc = fromBuffer(be, *bacc, n);
  double accErr = 0, accRef = 0;
  for (index_t i = 0; i < n; ++i) {
    const cd want = cd(y0[i]) - 0.75 * expect[i];
    accErr += std::norm(cd(acc[i]) - want);
    accRef += std::norm(want);
  }
  EXPECT_LT(std::sqrt(accErr / accRef), 1e-5);
  EXPECT_NEAR(reg.normSquared(*bx), norm2, 1e-5 * norm2);
  const auto diag = reg.diagonal();
  for (index_t i = 0; i < n; ++i) {
    double d = 0;
    for (const auto& row : W) d += std::norm(row[i]);
    EXPECT_NEAR(diag[i], d, 1e-5 * (1 + d)) << "voxel " << i;
  }
}

}  // namespace

TEST(Regularizer, TikhonovIsIdentity) {
  auto be = makeCpuBackend();
  const index_t dims[3] = {5, 4, 3};
  auto reg = ops::makeTikhonov(*be, dims);
  std::vector<std::vector<cd>> I;
  for (index_t i = 0; i < 60; ++i) {
    std::vector<cd> r(60, 0.0);
    r[i] = 1;
    I.push_back(r);
  }
  checkAgainstDense(*be, *reg, I, 60);
  EXPECT_EQ(reg->kind(), ops::RegularizerKind::Tikhonov);
}

TEST(Regularizer, FiniteDifferencesMatchDenseMatrix2DAnd3D) {
  auto be = makeCpuBackend();
  for (const auto& d : {std::array<index_t, 3>{6, 5, 1}, std::array<index_t, 3>{4, 3, 5}}) {
    const index_t dims[3] = {d[0], d[1], d[2]};
    auto reg = ops::makeFiniteDifference(*be, dims);
    checkAgainstDense(*be, *reg, denseW(dims, nullptr), dims[0] * dims[1] * dims[2]);
  }
}

TEST(Regularizer, AnatomicalMatchesDenseWeightedDifferences) {
  auto be = makeCpuBackend();
  const index_t dims[3] = {6, 5, 4};
  const index_t n = 120;
  const auto r = randomComplex(n, 3);
  CArray ref(Shape{6, 5, 4});
  for (index_t i = 0; i < n; ++i) ref[i] = r[i];
  const auto w = ops::anatomicalWeights(ref, dims, 0.5);
  auto reg = ops::makeWeightedFiniteDifference(*be, dims, w);
  EXPECT_EQ(reg->kind(), ops::RegularizerKind::Anatomical);
  checkAgainstDense(*be, *reg, denseW(dims, &w), n);
}

TEST(Regularizer, AnatomicalWeightsAreSmallAcrossEdgesOnly) {
  // A square of value 1 in a 16x16 background of 0: pairs that cross its border get small weights,
  // pairs inside either region weight 1.
  const index_t dims[3] = {16, 16, 1};
  CArray ref(Shape{16, 16, 1});
  for (index_t y = 4; y < 12; ++y)
    for (index_t x = 4; x < 12; ++x) ref(x, y, 0) = cfloat(1.f, 0.f);
  const auto w = ops::anatomicalWeights(ref, dims);
  // delta = max(3 * median, 0.02 * max) = 0.02 (the median difference is 0).
  EXPECT_NEAR(w.delta, 0.02, 1e-9);
  EXPECT_NEAR(w.weights[0](3, 8, 0), 1.0 / std::sqrt(1.0 + 2500.0), 1e-6);  // x = 3 -> 4 crosses the edge
  EXPECT_NEAR(w.weights[0](11, 8, 0), 1.0 / std::sqrt(1.0 + 2500.0), 1e-6);
  EXPECT_FLOAT_EQ(w.weights[0](6, 8, 0), 1.f);
  EXPECT_FLOAT_EQ(w.weights[1](8, 6, 0), 1.f);
  EXPECT_LT(w.weights[1](8, 3, 0), 0.05f);
  EXPECT_FLOAT_EQ(w.weights[0](0, 0, 0), 1.f);
  // A constant reference: no edges, all weights 1.
  CArray flat(Shape{16, 16, 1}, cfloat(2.f, 0.f));
  const auto wf = ops::anatomicalWeights(flat, dims);
  for (index_t i = 0; i < 256; ++i) EXPECT_FLOAT_EQ(wf.weights[0][i], 1.f);
  EXPECT_THROW(ops::anatomicalWeights(CArray(Shape{15, 16, 1}), dims), Error);
}

// The automatic delta = max(3 median, 0.02 max) of |differences to the next voxel| on a random volume (odd
// sizes, every axis), against std::nth_element over the same differences: the production code selects the
// median by a parallel radix select on the float bits and must give the same value exactly.
TEST(Regularizer, AnatomicalDeltaIsThreeMediansExactly) {
  for (const auto& d : {std::array<index_t, 3>{37, 29, 11}, std::array<index_t, 3>{64, 48, 1}}) {
    const index_t dims[3] = {d[0], d[1], d[2]}, n = d[0] * d[1] * d[2];
    CArray ref(Shape{d[0], d[1], d[2]});
    std::mt19937 rng(static_cast<unsigned>(n));
    std::uniform_real_distribution<float> u(0.f, 1.f);
    for (index_t i = 0; i < n; ++i) ref[i] = cfloat(u(rng) < 0.3f ? 0.f : u(rng), u(rng) < 0.5f ? 0.f : 0.1f * u(rng));
    std::vector<float> mag(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) mag[i] = std::abs(ref[i]);
    std::vector<float> diffs = neighbourDifferencesOf(mag, dims);
    const float mx = *std::max_element(diffs.begin(), diffs.end());
    auto mid = diffs.begin() + static_cast<std::ptrdiff_t>(diffs.size() / 2);
    std::nth_element(diffs.begin(), mid, diffs.end());
    const double expected = std::max(3.0 * *mid, 0.02 * mx);
    EXPECT_EQ(ops::anatomicalWeights(ref, dims, 0).delta, expected) << d[0] << "x" << d[1] << "x" << d[2];
  }
}

// --- prior set-up kernels (PriorOps::neighbourDifferences, edgeWeights), Backend::reciprocalDiagonal ---

namespace {

/// |z| as the ops define it: in double, rounded to float.
float magnitudeOf(cfloat z) {
  const double re = z.real(), im = z.imag();
  return static_cast<float>(std::sqrt(re * re + im * im));
}

}  // namespace

TEST(PriorOps, NeighbourDifferencesGiveTheSortedRankAndTheMaximum) {
  auto be = makeCpuBackend();
  const index_t dims[3] = {13, 9, 7}, n = 13 * 9 * 7;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<cfloat> img(static_cast<std::size_t>(n));
  for (auto& v : img) v = u(rng) < 0.4f ? cfloat(0.5f, 0.f) : cfloat(u(rng), 0.2f * u(rng));  // many ties
  std::vector<float> mag(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) mag[i] = magnitudeOf(img[i]);
  std::vector<float> diffs = neighbourDifferencesOf(mag, dims);
  std::sort(diffs.begin(), diffs.end());
  auto buf = toBuffer(*be, img);
  for (std::uint64_t k : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{diffs.size() / 3},
                          std::uint64_t{diffs.size() / 2}, std::uint64_t{diffs.size() - 1}}) {
    const auto s = be->priorOps().neighbourDifferences(*buf, dims, k);
    EXPECT_TRUE(s.finite);
    EXPECT_EQ(s.kth, diffs[k]) << "rank " << k;
    EXPECT_EQ(s.maximum, diffs.back());
  }
  EXPECT_THROW(be->priorOps().neighbourDifferences(*buf, dims, diffs.size()), Error);
  img[17] = cfloat(std::nanf(""), 0.f);
  auto bad = toBuffer(*be, img);
  EXPECT_FALSE(be->priorOps().neighbourDifferences(*bad, dims, 0).finite);
  // A single voxel has no pairs: nothing to rank, nothing thrown.
  const index_t one[3] = {1, 1, 1};
  EXPECT_TRUE(be->priorOps().neighbourDifferences(*buf, one, 0).finite);
}

TEST(PriorOps, EdgeWeightsFollowTheFormulaAndAreOneOnTheLastPlane) {
  auto be = makeCpuBackend();
  const index_t dims[3] = {6, 5, 4}, n = 120;
  const auto img = randomComplex(n, 8);
  auto in = toBuffer(*be, img), out = be->allocate(n * sizeof(cfloat));
  const double delta = 0.3;
  for (int a = 0; a < 3; ++a) {
    be->priorOps().edgeWeights(*out, *in, dims, a, delta);
    const auto w = fromBuffer(*be, *out, n);
    const index_t stride = a == 0 ? 1 : a == 1 ? dims[0] : dims[0] * dims[1];
    for (index_t i = 0; i < n; ++i) {
      const index_t c = a == 0 ? i % dims[0] : a == 1 ? (i / dims[0]) % dims[1] : i / (dims[0] * dims[1]);
      double expected = 1;
      if (c + 1 < dims[a]) {
        const double t = (static_cast<double>(magnitudeOf(img[i + stride])) - magnitudeOf(img[i])) / delta;
        expected = 1 / std::sqrt(1 + t * t);
      }
      EXPECT_NEAR(w[i].real(), expected, 1e-7) << "axis " << a << " voxel " << i;
      EXPECT_EQ(w[i].imag(), 0.f);
    }
  }
  EXPECT_THROW(be->priorOps().edgeWeights(*out, *in, dims, 0, 0.0), Error);
  EXPECT_THROW(be->priorOps().edgeWeights(*out, *in, dims, 3, 1.0), Error);
  EXPECT_THROW(be->priorOps().edgeWeights(*in, *in, dims, 0, 1.0), Error);
}

TEST(PriorOps, ReciprocalDiagonalInvertsPositiveSumsAndGuardsTheRest) {
  auto be = makeCpuBackend();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<cfloat> a{{2.f, 9.f}, {0.f, 0.f}, {-1.f, 0.f}, {inf, 0.f}, {0.5f, 0.f}, {std::nanf(""), 0.f}};
  const std::vector<cfloat> b{{1.f, 0.f}, {0.25f, 0.f}, {0.f, 0.f}, {1.f, 0.f}, {-1.f, 0.f}, {1.f, 0.f}};
  auto ba = toBuffer(*be, a), bb = toBuffer(*be, b), out = be->allocate(6 * sizeof(cfloat));
  be->reciprocalDiagonal(*out, *ba, 1.0, nullptr, 0.0, 6);
  auto r = fromBuffer(*be, *out, 6);
  const float onlyA[6] = {0.5f, 1.f, 1.f, 1.f, 2.f, 1.f};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r[i], cfloat(onlyA[i], 0.f)) << i;
  be->reciprocalDiagonal(*out, *ba, 2.0, bb.get(), 4.0, 6);  // 2 a + 4 b
  r = fromBuffer(*be, *out, 6);
  const float both[6] = {1.f / 8.f, 1.f, 1.f, 1.f, 1.f, 1.f};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r[i], cfloat(both[i], 0.f)) << i;
  be->reciprocalDiagonal(*out, *ba, 1.0, nullptr, 0.5, 6);  // a + 0.5: no second array, a constant term
  r = fromBuffer(*be, *out, 6);
  const float floored[6] = {0.4f, 2.f, 1.f, 1.f, 1.f, 1.f};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r[i], cfloat(floored[i], 0.f)) << i;
}
