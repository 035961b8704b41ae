// The CPU backend's batched dense linear algebra (GRAPPA calibration and filling, coil compression) and
// the index-table moves gather/scatter. Eigen 3.4 does the arithmetic. Products run in single precision
// like cuBLAS's cgemm, except reduction-shaped ones (accumulatesInDouble), so the CPU stays the reference
// the GPU is compared with; the Cholesky factorisation and its triangular solves run in double, because
// GRAPPA's A·A^H + λE is ill conditioned (Schneider 2008, sec. 5.3.3: the matrix products and "the
// numerically ill-conditioned matrix inversion" are where the accuracy is lost) and the solve is a small
// part of the work. Measured on Table 5.1 (32 coils, σ = 0.01 noise): weights 7e-5 from the float64
// reference with float products and a float Cholesky, 1.2e-5 with these choices. Batches run in parallel
// over entries (OpenMP); a batch smaller than the thread count runs entry by entry with Eigen's own
// threading inside each product. Batches poll the caller's CancelScope per entry, and a large product between
// its blocks (blocked_products.hpp: the same bits as one call; util/cancel_scope.hpp).
//
// Twin: cuda/linalg.cu (cuBLAS and cuSOLVER), tested against this file.
#include <omp.h>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <string>

#include "blocked_products.hpp"
#include "cpu_backend.hpp"
#include "larmor/util/cancel_scope.hpp"

