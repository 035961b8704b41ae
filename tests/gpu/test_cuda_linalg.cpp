// CudaBackend's batched linear algebra and index moves against CpuBackend on the same inputs: gemmBatched
// for every op pair (float and double-accumulating paths, strided and interleaved batches, the Hermitian
// case), the batched Cholesky solve (the shared-memory kernels, cuSOLVER's batched and one-at-a-time
// factorisations, one and several right-hand sides, the error naming the entry that is not positive
// definite), gather and scatter. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "larmor/backend/registry.hpp"
#include "support/device.hpp"
#include "support/error_norms.hpp"
#include "support/random_data.hpp"

using namespace larmor;

namespace {

// Tolerances, relative L2 against the CPU backend.
constexpr double kGemmFloatTol = 2e-6;   // float products, different summation orders; typical 3e-7
constexpr double kGemmDoubleTol = 1e-6;  // both accumulate in double, round once to float: ~6e-8
constexpr double kSolveTol = 1e-5;       // both factor and solve in double from the same float input

std::unique_ptr<Buffer> put(Backend& be, const std::vector<cfloat>& v) {
  auto b = be.allocate(std::max<std::size_t>(v.size(), 1) * sizeof(cfloat));
  be.upload(*b, v.data(), v.size() * sizeof(cfloat));
  return b;
}

std::unique_ptr<Buffer> putIndex(Backend& be, const std::vector<std::int64_t>& v) {
  auto b = be.allocate(std::max<std::size_t>(v.size(), 1) * sizeof(std::int64_t));
  be.upload(*b, v.data(), v.size() * sizeof(std::int64_t));
  return b;
}

std::vector<cfloat> get(Backend& be, const Buffer& b, index_t n) {
  std::vector<cfloat> v(static_cast<std::size_t>(n));
  be.download(v.data(), b, v.size() * sizeof(cfloat));
  return v;
}

class CudaLinalg : public larmor::test::GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    gpu = gpu_;
    cpu = cpu_;
  }
  std::shared_ptr<Backend> gpu, cpu;

  /// The same gemm on both backends; the relative error of the whole C (untouched elements included).
  double gemmBoth(MatOp oa, MatOp ob, index_t m, index_t n, index_t k, index_t batch, bool interleaved,
                  unsigned seed, bool sameOperand = false) {
    auto layout = [&](index_t rows, index_t cols) {
      return interleaved ? MatrixBatch{rows, cols, rows * batch + 1, rows}
                         : MatrixBatch{rows, cols, rows + 3, (rows + 3) * cols + 2};
    };
    const bool ta = oa != MatOp::None, tb = ob != MatOp::None;
    const MatrixBatch a = layout(ta ? k : m, ta ? m : k), b = sameOperand ? a : layout(tb ? n : k, tb ? k : n),
                      c = layout(m, n);
    auto size = [&](const MatrixBatch& x) { return (batch - 1) * x.stride + (x.cols - 1) * x.ld + x.rows; };
    const auto va = larmor::test::randomComplex(size(a), seed), vb = larmor::test::randomComplex(size(b), seed + 1), vc = larmor::test::randomComplex(size(c), seed + 2);
    const cfloat alpha = sameOperand ? cfloat(1.5f) : cfloat(0.8f, 0.3f), beta = sameOperand ? cfloat(0) : cfloat(-0.4f, 0.2f);
    std::vector<cfloat> out[2];
    Backend* bes[2] = {cpu.get(), gpu.get()};
    for (int i = 0; i < 2; ++i) {
      auto A = put(*bes[i], va), B = put(*bes[i], vb), C = put(*bes[i], vc);
      bes[i]->gemmBatched(oa, ob, m, n, k, alpha, *A, a, sameOperand ? *A : *B, b, beta, *C, c, batch);
      out[i] = get(*bes[i], *C, size(c));
    }
    return larmor::test::relL2Error(out[1], out[0]);
  }
};

}  // namespace

