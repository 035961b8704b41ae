// SolverOps on the GPU (larmor/backend/solver_ops.hpp): CG's and FISTA's scalars stay in device memory, so a
// solver's loop queues its iterations without waiting for the device (the host reads the scalars every few
// iterations: solve/cg.cpp). Twin of engine/src/cpu/solver.cpp; the scalar arithmetic both use is
// larmor/kernels/solver_math.hpp.
//
// Each reduction is a deterministic double sum (a block count that depends on n alone, a fixed subsequence
// per block, then the partials added in a fixed order), fused with the vector update that precedes it where
// the algorithm allows, and finished in the same launch by the last block to arrive (a counter in device
// memory; CUDA's threadFenceReduction pattern): the order of the final sum does not depend on which block
// is last, and a separate one-block launch (~4-6 us on the H100, three per CG iteration) is saved.
//   cgCurvature:  Re <p, q>                                  -> pq[k], breakdown test
//   cgUpdate:     x += alpha p, r -= alpha q, ||r||^2, Re <x, b>, Re <x, r>
//                                                            -> rr[k] (= rz[k] unless preconditioned), xb, xr,
//                                                               tolerance test
//   cgDirection:  p = z + beta p
//   fistaChange:  ||xn - x||^2, ||xn||^2                     -> dx[k], nx[k], tolerance test
//   fistaCommit:  y = xn + beta (xn - x), x = xn
// Every kernel reads the stop slot first and returns when an earlier step ended the solve (a whole block
// agrees, so the block sums stay well formed). Alpha and beta are computed by every thread from two doubles
// (cached loads), the way the CPU twin computes them once.
#include <algorithm>
#include <string>

#include "check.hpp"
#include "cuda_backend.hpp"
#include "larmor/kernels/solver_math.hpp"
#include "sparsity_internal.cuh"

