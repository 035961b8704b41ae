// SolverOps on the host (larmor/backend/solver_ops.hpp): the solvers' scalars are host doubles, every step is
// the CPU backend's own vector op (axpby, dot), so a solve computes what the loop with host scalars computed
// before, bit for bit. Twin of cuda/solver.cu, which fuses the same steps into kernels; the arithmetic both
// share is larmor/kernels/solver_math.hpp.
#include <cmath>
#include <cstring>
#include <string>

#include "cpu_backend.hpp"
#include "larmor/array/finite.hpp"
#include "larmor/kernels/solver_math.hpp"

namespace larmor::cpu {

namespace {

double* slots(Buffer& s, index_t count, const char* op) {
  require(count >= 0 && static_cast<std::size_t>(count) * sizeof(double) <= s.bytes(),
          std::string(op) + ": " + std::to_string(count) + " scalars exceed a buffer of " +
              std::to_string(s.bytes() / sizeof(double)));
  return static_cast<double*>(s.ptr());
}
const double* slots(const Buffer& s, index_t count, const char* op) {
  return slots(const_cast<Buffer&>(s), count, op);
}

cfloat real(float v) { return cfloat(v, 0.f); }

}  // namespace

std::unique_ptr<Buffer> CpuSolverOps::scalars(index_t count) {
  require(count >= 1, "solver scalars: the count must be >= 1");
  auto b = be_.allocate(static_cast<std::size_t>(count) * sizeof(double));
  std::memset(b->ptr(), 0, b->bytes());
  return b;
}

void CpuSolverOps::read(double* out, const Buffer& s, index_t first, index_t count) {
  const double* p = slots(s, first + count, "solver scalars: read");
  std::memcpy(out, p + first, static_cast<std::size_t>(count) * sizeof(double));
}

void CpuSolverOps::dot(Buffer& s, index_t slot, const Buffer& a, const Buffer& b, index_t n) {
  slots(s, slot + 1, "solver scalars: dot")[slot] = be_.dot(a, b, n).real();
}

void CpuSolverOps::countNonFinite(Buffer& s, index_t slot, const Buffer& x, index_t n) {
  double* v = slots(s, slot + 1, "solver scalars: non-finite count");
  require(n >= 0 && static_cast<std::size_t>(n) * sizeof(cfloat) <= x.bytes(),
          "solver scalars: non-finite count over " + std::to_string(n) + " elements of a smaller buffer");
  const auto* f = static_cast<const float*>(x.ptr());
  const std::size_t floats = 2 * static_cast<std::size_t>(n);
  // The vectorised scan (array/finite.hpp) finds the first; only data that hold one are counted one by one.
  const std::size_t at = firstNonFinite(f, floats);
  if (at == floats) return;
  index_t count = 0;
  for (std::size_t i = at / 2; i < floats / 2; ++i)
    count += (std::isfinite(f[2 * i]) && std::isfinite(f[2 * i + 1])) ? 0 : 1;
  v[slot] += static_cast<double>(count);
}

void CpuSolverOps::scaleByInverseRoot(Buffer& dst, const Buffer& src, const Buffer& s, index_t slot, index_t n) {
  const double v = slots(s, slot + 1, "solver scalars: scale")[slot];
  const double norm = std::sqrt(v);
  if (&dst != &src) be_.copy(dst, src, static_cast<std::size_t>(n) * sizeof(cfloat));
  be_.scale(dst, real(norm > 0 ? static_cast<float>(1.0 / norm) : 0.f), n);
}

void CpuSolverOps::cgCurvature(Buffer& s, const CgLayout& l, int k, const Buffer& p, const Buffer& q, index_t n) {
  double* v = slots(s, l.size(), "cg curvature");
  if (v[CgLayout::kStop] != 0) return;
  v[l.pq(k)] = be_.dot(p, q, n).real();
  if (kernels::cgBreakdown(v[l.pq(k)], v[l.rz(k - 1)])) {
    v[CgLayout::kStop] = k;
    v[CgLayout::kReason] = static_cast<double>(SolverStop::Breakdown);
  }
}

void CpuSolverOps::cgUpdate(Buffer& s, const CgLayout& l, int k, Buffer& x, Buffer& r, const Buffer& p,
                            const Buffer& q, const Buffer* b, double tolerance, index_t n, const Buffer* minv,
                            Buffer* z) {
  require(!minv || z, "cg update: a preconditioner's diagonal needs z");
  double* v = slots(s, l.size(), "cg update");
  if (v[CgLayout::kStop] != 0) return;
  const float alpha = kernels::cgAlpha(v[l.rz(k - 1)], v[l.pq(k)]);
  be_.axpby(x, real(alpha), p, cfloat(1.f), n);
  be_.axpby(r, real(-alpha), q, cfloat(1.f), n);
  v[l.rr(k)] = be_.dot(r, r, n).real();
  v[l.rz(k)] = v[l.rr(k)];  // plain CG's r^H z
  if (minv) {
    be_.multiply(*z, *minv, n, r, n, false);
    v[l.rz(k)] = be_.dot(r, *z, n).real();
  }
  if (b) {
    v[l.xb(k)] = be_.dot(x, *b, n).real();
    v[l.xr(k)] = be_.dot(x, r, n).real();
  }
  if (kernels::cgConverged(v[l.rr(k)], v[CgLayout::kRhsNorm2], tolerance)) {
    v[CgLayout::kStop] = k;
    v[CgLayout::kReason] = static_cast<double>(SolverStop::Tolerance);
  }
}

void CpuSolverOps::cgDirection(const Buffer& s, const CgLayout& l, int k, Buffer& p, const Buffer& z, index_t n) {
  const double* v = slots(s, l.size(), "cg direction");
  if (v[CgLayout::kStop] != 0) return;
  be_.axpby(p, cfloat(1.f), z, real(kernels::cgBeta(v[l.rz(k)], v[l.rz(k - 1)])), n);  // p = z + beta p
}

void CpuSolverOps::fistaGradientStep(Buffer& xn, const Buffer& y, const Buffer& g, const Buffer& b, double invL,
                                     index_t n) {
  cfloat* pxn = elements(xn, n, "fista step");
  const cfloat *py = elements(y, n, "fista step"), *pg = elements(g, n, "fista step"), *pb = elements(b, n, "fista step");
  const cfloat a = real(static_cast<float>(invL)), c = real(static_cast<float>(-invL));
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < n; ++i) pxn[i] = (a * pb[i] + c * pg[i]) + py[i];
}

