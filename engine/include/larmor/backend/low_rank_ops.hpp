#pragma once
// The locally low-rank (LLR) prior's kernels for dynamic imaging, one interface with a CPU twin
// (engine/src/cpu/low_rank.cpp) and a CUDA twin (cuda/low_rank.cu); shared arithmetic in
// larmor/kernels/low_rank_math.hpp. Reached through makeLowRankOps(backend), not through the Backend class.
//
// The image is a time series x of complex float [Nx, Ny, T] (dim 0 fastest, T frames on axis 2), in the
// backend's memory. A spatial block b of the image, cut from the shifted image, gives the Casorati matrix
//   C_b(x)[r, k] = (S x)(pixel r of block b, frame k),     rows r < B_x B_y <= B^2, columns k < T,
// the block's pixels (dim 0 fastest inside the block) against time. The prior (Trzasko & Manduca, "Local versus
// global low-rank promotion in dynamic MRI series reconstruction", Proc. ISMRM 2011; Zhang, Pauly & Levesque,
// MRM 73:655, 2015) is the sum of nuclear norms
//   LLR(x) = sum_b ||C_b(x)||_* = sum_b sum_i sigma_i(C_b(x)),
// and its proximal map, block by block, is singular-value soft thresholding (Cai, Candes & Shen, SIAM J.
// Optim. 20:1956, 2010):
//   prox_{t LLR}(x) = argmin_u 1/2 ||u - x||^2 + t LLR(u):   C_b(u) = U soft_t(Sigma) V^H for C_b(x) = U Sigma V^H,
//   soft_t(sigma) = max(0, sigma - t).
//
// Shift and blocks. S is the circular shift by (sx, sy) in [0, Nx) x [0, Ny): (S x)[c] = x[(c - s) mod N]
// (numpy's roll(x, s)), as SparsityOps's wavelet shift; the caller draws it anew each iteration (BART's
// pics -R L with its random shifts), so block edges do not stay in place. The shifted image is tiled from
// its origin by ceil(Nx / B) x ceil(Ny / B) blocks of B x B pixels; the last block along a dim whose length
// is not a multiple of B is partial (N - (ceil(N / B) - 1) B pixels), i.e. zero-padded to B: zero rows of C
// change neither C^H C nor their own (zero) output, so a partial block is the smaller Casorati matrix of its
// pixels. The blocks therefore partition the image (a block at the shifted origin wraps around the image's
// edge), and the map above is the exact prox of the separable sum LLR, for any size. (BART instead
// extends the image periodically to a multiple of B, so pixels near the edge can count twice; for N a
// multiple of B the two partitions agree.) B = 1 thresholds each pixel's time series by its norm.
//
// Computation, per block (no U needed): the T x T Gram G = C^H C (double sums over the rows), its
// eigen-decomposition G = V diag(lambda) V^H by cyclic Jacobi in double (rounds of T/2 disjoint rotations in
// the round-robin order, as Brent & Luk, SIAM J. Sci. Stat. Comput. 6:69, 1985, so that a GPU thread block
// rotates one round at once and both twins do the same rotations in the same order), sigma_i = sqrt(max(0,
// lambda_i)), then
//   C' = C V diag(f) V^H,   f_i = max(0, 1 - t / sigma_i),
// accumulated in double and rounded to float. Double because sigma = sqrt(lambda) loses half the digits:
// in double a singular value of 1e-6 sigma_max still has ~1e-4 relative accuracy, in float one of 1e-3
// sigma_max would already be ~3 % off. Jacobi stops after a sweep with no rotation (a pair is
// rotated while |G_pq| > 1e-14 sqrt(G_pp G_qq) and > 1e-16 trace G) or after 30 sweeps.
// Cost per block of m = B^2 rows: ~4 m T^2 flops for G (one triangle), 8 m T^2 for C', 8 T^3 for
// V diag(f) V^H, and ~40 T^3 a Jacobi sweep (typically 6 to 10 sweeps); so per image O(Nx Ny T^2 (1 + T / B^2)).
// Memory: on the GPU no workspace for the prox (blocks are disjoint and rewritten in place) and one double a
// block for nuclearNorm; 48 T^2 bytes a thread on the CPU.
// Limits: 1 <= T <= kMaxFrames (64: on the GPU a block's G and V, 32 T^2 bytes, sit in shared memory);
// block >= 1. t = 0 returns x unchanged (bit for bit). nuclearNorm is LLR(x) for the same blocks and
// shift, the sum over blocks (in block order, block index = bx + ceil(Nx / B) by) of each block's sum of
// sigma_i, in double; a block's sigmas carry the Gram's rounding, ~1e-8 sigma_max absolute for a zero one.
#include <array>
#include <memory>
#include <string>

