#pragma once
// SENSE on Cartesian data (Pruessmann et al., MRM 42:952, 1999): the samples lie on the image's own
// k-space grid, so the Fourier part of the encoding is an FFT followed by the sampling mask,
//   F x = sqrt(N) P FFT_u(x)   (raw sums of ops/nufft.hpp: the unitary FFT of backend.hpp times sqrt(N)),
// P picking the sampled grid points (index c = floor(N/2) is k = 0, as in the Cartesian k-space layout of
// data/dataset.hpp; each point at most once: repeated acquisitions of a line are averaged by the reader),
// and its Gram operator with the physics scale is
//   T = N^{-1} F^H F = IFFT_u diag(m) FFT_u,   m = 1 on the sampled points, 0 elsewhere,
// one FFT pair on the N grid per coil, no 2N embedding (the mask is the Toeplitz kernel's spectrum).
// Every step is a whole-buffer Backend op (FFT, gather, scatter, multiply), so one code serves the CPU
// and the GPU.
#include <cstdint>
#include <memory>
#include <vector>

#include "larmor/backend/backend.hpp"
#include "larmor/ops/fourier_gram.hpp"
#include "larmor/ops/nufft.hpp"

namespace larmor::ops {

/// F and F^H of Cartesian samples: `index` holds the linear grid index (dimension 0 fastest) of each of
/// the M samples, in [0, N), each at most once (Error otherwise).
class CartesianPlan final : public NufftPlan {
 public:
  CartesianPlan(Backend& backend, const Shape& grid, std::vector<std::int64_t> index);
  index_t samples() const override { return static_cast<index_t>(index_.size()); }
  Shape imageShape() const override { return grid_; }
  void adjoint(const Buffer& samples, Buffer& image, index_t batch) override;
  void forward(const Buffer& image, Buffer& samples, index_t batch) override;
  void spreadInterpolate(const Buffer& weights, Buffer& out) override;
  /// out[j] = grid[index[j]]: the samples of one k-space grid (unitary convention: no factor).
  void sample(const Buffer& grid, Buffer& out);
  /// The same for `batch` grids one after the other: out[j + M b] = grid[index[j] + N b].
  void sample(const Buffer& grids, Buffer& out, index_t batch);
  /// The M indices on the backend (uploaded on first use), shared by every batch size: the backend's
  /// gather and scatter add the batch entry's offset N b themselves.
  const Buffer& deviceIndex();

 private:
  Backend& backend_;
  Shape grid_;
  int rank_;
  std::vector<std::int64_t> index_;
  std::unique_ptr<Buffer> deviceIndex_;
  std::unique_ptr<Buffer> work_;
  index_t workBatch_ = 0;
};

/// T = IFFT_u diag(m) FFT_u on images [N0, N1, N2, batch].
class CartesianGram final : public FourierGram {
 public:
  /// The mask of the plan's samples, made on the backend (the plan has checked the indices).
  CartesianGram(Backend& backend, CartesianPlan& plan);
  index_t voxels() const override { return grid_.size(); }
  const Shape& imageShape() const override { return grid_; }
  void apply(const Buffer& x, Buffer& y, index_t batch = 1) override;
  double diagonal() const override { return diagonal_; }

 private:
  Backend& backend_;
  Shape grid_;
  int rank_;
  std::unique_ptr<Buffer> mask_;
  double diagonal_ = 0;
};

/// The FFT rank of a grid: 3 when N2 > 1, else 2.
inline int cartesianRank(const Shape& grid) { return grid[2] > 1 ? 3 : 2; }

}  // namespace larmor::ops