void CpuSolverOps::fistaChange(Buffer& s, const FistaLayout& l, int k, const Buffer& xn, const Buffer& x,
                               double tolerance, index_t n) {
  double* v = slots(s, l.size(), "fista change");
  if (v[FistaLayout::kStop] != 0) return;
  const cfloat *pxn = elements(xn, n, "fista change"), *px = elements(x, n, "fista change");
  double dx = 0, nx = 0;
#pragma omp parallel for reduction(+ : dx, nx) schedule(static)
  for (index_t i = 0; i < n; ++i) {
    const cfloat d = pxn[i] - px[i];
    dx += static_cast<double>(d.real()) * d.real() + static_cast<double>(d.imag()) * d.imag();
    nx += static_cast<double>(pxn[i].real()) * pxn[i].real() + static_cast<double>(pxn[i].imag()) * pxn[i].imag();
  }
  v[l.dx(k)] = dx;
  v[l.nx(k)] = nx;
  if (tolerance > 0 && kernels::relativeChange(dx, nx) <= tolerance) {
    v[FistaLayout::kStop] = k;
    v[FistaLayout::kReason] = static_cast<double>(SolverStop::Tolerance);
  }
}

void CpuSolverOps::fistaCommit(const Buffer& s, const FistaLayout& l, int k, Buffer& x, Buffer& y, const Buffer& xn,
                               double beta, index_t n) {
  const double* v = slots(s, l.size(), "fista commit");
  if (kernels::stoppedBefore(v[FistaLayout::kStop], k)) return;
  cfloat *px = elements(x, n, "fista commit"), *py = elements(y, n, "fista commit");
  const cfloat* pxn = elements(xn, n, "fista commit");
  const auto bf = static_cast<float>(beta);
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < n; ++i) {
    const cfloat next = pxn[i];
    py[i] = next + bf * (next - px[i]);  // y = x_k + beta (x_k - x_{k-1})
    px[i] = next;
  }
}

}  // namespace larmor::cpu
