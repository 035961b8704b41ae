// The locally low-rank prior on the GPU: prox_{t LLR} and LLR(x) (maths, shift and blocks:
// larmor/backend/low_rank_ops.hpp; every formula: larmor/kernels/low_rank_math.hpp, shared with the CPU twin
// engine/src/cpu/low_rank.cpp, the reference).
//
// One kernel launch for all blocks, one thread block per Casorati block (correctness first, no tuning):
//   1. the T x T Gram G = C^H C in double into shared memory (a thread per entry of the upper triangle, summing
//      over the block's rows in order), V = I;
//   2. Jacobi sweeps of rounds of T/2 disjoint rotations: threads < T/2 compute one rotation each from G, a
//      barrier that also tells whether any pair rotates (__syncthreads_or), then G J (a thread per row of a
//      pair's two columns), a barrier, J^H (G J) and V J (a thread per column of a pair's two rows), a barrier;
//      the same rotations in the same order as the CPU's loops, so the twins differ by rounding (FMA) only;
//   3. f_i = max(0, 1 - t / sqrt(lambda_i)), W = V diag(f) V^H over G's storage, then each pixel's time series
//      (a row of C, copied to the thread's registers first) becomes its row of C W, in place: the blocks are
//      disjoint, so no two thread blocks touch a pixel.
// Shared memory is 32 T^2 bytes and a little (T = 64: 130 KiB, above the 48 KiB default, so the kernel asks for
// the device's opt-in limit; a device whose limit is below a T's need is refused by name). nuclearNorm's kernel
// stops after step 2 and writes each block's sum of sigma_i; the host adds them in block order, as the CPU does.
//
// Registered for CudaBackend with makeLowRankOps (engine/src/backend/low_rank_ops.cpp) by a static initialiser
// of this plugin, so the Backend class needs no getter for it.
#include <cuda_runtime.h>

#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "check.hpp"
#include "cuda_backend.hpp"
#include "larmor/backend/low_rank_ops.hpp"
#include "larmor/kernels/low_rank_math.hpp"
#include "memory.hpp"

namespace larmor::cuda {
namespace {

using kernels::LlrBlock;
using kernels::LlrGeometry;
using kernels::LlrRotation;
using kernels::Zd;

constexpr int kLlrThreads = 256;

/// Dynamic shared memory of a block: G and V (n x n each), a round's rotations, f.
std::size_t sharedBytes(const LlrGeometry& g) {
  const auto n = static_cast<std::size_t>(g.frames);
  return 2 * n * n * sizeof(Zd) + static_cast<std::size_t>(g.players() / 2) * sizeof(LlrRotation) + n * sizeof(double);
}

/// Steps 1 and 2 above: the Gram of the thread block's Casorati block into g, its eigen-decomposition (lambda on
/// g's diagonal, eigenvectors in v).
__device__ void decompose(const float* x, const LlrGeometry& geo, const LlrBlock& blk, Zd* g, Zd* v,
                          LlrRotation* round) {
  const int n = static_cast<int>(geo.frames), players = geo.players(), half = players / 2;
  for (int e = threadIdx.x; e < n * n; e += blockDim.x) {
    kernels::llrGramStore(g, x, geo, blk, e);
    v[e] = Zd{e % (n + 1) == 0 ? 1.0 : 0.0, 0.0};
  }
  __syncthreads();
  const double trace = kernels::llrTrace(g, n);
  for (int sweep = 0; sweep < kernels::kLlrMaxSweeps; ++sweep) {
    bool rotated = false;
    for (int r = 0; r < players - 1; ++r) {
      int mine = 0;
      if (static_cast<int>(threadIdx.x) < half) {
        int p = 0, q = 0;
        kernels::llrPair(r, threadIdx.x, players, p, q);
        const LlrRotation rot = q < n ? kernels::llrRotation(g[p + n * p].re, g[q + n * q].re, g[p + n * q], trace, p, q)
                                      : LlrRotation{1.0, 0.0, 0.0, p, q, 0};
        round[threadIdx.x] = rot;
        mine = rot.apply;
      }
      if (!__syncthreads_or(mine)) continue;  // the same answer in every thread
      rotated = true;
      for (int w = threadIdx.x; w < half * n; w += blockDim.x) {
        const LlrRotation& rot = round[w / n];
        if (rot.apply) kernels::llrRotateColumns(g, n, w % n, rot);
      }
      __syncthreads();
      for (int w = threadIdx.x; w < half * n; w += blockDim.x) {
        const LlrRotation& rot = round[w / n];
        if (!rot.apply) continue;
        kernels::llrRotateRows(g, n, w % n, rot);
        kernels::llrRotateColumns(v, n, w % n, rot);
      }
      __syncthreads();
    }
    if (!rotated) break;
  }
}

/// Norm = false: x <- prox_{t LLR}(x) block by block. Norm = true: sums[b] = the block's sum of sigma_i.
template <bool Norm>
__global__ void __launch_bounds__(kLlrThreads) llrKernel(float* x, LlrGeometry geo, double t, double* sums) {
  extern __shared__ double shared[];
  const int n = static_cast<int>(geo.frames);
  Zd* g = reinterpret_cast<Zd*>(shared);
  Zd* v = g + n * n;
  auto* round = reinterpret_cast<LlrRotation*>(v + n * n);
  auto* f = reinterpret_cast<double*>(round + geo.players() / 2);
  const LlrBlock blk = kernels::llrBlock(geo, blockIdx.x);
  decompose(x, geo, blk, g, v, round);
  if (static_cast<int>(threadIdx.x) < n) {
    const double sigma = kernels::llrSingularValue(g[threadIdx.x * (n + 1)].re);
    f[threadIdx.x] = Norm ? sigma : kernels::llrShrink(sigma, t);
  }
  __syncthreads();
  if constexpr (Norm) {
    if (threadIdx.x == 0) {
      double s = 0.0;
      for (int i = 0; i < n; ++i) s += f[i];
      sums[blockIdx.x] = s;
    }
  } else {
    for (int e = threadIdx.x; e < n * n; e += blockDim.x) g[e] = kernels::llrFilterEntry(v, f, n, e % n, e / n);
    __syncthreads();
    for (std::int64_t r = threadIdx.x; r < blk.rows(); r += blockDim.x) kernels::llrFilterRow(x, geo, blk, r, g);
  }
}

class CudaLowRankOps final : public LowRankOps {
 public:
  explicit CudaLowRankOps(CudaBackend& backend) : be_(backend) {}

