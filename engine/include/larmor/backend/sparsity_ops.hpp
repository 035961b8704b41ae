#pragma once
// The kernels of compressed sensing's sparsity priors (--method cs), one interface that each backend
// provides (Backend::sparsityOps(); CPU twins in engine/src/cpu/, CUDA twins in cuda/). The solver
// (FISTA, solve/fista.hpp) applies one proximal map per iteration and never leaves the backend's memory.
//
// Images are complex [N0, N1, N2] (2D: N2 = 1). Dimensions of length 1 are neither differenced nor
// transformed, so one code path serves 2D, 3D and a [1, Ny, Nz] plane.
//
// Total variation (isotropic; Rudin, Osher & Fatemi 1992), forward differences with a Neumann boundary:
//   TV(u) = sum_v sqrt( sum_d |u(v + e_d) - u(v)|^2 ),   the difference is 0 at the last index of dim d.
// prox_{t TV}(x) = argmin_u 1/2 ||u - x||^2 + t TV(u) has no closed form; it is computed by the fast
// gradient projection (FGP) of Beck & Teboulle (IEEE TIP 18:2419, 2009) on the dual field p (one complex
// vector of 3 components per voxel, |p(v)| <= 1): u = x - t div p. The caller owns p (tvDualElements)
// and passes it back each call, so FISTA's outer iterations warm-start the inner ones (zero it to start
// cold).
//
// Wavelets: the orthonormal Daubechies wavelet with 4 taps (D4; Daubechies 1988), separable over the
// dimensions longer than 1, periodic, several levels; prox of t ||Psi u||_1 over the detail bands (the
// coarsest approximation band is not penalised), made translation invariant by a circular shift that
// the caller draws anew each iteration (cycle spinning; Figueiredo & Nowak 2003; BART's pics -R W):
//   prox(x) = S^-1 Psi^H soft_t(Psi S x),   S = circular shift by `shift`,
//   soft_t(c) = c max(0, 1 - t / |c|)   (complex soft threshold).
#include <array>

#include "larmor/array/array.hpp"
#include "larmor/backend/buffer.hpp"

namespace larmor {

class SparsityOps {
 public:
  virtual ~SparsityOps() = default;

  /// Complex elements of the dual field tvProx needs for `image`: 3 * voxels.
  static index_t tvDualElements(const Shape& image) { return 3 * image.size(); }

  /// x <- prox_{t TV}(x) in place, by `iterations` (>= 1) FGP steps from the dual field `dual`
  /// (tvDualElements(image) elements; updated: pass it back next call to warm-start).
  virtual void tvProx(Buffer& x, const Shape& image, double t, int iterations, Buffer& dual) = 0;

  /// TV(x), accumulated in double.
  virtual double totalVariation(const Buffer& x, const Shape& image) = 0;

  /// x <- S^-1 Psi^H soft_t(Psi S x) in place (see above); shift[d] in [0, N_d).
  virtual void waveletProx(Buffer& x, const Shape& image, double t, const std::array<index_t, 3>& shift) = 0;

  /// ||Psi x||_1 over the detail bands (no shift), accumulated in double.
  virtual double waveletL1(const Buffer& x, const Shape& image) = 0;
};

}  // namespace larmor
