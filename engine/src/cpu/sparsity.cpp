// Total variation on the CPU: TV(u) and prox_{t TV} by the fast gradient projection (FGP) on the dual
// field (Beck & Teboulle, "Fast gradient-based algorithms for constrained total variation image denoising
// and deblurring problems", IEEE TIP 18:2419, 2009, sec. IV, with the isotropic projection of their
// eq. 4.2 / Chambolle 2004 eq. 9), for complex images. Formulas, step size and dual layout:
// larmor/backend/sparsity_ops.hpp. TV itself: Rudin, Osher & Fatemi, Physica D 60:259, 1992.
//
// One FGP step is two passes over the image, both pointwise or a 3-point stencil:
//   primal: u = x - t D^H r                 (reads r at v and v - e_d)
//   dual:   p' = P(r + gamma D u);  r = p' + beta (p' - p);  p = p'   (reads u at v and v + e_d)
// The dual pass reads r only at v, so r is updated in place; the workspace is u (N) and r (3N), kept
// between calls. The result u = x - t D^H p is written over x (the primal pass reads x only at v).
// Deterministic: no reductions inside the prox; TV's sum is taken per row in double and the rows are
// added in order.
//
// Twin: cuda/sparsity.cu (same passes, same float arithmetic). Part of CpuSparsityOps; the wavelet half
// is wavelet.cpp.
#include <cmath>
#include <string>
#include <vector>

#include "cpu_backend.hpp"
#include "larmor/kernels/sparsity_math.hpp"

