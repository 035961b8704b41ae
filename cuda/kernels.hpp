#pragma once
// Host-side launchers of the CUDA backend's own kernels (kernels.cu). Each queues work on `launch.stream`
// and returns; counts are validated by the caller (CudaBackend). Pointers are device pointers.
#include <cuda_runtime.h>

#include <cstdint>

namespace larmor::cuda {

using index_t = std::int64_t;

struct Launch {
  cudaStream_t stream = nullptr;
  int multiprocessors = 1;
};

/// Blocks in flight for a grid-stride loop over `work` items: enough to fill the GPU, no more.
unsigned gridFor(index_t work, const Launch& launch);
constexpr int kThreads = 256;

void fill(const Launch& l, float2* x, float2 value, index_t n);
void scale(const Launch& l, float2* x, float2 a, index_t n);
/// y = a x + b y; x may be y.
void axpby(const Launch& l, float2* y, float2 a, const float2* x, float2 b, index_t n);
/// out[i] = op(a[i mod na]) b[i], i < nb; out may be b.
void multiply(const Launch& l, float2* out, const float2* a, index_t na, const float2* b, index_t nb, bool conjA);

/// Deterministic reductions: a fixed number of blocks that depends on n alone, each summing a fixed
/// subsequence in double, then one block summing the partials in a fixed tree order, so the same input
/// gives the same bits on every run. `partials` holds kMaxReduceBlocks double2; the sum lands in *result.
constexpr int kMaxReduceBlocks = 1024;
/// result = sum conj(a[i]) b[i]
void dot(const Launch& l, const float2* a, const float2* b, index_t n, double2* partials, double2* result);
/// result.x = sum |x[i]|^2
void sumSquares(const Launch& l, const float2* x, index_t n, double2* partials, double2* result);

/// out[i] = 1 / (alpha Re a[i] + beta Re b[i]) where finite and > 0, else 1 (b null: no second term).
void reciprocalDiagonal(const Launch& l, float2* out, const float2* a, double alpha, const float2* b, double beta,
                        index_t n);

/// dims of length 4 (dims 0..3); batch = product of the dims from 4 on, equal for both.
void resizeCentred(const Launch& l, float2* dst, const index_t dstDims[4], const float2* src,
                   const index_t srcDims[4], index_t batch);
void sumOfSquares(const Launch& l, float2* out, const float2* in, index_t voxels, index_t coils, index_t batch);
/// GrappaOps::transpose: each n0 x n1 plane of `batch` transposed through 32 x 32 tiles in shared memory (reads and
/// writes both along rows).
void transpose(const Launch& l, float2* dst, const float2* src, index_t n0, index_t n1, index_t batch);

}  // namespace larmor::cuda
