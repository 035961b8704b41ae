// Large products in blocks with a cancellation poll between them, the same bits as one Eigen call
// (blocked_products.hpp says why each cut keeps them). Tied to Eigen 3.4's product internals: the depth block
// (computeProductBlockingSizes, parallelize_gemm's thread rule) and the rank-k update's loop are copied from it.
#include "blocked_products.hpp"

#include <omp.h>

#include <algorithm>
#include <vector>

#if !EIGEN_VERSION_AT_LEAST(3, 4, 0) || EIGEN_VERSION_AT_LEAST(3, 4, 1)
#error "blocked_products.cpp follows Eigen 3.4.0's product internals: check them against this Eigen version"
#endif

namespace larmor::cpu {

namespace {

namespace ei = Eigen::internal;
using Eigen::Index;

/// Multiply-adds between two polls: 20-60 ms on one core of the 2-core test machine.
constexpr double kBlockMoves = double(1 << 25);

/// Eigen's parallelize_gemm rule: how many threads a general product C (m x n) of depth k runs on.
template <class Scalar>
Index gemmThreads(Index m, Index n, Index k) {
  if (omp_get_num_threads() > 1) return 1;  // inside a parallel region Eigen runs it serially
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  Index most = std::max<Index>(1, n / ei::gebp_traits<Scalar, Scalar>::nr);
  most = std::max<Index>(1, std::min<Index>(most, static_cast<Index>(work / 50000)));
  return std::min<Index>(Eigen::nbThreads(), most);
}

/// The depth block kc of that product (GeneralMatrixMatrix.h: the serial blocking, or initParallel's).
template <class Scalar>
Index gemmDepthBlock(Index m, Index n, Index k) {
  Index kc = k, mc = m, nc = n;
  ei::computeProductBlockingSizes<Scalar, Scalar, 1>(kc, mc, nc, gemmThreads<Scalar>(m, n, k));
  return kc;
}

Index depthOf(MatOp op, const ConstMapF& a) { return op == MatOp::None ? a.cols() : a.rows(); }

/// Entries [first, first + count) of the depth of op(x), cast to double: x = A (op(A) m x k: A's columns when op is
/// None, else its rows) or x = B (op(B) k x n: B's rows when op is None, else its columns).
MatD depthSlice(MatOp op, const ConstMapF& x, Index first, Index count, bool isB) {
  const bool rows = isB ? op == MatOp::None : op != MatOp::None;
  return rows ? MatD(x.middleRows(first, count).cast<cdouble>()) : MatD(x.middleCols(first, count).cast<cdouble>());
}

/// The lower triangle of c += alpha a^H a, the steps of Eigen 3.4's selfadjoint_product_selector and
/// general_matrix_matrix_triangular_product (column-major result, Lower) with a poll per panel: per depth slice
/// (kc, a cast to Scalar) the packed a, then per row panel i2 (mc rows; over the threads) the part left of the
/// diagonal by gebp and the diagonal block by tribb, both in pieces of columns with a poll between.
template <class Scalar, class Res>
bool lowerRankUpdate(const ConstMapF& a, Scalar alpha, Res& c, ParallelCancel& cancel) {
  using Traits = ei::gebp_traits<Scalar, Scalar>;
  using Slice = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
  using LhsMapper = ei::const_blas_data_mapper<Scalar, Index, Eigen::RowMajor>;
  using RhsMapper = ei::const_blas_data_mapper<Scalar, Index, Eigen::ColMajor>;
  using ResMapper = ei::blas_data_mapper<Scalar, Index, Eigen::ColMajor, Eigen::Unaligned, 1>;
  using Packed = std::vector<Scalar, Eigen::aligned_allocator<Scalar>>;
  const Index size = c.cols(), depth = a.rows();
  ei::gemm_blocking_space<Eigen::ColMajor, Scalar, Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::Dynamic> blocking(
      size, size, depth, 1, false);
  const Index kc = blocking.kc();
  Index mc = std::min(size, blocking.mc());
  if (mc > Traits::nr) mc = (mc / Traits::nr) * Traits::nr;
  ei::gemm_pack_lhs<Scalar, Index, LhsMapper, Traits::mr, Traits::LhsProgress, typename Traits::LhsPacket4Packing,
                    Eigen::RowMajor>
      packLhs;
  ei::gemm_pack_rhs<Scalar, Index, RhsMapper, Traits::nr, Eigen::ColMajor> packRhs;
  ei::gebp_kernel<Scalar, Scalar, Index, ResMapper, Traits::mr, Traits::nr, true, false> gebp;
  ei::tribb_kernel<Scalar, Scalar, Index, Traits::mr, Traits::nr, true, false, 1, Eigen::Lower> sybb;
  Slice slice;
  // rankUpdate's alpha times the scalar factor of a^H (conj(1)), as Eigen forms it.
  const Scalar actual = Scalar(alpha) * ei::blas_traits<decltype(slice.adjoint())>::extractScalarFactor(slice.adjoint());
  const ResMapper res(c.data(), c.outerStride(), 1);
  const Index panels = (size + mc - 1) / mc;
  Packed blockB(static_cast<std::size_t>(kc * size));
  for (Index k2 = 0; k2 < depth; k2 += kc) {
    const Index akc = std::min(k2 + kc, depth) - k2;
    if (cancel.stop()) return false;
    slice = a.middleRows(k2, akc).template cast<Scalar>();
    const LhsMapper lhs(slice.data(), akc);
    packRhs(blockB.data(), RhsMapper(slice.data(), akc), akc, size);
    // Columns of a gebp piece: a multiple of nr (the packed panels), ~kBlockMoves multiply-adds.
    const Index piece = std::max<Index>(64, static_cast<Index>(kBlockMoves / static_cast<double>(mc * akc)) / 64 * 64);
#pragma omp parallel if (panels > 1 && static_cast<double>(size) * size * akc > 2 * kBlockMoves)
    {
      Packed blockA(static_cast<std::size_t>(kc * mc));
#pragma omp for schedule(dynamic, 1)
      for (Index p = panels - 1; p >= 0; --p) {  // the widest panels first
        const Index i2 = p * mc, amc = std::min(i2 + mc, size) - i2;
        if (cancel.stop()) continue;
        packLhs(blockA.data(), lhs.getSubMapper(i2, 0), akc, amc);
        for (Index j0 = 0; j0 < i2 && !cancel.stop(); j0 += piece)
          gebp(res.getSubMapper(i2, j0), blockA.data(), blockB.data() + akc * j0, amc, akc, std::min(piece, i2 - j0),
               actual, -1, -1, 0, 0);
        // The diagonal block by tribb in pieces: the piece's own diagonal block, then the rows below it by gebp
        // (tribb's strips of lcm(mr, nr) columns stay whole: pieces are multiples of 64).
        for (Index s0 = 0; s0 < amc && !cancel.stop(); s0 += piece) {
          const Index d = std::min(piece, amc - s0), s1 = s0 + d;
          sybb(c.data() + c.outerStride() * (i2 + s0) + i2 + s0, 1, c.outerStride(), blockA.data() + akc * s0,
               blockB.data() + akc * (i2 + s0), d, akc, actual);
          if (s1 < amc)
            gebp(res.getSubMapper(i2 + s1, i2 + s0), blockA.data() + akc * s1, blockB.data() + akc * (i2 + s0), amc - s1,
                 akc, d, actual, -1, -1, 0, 0);
        }
      }
    }
  }
  return !cancel.stop();
}

template <class Res>
void mirrorLower(Res& c) {
  for (Index j = 1; j < c.cols(); ++j)
    for (Index i = 0; i < j; ++i) c(i, j) = std::conj(c(j, i));
}

}  // namespace

bool rowBlockedProduct(MatOp opA, MatOp opB, const ConstMapF& a, const ConstMapF& b, cfloat alpha, MapF& c,
                       ParallelCancel& cancel) {
  const Index m = c.rows(), n = c.cols(), k = depthOf(opA, a);
  const double perRow = static_cast<double>(n) * static_cast<double>(std::max<Index>(k, 1));
  const Index rows = std::max<Index>(64, static_cast<Index>(kBlockMoves / perRow) / 64 * 64);
  // Blocks only where each is a threaded GEMM exactly when the whole is (the same depth block).
  const bool blocks = m >= 2 * rows && n > 1 && (gemmThreads<cfloat>(m, n, k) > 1) == (gemmThreads<cfloat>(rows, n, k) > 1);
  if (!blocks) {
    if (cancel.stop()) return false;
    accumulate(opA, opB, a, b, alpha, c, false);
    return true;
  }
  for (Index i0 = 0; i0 < m; i0 += rows) {
    if (cancel.stop()) return false;
    const Index count = std::min(rows, m - i0);
    auto part = c.middleRows(i0, count);
    if (opA == MatOp::None)
      accumulate(opA, opB, a.middleRows(i0, count), b, alpha, part, false);
    else
      accumulate(opA, opB, a.middleCols(i0, count), b, alpha, part, false);
  }
  return true;
}

bool depthBlockedProduct(MatOp opA, MatOp opB, const ConstMapF& a, const ConstMapF& b, cdouble alpha, MatD& c,
                         ParallelCancel& cancel) {
  const Index m = c.rows(), n = c.cols(), k = depthOf(opA, a);
  const Index kc = gemmDepthBlock<cdouble>(m, n, k);
  // Slices only where each is a GEMM (not a matrix-vector product, nor Eigen's small-product path below 20).
  const bool slices = m >= 16 && n > 1 && m + n >= 20 && kc < k;
  if (!slices) {
    if (cancel.stop()) return false;
    accumulate(opA, opB, depthSlice(opA, a, 0, k, false), depthSlice(opB, b, 0, k, true), alpha, c, false);
    return true;
  }
  // The threads take groups of C's rows (multiples of 16, at least 16 each), each group its slices in turn as
  // serial GEMMs: one fork for the product, not one per slice (thread count and row split change no sum).
  const Index threads = omp_get_num_threads() > 1 ? 1 : omp_get_max_threads();
  Index per = (m + threads - 1) / threads;
  per = std::max<Index>(16, (per + 15) / 16 * 16);
  if (m % per != 0 && m % per < 16) per = m;
  const Index groups = (m + per - 1) / per;
#pragma omp parallel for schedule(static, 1) num_threads(groups) if (groups > 1)
  for (Index g = 0; g < groups; ++g) {
    const Index i0 = g * per, rows = std::min(per, m - i0);
    const ConstMapF part = opA == MatOp::None
                               ? ConstMapF(a.data() + i0, rows, a.cols(), Stride(a.outerStride()))
                               : ConstMapF(a.data() + i0 * a.outerStride(), a.rows(), rows, Stride(a.outerStride()));
    auto out = c.middleRows(i0, rows);
    for (Index k0 = 0; k0 < k && !cancel.stop(); k0 += kc) {
      const Index count = std::min(kc, k - k0);
      accumulate(opA, opB, depthSlice(opA, part, k0, count, false), depthSlice(opB, b, k0, count, true), alpha, out, false);
    }
  }
  return !cancel.stop();
}

bool hermitianBlocked(const ConstMapF& a, double alpha, MatD& c, ParallelCancel& cancel) {
  if (!lowerRankUpdate<cdouble>(a, cdouble(alpha), c, cancel)) return false;
  mirrorLower(c);
  return true;
}

bool hermitianBlocked(const ConstMapF& a, float alpha, MapF& c, ParallelCancel& cancel) {
  if (!lowerRankUpdate<cfloat>(a, cfloat(alpha), c, cancel)) return false;
  mirrorLower(c);
  return true;
}

}  // namespace larmor::cpu