namespace larmor::cuda {
namespace {

using sparsity::blockSum;
using sparsity::kReduceThreads;

__device__ __forceinline__ long long firstIndex() { return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ long long gridStride() { return static_cast<long long>(gridDim.x) * blockDim.x; }

__device__ __forceinline__ double reDot(float2 a, float2 b) {
  return static_cast<double>(a.x) * b.x + static_cast<double>(a.y) * b.y;
}

/// Where a kernel's blocks leave their partial sums, and the arrival counter (0 between launches).
struct Partials {
  double* sums;  ///< [kSums][kMaxReduceBlocks]
  unsigned* arrived;
};
constexpr int kSums = 4;

/// After thread 0 of every block has written its partials: true in the last block to arrive, whose reads of
/// the others' partials are then ordered after their writes (and the counter is reset for the next launch).
__device__ bool lastToArrive(const Partials& p) {
  __shared__ bool last;
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(p.arrived, 1u) == gridDim.x - 1;
    if (last) *p.arrived = 0;
  }
  __syncthreads();
  if (last) __threadfence();
  return last;
}

/// In the last block: sum of partials `which` of every block, in a fixed order (valid in thread 0).
__device__ double total(const Partials& p, int which, double* shared) {
  double v = 0;
  for (int b = threadIdx.x; b < static_cast<int>(gridDim.x); b += blockDim.x)
    v += __ldcg(p.sums + which * kMaxReduceBlocks + b);
  return blockSum<kReduceThreads>(v, shared);
}

/// s[slot] = Re <a, b>; as the curvature step of CG: nothing once stopped, pq[k] and the
/// breakdown test.
__global__ void __launch_bounds__(kReduceThreads) dotKernel(const float2* __restrict__ a, const float2* __restrict__ b,
                                                            long long n, double* s, long long slot, bool curvature,
                                                            CgLayout l, int k, Partials p) {
  if (curvature && s[CgLayout::kStop] != 0) return;
  __shared__ double shared[kReduceThreads];
  double sum = 0;
  for (long long i = firstIndex(); i < n; i += gridStride()) sum += reDot(a[i], b[i]);
  const double t = blockSum<kReduceThreads>(sum, shared);
  if (threadIdx.x == 0) p.sums[blockIdx.x] = t;
  __syncthreads();
  if (!lastToArrive(p)) return;
  const double v = total(p, 0, shared);
  if (threadIdx.x != 0) return;
  if (!curvature) {
    s[slot] = v;
    return;
  }
  s[l.pq(k)] = v;
  if (kernels::cgBreakdown(v, s[l.rz(k - 1)])) {
    s[CgLayout::kStop] = k;
    s[CgLayout::kReason] = static_cast<double>(SolverStop::Breakdown);
  }
}

/// x += alpha p; r -= alpha q; rr[k] = rz[k] = ||r||^2 (and xb, xr when b is given); the tolerance test.
__global__ void __launch_bounds__(kReduceThreads) cgUpdateKernel(double* s, CgLayout l, int k, float2* x, float2* r,
                                                                 const float2* __restrict__ p,
                                                                 const float2* __restrict__ q,
                                                                 const float2* __restrict__ b,
                                                                 const float2* __restrict__ minv, float2* z,
                                                                 long long n, double tolerance, Partials part) {
  if (s[CgLayout::kStop] != 0) return;
  __shared__ double shared[4][kReduceThreads];
  const float alpha = kernels::cgAlpha(s[l.rz(k - 1)], s[l.pq(k)]);
  double rr = 0, xb = 0, xr = 0, rz = 0;
  for (long long i = firstIndex(); i < n; i += gridStride()) {
    const float2 pi = p[i], qi = q[i];
    float2 xi = x[i], ri = r[i];
    xi = make_float2(xi.x + alpha * pi.x, xi.y + alpha * pi.y);
    ri = make_float2(ri.x - alpha * qi.x, ri.y - alpha * qi.y);
    x[i] = xi;
    r[i] = ri;
    rr += reDot(ri, ri);
    if (minv) {  // z = minv r as multiplyKernel's complex product (minv's imaginary part 0), rz = Re <r, z>
      const float2 mi = minv[i];
      const float2 zi = make_float2(mi.x * ri.x - mi.y * ri.y, mi.x * ri.y + mi.y * ri.x);
      z[i] = zi;
      rz += reDot(ri, zi);
    }
    if (b) {
      xb += reDot(xi, b[i]);
      xr += reDot(xi, ri);
    }
  }
  const double t0 = blockSum<kReduceThreads>(rr, shared[0]);
  const double t1 = blockSum<kReduceThreads>(xb, shared[1]);
  const double t2 = blockSum<kReduceThreads>(xr, shared[2]);
  const double t3 = minv ? blockSum<kReduceThreads>(rz, shared[3]) : 0.0;
  if (threadIdx.x == 0) {
    part.sums[blockIdx.x] = t0;
    part.sums[kMaxReduceBlocks + blockIdx.x] = t1;
    part.sums[2 * kMaxReduceBlocks + blockIdx.x] = t2;
    part.sums[3 * kMaxReduceBlocks + blockIdx.x] = t3;
  }
  __syncthreads();
  if (!lastToArrive(part)) return;
  const double rrAll = total(part, 0, shared[0]);
  const double xbAll = total(part, 1, shared[1]);
  const double xrAll = total(part, 2, shared[2]);
  const double rzAll = minv ? total(part, 3, shared[3]) : rrAll;  // plain CG's r^H z: rr
  if (threadIdx.x != 0) return;
  s[l.rr(k)] = rrAll;
  s[l.rz(k)] = rzAll;
  if (b) {
    s[l.xb(k)] = xbAll;
    s[l.xr(k)] = xrAll;
  }
  if (kernels::cgConverged(rrAll, s[CgLayout::kRhsNorm2], tolerance)) {
    s[CgLayout::kStop] = k;
    s[CgLayout::kReason] = static_cast<double>(SolverStop::Tolerance);
  }
}

__global__ void cgDirectionKernel(const double* s, CgLayout l, int k, float2* p, const float2* __restrict__ z,
                                  long long n) {
  if (s[CgLayout::kStop] != 0) return;
  const float beta = kernels::cgBeta(s[l.rz(k)], s[l.rz(k - 1)]);
  for (long long i = firstIndex(); i < n; i += gridStride()) {
    const float2 zi = z[i], pi = p[i];
    p[i] = make_float2(zi.x + beta * pi.x, zi.y + beta * pi.y);
  }
}

__global__ void gradientStepKernel(float2* xn, const float2* y, const float2* g, const float2* __restrict__ b,
                                   float invL, long long n) {
  for (long long i = firstIndex(); i < n; i += gridStride()) {
    const float2 bi = b[i], gi = g[i], yi = y[i];
    xn[i] = make_float2((invL * bi.x - invL * gi.x) + yi.x, (invL * bi.y - invL * gi.y) + yi.y);
  }
}

/// dx[k] = ||xn - x||^2, nx[k] = ||xn||^2; the tolerance test.
__global__ void __launch_bounds__(kReduceThreads) changeKernel(double* s, FistaLayout l, int k,
                                                               const float2* __restrict__ xn,
                                                               const float2* __restrict__ x, long long n,
                                                               double tolerance, Partials part) {
  if (s[FistaLayout::kStop] != 0) return;
  __shared__ double shared[2][kReduceThreads];
  double dx = 0, nx = 0;
  for (long long i = firstIndex(); i < n; i += gridStride()) {
    const float2 a = xn[i], c = x[i];
    const float2 d = make_float2(a.x - c.x, a.y - c.y);
    dx += reDot(d, d);
    nx += reDot(a, a);
  }
  const double t0 = blockSum<kReduceThreads>(dx, shared[0]);
  const double t1 = blockSum<kReduceThreads>(nx, shared[1]);
  if (threadIdx.x == 0) {
    part.sums[blockIdx.x] = t0;
    part.sums[kMaxReduceBlocks + blockIdx.x] = t1;
  }
  __syncthreads();
  if (!lastToArrive(part)) return;
  const double dxAll = total(part, 0, shared[0]);
  const double nxAll = total(part, 1, shared[1]);
  if (threadIdx.x != 0) return;
  s[l.dx(k)] = dxAll;
  s[l.nx(k)] = nxAll;
  if (tolerance > 0 && kernels::relativeChange(dxAll, nxAll) <= tolerance) {
    s[FistaLayout::kStop] = k;
    s[FistaLayout::kReason] = static_cast<double>(SolverStop::Tolerance);
  }
}

__global__ void commitKernel(const double* s, FistaLayout l, int k, float2* x, float2* y,
                             const float2* __restrict__ xn, float beta, long long n) {
  if (kernels::stoppedBefore(s[FistaLayout::kStop], k)) return;
  for (long long i = firstIndex(); i < n; i += gridStride()) {
    const float2 a = xn[i], c = x[i];
    y[i] = make_float2(a.x + beta * (a.x - c.x), a.y + beta * (a.y - c.y));
    x[i] = a;
  }
}

/// s[slot] += the count of elements with a non-finite part: one atomic per warp that found any (none on good
/// data; an integer count, so the order of the additions does not matter).
__global__ void countNonFiniteKernel(const float2* x, long long n, double* s, long long slot) {
  unsigned bad = 0;
  for (long long i = firstIndex(); i < n; i += gridStride()) {
    const float2 v = x[i];
    bad += (isfinite(v.x) && isfinite(v.y)) ? 0u : 1u;
  }
  for (int offset = 16; offset > 0; offset /= 2) bad += __shfl_down_sync(0xffffffffu, bad, offset);  // any arch
  if (bad && (threadIdx.x & 31) == 0) atomicAdd(s + slot, static_cast<double>(bad));
}

__global__ void scaleByInverseRootKernel(float2* dst, const float2* src, const double* s, long long slot,
                                         long long n) {
  const double norm = sqrt(s[slot]);
  const float f = norm > 0 ? static_cast<float>(1.0 / norm) : 0.f;
  for (long long i = firstIndex(); i < n; i += gridStride()) {
    const float2 v = src[i];
    dst[i] = make_float2(f * v.x, f * v.y);
  }
}

}  // namespace

double* CudaSolverOps::slots(const Buffer& s, index_t count, const char* op) {
  be_.checked(s, op);
  require(count >= 0 && static_cast<std::size_t>(count) * sizeof(double) <= s.bytes(),
          std::string(op) + ": " + std::to_string(count) + " scalars exceed a buffer of " +
              std::to_string(s.bytes() / sizeof(double)));
  return static_cast<double*>(const_cast<void*>(s.ptr()));
}

double* CudaSolverOps::partialsArea() {
  if (!partials_) {
    partials_ = be_.allocate(kSums * kMaxReduceBlocks * sizeof(double) + sizeof(unsigned));
    LARMOR_CUDA_CHECK(cudaMemsetAsync(partials_->ptr(), 0, partials_->bytes(), be_.stream_.handle));
  }
  return static_cast<double*>(partials_->ptr());
}

namespace {
/// The partial sums and the arrival counter behind them (CudaSolverOps::partialsArea's layout).
Partials partialsAt(double* area) {
  return Partials{area, reinterpret_cast<unsigned*>(area + kSums * kMaxReduceBlocks)};
}
}  // namespace

std::unique_ptr<Buffer> CudaSolverOps::scalars(index_t count) {
  require(count >= 1, "solver scalars: the count must be >= 1");
  auto b = be_.allocate(static_cast<std::size_t>(count) * sizeof(double));
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  LARMOR_CUDA_CHECK(cudaMemsetAsync(b->ptr(), 0, b->bytes(), be_.stream_.handle));
  return b;
}

void CudaSolverOps::read(double* out, const Buffer& s, index_t first, index_t count) {
  const double* p = slots(s, first + count, "solver scalars: read");
  if (count == 0) return;
  std::lock_guard lock(be_.mutex_);
  be_.refuseWhileRecording("reading the solver's scalars");
  be_.activate();
  LARMOR_CUDA_CHECK(cudaMemcpyAsync(out, p + first, static_cast<std::size_t>(count) * sizeof(double),
                                    cudaMemcpyDeviceToHost, be_.stream_.handle));
  LARMOR_CUDA_CHECK(cudaStreamSynchronize(be_.stream_.handle));
}

void CudaSolverOps::dot(Buffer& s, index_t slot, const Buffer& a, const Buffer& b, index_t n) {
  double* ps = slots(s, slot + 1, "solver scalars: dot");
  const float2* pa = be_.elements(a, n, "solver dot");
  const float2* pb = be_.elements(b, n, "solver dot");
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  const cudaStream_t st = be_.stream_.handle;
  dotKernel<<<sparsity::reduceBlocks(n), kReduceThreads, 0, st>>>(pa, pb, n, ps, slot, false, CgLayout{}, 0,
                                                                   partialsAt(partialsArea()));
  LARMOR_CUDA_CHECK_LAUNCH();
}

void CudaSolverOps::countNonFinite(Buffer& s, index_t slot, const Buffer& x, index_t n) {
  double* ps = slots(s, slot + 1, "solver scalars: non-finite count");
  const float2* px = be_.elements(x, n, "solver non-finite count");
  if (n == 0) return;
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  countNonFiniteKernel<<<gridFor(n, be_.launch_), kThreads, 0, be_.stream_.handle>>>(px, n, ps, slot);
  LARMOR_CUDA_CHECK_LAUNCH();
}

void CudaSolverOps::scaleByInverseRoot(Buffer& dst, const Buffer& src, const Buffer& s, index_t slot, index_t n) {
  const double* ps = slots(s, slot + 1, "solver scalars: scale");
  float2* pd = be_.elements(dst, n, "solver scale");
  const float2* pr = be_.elements(src, n, "solver scale");
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  scaleByInverseRootKernel<<<gridFor(n, be_.launch_), kThreads, 0, be_.stream_.handle>>>(pd, pr, ps, slot, n);
  LARMOR_CUDA_CHECK_LAUNCH();
}

void CudaSolverOps::cgCurvature(Buffer& s, const CgLayout& l, int k, const Buffer& p, const Buffer& q, index_t n) {
  double* ps = slots(s, l.size(), "cg curvature");
  const float2* pp = be_.elements(p, n, "cg curvature");
  const float2* pq = be_.elements(q, n, "cg curvature");
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  const cudaStream_t st = be_.stream_.handle;
  dotKernel<<<sparsity::reduceBlocks(n), kReduceThreads, 0, st>>>(pp, pq, n, ps, 0, true, l, k,
                                                                   partialsAt(partialsArea()));
  LARMOR_CUDA_CHECK_LAUNCH();
}

void CudaSolverOps::cgUpdate(Buffer& s, const CgLayout& l, int k, Buffer& x, Buffer& r, const Buffer& p,
                             const Buffer& q, const Buffer* b, double tolerance, index_t n, const Buffer* minv,
                             Buffer* z) {
  require(!minv || z, "cg update: a preconditioner's diagonal needs z");
  const float2* pm = minv ? be_.elements(*minv, n, "cg update") : nullptr;
  float2* pz = z ? be_.elements(*z, n, "cg update") : nullptr;
  double* ps = slots(s, l.size(), "cg update");
  float2* px = be_.elements(x, n, "cg update");
  float2* pr = be_.elements(r, n, "cg update");
  const float2* pp = be_.elements(p, n, "cg update");
  const float2* pq = be_.elements(q, n, "cg update");
  const float2* pb = b ? be_.elements(*b, n, "cg update") : nullptr;
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  const cudaStream_t st = be_.stream_.handle;
  cgUpdateKernel<<<sparsity::reduceBlocks(n), kReduceThreads, 0, st>>>(ps, l, k, px, pr, pp, pq, pb, pm, pz, n,
                                                                        tolerance, partialsAt(partialsArea()));
  LARMOR_CUDA_CHECK_LAUNCH();
}

void CudaSolverOps::cgDirection(const Buffer& s, const CgLayout& l, int k, Buffer& p, const Buffer& z, index_t n) {
  const double* ps = slots(s, l.size(), "cg direction");
  float2* pp = be_.elements(p, n, "cg direction");
  const float2* pz = be_.elements(z, n, "cg direction");
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  cgDirectionKernel<<<gridFor(n, be_.launch_), kThreads, 0, be_.stream_.handle>>>(ps, l, k, pp, pz, n);
  LARMOR_CUDA_CHECK_LAUNCH();
}

void CudaSolverOps::fistaGradientStep(Buffer& xn, const Buffer& y, const Buffer& g, const Buffer& b, double invL,
                                      index_t n) {
  float2* px = be_.elements(xn, n, "fista step");
  const float2* py = be_.elements(y, n, "fista step");
  const float2* pg = be_.elements(g, n, "fista step");
  const float2* pb = be_.elements(b, n, "fista step");
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  gradientStepKernel<<<gridFor(n, be_.launch_), kThreads, 0, be_.stream_.handle>>>(px, py, pg, pb,
                                                                                   static_cast<float>(invL), n);
  LARMOR_CUDA_CHECK_LAUNCH();
}

void CudaSolverOps::fistaChange(Buffer& s, const FistaLayout& l, int k, const Buffer& xn, const Buffer& x,
                                double tolerance, index_t n) {
  double* ps = slots(s, l.size(), "fista change");
  const float2* pn = be_.elements(xn, n, "fista change");
  const float2* px = be_.elements(x, n, "fista change");
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  const cudaStream_t st = be_.stream_.handle;
  changeKernel<<<sparsity::reduceBlocks(n), kReduceThreads, 0, st>>>(ps, l, k, pn, px, n, tolerance,
                                                                      partialsAt(partialsArea()));
  LARMOR_CUDA_CHECK_LAUNCH();
}

void CudaSolverOps::fistaCommit(const Buffer& s, const FistaLayout& l, int k, Buffer& x, Buffer& y, const Buffer& xn,
                                double beta, index_t n) {
  const double* ps = slots(s, l.size(), "fista commit");
  float2* px = be_.elements(x, n, "fista commit");
  float2* py = be_.elements(y, n, "fista commit");
  const float2* pn = be_.elements(xn, n, "fista commit");
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  commitKernel<<<gridFor(n, be_.launch_), kThreads, 0, be_.stream_.handle>>>(ps, l, k, px, py, pn,
                                                                             static_cast<float>(beta), n);
  LARMOR_CUDA_CHECK_LAUNCH();
}

}  // namespace larmor::cuda