TEST_F(CudaLinalg, GemmBatchedMatchesCpuForEveryOp) {
  const MatOp ops[] = {MatOp::None, MatOp::Transpose, MatOp::ConjTranspose};
  unsigned seed = 100;
  for (MatOp oa : ops)
    for (MatOp ob : ops)
      for (bool inter : {false, true}) {
        EXPECT_LT(gemmBoth(oa, ob, 33, 17, 9, 5, inter, seed += 3), kGemmFloatTol)
            << "float path, ops " << int(oa) << int(ob) << " interleaved " << inter;
        EXPECT_LT(gemmBoth(oa, ob, 12, 10, 300, 3, inter, seed += 3), kGemmDoubleTol)
            << "double path, ops " << int(oa) << int(ob) << " interleaved " << inter;
      }
  // GRAPPA's shapes: (A A^H)^T from one interleaved operand (Hermitian on the CPU, full on the GPU) and the
  // filling product.
  EXPECT_LT(gemmBoth(MatOp::ConjTranspose, MatOp::None, 128, 128, 1536, 8, true, 7, true), kGemmDoubleTol);
  EXPECT_LT(gemmBoth(MatOp::None, MatOp::None, 8320, 96, 128, 4, true, 9), kGemmFloatTol);
}

TEST_F(CudaLinalg, GemmBatchedRejectsWhatTheCpuRejects) {
  auto A = gpu->allocate(100 * sizeof(cfloat)), C = gpu->allocate(100 * sizeof(cfloat));
  const MatrixBatch ok{4, 4, 4, 16};
  EXPECT_THROW(gpu->gemmBatched(MatOp::None, MatOp::None, 4, 4, 4, 1, *A, ok, *A, ok, 0, *C, ok, 10), Error);
  EXPECT_THROW(gpu->gemmBatched(MatOp::None, MatOp::None, 4, 4, 4, 1, *A, MatrixBatch{4, 4, 3, 16}, *A, ok, 0, *C, ok, 1),
               Error);
  EXPECT_THROW(gpu->gemmBatched(MatOp::None, MatOp::None, 4, 4, 4, 1, *A, ok, *A, ok, 0, *A, ok, 1), Error);
  auto host = cpu->allocate(100 * sizeof(cfloat));
  EXPECT_THROW(gpu->gemmBatched(MatOp::None, MatOp::None, 4, 4, 4, 1, *host, ok, *A, ok, 0, *C, ok, 1), Error);
}

