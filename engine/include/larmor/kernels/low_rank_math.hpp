#pragma once
// The locally low-rank prior's arithmetic, written once for both twins (engine/src/cpu/low_rank.cpp and
// cuda/low_rank.cu; maths and conventions in larmor/backend/low_rank_ops.hpp): where a block's Casorati rows
// are in the image, the Gram entries, the Jacobi rotations of one round and their application to one row or
// column, the shrinkage factors, V diag(f) V^H and the rewritten row. The twins only differ in who runs
// which index: loops on the CPU, the threads of a block on the GPU.
//
// Jacobi (Hermitian, two-sided): for the pair p < q with G_pq = b e^{i phi} (b = |G_pq|), the real symmetric
// rotation of Numerical Recipes (theta = (G_qq - G_pp) / (2 b), tau = sign(theta) / (|theta| + sqrt(theta^2 +
// 1)), c = 1 / sqrt(1 + tau^2), s = tau c) conjugated by diag(1, e^{-i phi}):
//   J = [[c, e], [-conj(e), c]] on (p, q),  e = s e^{i phi},   G <- J^H G J (G_pq -> 0),   V <- V J.
// A round's pairs are disjoint (round-robin: player P - 1 meets r, then (r + i) meets (r - i) mod P - 1;
// P = T rounded up to even, a pair with the extra player is idle), so a round is: every pair's rotation
// from G before the round, then G J column by column, then J^H (G J) row by row, then V J. Matrices are
// column-major T x T (entry (i, j) at i + T j).
#include <cmath>
#include <cstdint>

#include "larmor/kernels/kernel_math.hpp"