namespace larmor::cpu {

namespace {

std::string str(index_t v) { return std::to_string(v); }

/// Below this many elements (or multiply-adds) a loop runs on one thread: waking a team costs more.
constexpr index_t kParallelMoves = 1 << 15;

index_t elementsOf(const Buffer& b) { return static_cast<index_t>(b.bytes() / sizeof(cfloat)); }

/// Checks one operand of a batched op: its stored shape, leading dimension and that every batch entry
/// lies inside the buffer. Returns nothing; throws Error naming the op and the operand.
void checkOperand(const char* op, const char* name, const Buffer& buf, const MatrixBatch& m, index_t rows,
                  index_t cols, index_t batch) {
  const std::string where = std::string("cpu backend: ") + op + ": " + name;
  require(m.rows == rows && m.cols == cols, where + " is stored as " + str(m.rows) + "x" + str(m.cols) +
                                                " but the operation needs " + str(rows) + "x" + str(cols));
  require(m.ld >= std::max<index_t>(1, rows), where + " has leading dimension " + str(m.ld) + " < its " +
                                                  str(rows) + " rows");
  require(m.stride >= 0, where + " has a negative batch stride");
  if (rows == 0 || cols == 0 || batch == 0) return;
  const index_t last = (batch - 1) * m.stride + (cols - 1) * m.ld + rows;  // one past the last element
  require(last <= elementsOf(buf), where + " needs " + str(last) + " elements, its buffer holds " +
                                       str(elementsOf(buf)));
}

/// The entries of an output batch must not write the same elements: either one after another (stride at
/// least the extent of an entry) or interleaved inside the leading dimension (stride >= rows and all
/// entries' rows fit within ld), the layout GRAPPA uses for its equation matrices.
void checkOutputEntriesDisjoint(const char* op, const char* name, const MatrixBatch& m, index_t batch) {
  if (batch <= 1 || m.rows == 0 || m.cols == 0) return;
  const index_t extent = (m.cols - 1) * m.ld + m.rows;
  const bool sequential = m.stride >= extent;
  const bool interleaved = m.stride >= m.rows && (batch - 1) * m.stride + m.rows <= m.ld;
  require(sequential || interleaved, std::string("cpu backend: ") + op + ": the batch entries of " + name +
                                         " overlap (stride " + str(m.stride) + ", ld " + str(m.ld) + ")");
}

const index_t* indexPtr(const Buffer& index, index_t n, const char* op) {
  require(n >= 0 && static_cast<std::size_t>(n) * sizeof(std::int64_t) <= index.bytes(),
          std::string("cpu backend: ") + op + " of " + str(n) + " elements needs " + str(n) +
              " indices, the index buffer holds " + str(static_cast<index_t>(index.bytes() / sizeof(std::int64_t))));
  return static_cast<const index_t*>(index.ptr());
}

void checkElements(const Buffer& b, index_t n, const char* op, const char* name) {
  require(n >= 0 && n <= elementsOf(b), std::string("cpu backend: ") + op + " of " + str(n) + " elements: " + name +
                                            " holds only " + str(elementsOf(b)));
}

/// The first entry of `index` (n of them) that is >= limit, or -1. Parallel; the smallest such position.
index_t firstIndexPastEnd(const index_t* index, index_t n, index_t limit) {
  index_t bad = std::numeric_limits<index_t>::max();
#pragma omp parallel for reduction(min : bad) schedule(static) if (n > kParallelMoves)
  for (index_t i = 0; i < n; ++i)
    if (index[i] >= limit && i < bad) bad = i;
  return bad == std::numeric_limits<index_t>::max() ? -1 : bad;
}

/// Products whose inner dimension exceeds both output dimensions reduce many samples into a small matrix
/// (GRAPPA's A A^H and B A^H, eq. 4.2: k = Δs N_b^ACS equations vs. 128 rows). Their float32 rounding is
/// amplified by the ill-conditioned solve that follows (thesis sec. 5.3.3), so they accumulate in double;
/// every other product (filling, coil compression) stays in float32. The CUDA backend uses the same rule.
bool accumulatesInDouble(index_t m, index_t n, index_t k) { return k > std::max(m, n); }

}  // namespace

void CpuBackend::gemmBatched(MatOp opA, MatOp opB, index_t m, index_t n, index_t k, cfloat alpha, const Buffer& A,
                 const MatrixBatch& a, const Buffer& B, const MatrixBatch& b, cfloat beta, Buffer& C,
                 const MatrixBatch& c, index_t batch) {
  const char* op = "gemmBatched";
  require(m >= 0 && n >= 0 && k >= 0 && batch >= 0, "cpu backend: gemmBatched needs non-negative sizes, got m " +
                                                        str(m) + ", n " + str(n) + ", k " + str(k) + ", batch " +
                                                        str(batch));
  const bool transA = opA != MatOp::None, transB = opB != MatOp::None;
  checkOperand(op, "A", A, a, transA ? k : m, transA ? m : k, batch);
  checkOperand(op, "B", B, b, transB ? n : k, transB ? k : n, batch);
  checkOperand(op, "C", C, c, m, n, batch);
  checkOutputEntriesDisjoint(op, "C", c, batch);
  require(C.ptr() != A.ptr() && C.ptr() != B.ptr(), "cpu backend: gemmBatched cannot write C into A or B");
  if (m == 0 || n == 0 || batch == 0) return;

  const cfloat* pa = static_cast<const cfloat*>(A.ptr());
  const cfloat* pb = static_cast<const cfloat*>(B.ptr());
  cfloat* pc = static_cast<cfloat*>(C.ptr());
  // X^H X (the same operand on both sides) is Hermitian: compute one triangle, half the work (the
  // thesis's special case for A A^H, sec. 4.2.4), when alpha is real and beta == 0 keeps C Hermitian.
  const bool hermitian = A.ptr() == B.ptr() && a.rows == b.rows && a.cols == b.cols && a.ld == b.ld &&
                         a.stride == b.stride && opA == MatOp::ConjTranspose && opB == MatOp::None &&
                         alpha.imag() == 0 && beta == cfloat(0);
  const bool inDouble = accumulatesInDouble(m, n, k);
  ParallelCancel cancel;  // polled per entry and inside one (blocked_products.hpp): 3D GRAPPA's take seconds
  auto one = [&](index_t e) {
    ConstMapF ma(pa + e * a.stride, a.rows, a.cols, Stride(a.ld));
    ConstMapF mb(pb + e * b.stride, b.rows, b.cols, Stride(b.ld));
    MapF mc(pc + e * c.stride, m, n, Stride(c.ld));
    if (inDouble) {
      MatD dc = beta == cfloat(0) ? MatD(MatD::Zero(m, n)) : MatD(cdouble(beta) * mc.cast<cdouble>());
      const bool done = k == 0 || (hermitian ? hermitianBlocked(ma, std::real(cdouble(alpha)), dc, cancel)
                                             : depthBlockedProduct(opA, opB, ma, mb, cdouble(alpha), dc, cancel));
      if (done) mc = dc.cast<cfloat>();
      return;
    }
    // BLAS semantics: beta == 0 means C is not read (it may hold NaN or garbage).
    if (beta == cfloat(0))
      mc.setZero();
    else if (beta != cfloat(1))
      mc *= beta;
    if (k == 0) return;
    if (hermitian)
      hermitianBlocked(ma, std::real(alpha), mc, cancel);
    else
      rowBlockedProduct(opA, opB, ma, mb, alpha, mc, cancel);
  };
  const index_t threads = omp_get_max_threads();
  if (batch >= threads && threads > 1) {
    // Many entries: one per thread, each product single-threaded (Eigen does not nest inside a team).
#pragma omp parallel for schedule(dynamic, 1) if (m * n * std::max<index_t>(k, 1) * batch > kParallelMoves)
    for (index_t e = 0; e < batch; ++e)
      if (!cancel.stop()) one(e);
  } else {
    for (index_t e = 0; e < batch && !cancel.stop(); ++e) one(e);
  }
  cancel.rethrow();
}

void CpuGrappaOps::choleskySolveBatched(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b,
                                        index_t batch) {
  const char* op = "choleskySolveBatched";
  require(batch >= 0, "cpu backend: choleskySolveBatched needs a non-negative batch, got " + str(batch));
  const index_t n = a.rows, nrhs = b.cols;
  require(n >= 0 && nrhs >= 0, "cpu backend: choleskySolveBatched needs non-negative sizes");
  checkOperand(op, "A", A, a, n, n, batch);
  checkOperand(op, "B", B, b, n, nrhs, batch);
  checkOutputEntriesDisjoint(op, "A", a, batch);
  checkOutputEntriesDisjoint(op, "B", b, batch);
  require(A.ptr() != B.ptr(), "cpu backend: choleskySolveBatched needs A and B in different buffers");
  if (n == 0 || batch == 0) return;

  cfloat* pa = static_cast<cfloat*>(A.ptr());
  cfloat* pb = static_cast<cfloat*>(B.ptr());
  std::atomic<index_t> failed{std::numeric_limits<index_t>::max()};
  ParallelCancel cancel;
#pragma omp parallel for schedule(dynamic, 1) if (batch * n * n * (n + nrhs) > kParallelMoves)
  for (index_t e = 0; e < batch; ++e) {
    if (cancel.stop()) continue;
    MapF ma(pa + e * a.stride, n, n, Stride(a.ld));
    MapF mb(pb + e * b.stride, n, nrhs, Stride(b.ld));
    // LAPACK's zpotrf convention: only the lower triangle is read (Eigen's LLT<Lower> references only
    // that part too); the factor L overwrites it.
    Eigen::LLT<MatD, Eigen::Lower> llt(ma.cast<cdouble>().eval());
    if (llt.info() != Eigen::Success) {
      index_t cur = failed.load();
      while (e < cur && !failed.compare_exchange_weak(cur, e)) {
      }
      continue;
    }
    MatD x = mb.cast<cdouble>();
    llt.solveInPlace(x);
    mb = x.cast<cfloat>();
    const MatD& l = llt.matrixLLT();
    for (index_t j = 0; j < n; ++j)
      for (index_t i = j; i < n; ++i) ma(i, j) = cfloat(l(i, j));
  }
  cancel.rethrow();
  if (failed.load() != std::numeric_limits<index_t>::max())
    throw Error("cpu backend: choleskySolveBatched: matrix " + str(failed.load()) + " of the batch of " + str(batch) +
                " is not positive definite");
}

GrappaOps::SolveCheck CpuGrappaOps::choleskySolveBatchedQueued(Buffer& A, const MatrixBatch& a, Buffer& B,
                                                               const MatrixBatch& b, index_t batch) {
  choleskySolveBatched(A, a, B, b, batch);  // at once: throws here, nothing is left to check
  return [] {};
}

namespace {
/// The index bound of a batched gather/scatter (Backend::gather): every index i >= 0 must have
/// i + stride (batch - 1) < elements; throws the one-line error otherwise.
void requireBatchedIndices(const index_t* idx, index_t n, index_t batch, index_t stride, index_t elements,
                           const char* op, const char* what) {
  require(batch >= 1 && stride >= 0, std::string("cpu backend: ") + op + ": batch " + str(batch) + " and stride " +
                                         str(stride) + " (batch >= 1, stride >= 0)");
  const index_t reach = stride * (batch - 1);
  const index_t bad = firstIndexPastEnd(idx, n, elements - reach);
  if (bad < 0) return;
  throw Error(std::string("cpu backend: ") + op + ": index " + str(idx[bad]) + " at position " + str(bad) +
              (batch > 1 ? " (+ " + str(reach) + " for the last of " + str(batch) + " grids)" : std::string()) +
              " is past the end of " + what + " of " + str(elements) + " elements");
}
}  // namespace

void CpuBackend::gather(Buffer& out, const Buffer& src, const Buffer& index, index_t n, index_t batch, index_t stride) {
  const index_t* idx = indexPtr(index, n, "gather");
  require(out.ptr() != src.ptr() || n == 0, "cpu backend: gather cannot gather a buffer into itself");
  requireBatchedIndices(idx, n, batch, stride, elementsOf(src), "gather", "a source");
  checkElements(out, n * batch, "gather", "the output");
  cfloat* po = static_cast<cfloat*>(out.ptr());
  const cfloat* ps = static_cast<const cfloat*>(src.ptr());
#pragma omp parallel for collapse(2) schedule(static) if (n * batch > kParallelMoves)
  for (index_t b = 0; b < batch; ++b)
    for (index_t i = 0; i < n; ++i) po[i + n * b] = idx[i] >= 0 ? ps[idx[i] + stride * b] : cfloat(0);
}

void CpuBackend::scatter(Buffer& out, const Buffer& src, const Buffer& index, index_t n, index_t batch, index_t stride) {
  const index_t* idx = indexPtr(index, n, "scatter");
  require(out.ptr() != src.ptr() || n == 0, "cpu backend: scatter cannot scatter a buffer into itself");
  requireBatchedIndices(idx, n, batch, stride, elementsOf(out), "scatter", "an output");
  if (batch > 1)
    for (index_t i = 0; i < n; ++i)
      require(idx[i] < stride, [&] {
        return "cpu backend: scatter: index " + str(idx[i]) + " at position " + str(i) + " reaches the next of " +
               str(batch) + " grids " + str(stride) + " elements apart";
      });
  checkElements(src, n * batch, "scatter", "the source");
  cfloat* po = static_cast<cfloat*>(out.ptr());
  const cfloat* ps = static_cast<const cfloat*>(src.ptr());
#pragma omp parallel for collapse(2) schedule(static) if (n * batch > kParallelMoves)
  for (index_t b = 0; b < batch; ++b)
    for (index_t i = 0; i < n; ++i)
      if (idx[i] >= 0) po[idx[i] + stride * b] = ps[i + n * b];
}

}  // namespace larmor::cpu