TEST_F(CudaLinalg, CholeskySolveBatchedMatchesCpu) {
  // 1 x 1 systems go to their own kernel (n = 1 with 40), up to 16 systems of n <= 128 to the shared-memory
  // kernels (n = 40, 77, 128: whole and partial panels of 8 columns, one to four rows per lane), more to
  // cuSOLVER's batched factorisation (n = 40 with 20), n = 300 to its one-at-a-time one; there nrhs = 1 uses
  // potrs, more the two triangular solves.
  const std::pair<index_t, index_t> sizes[] = {{1, 40}, {40, 6}, {40, 20}, {77, 3}, {128, 6}, {300, 2}};
  for (const auto& [n, batch] : sizes)
    for (index_t nrhs : {1, 7, 96}) {
      const auto r = larmor::test::randomComplex(n * 2 * n * batch, static_cast<unsigned>(n + nrhs));
      std::vector<cfloat> a(static_cast<std::size_t>(n * n * batch));
      for (index_t e = 0; e < batch; ++e)
        for (index_t j = 0; j < n; ++j)
          for (index_t i = 0; i < n; ++i) {
            cdouble s = i == j ? 0.5 * static_cast<double>(n) : 0.0;
            for (index_t l = 0; l < 2 * n; ++l)
              s += cdouble(r[static_cast<std::size_t>(e * 2 * n * n + i + l * n)]) *
                   std::conj(cdouble(r[static_cast<std::size_t>(e * 2 * n * n + j + l * n)]));
            a[static_cast<std::size_t>(e * n * n + i + j * n)] = cfloat(s);
          }
      const auto b = larmor::test::randomComplex(n * nrhs * batch, 5);
      std::vector<cfloat> xs[2], ls[2];
      Backend* bes[2] = {cpu.get(), gpu.get()};
      for (int i = 0; i < 2; ++i) {
        auto A = put(*bes[i], a), B = put(*bes[i], b);
        bes[i]->grappaOps().choleskySolveBatched(*A, MatrixBatch{n, n, n, n * n}, *B, MatrixBatch{n, nrhs, n, n * nrhs},
                                                 batch);
        xs[i] = get(*bes[i], *B, n * nrhs * batch);
        ls[i] = get(*bes[i], *A, n * n * batch);
      }
      EXPECT_LT(larmor::test::relL2Error(xs[1], xs[0]), kSolveTol) << "n " << n << " nrhs " << nrhs;
      // The lower triangles hold the same factor.
      std::vector<cfloat> lc, lg;
      for (index_t e = 0; e < batch; ++e)
        for (index_t j = 0; j < n; ++j)
          for (index_t i = j; i < n; ++i) {
            lc.push_back(ls[0][static_cast<std::size_t>(e * n * n + i + j * n)]);
            lg.push_back(ls[1][static_cast<std::size_t>(e * n * n + i + j * n)]);
          }
      EXPECT_LT(larmor::test::relL2Error(lg, lc), kSolveTol) << "factor, n " << n;
    }
}

TEST_F(CudaLinalg, CholeskySolveBatchedNamesTheEntryThatIsNotPositiveDefinite) {
  // Entry 3's diagonal turns negative at row min(13, n - 1): in the 1 x 1 kernel (n 1), in the first panel of
  // the shared-memory kernel (n 3), in a later one (n 50), in cuSOLVER's factorisation (n 300).
  for (index_t n : {1, 3, 50, 300}) {
    const index_t batch = 4, badRow = std::min<index_t>(13, n - 1);
    std::vector<cfloat> a(static_cast<std::size_t>(n * n * batch), cfloat(0));
    for (index_t e = 0; e < batch; ++e)
      for (index_t i = 0; i < n; ++i)
        a[static_cast<std::size_t>(e * n * n + i * (n + 1))] = e == 3 && i == badRow ? -1.f : 2.f;
    auto A = put(*gpu, a), B = put(*gpu, std::vector<cfloat>(static_cast<std::size_t>(n * batch), cfloat(1)));
    try {
      gpu->grappaOps().choleskySolveBatched(*A, MatrixBatch{n, n, n, n * n}, *B, MatrixBatch{n, 1, n, n}, batch);
      ADD_FAILURE() << "no error for an indefinite matrix, n " << n;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("matrix 3 "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("(leading minor " + std::to_string(badRow + 1) + ")"), std::string::npos)
          << e.what();
    }
  }
}

