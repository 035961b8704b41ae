// The CPU backend's batched linear algebra and index moves against plain double-precision loops written
// here: every op combination of gemmBatched (strided and interleaved batches, beta, the Hermitian and the
// double-accumulating paths), the batched Cholesky solve (and its error naming the entry that is not
// positive definite), gather and scatter with negative indices, and the argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "larmor/backend/registry.hpp"

using namespace larmor;

namespace {

std::vector<cfloat> randomVector(index_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<cfloat> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = {nd(rng), nd(rng)};
  return v;
}

std::unique_ptr<Buffer> toBuffer(Backend& be, const std::vector<cfloat>& v) {
  auto b = be.allocate(v.size() * sizeof(cfloat));
  be.upload(*b, v.data(), v.size() * sizeof(cfloat));
  return b;
}

std::vector<cfloat> fromBuffer(Backend& be, const Buffer& b, index_t n) {
  std::vector<cfloat> v(static_cast<std::size_t>(n));
  be.download(v.data(), b, v.size() * sizeof(cfloat));
  return v;
}

cdouble opElement(const std::vector<cfloat>& x, const MatrixBatch& mb, index_t e, MatOp op, index_t i, index_t j) {
  // Element (i, j) of op(X_e).
  const bool t = op != MatOp::None;
  const index_t r = t ? j : i, c = t ? i : j;
  const cdouble v = x[static_cast<std::size_t>(e * mb.stride + r + c * mb.ld)];
  return op == MatOp::ConjTranspose ? std::conj(v) : v;
}

struct GemmCase {
  MatOp opA, opB;
  index_t m, n, k, batch;
  bool interleaved;  // GRAPPA's layout: entries side by side inside the leading dimension
  cfloat alpha, beta;
};

/// Runs one case on the backend and compares with a double loop: max |error| / max |reference|.
double runGemm(Backend& be, const GemmCase& g, unsigned seed) {
  const bool ta = g.opA != MatOp::None, tb = g.opB != MatOp::None;
  auto layout = [&](index_t rows, index_t cols) {
    MatrixBatch mb{rows, cols, 0, 0};
    if (g.interleaved) {
      mb.ld = rows * g.batch + 3;
      mb.stride = rows;
    } else {
      mb.ld = rows + 2;
      mb.stride = mb.ld * cols + 5;
    }
    return mb;
  };
  const MatrixBatch a = layout(ta ? g.k : g.m, ta ? g.m : g.k), b = layout(tb ? g.n : g.k, tb ? g.k : g.n),
                    c = layout(g.m, g.n);
  auto size = [&](const MatrixBatch& mb) { return (g.batch - 1) * mb.stride + (mb.cols - 1) * mb.ld + mb.rows + 4; };
  const auto va = randomVector(size(a), seed), vb = randomVector(size(b), seed + 1), vc = randomVector(size(c), seed + 2);
  auto A = toBuffer(be, va), B = toBuffer(be, vb), C = toBuffer(be, vc);
  be.gemmBatched(g.opA, g.opB, g.m, g.n, g.k, g.alpha, *A, a, *B, b, g.beta, *C, c, g.batch);
  const auto out = fromBuffer(be, *C, size(c));
  double err = 0, ref = 0;
  std::vector<bool> written(out.size(), false);
  for (index_t e = 0; e < g.batch; ++e)
    for (index_t j = 0; j < g.n; ++j)
      for (index_t i = 0; i < g.m; ++i) {
        cdouble s = 0;
        for (index_t l = 0; l < g.k; ++l) s += opElement(va, a, e, g.opA, i, l) * opElement(vb, b, e, g.opB, l, j);
        const std::size_t at = static_cast<std::size_t>(e * c.stride + i + j * c.ld);
        const cdouble expect = cdouble(g.alpha) * s + cdouble(g.beta) * cdouble(vc[at]);
        err = std::max(err, std::abs(expect - cdouble(out[at])));
        ref = std::max(ref, std::abs(expect));
        written[at] = true;
      }
  // Elements outside every entry are untouched.
  for (std::size_t i = 0; i < out.size(); ++i)
    if (!written[i]) EXPECT_EQ(out[i], vc[i]) << "element " << i << " outside the matrices was changed";
  return err / ref;
}

class CpuLinalg : public ::testing::Test {
 protected:
  std::shared_ptr<Backend> be = makeCpuBackend();
};

}  // namespace

