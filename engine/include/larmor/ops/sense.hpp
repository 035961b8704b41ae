#pragma once
// Coil sensitivities inside the encoding operator (CG-SENSE: Pruessmann et al., MRM 46:638, 2001, the
// paper Stone et al. cite as [28]): E = [F S_1; ...; F S_C] with the physics scale N^{-1/2} of
// docs/conventions.md, so that
//   E^H d   = N^{-1/2} sum_c S_c^H F^H d_c                (the right-hand side, Stone's F^H d)
//   E^H E x = sum_c S_c^H (N^{-1} F^H F) S_c x           (Toeplitz per coil: one Q serves every coil)
// and the normal operator of Stone's eq. 2 with a prior weight: A = E^H E + lambda W^H W.
// Coils are kept in groups of consecutive coils, one buffer per group [voxels, coils of the group], and each
// coil is a view into its group (Backend::view: E and E^H, per coil, with no second copy): the normal
// operator applies T to a whole group at once (one batched FFT pair or Toeplitz apply per group, not per
// coil), after one broadcast product S_g x, and sums the coils with a matrix-vector product,
//   sum_{c in g} S_c^H (T S_c x) = [conj(S_g) .* T S_g x] 1   (gemm, [voxels, coils] x [coils, 1]).
// Groups hold at most kCoilGroupElements values, which bounds the batched workspaces (T's 2^d grid).
#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include "larmor/util/progress.hpp"
#include "larmor/array/array.hpp"
#include "larmor/backend/backend.hpp"
#include "larmor/ops/nufft.hpp"
#include "larmor/ops/regularizer.hpp"
#include "larmor/ops/toeplitz.hpp"
#include "larmor/solve/cg.hpp"

namespace larmor::ops {

/// Coil sensitivity maps in the backend's memory: coil groups, every coil a view into its group.
class CoilSensitivities {
 public:
  /// maps [N0, N1, N2, coils] (host).
  CoilSensitivities(Backend& backend, const CArray& maps, index_t voxels, index_t coils);
  /// maps [N0, N1, N2, coils] already on the backend (ESPIRiT's result, moved in): split into the coil and
  /// group buffers there, the sum of squares from the backend's root sum of squares (squared in double).
  CoilSensitivities(Backend& backend, std::unique_ptr<Buffer> maps, index_t voxels, index_t coils);
  index_t coils() const { return static_cast<index_t>(maps_.size()); }
  index_t voxels() const { return voxels_; }
  const Buffer& map(index_t c) const { return *maps_[static_cast<std::size_t>(c)]; }
  /// Coil groups: group g holds coils [g * groupSize(), min(coils, (g + 1) * groupSize())) contiguously.
  index_t groupSize() const { return groupSize_; }
  index_t groups() const { return static_cast<index_t>(groups_.size()); }
  index_t groupCoils(index_t g) const { return std::min(coils() - g * groupSize_, groupSize_); }
  const Buffer& group(index_t g) const { return *groups_[static_cast<std::size_t>(g)]; }
  /// The most values a group buffer holds (unless one coil alone has more): 2^23 (64 MiB).
  static constexpr index_t kCoilGroupElements = index_t(1) << 23;
  /// sum_c |S_c|^2 per voxel (host): the diagonal of sum_c S_c^H S_c. For maps made on the backend in one
  /// group, downloaded on the first call (a GPU reconstruction needs only rootSumOfSquares).
  const std::vector<double>& sumOfSquares() const;
  /// sqrt(sum_c |S_c|^2) per voxel on the backend (imaginary part 0): the coil-combined image's weight,
  /// and squared the diagonal above, with no round trip through the host.
  const Buffer& rootSumOfSquares() const { return *rss_; }

 private:
  void uploadRoot();  ///< rss_ = sqrt(sos_)
  void viewCoils(index_t coils);  ///< maps_: one view per coil into groups_ (declared after them: views die first)
  Backend& backend_;
  index_t voxels_, groupSize_ = 1;
  std::vector<std::unique_ptr<Buffer>> groups_, maps_;  // maps_ views groups_: destroyed first
  std::unique_ptr<Buffer> rss_;
  mutable std::vector<double> sos_;
};

using PlanFactory = std::function<std::unique_ptr<NufftPlan>(const NufftGeometry&)>;

/// A = sum_c S_c^H T S_c + lambda W^H W on single images [N0, N1, N2] (T = N^{-1} F^H F: Toeplitz or
/// Cartesian, ops/fourier_gram.hpp).
class NormalOperator final : public solve::LinearOperator {
 public:
  /// coils and regularizer may be null (one coil with S = 1; no prior). Not owned.
  NormalOperator(Backend& backend, FourierGram& toeplitz, const CoilSensitivities* coils,
                 Regularizer* regularizer, double lambda);
  index_t size() const override { return toeplitz_.voxels(); }
  void apply(const Buffer& x, Buffer& y) override;
  void setLambda(double lambda) { lambda_ = lambda; }
  double lambda() const { return lambda_; }
  /// diag(A) (host): T's diagonal times sum_c |S_c|^2, plus lambda diag(W^H W). The Jacobi preconditioner.
  std::vector<double> diagonal() const;

 private:
  Backend& backend_;
  FourierGram& toeplitz_;
  const CoilSensitivities* coils_;
  Regularizer* regularizer_;
  double lambda_;
  std::unique_ptr<Buffer> batch_, ones_;
};

/// The encoding operator with its plan: E x and E^H d for data held per coil in the backend's memory.
class SenseEncoding {
 public:
  /// plan: F (not owned); coils may be null; scale = N^{-1/2}.
  SenseEncoding(Backend& backend, NufftPlan& plan, const CoilSensitivities* coils, double scale);
  index_t samples() const { return plan_.samples(); }
  index_t voxels() const { return plan_.imageShape().size(); }
  index_t coils() const { return coils_ ? coils_->coils() : 1; }
  /// out = E^H d; data holds one buffer of M samples per coil. Reports progress (fraction of the coils
  /// done) after each coil: an exact-DFT adjoint takes seconds per coil.
  void adjoint(const std::vector<std::unique_ptr<Buffer>>& data, Buffer& out, const Progress& progress = {});
  /// ||E x - d||^2 (forward transforms, one per coil).
  double residualSquared(const Buffer& x, const std::vector<std::unique_ptr<Buffer>>& data);

 private:
  Backend& backend_;
  NufftPlan& plan_;
  const CoilSensitivities* coils_;
  double scale_;
  std::unique_ptr<Buffer> image_, samples_;
};

}  // namespace larmor::ops
