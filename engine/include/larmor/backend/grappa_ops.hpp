#pragma once
// GrappaOps: what GRAPPA needs beyond the Backend's core, one interface that each backend provides
// (Backend::grappaOps(); CPU twin engine/src/cpu/linalg.cpp and cpu_backend.cpp (transpose), CUDA twin
// cuda/linalg.cu and cuda_backend.cu (transpose)). The callers: the calibration of recon/grappa_plan.cpp
// (Griswold et al., MRM 47:1202, 2002), which solves one regularised normal-equation system per kernel and queues
// the next calibration's work while the device factorises; the image's y transform in recon/grappa.cpp, run as a
// transform along the leading dimension of transposed planes.
#include <functional>

#include "larmor/array/array.hpp"
#include "larmor/backend/buffer.hpp"
#include "larmor/ops/linalg.hpp"

namespace larmor {

class GrappaOps {
 public:
  virtual ~GrappaOps() = default;

  /// Solves A_b X_b = B_b in place (B_b <- X_b) for Hermitian positive definite n x n A_b (overwritten by
  /// its Cholesky factor), b < batch, complex float, column-major (ops/linalg.hpp). Throws Error naming the batch
  /// entry when one is not positive definite.
  virtual void choleskySolveBatched(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b,
                                    index_t batch) = 0;

  /// A queued solve's outcome, read when called: waits for the solve and throws the Error that
  /// choleskySolveBatched would have thrown. Called at most once; dies before the backend.
  using SolveCheck = std::function<void()>;

  /// choleskySolveBatched without waiting for the outcome, so that the host can queue further work
  /// while the device factorises (the CUDA backend copies the factorisations' results to pinned host memory in
  /// stream order and reads them in the check: one wait, when the caller chooses). A and B hold the solution
  /// only if the check returns. The CPU solves (and throws) at once and returns an empty check.
  virtual SolveCheck choleskySolveBatchedQueued(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b,
                                                index_t batch) = 0;

  /// dst[j + n1 (i + n0 b)] = src[i + n0 (j + n1 b)] for i < n0, j < n1, b < batch: each n0 x n1 plane transposed
  /// (its first two dimensions swapped), so that a transform along the second runs as one along the leading
  /// dimension. dst and src must differ.
  virtual void transpose(Buffer& dst, const Buffer& src, index_t n0, index_t n1, index_t batch) = 0;
};

}  // namespace larmor