TEST_F(CpuLinalg, GemmBatchedMatchesDoubleLoopsForEveryOp) {
  const MatOp ops[] = {MatOp::None, MatOp::Transpose, MatOp::ConjTranspose};
  unsigned seed = 1;
  for (MatOp oa : ops)
    for (MatOp ob : ops)
      for (bool inter : {false, true}) {
        // Float accumulation (k small) and the double path (k > max(m, n)).
        for (index_t k : {5, 40}) {
          const GemmCase g{oa, ob, 7, 6, k, 3, inter, cfloat(0.7f, -0.2f), cfloat(0.3f, 0.4f)};
          const double e = runGemm(*be, g, seed += 3);
          EXPECT_LT(e, 2e-6) << "ops " << int(oa) << int(ob) << " interleaved " << inter << " k " << k;
        }
      }
}

TEST_F(CpuLinalg, GemmBatchedHermitianAndBetaZeroIgnoreGarbageInC) {
  // A^H A with the same operand: the Hermitian path; C holds NaN that beta = 0 must not read.
  const index_t rows = 50, cols = 9, batch = 4;
  const MatrixBatch a{rows, cols, rows * batch, rows};  // interleaved like GRAPPA's equation matrices
  const auto va = randomVector(rows * batch * cols, 11);
  auto A = toBuffer(*be, va);
  std::vector<cfloat> nan(static_cast<std::size_t>(cols * cols * batch), cfloat(std::nanf(""), 0.f));
  auto C = toBuffer(*be, nan);
  const MatrixBatch c{cols, cols, cols, cols * cols};
  be->gemmBatched(MatOp::ConjTranspose, MatOp::None, cols, cols, rows, cfloat(2), *A, a, *A, a, cfloat(0), *C, c, batch);
  const auto out = fromBuffer(*be, *C, cols * cols * batch);
  double err = 0;
  for (index_t e = 0; e < batch; ++e)
    for (index_t j = 0; j < cols; ++j)
      for (index_t i = 0; i < cols; ++i) {
        cdouble s = 0;
        for (index_t l = 0; l < rows; ++l)
          s += std::conj(cdouble(va[static_cast<std::size_t>(e * rows + l + i * rows * batch)])) *
               cdouble(va[static_cast<std::size_t>(e * rows + l + j * rows * batch)]);
        err = std::max(err, std::abs(2.0 * s - cdouble(out[static_cast<std::size_t>(e * cols * cols + i + j * cols)])) /
                                std::abs(2.0 * s));
      }
  EXPECT_LT(err, 1e-6);
}

TEST_F(CpuLinalg, GemmBatchedRejectsBadArguments) {
  auto A = be->allocate(100 * sizeof(cfloat)), C = be->allocate(100 * sizeof(cfloat));
  const MatrixBatch ok{4, 4, 4, 16};
  // Past the end of the buffer.
  EXPECT_THROW(be->gemmBatched(MatOp::None, MatOp::None, 4, 4, 4, 1, *A, ok, *A, ok, 0, *C, ok, 10), Error);
  // Leading dimension below the rows.
  EXPECT_THROW(be->gemmBatched(MatOp::None, MatOp::None, 4, 4, 4, 1, *A, MatrixBatch{4, 4, 3, 16}, *A, ok, 0, *C, ok, 1),
               Error);
  // Stored shape that does not match the op.
  EXPECT_THROW(be->gemmBatched(MatOp::None, MatOp::None, 4, 4, 4, 1, *A, MatrixBatch{4, 3, 4, 16}, *A, ok, 0, *C, ok, 1),
               Error);
  // Overlapping output entries, and C aliasing A.
  EXPECT_THROW(be->gemmBatched(MatOp::None, MatOp::None, 4, 4, 4, 1, *A, ok, *A, ok, 0, *C, MatrixBatch{4, 4, 4, 2}, 3),
               Error);
  EXPECT_THROW(be->gemmBatched(MatOp::None, MatOp::None, 4, 4, 4, 1, *A, ok, *A, ok, 0, *A, ok, 1), Error);
  try {
    be->gemmBatched(MatOp::None, MatOp::None, 4, 4, 4, 1, *A, ok, *A, ok, 0, *C, ok, 10);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gemmBatched"), std::string::npos) << e.what();
  }
}

