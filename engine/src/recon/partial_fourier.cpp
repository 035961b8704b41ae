// Partial Fourier and asymmetric echo (larmor/recon/partial_fourier.hpp).
//
// Along an axis of N samples (centre c = floor(N/2), the convention of docs/conventions.md) the samples
// lo..hi were acquired, with one edge block missing beyond the symmetric centre. For a real object
// rho, k-space is Hermitian, K(-k) = conj K(k), so the missing half is implied by the acquired one; a real
// image has a smooth phase instead, rho(x) = |rho(x)| e^{i phi(x)}, which is estimated from the
// symmetrically sampled centre. Per axis the symmetric half-width is s = min(c - lo, hi - c); the
// acquired box is A(k) (1 where every axis is inside its lo..hi), the mirror of k is k~ = (2c - k) mod N
// (the DFT's periodicity: the Nyquist sample 0 of an even N is its own mirror).
//
// Phase estimate (both methods): p = z / |z| (0 where z = 0), z = IFFT(H . K), with H the product over
// the partial axes of a Hann window cos^2(pi (k - c) / (2 (s + 1))) on |k - c| <= s (0 outside); full
// axes are not windowed.
//
// Homodyne detection (D. C. Noll, D. G. Nishimura, A. Macovski, "Homodyne detection in magnetic resonance
// imaging", IEEE Trans. Med. Imaging 10(2):154-163, 1991): a weighting W with W(k) + W(k~) = 2 wherever
// k or k~ was acquired and W = 0 where k was not makes Re(IFFT(W K) p*) equal to the object for a real
// object with phase p (the conjugate pairs add up to twice the real part). Their weighting is a ramp
// across the symmetric centre (0 at c - s rising to 2 at c + s on the side that is acquired beyond it)
// and 2 on the one-sided part; in N dimensions (several partial axes) with a preference
// g(k) = prod_a r_a(k_a), r_a the 1D ramp (1 on full axes), W(k) = 2 A(k) g(k) / (A(k) g(k) + A(k~) g(k~))
// (A(k) where the denominator is 0), which is the 1D ramp for one partial axis and satisfies the pair rule
// for any box. Image = Re(IFFT(W K) p*) p: the phase-demodulated real part, given back the phase so that
// the coil images stay complex for coil combination (|image| is Noll's magnitude).
//
// POCS (E. M. Haacke, E. D. Lindskog, W. Lin, "A fast, iterative, partial-Fourier technique capable of
// local phase recovery", J. Magn. Reson. 92:126-145, 1991): alternate between the images of phase p and
// the k-spaces that agree with the measurement: x = IFFT(K_n); x <- Re(x p*) p; K_{n+1} = (1 - A) FFT(x)
// + A K_0, from K_0 = the measured (zero-filled) k-space. Haacke et al. replace the phase, |x| p; the
// linear form Re(x p*) p is the orthogonal projection onto the subspace {r p : r real}, so both steps are
// projections onto convex sets (the iteration converges, and a real object whose sign flips where the
// low-resolution phase does is kept). Stopping rule: the filled samples change by less than
// kPocsTolerance of ||K|| in one iteration, or kPocsMaxIterations (Haacke et al. report a few iterations).
//
// Everything after the host-built masks (A, H, W: one n0 x n1 x n2 array each, broadcast over coils and
// slices) is Backend ops (fft, multiply, axpby, sumOfSquares as |z|, reciprocalDiagonal as 1/|z|), so the
// CPU and CUDA backends run the same code. Re(x p*) p = (p^2 conj(x) + |p|^2 x) / 2 is formed from
// multiply with and without conjugation (no new kernel).
#include "larmor/recon/partial_fourier.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <vector>

#include "larmor/util/error.hpp"

