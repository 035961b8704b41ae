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
// Weighted TV (the spatio-temporal and temporal priors of dynamic imaging, recon/dynamic.hpp): per-dimension
// weights w_d >= 0 scale the differences, TV_w(u) = sum_v sqrt( sum_d w_d^2 |u(v + e_d) - u(v)|^2 ), i.e. D is
// replaced by D_w = (w_0 D_0, w_1 D_1, w_2 D_2) everywhere below (u = x - t D_w^H p, the dual step uses
// ||D_w||^2 <= 4 sum_d w_d^2). A dim with w_d = 0 is not differenced (as one of length 1): w = (0, 0, 1) on an
// [Nx, Ny, T] series is TV along time alone (BART's pics -R T with the time bitmask), w = (1, 1, a) spatio-temporal
// TV with time weighted a against space. w = (1, 1, 1) is plain TV, bit for bit.
//
// Wavelets: the orthonormal Daubechies wavelet with 4 taps (D4; Daubechies 1988), separable over the
// dimensions longer than 1, periodic, several levels; prox of t ||Psi u||_1 over the detail bands (the
// coarsest approximation band is not penalised), made translation invariant by a circular shift that
// the caller draws anew each iteration (cycle spinning; Figueiredo & Nowak 2003; BART's pics -R W):
//   prox(x) = S^-1 Psi^H soft_t(Psi S x),   S = circular shift by `shift`,
//   soft_t(c) = c max(0, 1 - t / |c|)   (complex soft threshold).
//
// Details fixed by the implementations (engine/src/cpu/sparsity.cpp, wavelet.cpp; cuda/sparsity.cu, wavelet.cu;
// shared maths in larmor/kernels/sparsity_math.hpp):
//
// TV. "div p" above is D^H p, the adjoint of the forward differences D = (D_0, D_1, D_2) (so minus the usual
// divergence): u = x - t D^H p. The dual field is stored component-major: dual[c * voxels + v] is the
// component along dim c at voxel v (coalesced on the GPU). Components of dims of length 1 are neither read
// nor written. FGP minimises the dual 1/2 ||x - t D^H p||^2 over |p(v)| <= 1 (|p(v)|^2 = sum_c |p_c(v)|^2);
// its gradient in p is -t D u, Lipschitz with constant t^2 ||D||^2 <= 4 d t^2 (d = number of differenced
// dims, each 1-D Neumann difference has norm^2 < 4), so the step is 1 / (4 d t) (Beck & Teboulle's
// 1/(8 lambda) for d = 2). Each call restarts the momentum (t_1 = 1) from the given p:
//   r = p;  repeat: u = x - t D^H r;  p' = P(r + D u / (4 d t));  r = p' + (t_k - 1)/t_{k+1} (p' - p);  p = p'
//   result u = x - t D^H p,   P(q)(v) = q(v) / max(1, |q(v)|).
// t = 0, or an image with no dim longer than 1, leaves x (and the dual) unchanged. Every step is pointwise
// or a stencil, so both backends compute the same float operations (up to FMA contraction).
//
// Wavelets. Filters and band layout: larmor/kernels/sparsity_math.hpp (periodic correlation with
// h = D4 low-pass, g[j] = (-1)^j h[3-j]; after each level along a dim the block holds [approximation |
// detail], Mallat's square decomposition: every level splits the current approximation block along every
// transformed dim). Which dims and how many levels (kernels::waveletGeometry):
//   - a dim is transformed when its length is >= 16 (at least one level leaving >= 8 samples); shorter dims
//     (and dims of length 1) are left alone, so [256, 256, 4] is a 2D transform of each plane and 7x5x1 is
//     not transformed at all (its prox is the identity and its waveletL1 is 0: everything is "coarse");
//   - levels L = the largest (<= 16) with ceil(N_d / 2^L) >= 8 on every transformed dim (256^2: 5,
//     180x230: 4, 128^3: 4);
//   - a transformed dim whose length is not a multiple of 2^L is zero-padded to P_d = ceil(N_d / 2^L) 2^L
//     (after the shift) inside the prox and cropped back after the inverse. Psi is then orthonormal on the
//     padded space only, so for such sizes the prox is an approximation (as BART's is; the soft threshold
//     of the padded coefficients, cropped, is not exactly the prox of the cropped problem). waveletL1 is
//     ||Psi pad(x)||_1 over the detail bands, the quantity the prox shrinks.
// Shift: (S x)[v] = x[(v - shift) mod N] along each transformed dim (numpy's roll(x, shift)); a shift along a
// dim that is not transformed commutes with the prox and is ignored. t = 0 returns x unchanged.
#include <array>
#include <cmath>
#include <string>

