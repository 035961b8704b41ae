#pragma once
// (Preconditioned) conjugate gradients, written once against a LinearOperator and the Backend's vector
// ops (axpby, dot, norm2, multiply), so the same loop runs on the CPU and, with every vector in device
// memory, on a GPU: per iteration one operator application plus a few vector ops and scalar reductions;
// no array crosses between host and device inside the loop.
//
// Stone et al. (2008, sec. 3.2) solve the normal equations (F^H F + W^H W) rho = F^H d (their eq. 2) by
// PCG [Hestenes & Stiefel 1952; Concus, Golub, O'Leary 1976], 60 iterations. For Hermitian positive
// definite A, CG minimises phi(x) = x^H A x - 2 Re(x^H b) over growing Krylov spaces, so the least-squares
// objective ||F x - d||^2 + ||W x||^2 = phi(x) + ||d||^2 falls monotonically (in exact arithmetic).
//
// conjugateGradient (solve/cg.cpp) is the fast executor: scalars kept in the backend's memory and read once per
// window, the Jacobi step fused into the update, the operator replayed as a CUDA graph. The textbook loop it is
// checked against is solve/cg_reference.hpp.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "larmor/backend/backend.hpp"
#include "larmor/util/progress.hpp"

namespace larmor::solve {

/// y = A x on complex vectors of size() elements in one backend's memory. A must be Hermitian positive
/// (semi)definite for CG. x and y are distinct buffers.
class LinearOperator {
 public:
  virtual ~LinearOperator() = default;
  virtual index_t size() const = 0;
  virtual void apply(const Buffer& x, Buffer& y) = 0;
};

/// y = A x on fixed buffers, as the solvers apply it once per iteration: the first application runs directly
/// (the operator makes its plans, work areas and caches then), the second is recorded (ExecutionOps::record: a CUDA
/// graph, one launch instead of one per kernel, for a GPU whose host queues kernels more slowly than a small
/// problem's kernels run) and every later one replays it. Where the backend does not record, or the operator's
/// work cannot be recorded, or `enabled` is false, every application runs directly. The same bits either way.
class RecordedApplication {
 public:
  RecordedApplication(Backend& backend, LinearOperator& A, const Buffer& x, Buffer& y, bool enabled = true)
      : backend_(backend), a_(A), x_(x), y_(y), tried_(!enabled) {}
  void operator()();

 private:
  Backend& backend_;
  LinearOperator& a_;
  const Buffer& x_;
  Buffer& y_;
  int applications_ = 0;
  bool tried_;
  std::unique_ptr<ExecutionOps::Recording> recording_;
};

/// z = M^{-1} r for a Hermitian positive definite M that approximates A.
class Preconditioner {
 public:
  virtual ~Preconditioner() = default;
  virtual void apply(const Buffer& r, Buffer& z) = 0;
  /// A diagonal M's inverse (apply = multiply by it), which the CG then applies inside its update pass
  /// (SolverOps::cgUpdate); null: the CG calls apply.
  virtual const Buffer* inverseDiagonal() const { return nullptr; }
};

/// Jacobi: M = diag(A). Entries <= 0 or not finite (voxels the operator does not see) get M = 1, which
/// leaves those components as plain CG would.
class DiagonalPreconditioner final : public Preconditioner {
 public:
  DiagonalPreconditioner(Backend& backend, const std::vector<double>& diagonal);
  /// M = diag(a + lambda b) without forming it on the host first (a, b of equal length).
  DiagonalPreconditioner(Backend& backend, const std::vector<double>& a, double lambda, const std::vector<double>& b);
  /// M = diag(alpha a + beta b) from diagonals already in the backend's memory (real parts of n elements;
  /// b null: beta is a constant term, as Backend::reciprocalDiagonal): built there, nothing crosses to the host.
  DiagonalPreconditioner(Backend& backend, const Buffer& a, double alpha, const Buffer* b, double beta, index_t n);
  void apply(const Buffer& r, Buffer& z) override;
  const Buffer* inverseDiagonal() const override { return inverse_.get(); }
  index_t size() const { return n_; }

