// The locally low-rank prior on the CPU: prox_{t LLR} by singular-value soft thresholding of each block's
// Casorati matrix through its Gram's Jacobi eigen-decomposition in double, and LLR(x), the sum of the blocks'
// nuclear norms (Trzasko & Manduca 2011; Cai, Candes & Shen 2010; maths, shift and block conventions in
// larmor/backend/low_rank_ops.hpp). Every formula is in larmor/kernels/low_rank_math.hpp, shared with the GPU;
// here the loops run them in the order the GPU's threads do per phase (a round's rotations from G before the
// round, then G J, then J^H G J and V J), so both twins rotate the same pairs in the same order.
//
// Blocks are disjoint, so they run in parallel (OpenMP, one workspace a thread) and each rewrites its own
// pixels in place. Deterministic: each block's sums run in a fixed order, and nuclearNorm adds the blocks'
// sums in block order.
//
// Twin: cuda/low_rank.cu.
#include "low_rank.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "cpu_backend.hpp"

namespace larmor::cpu {
namespace {

using kernels::LlrBlock;
using kernels::LlrGeometry;
using kernels::LlrRotation;
using kernels::Zd;

/// A thread's matrices: the Gram (then its eigenvalues on the diagonal, then V diag(f) V^H), V, f, a round.
struct Work {
  explicit Work(const LlrGeometry& g)
      : n(static_cast<int>(g.frames)), gram(static_cast<std::size_t>(n * n)), v(gram.size()), w(gram.size()),
        f(static_cast<std::size_t>(n)), round(static_cast<std::size_t>(g.players() / 2)) {}
  int n;
  std::vector<Zd> gram, v, w;
  std::vector<double> f;
  std::vector<LlrRotation> round;
};

/// One round's rotations from G as it is; true when any pair rotates.
bool roundRotations(Work& k, int r, int players, double trace) {
  bool any = false;
  const int n = k.n;
  for (int i = 0; i < players / 2; ++i) {
    int p = 0, q = 0;
    kernels::llrPair(r, i, players, p, q);
    LlrRotation& rot = k.round[static_cast<std::size_t>(i)];
    rot = q < n ? kernels::llrRotation(k.gram[p + n * p].re, k.gram[q + n * q].re, k.gram[p + n * q], trace, p, q)
                : LlrRotation{1.0, 0.0, 0.0, p, q, 0};
    any = any || rot.apply;
  }
  return any;
}

/// G = V diag(lambda) V^H by the rounds of Jacobi rotations: lambda on G's diagonal, V its eigenvectors.
void jacobi(Work& k, int players) {
  const int n = k.n;
  for (int i = 0; i < n * n; ++i) k.v[static_cast<std::size_t>(i)] = Zd{i % (n + 1) == 0 ? 1.0 : 0.0, 0.0};
  const double trace = kernels::llrTrace(k.gram.data(), n);
  for (int sweep = 0; sweep < kernels::kLlrMaxSweeps; ++sweep) {
    bool rotated = false;
    for (int r = 0; r < players - 1; ++r) {
      if (!roundRotations(k, r, players, trace)) continue;
      rotated = true;
      for (const LlrRotation& rot : k.round)
        if (rot.apply)
          for (int c = 0; c < n; ++c) kernels::llrRotateColumns(k.gram.data(), n, c, rot);
      for (const LlrRotation& rot : k.round)
        if (rot.apply)
          for (int c = 0; c < n; ++c) {
            kernels::llrRotateRows(k.gram.data(), n, c, rot);
            kernels::llrRotateColumns(k.v.data(), n, c, rot);
          }
    }
    if (!rotated) break;
  }
}

/// The block's Gram into k.gram, then its eigen-decomposition.
void decompose(Work& k, const float* x, const LlrGeometry& g, const LlrBlock& blk) {
  for (int e = 0; e < k.n * k.n; ++e) kernels::llrGramStore(k.gram.data(), x, g, blk, e);
  jacobi(k, g.players());
}

void shrinkBlock(Work& k, float* x, const LlrGeometry& g, index_t b, double t) {
  const LlrBlock blk = kernels::llrBlock(g, b);
  decompose(k, x, g, blk);
  const int n = k.n;
  for (int i = 0; i < n; ++i)
    k.f[static_cast<std::size_t>(i)] = kernels::llrShrink(kernels::llrSingularValue(k.gram[i + n * i].re), t);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) k.w[i + n * j] = kernels::llrFilterEntry(k.v.data(), k.f.data(), n, i, j);
  for (index_t r = 0; r < blk.rows(); ++r) kernels::llrFilterRow(x, g, blk, r, k.w.data());
}

double blockNuclearNorm(Work& k, const float* x, const LlrGeometry& g, index_t b) {
  decompose(k, x, g, kernels::llrBlock(g, b));
  double s = 0.0;
  for (int i = 0; i < k.n; ++i) s += kernels::llrSingularValue(k.gram[i + k.n * i].re);
  return s;
}

class CpuLowRankOps final : public LowRankOps {
 public:
  void llrProx(Buffer& x, const Shape& image, index_t block, double t, std::array<index_t, 2> shift) override {
    const LlrGeometry g = geometry(image, block, shift, "llr prox");
    require(t >= 0 && std::isfinite(t), "llr prox: t must be finite and >= 0");
    auto* px = reinterpret_cast<float*>(elements(x, image.size(), "llr prox"));
    if (t == 0) return;
#pragma omp parallel if (g.blocks() > 1 && image.size() > (index_t{1} << 14))
    {
      Work k(g);
#pragma omp for schedule(dynamic)
      for (index_t b = 0; b < g.blocks(); ++b) shrinkBlock(k, px, g, b, t);
    }
  }

  double nuclearNorm(const Buffer& x, const Shape& image, index_t block, std::array<index_t, 2> shift) override {
    const LlrGeometry g = geometry(image, block, shift, "llr nuclear norm");
    const auto* px = reinterpret_cast<const float*>(elements(x, image.size(), "llr nuclear norm"));
    std::vector<double> sums(static_cast<std::size_t>(g.blocks()), 0.0);
#pragma omp parallel if (g.blocks() > 1 && image.size() > (index_t{1} << 14))
    {
      Work k(g);
#pragma omp for schedule(dynamic)
      for (index_t b = 0; b < g.blocks(); ++b) sums[static_cast<std::size_t>(b)] = blockNuclearNorm(k, px, g, b);
    }
    double total = 0.0;
    for (double s : sums) total += s;
    return total;
  }
};

}  // namespace

std::unique_ptr<LowRankOps> makeCpuLowRankOps() { return std::make_unique<CpuLowRankOps>(); }

}  // namespace larmor::cpu
