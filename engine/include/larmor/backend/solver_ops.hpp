#pragma once
// The scalar side of the iterative solvers (solve/cg.cpp, solve/fista.cpp), one interface that each backend
// provides (Backend::solverOps(); CPU twin engine/src/cpu/solver.cpp, CUDA twin cuda/solver.cu).
//
// Why: CG needs two or three inner products per iteration, and each decides the next step (alpha = rz / pq,
// beta = rz' / rz); FISTA's stopping rule needs two norms. Read back to the host, every one is a round trip
// that drains the GPU's queue (~15-25 us on the H100 for a kernel, a copy and a stream synchronisation):
// for a 256^2 x 8-coil SENSE problem that was more than half of a CG iteration's 187 us. Here the
// reductions land in a small vector of doubles in the backend's memory, the step sizes are computed from
// it by the kernels that use them, and the solver reads the vector back only every few iterations (the
// history, the stopping decision). On the CPU the vector is host memory and the solvers read it after
// every iteration, which costs nothing, so they behave exactly as a loop with host scalars.
//
// Stopping inside a window of unread iterations: the kernels themselves decide. A state vector holds
// `stop` (0 while running, else the iteration at which the solve ended) and why; every update kernel of
// iteration k does nothing once stop is set by an earlier step, so the iterate is the one at which the
// decision was made, bit for bit as if the host had read every scalar, and the iterations queued after it
// only cost their operator applications (tests/shared/solver_ops.cpp checks windows of 1 and 7 give the
// same bits).
//
// Layouts (doubles; K = the iteration limit; every per-iteration value has its own slot, so no kernel
// overwrites a value that a concurrently running block of another kernel still reads):
//   CG    [stop, reason, ||b||^2,  rz[0..K], pq[0..K], rr[0..K], xb[0..K], xr[0..K]]
//         rz = Re <r, z> (z = M^-1 r), pq = Re <p, A p>, rr = ||r||^2, xb = Re <x, b>, xr = Re <x, r>
//   FISTA [stop, reason, unused,   dx[0..K], nx[0..K]]   dx = ||x_k - x_{k-1}||^2, nx = ||x_k||^2
// The arithmetic of each step (which values, in which precision, rounded where) is written once in
// larmor/kernels/solver_math.hpp and used by both twins.
//
// The solvers' operator application recorded once and replayed (solve/cg.hpp's RecordedApplication, where a GPU's
// host queues kernels more slowly than a small problem's kernels run) is ExecutionOps::record
// (larmor/backend/execution_ops.hpp).
#include <memory>
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/backend/buffer.hpp"
#include "larmor/kernels/solver_math.hpp"

namespace larmor {

using kernels::CgLayout;
using kernels::FistaLayout;
using kernels::SolverStop;

class SolverOps {
 public:
  virtual ~SolverOps() = default;

  /// True where the scalars live in host memory (reading them costs nothing): solvers read every iteration.
  virtual bool scalarsOnHost() const = 0;
  /// A vector of `count` doubles in the backend's memory, all zero.
  virtual std::unique_ptr<Buffer> scalars(index_t count) = 0;
  /// out[i] = s[first + i], i < count (one round trip on a GPU).
  virtual void read(double* out, const Buffer& s, index_t first, index_t count) = 0;
  /// s[slot] = Re <a, b> over n complex elements (the backend's deterministic double sum).
  virtual void dot(Buffer& s, index_t slot, const Buffer& a, const Buffer& b, index_t n) = 0;
  /// s[slot] += the number of the n complex elements of x with a NaN or infinite part: a check of data where
  /// they already are, read back with the other scalars (the iterative Cartesian path's samples).
  virtual void countNonFinite(Buffer& s, index_t slot, const Buffer& x, index_t n) = 0;
  /// dst = src / sqrt(s[slot]) (0 where s[slot] is 0): the power iteration's normalisation.
  virtual void scaleByInverseRoot(Buffer& dst, const Buffer& src, const Buffer& s, index_t slot, index_t n) = 0;

  // --- conjugate gradients (solve/cg.cpp), iteration k >= 1 ----------------------------------------------
  /// pq[k] = Re <p, q>; unless stopped: stop = k (Breakdown) when pq[k] or rz[k-1] is not > 0.
  virtual void cgCurvature(Buffer& s, const CgLayout& l, int k, const Buffer& p, const Buffer& q, index_t n) = 0;
  /// Unless stopped: alpha = rz[k-1] / pq[k]; x += alpha p; r -= alpha q; rr[k] = rz[k] = ||r||^2 (plain
  /// CG's r^H z: a preconditioned solve overwrites rz[k] with dot(r, M^-1 r)), and with b
  /// xb[k] = Re <x, b>, xr[k] = Re <x, r>; stop = k (Tolerance) when rr[k] <= tolerance^2 ||b||^2
  /// (tolerance > 0). With minv (a Jacobi preconditioner's inverse diagonal, Backend::reciprocalDiagonal's: imaginary
  /// 0), in the same pass: z = minv r (as Backend::multiply(z, minv, n, r, n, false)) and rz[k] = Re <r, z>.
  virtual void cgUpdate(Buffer& s, const CgLayout& l, int k, Buffer& x, Buffer& r, const Buffer& p, const Buffer& q,
                        const Buffer* b, double tolerance, index_t n, const Buffer* minv = nullptr,
                        Buffer* z = nullptr) = 0;
  /// Unless stopped: p = z + (rz[k] / rz[k-1]) p.
  virtual void cgDirection(const Buffer& s, const CgLayout& l, int k, Buffer& p, const Buffer& z, index_t n) = 0;

  // --- FISTA (solve/fista.cpp), iteration k >= 1 -----------------------------------------------------------
  /// xn = y + (b - g) / L, as (b / L - g / L) + y.
  virtual void fistaGradientStep(Buffer& xn, const Buffer& y, const Buffer& g, const Buffer& b, double invL,
                                 index_t n) = 0;
  /// Unless stopped: dx[k] = ||xn - x||^2, nx[k] = ||xn||^2; stop = k (Tolerance) when the relative change
  /// (solver_math.hpp) is <= tolerance (tolerance > 0).
  virtual void fistaChange(Buffer& s, const FistaLayout& l, int k, const Buffer& xn, const Buffer& x,
                           double tolerance, index_t n) = 0;
  /// Unless stopped before k: y = xn + beta (xn - x); x = xn.
  virtual void fistaCommit(const Buffer& s, const FistaLayout& l, int k, Buffer& x, Buffer& y, const Buffer& xn,
                           double beta, index_t n) = 0;
};

}  // namespace larmor