namespace larmor::recon {

std::string toString(PartialFourierMethod m) {
  switch (m) {
    case PartialFourierMethod::Pocs: return "pocs";
    case PartialFourierMethod::Homodyne: return "homodyne";
    case PartialFourierMethod::ZeroFill: return "zerofill";
  }
  return "?";
}

nlohmann::json PartialFourierReport::toJson() const {
  nlohmann::json axes = nlohmann::json::object();
  static const char* names[3] = {"readout", "pe1", "pe2"};
  for (int a = 0; a < 3; ++a)
    if (region.partial[a])
      axes[names[a]] = {{"fraction", region.fraction(a)}, {"first", region.lo[a]}, {"last", region.hi[a]},
                        {"of", region.n[a]}};
  nlohmann::json j = {{"method", toString(method)}, {"axes", axes}};
  if (method == PartialFourierMethod::Pocs) j["iterations"] = iterations, j["last_change"] = lastChange;
  return j;
}

std::string PartialFourierReport::line() const {
  std::string s = "partial Fourier k-space (" + region.describe() + "): ";
  if (method == PartialFourierMethod::ZeroFill) return s + "zero-filled (--partial-fourier zerofill)";
  s += method == PartialFourierMethod::Pocs ? "filled by POCS (" + std::to_string(iterations) + " iterations)"
                                            : std::string("homodyne detection");
  return s + "; --partial-fourier zerofill keeps the zero-filled k-space";
}

namespace {

/// The 1D factors of one axis at sample k.
struct Axis {
  index_t n, c, lo, hi, s;
  bool partial;
  bool acquired(index_t k) const { return k >= lo && k <= hi; }
  index_t mirror(index_t k) const { return (2 * c - k) % n; }  // the Nyquist sample k = 0 of an even n is its own
  double hann(index_t k) const {
    if (!partial) return 1.0;
    const index_t d = std::abs(k - c);
    if (d > s) return 0.0;
    const double v = std::cos(std::numbers::pi * static_cast<double>(d) / (2.0 * static_cast<double>(s + 1)));
    return v * v;
  }
  /// Noll's ramp: 0 at the end of the symmetric centre toward the missing side, 2 at its other end.
  double ramp(index_t k) const {
    if (!partial || s == 0) return 1.0;
    const double towardAcquired = (hi - c) >= (c - lo) ? 1.0 : -1.0;
    return std::clamp(1.0 + towardAcquired * static_cast<double>(k - c) / static_cast<double>(s), 0.0, 2.0);
  }
};

struct Masks {
  CArray acquired, notAcquired, lowPass, homodyne;  // [n0, n1, n2]
};

Masks buildMasks(const PartialFourierRegion& r, bool homodyne) {
  Axis ax[3];
  for (int a = 0; a < 3; ++a) {
    const index_t c = r.n[a] / 2;
    ax[a] = {r.n[a], c, r.lo[a], r.hi[a], std::max<index_t>(0, std::min(c - r.lo[a], r.hi[a] - c)), r.partial[a]};
  }
  const Shape shape{r.n[0], r.n[1], r.n[2]};
  Masks m;
  m.acquired = CArray(shape);
  m.notAcquired = CArray(shape);
  m.lowPass = CArray(shape);
  if (homodyne) m.homodyne = CArray(shape);
  const auto inside = [&](index_t k0, index_t k1, index_t k2) {
    return ax[0].acquired(k0) && ax[1].acquired(k1) && ax[2].acquired(k2);
  };
  for (index_t k2 = 0; k2 < r.n[2]; ++k2)
    for (index_t k1 = 0; k1 < r.n[1]; ++k1)
      for (index_t k0 = 0; k0 < r.n[0]; ++k0) {
        const index_t i = k0 + r.n[0] * (k1 + r.n[1] * k2);
        const bool a = inside(k0, k1, k2);
        m.acquired[i] = cfloat(a ? 1.f : 0.f);
        m.notAcquired[i] = cfloat(a ? 0.f : 1.f);
        m.lowPass[i] = cfloat(static_cast<float>(ax[0].hann(k0) * ax[1].hann(k1) * ax[2].hann(k2)));
        if (!homodyne) continue;
        const index_t m0 = ax[0].mirror(k0), m1 = ax[1].mirror(k1), m2 = ax[2].mirror(k2);
        const bool am = inside(m0, m1, m2);
        const double g = ax[0].ramp(k0) * ax[1].ramp(k1) * ax[2].ramp(k2);
        const double gm = ax[0].ramp(m0) * ax[1].ramp(m1) * ax[2].ramp(m2);
        const double den = (a ? g : 0.0) + (am ? gm : 0.0);
        const double w = !a ? 0.0 : den > 0 ? 2.0 * g / den : 1.0;
        m.homodyne[i] = cfloat(static_cast<float>(w));
      }
  return m;
}

/// Everything on the backend for one call.
struct Work {
  Backend& be;
  Shape shape;  // [n0, n1, n2, 1, batch]
  int rank;
  index_t voxels, n;
  std::unique_ptr<Buffer> upload(const CArray& a) {
    auto b = be.allocate(static_cast<std::size_t>(a.size()) * sizeof(cfloat));
    be.upload(*b, a.data(), static_cast<std::size_t>(a.size()) * sizeof(cfloat));
    return b;
  }
  std::unique_ptr<Buffer> make() { return be.allocate(static_cast<std::size_t>(n) * sizeof(cfloat)); }

