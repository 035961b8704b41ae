#pragma once
// Launchers of the batched Cholesky kernels (cholesky.cu): A_e = L_e L_e^H and A_e X_e = B_e for a few Hermitian
// positive definite matrices of n <= 128 in shared memory, and for 1 x 1 systems. They queue work on
// `l.stream` and return; info[e] = k + 1 when the leading minor of order k + 1 of A_e is not positive definite
// (cuSOLVER's convention), else 0; the caller zeroes `info` first. Counts are validated
// by the caller (CudaBackend::choleskySolveBatched: GrappaOps on the device, linalg.cu); pointers are device pointers.
#include <cstddef>

#include "kernels.hpp"

namespace larmor::cuda {

/// Whether the shared-memory kernels take `batch` n x n systems of `nrhs` right-hand sides on a device whose
/// blocks can opt in to `optinBytes` of shared memory.
bool choleskyInSharedMemoryFits(index_t n, index_t nrhs, index_t batch, int optinBytes);
/// Device bytes of the factor the shared-memory factorisation hands to its solve.
std::size_t choleskyFactorBytes(index_t n, index_t batch);
/// A's lower triangles (float, column-major, leading dimension lda, entries strideA apart) replaced by L, B's
/// columns by the solutions; `factor` holds choleskyFactorBytes(n, batch).
void choleskySolveInSharedMemory(const Launch& l, int optinBytes, float2* A, index_t lda, index_t strideA, float2* B,
                                 index_t ldb, index_t strideB, index_t n, index_t nrhs, index_t batch, double2* factor,
                                 int* info);
/// 1 x 1 systems: A_e = sqrt(a_e), x = (b / l) / l for each of the nrhs right-hand sides.
void choleskySolve1x1(const Launch& l, float2* A, index_t strideA, float2* B, index_t ldb, index_t strideB,
                      index_t nrhs, index_t batch, int* info);

}  // namespace larmor::cuda
