#pragma once
// The Toeplitz operator (ops/toeplitz.hpp) spread over devices by the parity of the frequencies.
//
// T x = crop F_G^H diag(qhat) F_G pad x on the 2N grid G (centred unitary F, backend.hpp). Along an axis of
// length G = 2N take the frequencies of one parity c in {0, 1}: v = 2m + c, m in [-N/2, N/2) (N even). For the
// image, which sits at u in [-N/2, N/2) (index n = u + N/2),
//   exp(-2 pi i (2m + c) u / 2N) = exp(-2 pi i m u / N) phi_c(u),   phi_c(u) = exp(-i pi c u / N),
// so those frequencies of F_G pad x are (1/sqrt 2) F_N (phi_c x): an unpadded transform of length N. Both parities
// together give back every frequency, hence
//   T = sum_c Phi_c^H T_c Phi_c,   T_c = crop F_c^H diag(qhat_c) F_c pad,   qhat_c(m) = qhat(2m + c) / 2,
// each T_c a Toeplitz operator on the grid G with that axis unpadded (half of G), Phi_c = diag(phi_c). Split
// along the first k axes (x; x and y; x, y and z) there are 2^k classes, one per device, each half, a quarter or
// an eighth of the work; qhat_c needs no gathering: it is the transform, on the class's grid, of Q folded,
//   Qf_c(u) = phi_c(u) (Q(u) + (-1)^c Q(u -+ N))   (u in [-N/2, N/2), the partner u - N for u >= 0, u + N below),
// because exp(-2 pi i (2m + c)(u +- N) / 2N) = exp(-2 pi i (2m + c) u / 2N) (-1)^c.
//
// apply(x, y) with x and y on the first device: every other device copies x (peer copy: NVLink between GPUs),
// applies Phi_c^H T_c Phi_c to it and the first adds their results to its own class's (class 0, no phase: phi_0 = 1)
// in the devices' order (deterministic; not the one-device bits: other FFT lengths). Per application each other
// device moves the image twice (2 x 16.8 MB at 128^3) against the z-slab split's (recon/split_cg.hpp) 2 x 16.8 MB per
// device in the middle of the transform; the CG, the prior and the preconditioner stay on the first device.
#include <memory>
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/backend/backend.hpp"
#include "larmor/ops/fourier_gram.hpp"
#include "larmor/ops/nufft.hpp"

namespace larmor::ops {

class ToeplitzOperator;

class SplitToeplitzOperator final : public FourierGram {
 public:
  /// How many classes (devices) a split of `g` over `available` devices uses: the largest power of two <= available
  /// and <= 2^dims whose split axes have even lengths; 1 where no split applies.
  static int classes(const NufftGeometry& g, int available);
  /// `backends`: classes(g, backends.size()) of them are used, backends[0] first (x and y live there). psf: Q on
  /// psfShape(g) (host), scale as ToeplitzOperator's. Each device gets its class's folded Q (made on the host) and
  /// transforms it there.
  SplitToeplitzOperator(const std::vector<Backend*>& backends, const NufftGeometry& g, const CArray& psf, double scale);
  ~SplitToeplitzOperator() override;
  SplitToeplitzOperator(const SplitToeplitzOperator&) = delete;
  SplitToeplitzOperator& operator=(const SplitToeplitzOperator&) = delete;

  index_t voxels() const override { return image_.size(); }
  const Shape& imageShape() const override { return image_; }
  /// x and y hold voxels() * batch elements on backends[0]; y may be x.
  void apply(const Buffer& x, Buffer& y, index_t batch = 1) override;
  double diagonal() const override { return diagonal_; }
  int devices() const { return static_cast<int>(parts_.size()); }

  /// The replicated use: every device runs the same CG on its own copy of the vectors (recon/iterative.cpp) and
  /// replica(d) is device d's operator: apply(x, y) with x and y on device d applies d's class and leaves in y the
  /// sum of every device's classes, added in the classes' order (so the same bits on every device, and every
  /// device's CG takes the same steps). Only the images cross the link (each device's class result to the others,
  /// all at once). The D replicas are applied together by D threads, once each per application (a rendezvous on
  /// the host orders their copies); resetReplicas() before they start, abortReplicas() when one of them fails
  /// (the others then get an Error where they wait).
  FourierGram& replica(int device);
  void resetReplicas();
  void abortReplicas();

  /// Qf_c of class `c` (bit d: the parity along axis d, for d < axes) on the class's grid: the host fold above.
  static CArray foldedPsf(const CArray& psf, const Shape& image, int axes, int c);

 private:
  struct Part;
  struct Rendezvous;
  class Replica;
  void applyReplica(int device, const Buffer& x, Buffer& y, index_t batch);
  std::unique_ptr<Rendezvous> rendezvous_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  Shape image_;
  double diagonal_ = 0;
  std::vector<std::unique_ptr<Part>> parts_;
  std::unique_ptr<Buffer> received_;  ///< another device's result, on the first
  index_t batch_ = 0;
};

}  // namespace larmor::ops