TEST_F(CudaLinalg, QueuedCholeskySolveReportsAtItsCheck) {
  // Two solves queued back to back with more work behind them (GRAPPA's calibrations and fill): the good
  // one's check returns and its solution is the immediate solve's, the bad one's names its entry; nothing is
  // read before the checks.
  const index_t n = 50, batch = 4;
  std::vector<cfloat> good(static_cast<std::size_t>(n * n * batch), cfloat(0)), bad = good;
  for (index_t e = 0; e < batch; ++e)
    for (index_t i = 0; i < n; ++i) {
      good[static_cast<std::size_t>(e * n * n + i * (n + 1))] = cfloat(2.f + static_cast<float>(i % 5));
      bad[static_cast<std::size_t>(e * n * n + i * (n + 1))] = e == 2 && i == 30 ? -1.f : 2.f;
    }
  const auto rhs = larmor::test::randomComplex(n * batch, 9);
  const MatrixBatch a{n, n, n, n * n}, b{n, 1, n, n};
  auto A = put(*gpu, good), B = put(*gpu, rhs), A2 = put(*gpu, bad), B2 = put(*gpu, rhs);
  GrappaOps::SolveCheck first = gpu->grappaOps().choleskySolveBatchedQueued(*A, a, *B, b, batch);
  GrappaOps::SolveCheck second = gpu->grappaOps().choleskySolveBatchedQueued(*A2, a, *B2, b, batch);
  auto C = gpu->allocate(static_cast<std::size_t>(n * n) * sizeof(cfloat));
  gpu->gemmBatched(MatOp::None, MatOp::None, n, n, n, 1, *A, a, *A, a, 0, *C, a, 1);
  EXPECT_NO_THROW(first());
  try {
    second();
    ADD_FAILURE() << "no error for an indefinite matrix";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("matrix 2 "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(leading minor 31)"), std::string::npos) << e.what();
  }
  auto Ai = put(*gpu, good), Bi = put(*gpu, rhs);
  gpu->grappaOps().choleskySolveBatched(*Ai, a, *Bi, b, batch);
  EXPECT_EQ(get(*gpu, *B, n * batch), get(*gpu, *Bi, n * batch));
  // A check dropped unread gives its block back; the next solves still report correctly.
  for (int i = 0; i < 3; ++i) (void)gpu->grappaOps().choleskySolveBatchedQueued(*A2, a, *B2, b, batch);
  auto A3 = put(*gpu, bad), B3 = put(*gpu, rhs);
  EXPECT_THROW(gpu->grappaOps().choleskySolveBatched(*A3, a, *B3, b, batch), Error);
}

TEST_F(CudaLinalg, GatherAndScatterMatchCpu) {
  const index_t n = 100000, src = 5000;
  std::mt19937 rng(3);
  std::uniform_int_distribution<std::int64_t> pick(-1000, src - 1);
  std::vector<std::int64_t> idx(static_cast<std::size_t>(n));
  for (auto& i : idx) i = pick(rng);
  const auto vs = larmor::test::randomComplex(src, 4);
  std::vector<cfloat> g[2];
  Backend* bes[2] = {cpu.get(), gpu.get()};
  for (int i = 0; i < 2; ++i) {
    auto S = put(*bes[i], vs), I = putIndex(*bes[i], idx), O = bes[i]->allocate(n * sizeof(cfloat));
    bes[i]->gather(*O, *S, *I, n);
    g[i] = get(*bes[i], *O, n);
  }
  EXPECT_EQ(g[0], g[1]);

  // Scatter: a permutation of half the output, the other half marked -1.
  std::vector<std::int64_t> perm(static_cast<std::size_t>(src));
  for (index_t i = 0; i < src; ++i) perm[static_cast<std::size_t>(i)] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  for (index_t i = 0; i < src; i += 2) perm[static_cast<std::size_t>(i)] = -1;
  const auto base = larmor::test::randomComplex(src, 6), vals = larmor::test::randomComplex(src, 7);
  std::vector<cfloat> s[2];
  for (int i = 0; i < 2; ++i) {
    auto O = put(*bes[i], base), V = put(*bes[i], vals), I = putIndex(*bes[i], perm);
    bes[i]->scatter(*O, *V, *I, src);
    s[i] = get(*bes[i], *O, src);
  }
  EXPECT_EQ(s[0], s[1]);

  auto S = put(*gpu, vs), O = gpu->allocate(10 * sizeof(cfloat));
  auto I = putIndex(*gpu, std::vector<std::int64_t>(5, 0));
  EXPECT_THROW(gpu->gather(*O, *S, *I, 6), Error);   // 5 indices only
  EXPECT_THROW(gpu->gather(*O, *S, *I, -1), Error);
  EXPECT_THROW(gpu->gather(*S, *S, *I, 5), Error);   // into itself
}