 private:
  Backend& backend_;
  index_t n_;
  std::unique_ptr<Buffer> inverse_;
};

struct CgOptions {
  int maxIterations = 60;   ///< Stone et al.'s 60
  double tolerance = 0;     ///< stop when ||b - A x|| <= tolerance ||b||; 0: iterations only
  /// Track phi(x) + objectiveOffset per iteration (two extra dot products). With objectiveOffset = ||d||^2
  /// the value is the least-squares objective ||F x - d||^2 + lambda ||W x||^2 itself.
  bool trackObjective = true;
  double objectiveOffset = 0;
  /// x holds an initial guess on entry (warm start: the previous solution when only lambda changed).
  /// Otherwise x is set to zero and the first operator application is saved.
  bool warmStart = false;
  /// Progress fractions spanned by the iterations, and the text reported with each.
  double progressFrom = 0, progressTo = 1;
  std::string stage = "CG";
  /// Iterations queued between two reads of the solver's scalars on a GPU (backend/solver_ops.hpp); 0: the
  /// rule of readWindow. The result does not depend on it (the kernels stop themselves); progress, the
  /// observer and a cancel then act per window. The CPU reads after every iteration.
  int readEvery = 0;
  /// Record the operator application once and replay it (ExecutionOps::record: one CUDA graph launch instead of
  /// one per kernel) from the second iteration on, where the backend can; the result is the same bits.
  bool recordOperator = true;
};

struct CgIterate {
  int iteration = 0;             ///< 0: the initial guess
  double relativeResidual = 0;   ///< ||b - A x|| / ||b|| (the recursively updated residual)
  double objective = 0;          ///< phi(x) + objectiveOffset; NaN when not tracked
};

struct CgResult {
  int iterations = 0;            ///< operator applications inside the loop
  bool converged = false;        ///< reached the tolerance
  std::string stopReason;        ///< "iterations" | "tolerance" | "zero right-hand side" | "breakdown"
  std::vector<CgIterate> history;
  nlohmann::json toJson() const;  ///< {"iterations", "converged", "stop", "residual": [...], "objective": [...]}
};

/// Called after every iteration (the GUI's live convergence plot).
using CgObserver = std::function<void(const CgIterate&)>;

/// Iterations a solver queues between reads of its scalars: 1 where they are host memory, `requested` when
/// > 0, else by the problem's size n (deterministic, so a solve's bits never depend on timing): 2^24 / n within
/// [1, 16]: up to 16 for small images, where a read (one round trip, ~20 us on the H100) costs as much as an
/// iteration, 8 at 128^3 (an iteration 0.4 ms on an H200: the device idles while the host reads and queues again,
/// 23.9 against 23.0 ms for 60), 1 from 2^24 elements on (256^3: ~3 ms an iteration).
int readWindow(const SolverOps& ops, index_t n, int requested);

/// The start of iteration j reported (o's progress span and stage text): the cancellation point between
/// iterations. Shared by the CG loops (this file's, recon/iterative_split.cpp's).
void reportIteration(const CgOptions& o, const Progress& progress, int j);

/// Iterate k's record from the CG scalars `v` (kernels::CgLayout for o.maxIterations): ||r_k|| / ||b|| and, when
/// tracked, the objective -Re x^H (b + r) + o.objectiveOffset.
CgIterate cgIterate(const std::vector<double>& v, int k, double bnorm, const CgOptions& o);

/// A window of queued iterations [first, last] replayed from the CG scalars `v` (kernels::CgLayout) as the kernels
/// left them: result.iterations and record(j) for each completed iterate, the stop where the kernels stopped
/// (breakdown, tolerance). True when the solve ended inside the window.
bool replayWindow(const std::vector<double>& v, int first, int last, CgResult& result,
                  const std::function<void(int)>& record);

/// Solves A x = b. x (in/out) and b are buffers of A.size() elements on `backend`. M may be null (plain
/// CG). Reports progress at the start of every iteration, so a cancelled token stops the solve within one
/// iteration (Cancelled is thrown; x then holds the last completed iterate), or on a GPU within the window of
/// queued iterations (readWindow). Throws Error on size mismatch.
CgResult conjugateGradient(Backend& backend, LinearOperator& A, const Buffer& b, Buffer& x, const CgOptions& options,
                           Preconditioner* M = nullptr, const Progress& progress = {},
                           const CgObserver& observer = {});

}  // namespace larmor::solve