TEST_F(CpuLinalg, CholeskySolveBatchedMatchesDoubleSolve) {
  const index_t n = 12, nrhs = 3, batch = 5;
  std::vector<cfloat> a(static_cast<std::size_t>(n * n * batch)), b = randomVector(n * nrhs * batch, 21);
  const auto r = randomVector(n * 2 * n * batch, 22);
  // A = X X^H + I (Hermitian positive definite), the upper triangle filled with garbage: only the lower
  // triangle may be read.
  for (index_t e = 0; e < batch; ++e)
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < n; ++i) {
        cdouble s = i == j ? 1.0 : 0.0;
        for (index_t l = 0; l < 2 * n; ++l)
          s += cdouble(r[static_cast<std::size_t>(e * 2 * n * n + i + l * n)]) *
               std::conj(cdouble(r[static_cast<std::size_t>(e * 2 * n * n + j + l * n)]));
        a[static_cast<std::size_t>(e * n * n + i + j * n)] = i >= j ? cfloat(s) : cfloat(99.f, -7.f);
      }
  auto A = toBuffer(*be, a), B = toBuffer(*be, b);
  be->grappaOps().choleskySolveBatched(*A, MatrixBatch{n, n, n, n * n}, *B, MatrixBatch{n, nrhs, n, n * nrhs}, batch);
  const auto x = fromBuffer(*be, *B, n * nrhs * batch);
  const auto l = fromBuffer(*be, *A, n * n * batch);
  for (index_t e = 0; e < batch; ++e) {
    // Residual of A x = b with the Hermitian A rebuilt from its lower triangle.
    auto aij = [&](index_t i, index_t j) {
      const cdouble v = a[static_cast<std::size_t>(e * n * n + std::max(i, j) + std::min(i, j) * n)];
      return i >= j ? v : std::conj(v);
    };
    double res = 0, nb = 0;
    for (index_t c = 0; c < nrhs; ++c)
      for (index_t i = 0; i < n; ++i) {
        cdouble s = 0;
        for (index_t j = 0; j < n; ++j) s += aij(i, j) * cdouble(x[static_cast<std::size_t>(e * n * nrhs + j + c * n)]);
        res = std::max(res, std::abs(s - cdouble(b[static_cast<std::size_t>(e * n * nrhs + i + c * n)])));
        nb = std::max(nb, std::abs(cdouble(b[static_cast<std::size_t>(e * n * nrhs + i + c * n)])));
      }
    EXPECT_LT(res / nb, 1e-5) << "entry " << e;
    // The factor overwrote the lower triangle (L L^H = A), the upper one is untouched.
    double fe = 0;
    for (index_t j = 0; j < n; ++j)
      for (index_t i = j; i < n; ++i) {
        cdouble s = 0;
        for (index_t p = 0; p <= j; ++p)
          s += cdouble(l[static_cast<std::size_t>(e * n * n + i + p * n)]) *
               std::conj(cdouble(l[static_cast<std::size_t>(e * n * n + j + p * n)]));
        fe = std::max(fe, std::abs(s - aij(i, j)));
      }
    EXPECT_LT(fe, 1e-4) << "entry " << e;
    EXPECT_EQ(l[static_cast<std::size_t>(e * n * n + 0 + 1 * n)], cfloat(99.f, -7.f));
  }
}

