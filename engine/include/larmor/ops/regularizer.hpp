#pragma once
// The prior term ||W rho||^2 of Stone et al. (2008, eq. 1) and Haldar et al. (MRM 59:810, 2008):
//   - Tikhonov:    W = I (energy of the image);
//   - smoothness:  W = D, first-order forward differences along every axis of extent > 1 (stacked);
//   - anatomical:  W = diag(w) D, the differences weighted per pair of neighbours by an edge map of a
//                  high-SNR reference image: w is small where the reference has an edge between the two
//                  voxels, so edges known from anatomy are not smoothed away while flat regions are
//                  (Haldar et al. 2008, "anatomically constrained reconstruction"; Stone et al. 2008,
//                  sec. 2.2: "W is derived from these reference images").
// The solver needs W^H W x (inside the normal operator), ||W x||^2 (objective, L-curve) and diag(W^H W)
// (Jacobi preconditioner). Images are [N0, N1, N2] single images in the backend's memory.
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/backend/backend.hpp"

namespace larmor::ops {

/// The prior of an iterative reconstruction. The first three are the l2 priors of this file (--method cg);
/// Tv and Wavelet are the l1 sparsity priors of compressed sensing (--method cs, backend/sparsity_ops.hpp).
/// Their names are in the settings table (recon/settings_table.cpp: iterative.regularizer).
enum class RegularizerKind { Tikhonov, FiniteDifference, Anatomical, Tv, Wavelet };
inline bool isSparsityPrior(RegularizerKind k) { return k == RegularizerKind::Tv || k == RegularizerKind::Wavelet; }

class Regularizer {
 public:
  virtual ~Regularizer() = default;
  virtual RegularizerKind kind() const = 0;
  index_t size() const { return dims_[0] * dims_[1] * dims_[2]; }
  /// y = W^H W x (x, y distinct buffers of size() elements).
  virtual void applyNormal(const Buffer& x, Buffer& y) = 0;
  /// y += alpha W^H W x: the normal operator's lambda term, in one pass where the backend has one.
  virtual void applyNormalAdd(const Buffer& x, Buffer& y, double alpha) = 0;
  /// ||W x||^2.
  virtual double normSquared(const Buffer& x) = 0;
  /// diag(W^H W) into `out` (size() elements, real parts), in the backend's memory: the Jacobi
  /// preconditioner is built there.
  virtual void diagonal(Buffer& out) const = 0;
  /// The same, downloaded (tests, host-side checks).
  std::vector<double> diagonal() const;

 protected:
  Regularizer(Backend& backend, const index_t dims[3]) : backend_(backend), dims_{dims[0], dims[1], dims[2]} {}
  Backend& backend_;
  index_t dims_[3];
};

/// Per-axis weights of the anatomical prior: weights[a][i] multiplies the difference between voxel i and
/// its neighbour i + e_a (the entry on the last plane is unused). `delta` is the edge scale used.
struct AnatomicalWeights {
  std::array<RArray, 3> weights;
  double delta = 0;
};

/// w_a(i) = 1 / sqrt(1 + (|ref(i + e_a) - ref(i)| / delta)^2), on the reference's magnitude: about 1 where
/// the reference is flat (differences << delta), about delta / |jump| across an edge. The Lorentzian-type
/// edge-stopping function of robust smoothing (Perona & Malik 1990; Charbonnier et al. 1997) applied once
/// to the reference, which is what makes the prior quadratic (Haldar et al. 2008 keep it quadratic so the
/// reconstruction stays a linear least-squares problem that CG solves). delta <= 0 chooses it from the
/// reference's own statistics: delta = max(3 * median, 0.02 * max) of all neighbour differences (the median
/// measures the noise of a noisy reference, where most pairs lie inside flat regions; the 2 % floor keeps
/// a noiseless piecewise-constant one, whose median difference is 0, from marking every small step as an
/// edge).
/// Computed by the CPU backend's ops (the ones makeAnatomical runs on any backend).
AnatomicalWeights anatomicalWeights(const CArray& reference, const index_t dims[3], double delta = 0);

/// The automatic edge scale max(3 median, 0.02 max) of the neighbour differences of |reference| (one image
/// [dims] in the backend's memory), 1 for a constant reference; throws Error when a voxel is not finite.
double edgeScale(Backend& backend, const Buffer& reference, const index_t dims[3]);

std::unique_ptr<Regularizer> makeTikhonov(Backend& backend, const index_t dims[3]);
std::unique_ptr<Regularizer> makeFiniteDifference(Backend& backend, const index_t dims[3]);
/// The weighted differences, built where `reference` lives (dims[0] * dims[1] * dims[2] elements in the
/// backend's memory): edge scale, weights and their squares never leave the device. delta <= 0: edgeScale;
/// `deltaUsed` receives the scale used.
std::unique_ptr<Regularizer> makeAnatomical(Backend& backend, const index_t dims[3], const Buffer& reference,
                                            double delta = 0, double* deltaUsed = nullptr);
/// The same from a host image (uploaded).
std::unique_ptr<Regularizer> makeAnatomical(Backend& backend, const index_t dims[3], const CArray& reference,
                                            double delta = 0);
/// From weights computed elsewhere (tests, a GUI that shows the edge map).
std::unique_ptr<Regularizer> makeWeightedFiniteDifference(Backend& backend, const index_t dims[3],
                                                          const AnatomicalWeights& weights);

}  // namespace larmor::ops
