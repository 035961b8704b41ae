// Cancel within 0.5 s inside one large product of the CPU backend (cpu/blocked_products.hpp): 3D GRAPPA's
// calibration products A A^H (Hermitian, double) and B A^H (double) over ~10^5 equations, its fill F W^T (float,
// 10^5-10^6 rows) and ESPIRiT's 3D Gram A^H A (1728^2 from 6859 rows) are each one gemmBatched entry of seconds.
// The blocks keep the bits: every shape below equals the one Eigen call the backend made before (reference()).
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <chrono>
#include <cstdio>

#include "larmor/backend/registry.hpp"
#include "larmor/util/cancel_scope.hpp"
#include "support/cancel_latency.hpp"
#include "support/random_data.hpp"

using namespace larmor;
using namespace larmor::test;

namespace {

using MatF = Eigen::Matrix<cfloat, Eigen::Dynamic, Eigen::Dynamic>;
using MatD = Eigen::Matrix<cdouble, Eigen::Dynamic, Eigen::Dynamic>;
using Stride = Eigen::OuterStride<Eigen::Dynamic>;
using ConstMapF = Eigen::Map<const MatF, Eigen::Unaligned, Stride>;

std::shared_ptr<Backend> cpu() { return BackendRegistry::instance().select("cpu").backend; }

struct Case {
  MatOp opA, opB;
  index_t m, n, k;
  bool sameOperand;  ///< B is A (op(A) = A^H, op(B) = A: the Hermitian X^H X)
  cfloat beta = cfloat(0);
};

index_t rowsOf(MatOp op, index_t r, index_t c) { return op == MatOp::None ? r : c; }

/// The product as the backend made it in one Eigen call: double (cast first) when k > max(m, n), the Hermitian
/// X^H X by rankUpdate and a mirror.
MatF reference(const Case& t, const ConstMapF& a, const ConstMapF& b, const MatF& c0) {
  const auto product = [&](const auto& x, const auto& y, auto& c, auto alpha) {
    if (t.sameOperand) {
      c.template selfadjointView<Eigen::Lower>().rankUpdate(x.adjoint(), std::real(alpha));
      for (Eigen::Index j = 1; j < c.cols(); ++j)
        for (Eigen::Index i = 0; i < j; ++i) c(i, j) = std::conj(c(j, i));
      return;
    }
    const auto right = [&](const auto& lhs) {
      if (t.opB == MatOp::None) c.noalias() += alpha * (lhs * y);
      if (t.opB == MatOp::Transpose) c.noalias() += alpha * (lhs * y.transpose());
      if (t.opB == MatOp::ConjTranspose) c.noalias() += alpha * (lhs * y.adjoint());
    };
    if (t.opA == MatOp::None) right(x);
    if (t.opA == MatOp::Transpose) right(x.transpose());
    if (t.opA == MatOp::ConjTranspose) right(x.adjoint());
  };
  if (t.k > std::max(t.m, t.n)) {
    const MatD da = a.cast<cdouble>(), db = b.cast<cdouble>();
    MatD dc = t.beta == cfloat(0) ? MatD(MatD::Zero(t.m, t.n)) : MatD(cdouble(t.beta) * c0.cast<cdouble>());
    product(da, db, dc, cdouble(1));
    return dc.cast<cfloat>();
  }
  MatF c = t.beta == cfloat(0) ? MatF(MatF::Zero(t.m, t.n)) : MatF(t.beta * c0);
  product(a, b, c, cfloat(1));
  return c;
}

/// The backend's product of random operands (leading dimensions padded like GRAPPA's), compared bit for bit.
void expectSameBits(const Case& t, unsigned seed) {
  auto be = cpu();
  const index_t ar = rowsOf(t.opA, t.m, t.k), ac = rowsOf(t.opA, t.k, t.m);
  const index_t br = rowsOf(t.opB, t.k, t.n), bc = rowsOf(t.opB, t.n, t.k);
  const index_t lda = ar + 3, ldb = t.sameOperand ? lda : br + 5;
  const auto va = randomComplex(lda * ac, seed), vb = randomComplex(ldb * bc, seed + 1), vc = randomComplex(t.m * t.n, seed + 2);
  auto A = be->allocate(va.size() * sizeof(cfloat)), B = be->allocate(vb.size() * sizeof(cfloat));
  auto C = be->allocate(vc.size() * sizeof(cfloat));
  be->upload(*A, va.data(), va.size() * sizeof(cfloat));
  be->upload(*B, vb.data(), vb.size() * sizeof(cfloat));
  be->upload(*C, vc.data(), vc.size() * sizeof(cfloat));
  const MatrixBatch ma{ar, ac, lda, 0}, mb{br, bc, ldb, 0}, mc{t.m, t.n, t.m, 0};
  const Buffer& right = t.sameOperand ? *A : *B;
  be->gemmBatched(t.opA, t.opB, t.m, t.n, t.k, cfloat(1), *A, ma, right, t.sameOperand ? ma : mb, t.beta, *C, mc, 1);
  MatF got(t.m, t.n);
  be->download(got.data(), *C, vc.size() * sizeof(cfloat));
  const ConstMapF a(va.data(), ar, ac, Stride(lda));
  const ConstMapF b(t.sameOperand ? va.data() : vb.data(), t.sameOperand ? ar : br, t.sameOperand ? ac : bc,
                    Stride(ldb));
  const MatF want = reference(t, a, b, Eigen::Map<const MatF>(vc.data(), t.m, t.n));
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), vc.size() * sizeof(cfloat)))
      << t.m << "x" << t.n << "x" << t.k << ": " << (got - want).cwiseAbs().maxCoeff() << " from one Eigen call";
}

