#pragma once
// The PCG of a 3D Toeplitz problem spread over several devices by z slabs (GPU.Multi's second half: Stone et al.
// 2008 split F^H d over GPUs, recon/iterative_slabs.cpp; this splits the 60 iterations that follow).
//
//   (T + lambda W^H W) x = b,  T x = crop(F^H diag(q) F pad(x)) on the 2N grid G (ops/toeplitz.hpp), one coil.
//
// Device d holds the image planes z in [z0_d, z0_d + nz_d) of x, r, p, q, z, b and the preconditioner; the
// CG's inner products are summed over the devices in a fixed order (deterministic; not the one-device bits).
//
// T on slabs. F is separable: F = F_z F_xy (each centred and unitary), so
//   F^H D F = F_xy^H (F_z^H D F_z) F_xy.
// Each device pads its planes to G0 x G1 and transforms them over x and y (Backend::fft, rank 2). Along z a
// column needs every device's planes, so the columns are shared out by bands of y rows: device d applies
// F_z^H D F_z to the rows [yb_d, yb_d + ny_d) of G1 of every device's planes, reading and writing them where they
// are (Backend::fftGramColumns: over NVLink for another GPU's; only the N2 planes of the image's box, the others
// being zero going in and unused coming out) with its band of q; then each device transforms back and crops its
// planes. Per application each GPU reads and writes (1 - 1/D) of its band's rows on the other devices (2 x 16.8 MB
// at 128^3 on two GPUs), inside the z pass: no copies.
//
// W^H W on slabs. The priors' forward differences (ops/regularizer.hpp) couple a plane with its neighbours only,
// and their weights depend only on the two voxels of a pair; a device builds its prior on its planes with one
// halo plane on each side where a neighbour has one (the reference's planes likewise, with the whole image's
// edge scale), fills the halos from the neighbours' p each iteration, and keeps the interior of W^H W p and of
// diag(W^H W): both equal the whole image's there.
//
// The scalars. Each device forms its share of an iteration's inner products (Re <p, q>; ||r||^2, Re <r, z> and
// the objective's Re <x, b>, Re <x, r>) in its own scalars; after waiting for the others it reads every device's
// shares and sums them in the devices' order (SolverOps::cgCombine), so every device steps with the same alpha
// and beta and stops at the same iteration, and the host, reading the primary's scalars once per window, never
// waits in the middle of an iteration (kernels/solver_math.hpp). Deterministic; not the one-device bits.
#include <memory>
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/backend/backend.hpp"
#include "larmor/ops/regularizer.hpp"
#include "larmor/solve/cg.hpp"
#include "larmor/util/progress.hpp"

namespace larmor::recon {

class SplitToeplitzCg {
 public:
  /// The prior W: its kind (Tikhonov, FiniteDifference, Anatomical); for Anatomical the reference image
  /// [N0, N1, N2] (host) and the whole image's edge scale delta (> 0).
  struct Prior {
    ops::RegularizerKind kind = ops::RegularizerKind::Tikhonov;
    const CArray* reference = nullptr;
    double delta = 0;
  };
  /// Whether the split runs: three dimensions, at least as many planes as devices, every device able to run
  /// the z pass for the grid (Backend::canFftGramColumns) and reaching every other's memory (canReadPeer), a grid
  /// row band per device, and a prior it knows.
  static bool applies(const std::vector<Backend*>& backends, const index_t dims[3], const Shape& grid,
                      ops::RegularizerKind prior);
  /// backends[0] is the primary, where `kernel` (ToeplitzOperator::kernel(): the diagonal of the 2N grid `grid`,
  /// scale included) lives and where solve() takes b and x. gramDiagonal: T's diagonal entry (the Jacobi
  /// preconditioner's). Copies what each device needs (its band of the kernel, its prior) there.
  SplitToeplitzCg(const std::vector<Backend*>& backends, const index_t dims[3], const Buffer& kernel, const Shape& grid,
                  double gramDiagonal, const Prior& prior);
  ~SplitToeplitzCg();
  SplitToeplitzCg(const SplitToeplitzCg&) = delete;
  SplitToeplitzCg& operator=(const SplitToeplitzCg&) = delete;

  /// PCG for lambda with b and x (N0 N1 N2 elements each) on the primary: options, result and progress as
  /// solve::conjugateGradient's (x holds the initial guess when options.warmStart; the scalars stay on the devices
  /// and the host reads them once per window, readEvery as there; recordOperator does not apply). precondition:
  /// Jacobi, diag(T) + lambda diag(W^H W).
  solve::CgResult solve(double lambda, const Buffer& b, Buffer& x, const solve::CgOptions& options, bool precondition,
                        const Progress& progress = {}, const solve::CgObserver& observer = {});

  /// y = (T + lambda W^H W) x for x and y on the primary (tests: the operator against the one-device one).
  void apply(double lambda, const Buffer& x, Buffer& y);

  int devices() const { return static_cast<int>(parts_.size()); }

 private:
  struct Part;
  void scatter(const Buffer& from, std::unique_ptr<Buffer> Part::*to);  ///< primary's image -> each part's planes
  void gather(std::unique_ptr<Buffer> Part::*from, Buffer& to);          ///< each part's planes -> primary's image
  void applyParts(double lambda);                                       ///< q = A p on every part
  void waitForEachOther();  ///< every device's queue after the work queued so far on every other
  std::vector<std::unique_ptr<Part>> parts_;
  index_t dims_[3];
  Shape grid_;
  index_t box0_ = 0;  ///< the image's first plane in the grid's z: G2/2 - N2/2
  double gramDiagonal_ = 0;
  ops::RegularizerKind prior_;
};

}  // namespace larmor::recon
