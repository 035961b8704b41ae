#pragma once
// GrappaOps: what GRAPPA's calibration needs beyond the Backend's batched dense linear algebra, one interface
// that each backend provides (Backend::grappaOps(); CPU twin engine/src/cpu/linalg.cpp, CUDA twin cuda/linalg.cu).
// The caller: the calibration of recon/grappa_plan.cpp (Griswold et al., MRM 47:1202, 2002), which solves
// one regularised normal-equation system per kernel and queues the next calibration's work while the device
// factorises.
#include <functional>

#include "larmor/array/array.hpp"
#include "larmor/backend/buffer.hpp"
#include "larmor/ops/linalg.hpp"

namespace larmor {

class GrappaOps {
 public:
  virtual ~GrappaOps() = default;

  /// A queued solve's outcome, read when called: waits for the solve and throws the Error that
  /// Backend::choleskySolveBatched would have thrown. Called at most once; dies before the backend.
  using SolveCheck = std::function<void()>;

  /// Backend::choleskySolveBatched without waiting for the outcome, so that the host can queue further work
  /// while the device factorises (the CUDA backend copies the factorisations' results to pinned host memory in
  /// stream order and reads them in the check: one wait, when the caller chooses). A and B hold the solution
  /// only if the check returns. The CPU solves (and throws) at once and returns an empty check.
  virtual SolveCheck choleskySolveBatchedQueued(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b,
                                                index_t batch) = 0;
};

}  // namespace larmor