/// One gemmBatched entry of random operands, cancelled 0.1 s after its start; also prints how long it runs whole.
void expectProductStops(const Case& t, const char* what, bool timeWhole) {
  auto be = cpu();
  const index_t ar = rowsOf(t.opA, t.m, t.k), ac = rowsOf(t.opA, t.k, t.m);
  const index_t br = rowsOf(t.opB, t.k, t.n), bc = rowsOf(t.opB, t.n, t.k);
  const auto va = randomComplex(ar * ac, 41);
  auto A = be->allocate(va.size() * sizeof(cfloat)), C = be->allocate(static_cast<std::size_t>(t.m * t.n) * sizeof(cfloat));
  be->upload(*A, va.data(), va.size() * sizeof(cfloat));
  std::unique_ptr<Buffer> B;
  if (!t.sameOperand) {
    const auto vb = randomComplex(br * bc, 42);
    B = be->allocate(vb.size() * sizeof(cfloat));
    be->upload(*B, vb.data(), vb.size() * sizeof(cfloat));
  }
  const MatrixBatch ma{ar, ac, ar, 0}, mb{br, bc, br, 0}, mc{t.m, t.n, t.m, 0};
  const auto run = [&] {
    be->gemmBatched(t.opA, t.opB, t.m, t.n, t.k, cfloat(1), *A, ma, t.sameOperand ? *A : *B, t.sameOperand ? ma : mb,
                    cfloat(0), *C, mc, 1);
  };
  if (timeWhole) {
    const auto start = std::chrono::steady_clock::now();
    run();
    std::printf("%s uncancelled: %.3f s\n", what,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  expectPrompt(cancelAfter([&](const Progress& progress) {
                 const CancelScope cancel(progress);
                 run();
               }),
               what);
}

}  // namespace

TEST(CancelProducts, BlocksGiveTheBitsOfOneCall) {
  // Hermitian X^H X in double (GRAPPA's A A^H; ESPIRiT's Gram: several row panels), in float (k <= m).
  expectSameBits({MatOp::ConjTranspose, MatOp::None, 320, 320, 12001, true}, 1);
  expectSameBits({MatOp::ConjTranspose, MatOp::None, 901, 901, 2003, true}, 2);
  expectSameBits({MatOp::ConjTranspose, MatOp::None, 400, 400, 300, true}, 3);
  // Double products sliced along the depth (GRAPPA's B A^H), beta kept.
  expectSameBits({MatOp::ConjTranspose, MatOp::None, 320, 24, 30001, false}, 4);
  expectSameBits({MatOp::None, MatOp::Transpose, 40, 30, 5003, false, cfloat(0.5f, 0.25f)}, 5);
  // Float products by blocks of rows (GRAPPA's fill), odd row counts, every op.
  expectSameBits({MatOp::None, MatOp::None, 20001, 24, 320, false}, 6);
  expectSameBits({MatOp::None, MatOp::ConjTranspose, 150001, 13, 37, false, cfloat(1.5f, 0.f)}, 7);
  expectSameBits({MatOp::Transpose, MatOp::None, 60001, 9, 150, false}, 8);
  expectSameBits({MatOp::ConjTranspose, MatOp::Transpose, 9000, 40, 300, false}, 9);
}

TEST(CancelProducts, GrappaCalibrationProductsStopWithinHalfASecond) {
  // 3D GRAPPA (128^3, 8 coils, 2x2, 24^2 ACS): 99792 equations, 320 sources, 24 targets.
  expectProductStops({MatOp::ConjTranspose, MatOp::None, 320, 320, 99792, true}, "GRAPPA A A^H (320^2 x 99792)", true);
  expectProductStops({MatOp::ConjTranspose, MatOp::None, 320, 24, 99792, false}, "GRAPPA B A^H (320 x 24 x 99792)", true);
}

TEST(CancelProducts, GrappaFillStopsWithinHalfASecond) {
  expectProductStops({MatOp::None, MatOp::None, 250000, 24, 320, false}, "GRAPPA fill F W^T (250000 x 24 x 320)", true);
}

TEST(CancelProducts, EspiritGramStopsWithinHalfASecond) {
  // ESPIRiT 3D: a 24^3 box, 6^3 kernel, 8 coils: A is 6859 x 1728 (seconds uncancelled).
  expectProductStops({MatOp::ConjTranspose, MatOp::None, 1728, 1728, 6859, true}, "ESPIRiT Gram (1728^2 x 6859)", false);
}