TEST_F(CpuLinalg, CholeskySolveBatchedNamesTheEntryThatIsNotPositiveDefinite) {
  const index_t n = 3, batch = 4;
  std::vector<cfloat> a(static_cast<std::size_t>(n * n * batch), cfloat(0));
  for (index_t e = 0; e < batch; ++e)
    for (index_t i = 0; i < n; ++i) a[static_cast<std::size_t>(e * n * n + i * (n + 1))] = e == 2 ? -1.f : 2.f;
  auto A = toBuffer(*be, a), B = toBuffer(*be, std::vector<cfloat>(static_cast<std::size_t>(n * batch), cfloat(1)));
  try {
    be->grappaOps().choleskySolveBatched(*A, MatrixBatch{n, n, n, n * n}, *B, MatrixBatch{n, 1, n, n}, batch);
    FAIL() << "no error for an indefinite matrix";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("matrix 2 "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not positive definite"), std::string::npos) << e.what();
  }
}

TEST_F(CpuLinalg, GatherAndScatterFollowTheIndexTable) {
  const auto src = randomVector(10, 31);
  const std::vector<std::int64_t> idx = {3, -1, 0, 9, 3, -5};
  auto S = toBuffer(*be, src);
  auto I = be->allocate(idx.size() * sizeof(std::int64_t));
  be->upload(*I, idx.data(), idx.size() * sizeof(std::int64_t));
  auto O = be->allocate(idx.size() * sizeof(cfloat));
  be->gather(*O, *S, *I, static_cast<index_t>(idx.size()));
  const auto g = fromBuffer(*be, *O, static_cast<index_t>(idx.size()));
  for (std::size_t i = 0; i < idx.size(); ++i)
    EXPECT_EQ(g[i], idx[i] >= 0 ? src[static_cast<std::size_t>(idx[i])] : cfloat(0)) << i;

  // Scatter with distinct indices; negative ones skipped; the rest of the output untouched.
  const std::vector<std::int64_t> sidx = {4, -1, 0, 7};
  const auto vals = randomVector(4, 32);
  auto V = toBuffer(*be, vals);
  auto SI = be->allocate(sidx.size() * sizeof(std::int64_t));
  be->upload(*SI, sidx.data(), sidx.size() * sizeof(std::int64_t));
  std::vector<cfloat> base(8, cfloat(5, 5));
  auto OUT = toBuffer(*be, base);
  be->scatter(*OUT, *V, *SI, 4);
  const auto s = fromBuffer(*be, *OUT, 8);
  EXPECT_EQ(s[4], vals[0]);
  EXPECT_EQ(s[0], vals[2]);
  EXPECT_EQ(s[7], vals[3]);
  EXPECT_EQ(s[1], cfloat(5, 5));

  // Errors: an index past the end, too few indices, an output too small.
  const std::vector<std::int64_t> bad = {0, 10};
  auto BI = be->allocate(bad.size() * sizeof(std::int64_t));
  be->upload(*BI, bad.data(), bad.size() * sizeof(std::int64_t));
  EXPECT_THROW(be->gather(*O, *S, *BI, 2), Error);
  EXPECT_THROW(be->scatter(*S, *V, *BI, 2), Error);  // index 10 past a 10-element output
  EXPECT_THROW(be->gather(*O, *S, *I, 7), Error);    // 6 indices only
  EXPECT_THROW(be->gather(*V, *S, *I, 6), Error);    // output of 4

  // Batched (the CPU checks every index of every batch entry): {0, 10} + 5 b leaves a source of 10.
  const std::vector<std::int64_t> two = {0, 4};
  auto TI = be->allocate(two.size() * sizeof(std::int64_t));
  be->upload(*TI, two.data(), two.size() * sizeof(std::int64_t));
  auto O4 = be->allocate(4 * sizeof(cfloat));
  be->gather(*O4, *S, *TI, 2, 2, 5);                    // 0, 4, 5, 9: inside
  EXPECT_THROW(be->gather(*O4, *S, *TI, 2, 2, 6), Error);  // 4 + 6 = 10: past the end
  EXPECT_THROW(be->scatter(*S, *O4, *TI, 2, 2, 4), Error);  // index 4 reaches the next grid 4 apart
}