namespace larmor::kernels {

/// A complex double in plain form (the same bytes in host, shared and device memory).
struct Zd {
  double re, im;
};

LARMOR_HD LARMOR_INLINE Zd zmul(Zd a, Zd b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
/// conj(a) b
LARMOR_HD LARMOR_INLINE Zd zcmul(Zd a, Zd b) { return {a.re * b.re + a.im * b.im, a.re * b.im - a.im * b.re}; }
LARMOR_HD LARMOR_INLINE Zd zconj(Zd a) { return {a.re, -a.im}; }

constexpr double kLlrJacobiTol = 1e-14;    ///< rotate while |G_pq| > tol sqrt(G_pp G_qq) ...
constexpr double kLlrJacobiFloor = 1e-16;  ///< ... and |G_pq| > floor trace(G)
constexpr int kLlrMaxSweeps = 30;

/// The image and the tiling: [n0, n1, frames], blocks of `block` pixels after the shift (s0, s1).
struct LlrGeometry {
  std::int64_t n0, n1, frames, block, s0, s1;
  std::int64_t blocks0, blocks1;  ///< ceil(n / block)

  LARMOR_HD std::int64_t blocks() const { return blocks0 * blocks1; }
  LARMOR_HD std::int64_t plane() const { return n0 * n1; }
  /// Players of the round-robin: frames rounded up to even.
  LARMOR_HD int players() const { return static_cast<int>(frames + (frames & 1)); }
};

inline LlrGeometry llrGeometry(std::int64_t n0, std::int64_t n1, std::int64_t frames, std::int64_t block,
                               std::int64_t s0, std::int64_t s1) {
  return {n0, n1, frames, block, s0, s1, (n0 + block - 1) / block, (n1 + block - 1) / block};
}

/// One block: its first shifted coordinates and its extent (w x h pixels, the Casorati matrix's w h rows).
struct LlrBlock {
  std::int64_t c0, c1, w, h;
  LARMOR_HD std::int64_t rows() const { return w * h; }
};

LARMOR_HD LARMOR_INLINE LlrBlock llrBlock(const LlrGeometry& g, std::int64_t b) {
  const std::int64_t b0 = b % g.blocks0, b1 = b / g.blocks0;
  const std::int64_t c0 = b0 * g.block, c1 = b1 * g.block;
  const std::int64_t w = g.n0 - c0 < g.block ? g.n0 - c0 : g.block;
  const std::int64_t h = g.n1 - c1 < g.block ? g.n1 - c1 : g.block;
  return {c0, c1, w, h};
}

/// The flat spatial index in x of row r of block k: shifted (c0 + i, c1 + j) is x at (c - s) mod n.
LARMOR_HD LARMOR_INLINE std::int64_t llrPixel(const LlrGeometry& g, const LlrBlock& k, std::int64_t r) {
  const std::int64_t j = r / k.w, i = r - j * k.w;
  std::int64_t v0 = k.c0 + i - g.s0, v1 = k.c1 + j - g.s1;
  if (v0 < 0) v0 += g.n0;
  if (v1 < 0) v1 += g.n1;
  return v0 + g.n0 * v1;
}

/// G_ij = sum_r conj(C_ri) C_rj over the block's rows in order, x interleaved (re, im) floats.
LARMOR_HD LARMOR_INLINE Zd llrGramEntry(const float* x, const LlrGeometry& g, const LlrBlock& k, int i, int j) {
  Zd acc{0.0, 0.0};
  const std::int64_t rows = k.rows();
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t v = llrPixel(g, k, r);
    const float* a = x + 2 * (v + g.plane() * i);
    const float* c = x + 2 * (v + g.plane() * j);
    const Zd z = zcmul(Zd{a[0], a[1]}, Zd{c[0], c[1]});
    acc.re += z.re;
    acc.im += z.im;
  }
  return acc;
}

/// Entry e < n^2 of the Gram into g (n x n): for i = e % n <= j = e / n, G_ij and G_ji = conj(G_ij); the diagonal
/// real. Entries with i > j are written by their mirror.
LARMOR_HD LARMOR_INLINE void llrGramStore(Zd* g, const float* x, const LlrGeometry& geo, const LlrBlock& k, int e) {
  const int n = static_cast<int>(geo.frames);
  const int i = e % n, j = e / n;
  if (i > j) return;
  const Zd z = llrGramEntry(x, geo, k, i, j);
  if (i == j) {
    g[i + n * i] = Zd{z.re, 0.0};
  } else {
    g[i + n * j] = z;
    g[j + n * i] = zconj(z);
  }
}

/// trace(G), the diagonal added in order.
LARMOR_HD LARMOR_INLINE double llrTrace(const Zd* g, int n) {
  double s = 0.0;
  for (int i = 0; i < n; ++i) s += g[i + n * i].re;
  return s;
}

/// Pair `i` (< players / 2) of round `round` (< players - 1): p < q; q == frames marks the idle pair.
LARMOR_HD LARMOR_INLINE void llrPair(int round, int i, int players, int& p, int& q) {
  const int m = players - 1;
  int a = round, b = m;
  if (i > 0) {
    a = (round + i) % m;
    b = (round - i + m) % m;
  }
  p = a < b ? a : b;
  q = a < b ? b : a;
}

/// A rotation J = [[c, e], [-conj(e), c]] on (p, q); apply = 0: none (the pair is converged).
struct LlrRotation {
  double c, ere, eim;
  int p, q, apply;
};

/// The rotation that zeroes G_pq, from G_pp, G_qq (real parts), G_pq and trace(G).
LARMOR_HD LARMOR_INLINE LlrRotation llrRotation(double gpp, double gqq, Zd gpq, double trace, int p, int q) {
  LlrRotation r{1.0, 0.0, 0.0, p, q, 0};
  const double b = hypot(gpq.re, gpq.im);
  // Written so that a NaN rotates nothing.
  if (!(b > kLlrJacobiTol * sqrt(fabs(gpp * gqq)) && b > kLlrJacobiFloor * trace)) return r;
  const double theta = (gqq - gpp) / (2.0 * b);
  const double sign = theta >= 0 ? 1.0 : -1.0;
  const double tau = fabs(theta) > 1e150 ? 0.5 / theta : sign / (fabs(theta) + sqrt(theta * theta + 1.0));
  const double c = 1.0 / sqrt(tau * tau + 1.0), s = tau * c;
  r.c = c;
  r.ere = s * (gpq.re / b);
  r.eim = s * (gpq.im / b);
  r.apply = 1;
  return r;
}

/// (M J) on row k of M's columns p and q (G's column step, and V's).
LARMOR_HD LARMOR_INLINE void llrRotateColumns(Zd* m, int n, int k, const LlrRotation& r) {
  Zd& mp = m[k + n * r.p];
  Zd& mq = m[k + n * r.q];
  const Zd a = mp, b = mq, e{r.ere, r.eim};
  const Zd eb = zcmul(e, b), ea = zmul(e, a);  // conj(e) b, e a
  mp = Zd{r.c * a.re - eb.re, r.c * a.im - eb.im};
  mq = Zd{ea.re + r.c * b.re, ea.im + r.c * b.im};
}

/// (J^H M) on column k of M's rows p and q; the pair's own off-diagonal entries are set to 0.
LARMOR_HD LARMOR_INLINE void llrRotateRows(Zd* m, int n, int k, const LlrRotation& r) {
  Zd& mp = m[r.p + n * k];
  Zd& mq = m[r.q + n * k];
  const Zd a = mp, b = mq, e{r.ere, r.eim};
  const Zd eb = zmul(e, b), ea = zcmul(e, a);  // e b, conj(e) a
  mp = Zd{r.c * a.re - eb.re, r.c * a.im - eb.im};
  mq = Zd{ea.re + r.c * b.re, ea.im + r.c * b.im};
  if (k == r.q) mp = Zd{0.0, 0.0};  // G_pq
  if (k == r.p) mq = Zd{0.0, 0.0};  // G_qp
}

LARMOR_HD LARMOR_INLINE double llrSingularValue(double lambda) { return lambda > 0.0 ? sqrt(lambda) : 0.0; }
/// max(0, 1 - t / sigma): soft_t(sigma) / sigma.
LARMOR_HD LARMOR_INLINE double llrShrink(double sigma, double t) { return sigma > t ? 1.0 - t / sigma : 0.0; }

/// (V diag(f) V^H)_ij, the sum over k in order.
LARMOR_HD LARMOR_INLINE Zd llrFilterEntry(const Zd* v, const double* f, int n, int i, int j) {
  Zd acc{0.0, 0.0};
  for (int k = 0; k < n; ++k) {
    const Zd a = v[i + n * k], b = v[j + n * k];
    const Zd z = zmul(a, zconj(b));
    acc.re += f[k] * z.re;
    acc.im += f[k] * z.im;
  }
  return acc;
}

/// Row r of the block's Casorati matrix <- (C W)_r in place (W = V diag(f) V^H, n x n), sums over k in order.
LARMOR_HD LARMOR_INLINE void llrFilterRow(float* x, const LlrGeometry& g, const LlrBlock& blk, std::int64_t r,
                                          const Zd* w) {
  const int n = static_cast<int>(g.frames);
  const std::int64_t v = llrPixel(g, blk, r);
  float row[2 * 64];  // LowRankOps::kMaxFrames
  for (int k = 0; k < n; ++k) {
    row[2 * k] = x[2 * (v + g.plane() * k)];
    row[2 * k + 1] = x[2 * (v + g.plane() * k) + 1];
  }
  for (int j = 0; j < n; ++j) {
    Zd acc{0.0, 0.0};
    for (int k = 0; k < n; ++k) {
      const Zd z = zmul(Zd{row[2 * k], row[2 * k + 1]}, w[k + n * j]);
      acc.re += z.re;
      acc.im += z.im;
    }
    x[2 * (v + g.plane() * j)] = static_cast<float>(acc.re);
    x[2 * (v + g.plane() * j) + 1] = static_cast<float>(acc.im);
  }
}

}  // namespace larmor::kernels