#include "larmor/array/array.hpp"
#include "larmor/backend/buffer.hpp"
#include "larmor/kernels/low_rank_math.hpp"
#include "larmor/util/error.hpp"

namespace larmor {

class Backend;

class LowRankOps {
 public:
  virtual ~LowRankOps() = default;

  /// Frames (T) at most.
  static constexpr index_t kMaxFrames = 64;
  /// The usual block edge B.
  static constexpr index_t kDefaultBlock = 8;

  /// x <- prox_{t LLR}(x) in place for the [Nx, Ny, T] `image`, blocks of `block` x `block` pixels after the
  /// circular shift `shift` (each in [0, N_d)); t >= 0.
  virtual void llrProx(Buffer& x, const Shape& image /*[Nx,Ny,T]*/, index_t block, double t,
                       std::array<index_t, 2> shift) = 0;

  /// LLR(x) = sum over the same blocks of the nuclear norms of their Casorati matrices, in double.
  virtual double nuclearNorm(const Buffer& x, const Shape& image, index_t block, std::array<index_t, 2> shift) = 0;

  /// The tiling of `image` (checked: a non-empty [Nx, Ny, T] with 1 <= T <= kMaxFrames, block >= 1, shift in
  /// range; Error naming `op` otherwise).
  static kernels::LlrGeometry geometry(const Shape& image, index_t block, std::array<index_t, 2> shift,
                                       const char* op) {
    const std::string what = std::string(op) + ": ";
    require(image.size() > 0 && image.size() == image[0] * image[1] * image[2],
            what + "the image must be a non-empty [Nx, Ny, T], got " + image.str());
    require(image[2] <= kMaxFrames,
            what + std::to_string(image[2]) + " frames exceed the " + std::to_string(kMaxFrames) + " supported");
    require(block >= 1, what + "the block must be >= 1, got " + std::to_string(block));
    for (std::size_t d = 0; d < 2; ++d)
      require(shift[d] >= 0 && shift[d] < image[d], what + "shift " + std::to_string(shift[d]) + " along dim " +
                                                        std::to_string(d) + " is outside [0, " +
                                                        std::to_string(image[d]) + ")");
    return kernels::llrGeometry(image[0], image[1], image[2], block, shift[0], shift[1]);
  }
};

/// The LLR kernels on `backend`'s memory: the CPU twin for a backend whose info().gpu is false, else the
/// implementation a GPU plugin registered for that backend (the CUDA plugin registers its own when it is
/// loaded); throws Error where there is none. The result keeps a reference to `backend`: it must not outlive it.
std::unique_ptr<LowRankOps> makeLowRankOps(Backend& backend);

/// For GPU plugins: a factory that returns its LowRankOps for a backend it made, nullptr for any other.
using LowRankOpsFactory = std::unique_ptr<LowRankOps> (*)(Backend& backend);
/// Adds a GPU plugin's factory (thread-safe; the plugin stays loaded for the life of the process).
void registerLowRankOpsFactory(LowRankOpsFactory factory);

}  // namespace larmor