  void llrProx(Buffer& x, const Shape& image, index_t block, double t, std::array<index_t, 2> shift) override {
    const LlrGeometry g = geometry(image, block, shift, "llr prox");
    require(t >= 0 && std::isfinite(t), "llr prox: t must be finite and >= 0");
    auto* px = static_cast<float*>(elements(x, image.size(), "llr prox"));
    if (t == 0) return;
    std::lock_guard lock(be_.mutex());
    launch<false>(px, g, t, nullptr, "llr prox");
  }

  double nuclearNorm(const Buffer& x, const Shape& image, index_t block, std::array<index_t, 2> shift) override {
    const LlrGeometry g = geometry(image, block, shift, "llr nuclear norm");
    // The kernel reads x only; it takes a non-const pointer because the prox shares it.
    auto* px = const_cast<float*>(static_cast<const float*>(elements(x, image.size(), "llr nuclear norm")));
    std::vector<double> sums(static_cast<std::size_t>(g.blocks()));
    {
      std::lock_guard lock(be_.mutex());
      double* partials = blockSums(g.blocks());
      launch<true>(px, g, 0.0, partials, "llr nuclear norm");
      be_.download(sums.data(), *sums_, sums.size() * sizeof(double));
    }
    double total = 0.0;
    for (double s : sums) total += s;
    return total;
  }

 private:
  /// The buffer's device pointer, checked to be this backend's and to hold n complex elements.
  const void* elements(const Buffer& b, index_t n, const char* op) const {
    const auto* d = dynamic_cast<const DeviceBuffer*>(&b);
    require(d && d->allocator() == &be_.allocator(), [&] {
      return std::string(op) + ": the buffer belongs to another backend (" + be_.info().id + " expected)";
    });
    require(static_cast<std::size_t>(n) * sizeof(cfloat) <= b.bytes(), [&] {
      return std::string(op) + ": " + std::to_string(n) + " elements exceed a buffer of " +
             std::to_string(b.bytes() / sizeof(cfloat));
    });
    return b.ptr();
  }
  void* elements(Buffer& b, index_t n, const char* op) const {
    return const_cast<void*>(elements(static_cast<const Buffer&>(b), n, op));
  }

  /// `blocks` doubles of device memory for the blocks' sums, kept between calls; under the backend's mutex.
  double* blockSums(index_t blocks) {
    const std::size_t bytes = static_cast<std::size_t>(blocks) * sizeof(double);
    if (!sums_ || sums_->bytes() < bytes) sums_ = be_.allocate(bytes);
    return static_cast<double*>(sums_->ptr());
  }

  /// One launch of llrKernel<Norm> over every block, on the backend's stream; under the backend's mutex.
  template <bool Norm>
  void launch(float* x, const LlrGeometry& g, double t, double* sums, const char* op) {
    LARMOR_CUDA_CHECK(cudaSetDevice(be_.device()));
    require(g.blocks() < (index_t{1} << 31), std::string(op) + ": 2^31 blocks or more are not supported");
    const std::size_t bytes = sharedBytes(g);
    int optin = 0;
    LARMOR_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, be_.device()));
    require(bytes <= static_cast<std::size_t>(optin), [&] {
      return std::string(op) + ": " + std::to_string(g.frames) + " frames need " + std::to_string(bytes) +
             " bytes of shared memory a block; " + be_.info().id + " allows " + std::to_string(optin);
    });
    // Per call, to the device's largest (as cholesky.cu): another backend's call cannot leave a smaller limit.
    LARMOR_CUDA_CHECK(cudaFuncSetAttribute(llrKernel<Norm>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    llrKernel<Norm><<<static_cast<unsigned>(g.blocks()), kLlrThreads, bytes, be_.stream()>>>(x, g, t, sums);
    LARMOR_CUDA_CHECK_LAUNCH();
  }

  CudaBackend& be_;
  std::unique_ptr<Buffer> sums_;
};

std::unique_ptr<LowRankOps> makeCudaLowRankOps(Backend& backend) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  if (!cuda) return nullptr;
  return std::make_unique<CudaLowRankOps>(*cuda);
}

/// Runs when the engine dlopens the plugin.
[[maybe_unused]] const bool kRegistered = (registerLowRankOpsFactory(&makeCudaLowRankOps), true);

}  // namespace
}  // namespace larmor::cuda
