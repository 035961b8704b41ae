#pragma once
// F^H F through Toeplitz embedding (Stone et al. 2008, sec. 2.2 and eq. 3; Fessler et al., IEEE TSP
// 53:3393, 2005; Wajer 2001).
//
// With the raw sums of ops/nufft.hpp, (F^H diag(w) F x)_n = sum_m x_m q(r_n - r_m),
//   q(u) = sum_j w_j exp(2 pi i k_j . u),
// a convolution whose kernel is needed at the differences of two voxel positions, (n - m) / N per
// dimension, n - m in [-(N-1), N-1]. Put on a grid of 2N per dimension (index p holds (p - N) / N), the
// linear convolution becomes a circular one of length 2N that wraps nothing the crop keeps, so
//   F^H diag(w) F x = crop( IFFT( Qhat * FFT( zeropad(x) ) ) ),   Qhat = sqrt(M2) FFT(Q),
// with the centred unitary FFT of backend.hpp (M2 = product of the 2N_d: the factor the unitary
// convolution theorem leaves). Q is Stone's eq. 3 with |phi|^2 -> w: "Q computed at 8N values of x_n"
// (in 3D); it depends only on the trajectory and the matrix, so it is computed once and cached.
//
// Computing Q: q at (p - N)/N is an adjoint transform onto a 2N grid (whose pixels sit at (p - N)/(2N))
// of the weights at the doubled trajectory 2k: exactly with the exact DFT plan (Stone's way), or
// approximately with the NUFFT plan (Fessler's). On disk: $XDG_CACHE_HOME/larmor (else
// ~/.cache/larmor)/q-<hash>.cfl/.hdr with q-<hash>.json beside it, keyed by a hash of the trajectory, the
// weights, the matrix and the method; written atomically; a file whose checksum, shape or centre value
// does not match is recomputed, never trusted.
#include <functional>
#include <memory>
#include <string>

#include "larmor/array/array.hpp"
#include "larmor/backend/backend.hpp"
#include "larmor/ops/fourier_gram.hpp"
#include "larmor/ops/nufft.hpp"
#include "larmor/util/progress.hpp"

namespace larmor::ops {

enum class PsfMethod { Dft, Nufft };
std::string toString(PsfMethod m);

struct PsfOptions {
  PsfMethod method = PsfMethod::Dft;
  DftOptions dft;      ///< trigonometry of the exact DFT
  NufftOptions nufft;  ///< kernel of the NUFFT
};

/// The 2N grid of a geometry: [2 N0, 2 N1, 2 N2] in 3D, [2 N0, 2 N1, 1] in 2D.
Shape psfShape(const NufftGeometry& g);

/// The geometry whose adjoint gives Q: the 2N grid and the trajectory 2k.
NufftGeometry psfGeometry(const NufftGeometry& g);

/// Q[p] = sum_j w_j exp(2 pi i k_j . (p - N) / N) on the 2N grid (raw, unscaled); w_j = 1 where `weights`
/// is null, else weights[j] (M entries: density compensation for a weighted least-squares fit).
/// By exact DFT it is computed on about half of the grid (psfBySymmetry); by NUFFT on all of it.
/// `progress`: the fraction of the boxes done (exact DFT), 0 and 1 (NUFFT); cancellable between boxes.
CArray computePsf(Backend& backend, const NufftGeometry& g, const RArray* weights, const PsfOptions& options,
                  const Progress& progress = {});

/// One raw adjoint transform: `data` [M] onto the image grid of `box` ([N0, N1, N2] of the result).
using PsfAdjoint = std::function<CArray(const NufftGeometry& box, const CArray& data)>;

/// Q as computePsf defines it, from adjoints onto boxes of the 2N grid that cover a little more than half
/// of it: with real weights Q(-u) = conj(Q(u)), so the half u_L >= 0 of the last axis (z in 3D, y in 2D) is
/// transformed and the other half mirrored, except the planes with some u_d = -N_d (no mirror on the grid),
/// transformed directly (O(N^(d-1)) voxels). Each box keeps the phase exact: its extents are 2N_d, N_d or 1,
/// so its trajectory is 2k, k or k/N (the last only where every voxel sits at X = 0), and its offset from
/// the 2N grid's centre goes into the weights as a phase computed in double. `adjoint` does the transforms
/// (one backend's exact DFT plan, or slabs over several GPUs). The half is done in up to 8 boxes of N_L / P
/// >= 8 planes (P a power of two <= 8 dividing N_L: their trajectory k / P stays exact), each reported
/// to `progress` (fraction of the boxes done, cancellable between them).
CArray psfBySymmetry(const NufftGeometry& g, const RArray* weights, const PsfAdjoint& adjoint,
                     const Progress& progress = {});

/// Where Q files go: $XDG_CACHE_HOME/larmor, else $HOME/.cache/larmor, else "" (no cache).
std::string defaultPsfCacheDirectory();
/// 16 hex digits: FNV-1a 64 of the trajectory, weights, matrix, dimensionality and method (with its
/// options: the trig mode, the NUFFT kernel), under a format version.
std::string psfCacheKey(const NufftGeometry& g, const RArray* weights, const PsfOptions& options);

enum class PsfCacheStatus { Disabled, Hit, Miss, Rejected, Unwritable };
std::string toString(PsfCacheStatus s);

/// Q from `directory`/q-<key>.cfl when that file is whole and matches, else computed (and stored there,
/// best effort: an unwritable cache only sets `status`). directory "" disables the cache. `compute`
/// replaces computePsf (e.g. split over several GPUs); it must return Q on psfShape(g).
CArray cachedPsf(Backend& backend, const NufftGeometry& g, const RArray* weights, const PsfOptions& options,
                 const std::string& directory, PsfCacheStatus* status = nullptr,
                 const std::function<CArray()>& compute = {}, const Progress& progress = {});

/// y = scale * F^H diag(w) F x by one FFT pair on the 2N grid; Qhat lives in the backend's memory.
/// Images [N0, N1, N2, batch] (2D: N2 = 1).
class ToeplitzOperator final : public FourierGram {
 public:
  /// `psf`: Q on psfShape(g) (host); `scale`: 1/N for the physics scale E = N^{-1/2} F (docs/conventions.md).
  ToeplitzOperator(Backend& backend, const NufftGeometry& g, const CArray& psf, double scale);
  ~ToeplitzOperator();
  ToeplitzOperator(const ToeplitzOperator&) = delete;
  ToeplitzOperator& operator=(const ToeplitzOperator&) = delete;

  index_t voxels() const override { return image_.size(); }
  const Shape& imageShape() const override { return image_; }
  /// x and y hold voxels() * batch elements; y may be x.
  void apply(const Buffer& x, Buffer& y, index_t batch = 1) override;
  /// Every diagonal entry of the operator: scale * Re Q[centre] = scale * sum_j w_j.
  double diagonal() const override { return diagonal_; }

 private:
  Backend& backend_;
  Shape image_, grid_;
  int rank_;
  std::unique_ptr<Buffer> qhat_;
  std::unique_ptr<Buffer> work_;
  index_t workBatch_ = 0;
  double diagonal_ = 0;
};

}  // namespace larmor::ops