  /// p = z / |z| (0 where z = 0), z = IFFT(lowPass . k); t is scratch.
  void phase(Buffer& p, Buffer& t, const Buffer& k, const Buffer& lowPass) {
    be.multiply(p, lowPass, voxels, k, n, false);
    be.fft(p, shape, rank, FftDirection::Inverse);
    be.sumOfSquares(t, p, n, 1, 1);                  // |z|
    be.reciprocalDiagonal(t, t, 1.0, nullptr, 0, n);  // 1 / |z|, 1 where z = 0
    be.multiply(p, t, n, p, n, false);
  }
  /// x <- Re(x p*) p = (p^2 conj(x) + |p|^2 x) / 2; t is scratch.
  void project(Buffer& x, const Buffer& p, Buffer& t) {
    be.multiply(t, p, n, x, n, true);   // t = p* x
    be.multiply(x, t, n, p, n, true);   // x = conj(p* x) p = p^2 conj(x)
    be.multiply(t, p, n, t, n, false);  // t = |p|^2 x
    be.axpby(x, cfloat(0.5f), t, cfloat(0.5f), n);
  }
};

}  // namespace

PartialFourierReport fillPartialFourier(Backend& backend, Buffer& kspace, index_t batch, int rank,
                                        const PartialFourierRegion& region, PartialFourierMethod method) {
  PartialFourierReport rep;
  rep.method = method;
  rep.region = region;
  if (!region.any() || method == PartialFourierMethod::ZeroFill) return rep;
  require(rank == 3 || region.n[2] == 1, "partial Fourier: a 2D transform of 3D k-space");
  const bool homodyne = method == PartialFourierMethod::Homodyne;
  const Masks masks = buildMasks(region, homodyne);
  Work w{backend, Shape{region.n[0], region.n[1], region.n[2], 1, batch}, rank, 0, 0};
  w.voxels = region.n[0] * region.n[1] * region.n[2];
  w.n = w.voxels * batch;
  {
    // Outside the acquired box the input is zero, except what a pipeline before put there (GRAPPA's kernels
    // reach a line or two beyond the last acquired one): K_0 = A K.
    const auto acquired = w.upload(masks.acquired);
    backend.multiply(kspace, *acquired, w.voxels, kspace, w.n, false);
  }
  const auto lowPass = w.upload(masks.lowPass);
  auto p = w.make(), t = w.make();
  w.phase(*p, *t, kspace, *lowPass);

  if (homodyne) {
    const auto weights = w.upload(masks.homodyne);
    backend.multiply(kspace, *weights, w.voxels, kspace, w.n, false);
    backend.fft(kspace, w.shape, rank, FftDirection::Inverse);
    w.project(kspace, *p, *t);
    backend.fft(kspace, w.shape, rank, FftDirection::Forward);
    return rep;
  }

  // POCS: kspace holds K_n; k0 the measurement, prev K_{n-1}.
  const auto notAcquired = w.upload(masks.notAcquired);
  auto k0 = w.make(), prev = w.make();
  backend.copy(*k0, kspace, static_cast<std::size_t>(w.n) * sizeof(cfloat));
  const double norm = std::max(backend.norm2(kspace, w.n), 1e-30);
  for (int it = 1; it <= kPocsMaxIterations; ++it) {
    backend.copy(*prev, kspace, static_cast<std::size_t>(w.n) * sizeof(cfloat));
    backend.fft(kspace, w.shape, rank, FftDirection::Inverse);
    w.project(kspace, *p, *t);
    backend.fft(kspace, w.shape, rank, FftDirection::Forward);
    backend.multiply(kspace, *notAcquired, w.voxels, kspace, w.n, false);  // keep the filled region
    backend.axpby(kspace, cfloat(1.f), *k0, cfloat(1.f), w.n);              // + the measurement
    backend.axpby(*prev, cfloat(1.f), kspace, cfloat(-1.f), w.n);          // the change
    rep.iterations = it;
    rep.lastChange = backend.norm2(*prev, w.n) / norm;
    if (rep.lastChange < kPocsTolerance) break;
  }
  return rep;
}

}  // namespace larmor::recon