namespace larmor::cpu {

namespace {


struct Grid {
  index_t n[3], stride[3], voxels;
  bool active[3];
  float weight[3];
  double weightSquares = 0;  ///< sum of w_d^2 over the differenced dims
};

/// A dim is differenced when it is longer than 1 and its weight is > 0 (weighted TV: sparsity_ops.hpp).
Grid gridOf(const std::array<index_t, 3>& d, const SparsityOps::TvWeights& w) {
  Grid g{};
  g.voxels = d[0] * d[1] * d[2];
  for (int a = 0; a < 3; ++a) {
    g.n[a] = d[a];
    g.stride[a] = kernels::axisStride(d.data(), a);
    g.active[a] = d[a] > 1 && w[a] > 0.f;
    g.weight[a] = w[a];
    if (g.active[a]) g.weightSquares += double(w[a]) * w[a];
  }
  return g;
}

/// f(first index of the row, y, z) for every x-row, rows in parallel.
template <class F>
void forRows(const Grid& g, F&& f) {
  const index_t rows = g.n[1] * g.n[2];
#pragma omp parallel for schedule(static) if (g.voxels > (index_t{1} << 15))
  for (index_t r = 0; r < rows; ++r) f(r * g.n[0], r % g.n[1], r / g.n[1]);
}

/// (D_w^H q)(i) for the component-major dual q: sum_d w_d (q_d(i - e_d) [c_d > 0] - q_d(i) [c_d < N_d - 1]).
inline cfloat adjointDifference(const cfloat* q, const Grid& g, index_t i, const index_t c[3]) {
  cfloat s(0.f, 0.f);
  for (int d = 0; d < 3; ++d) {
    if (!g.active[d]) continue;
    const cfloat* qd = q + d * g.voxels;
    if (c[d] > 0) s += g.weight[d] * qd[i - g.stride[d]];
    if (c[d] < g.n[d] - 1) s -= g.weight[d] * qd[i];
  }
  return s;
}

/// out = x - t D^H q over the image (out may be x).
void primalPass(cfloat* out, const cfloat* x, const cfloat* q, const Grid& g, float t) {
  forRows(g, [&](index_t base, index_t y, index_t z) {
    index_t c[3] = {0, y, z};
    for (index_t i = base; c[0] < g.n[0]; ++c[0], ++i) out[i] = x[i] - t * adjointDifference(q, g, i, c);
  });
}

/// p' = P(r + gamma D_w u); r = p' + beta (p' - p); p = p'.
void dualPass(cfloat* p, cfloat* r, const cfloat* u, const Grid& g, float gamma, float beta) {
  forRows(g, [&](index_t base, index_t y, index_t z) {
    index_t c[3] = {0, y, z};
    for (index_t i = base; c[0] < g.n[0]; ++c[0], ++i) {
      cfloat q[3];
      float norm2 = 0.f;
      for (int d = 0; d < 3; ++d) {
        if (!g.active[d]) continue;
        const cfloat grad = c[d] < g.n[d] - 1 ? g.weight[d] * (u[i + g.stride[d]] - u[i]) : cfloat(0.f, 0.f);
        q[d] = r[d * g.voxels + i] + gamma * grad;
        norm2 += q[d].real() * q[d].real() + q[d].imag() * q[d].imag();
      }
      const float f = kernels::unitBallFactor(norm2);
      for (int d = 0; d < 3; ++d) {
        if (!g.active[d]) continue;
        const index_t j = d * g.voxels + i;
        const cfloat next = f * q[d];
        r[j] = next + beta * (next - p[j]);
        p[j] = next;
      }
    }
  });
}

}  // namespace

cfloat* CpuSparsityOps::workspace(int which, index_t n) {
  auto& w = work_[which];
  if (w.size() < static_cast<std::size_t>(n)) w.resize(static_cast<std::size_t>(n));
  return w.data();
}

void CpuSparsityOps::tvProx(Buffer& x, const Shape& image, double t, int iterations, Buffer& dual,
                            const TvWeights& w) {
  checkWeights(w, "tv prox");
  const Grid g = gridOf(imageDims(image, "tv prox"), w);
  require(iterations >= 1, "tv prox: iterations must be >= 1, got " + std::to_string(iterations));
  require(t >= 0 && std::isfinite(t), "tv prox: t must be finite and >= 0");
  cfloat* px = elements(x, g.voxels, "tv prox");
  cfloat* p = elements(dual, tvDualElements(image), "tv prox dual");
  require(static_cast<void*>(px) != static_cast<void*>(p), "tv prox: the dual field cannot be the image");
  if (t == 0 || g.weightSquares == 0) return;
  std::lock_guard lock(mutex_);
  cfloat* u = workspace(0, g.voxels);
  cfloat* r = workspace(1, 3 * g.voxels);
  for (int d = 0; d < 3; ++d)
    if (g.active[d]) std::copy(p + d * g.voxels, p + (d + 1) * g.voxels, r + d * g.voxels);
  const auto ts = static_cast<float>(t);
  const auto gamma = static_cast<float>(kernels::fgpStep(g.weightSquares, t));
  double tk = 1.0;
  for (int k = 0; k < iterations; ++k) {
    const double tNext = 0.5 * (1.0 + std::sqrt(1.0 + 4.0 * tk * tk));
    primalPass(u, px, r, g, ts);
    dualPass(p, r, u, g, gamma, static_cast<float>((tk - 1.0) / tNext));
    tk = tNext;
  }
  primalPass(px, px, p, g, ts);
}

double CpuSparsityOps::totalVariation(const Buffer& x, const Shape& image, const TvWeights& w) {
  checkWeights(w, "total variation");
  const Grid g = gridOf(imageDims(image, "total variation"), w);
  const cfloat* u = elements(x, g.voxels, "total variation");
  std::vector<double> rows(static_cast<std::size_t>(g.n[1] * g.n[2]), 0.0);
  forRows(g, [&](index_t base, index_t y, index_t z) {
    index_t c[3] = {0, y, z};
    double sum = 0;
    for (index_t i = base; c[0] < g.n[0]; ++c[0], ++i) {
      double s2 = 0;
      for (int d = 0; d < 3; ++d) {
        if (!g.active[d] || c[d] == g.n[d] - 1) continue;
        const cfloat diff = g.weight[d] * (u[i + g.stride[d]] - u[i]);
        s2 += double(diff.real()) * diff.real() + double(diff.imag()) * diff.imag();
      }
      sum += std::sqrt(s2);
    }
    rows[static_cast<std::size_t>(y + g.n[1] * z)] = sum;
  });
  double total = 0;
  for (double r : rows) total += r;
  return total;
}

}  // namespace larmor::cpu