#include "larmor/array/array.hpp"
#include "larmor/backend/buffer.hpp"
#include "larmor/kernels/sparsity_math.hpp"

namespace larmor {

class SparsityOps {
 public:
  virtual ~SparsityOps() = default;

  /// Complex elements of the dual field tvProx needs for `image`: 3 * voxels.
  static index_t tvDualElements(const Shape& image) { return 3 * image.size(); }

  /// Per-dimension weights of the differences (weighted TV above); finite, >= 0.
  using TvWeights = std::array<float, 3>;

  /// x <- prox_{t TV_w}(x) in place, by `iterations` (>= 1) FGP steps from the dual field `dual`
  /// (tvDualElements(image) elements; updated: pass it back next call to warm-start).
  virtual void tvProx(Buffer& x, const Shape& image, double t, int iterations, Buffer& dual, const TvWeights& w) = 0;
  /// Plain TV: w = (1, 1, 1).
  void tvProx(Buffer& x, const Shape& image, double t, int iterations, Buffer& dual) {
    tvProx(x, image, t, iterations, dual, TvWeights{1.f, 1.f, 1.f});
  }

  /// TV_w(x), accumulated in double.
  virtual double totalVariation(const Buffer& x, const Shape& image, const TvWeights& w) = 0;
  double totalVariation(const Buffer& x, const Shape& image) { return totalVariation(x, image, TvWeights{1.f, 1.f, 1.f}); }

  /// x <- S^-1 Psi^H soft_t(Psi S x) in place (see above); shift[d] in [0, N_d).
  virtual void waveletProx(Buffer& x, const Shape& image, double t, const std::array<index_t, 3>& shift) = 0;

  /// ||Psi x||_1 over the detail bands (no shift), accumulated in double.
  virtual double waveletL1(const Buffer& x, const Shape& image) = 0;

  // --- additions for tests and callers that need the transform itself ---------------------------------------

  /// Levels, transformed dims and padded lengths of the wavelet of `image` (rule above).
  static kernels::WaveletGeometry waveletGeometry(const Shape& image) {
    const auto d = imageDims(image, "wavelet");
    return kernels::waveletGeometry(d.data());
  }
  /// In place: the multi-level DWT Psi (inverse: Psi^H = Psi^-1) of `data`, an array of the *padded* shape
  /// waveletGeometry(image).padded (no shift, no padding done here), coefficients in the layout above.
  virtual void waveletTransform(Buffer& data, const Shape& image, bool inverse) = 0;

 protected:
  /// [N0, N1, N2] of an image shape of rank <= 3 (or with trailing 1s); throws Error otherwise.
  static std::array<index_t, 3> imageDims(const Shape& image, const char* op) {
    require(image.size() == image[0] * image[1] * image[2] && image.size() > 0,
            std::string(op) + ": the image must be a non-empty [N0, N1, N2], got " + image.str());
    return {image[0], image[1], image[2]};
  }
  /// Throws Error unless every weight is finite and >= 0.
  static void checkWeights(const TvWeights& w, const char* op) {
    for (float v : w)
      require(std::isfinite(v) && v >= 0.f, std::string(op) + ": TV weights must be finite and >= 0");
  }
};

}  // namespace larmor
