// The float64 reference of the GRAPPA weights: a direct transcription of the thesis's matrices (eqs. 2.7,
// 4.1-4.4) and of Algorithms 4.2 / 4.3, entry by entry, in plain loops and Eigen double matrices. It shares
// no code with the fast path (no index tables, no scales function), so that the tests compare two
// independent readings of the same equations.
#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "larmor/recon/grappa.hpp"

namespace larmor::recon::grappa {

Array<cdouble> referenceWeights(const CArray& planes, const Sampling& smp, const GrappaSettings& s) {
  const index_t n0 = planes.shape()[0], n1 = planes.shape()[1], coils = planes.shape()[2], problems = planes.shape()[3];
  require(n1 == smp.lines, "GRAPPA reference: planes and sampling differ in their lines");
  const bool improved = s.calibration == GrappaCalibration::Improved;
  const index_t R = smp.accel;
  const int P = improved ? s.kernelPe : s.blocks, K = improved ? s.kernelRo : 1, dRo = (K - 1) / 2;
  // The symmetric mask of eq. 2.5: sources at bR, targets between source ⌊P/2⌋-1 and ⌊P/2⌋.
  const index_t delta = R * (P / 2 - 1);
  const index_t lo = std::min<index_t>(0, delta + 1), hi = std::max<index_t>((P - 1) * R, delta + R - 1);
  const index_t shiftsPe = smp.acsCount - (hi - lo + 1) + 1, firstLine = smp.acsFirst - lo;
  require(shiftsPe >= 1, "GRAPPA reference: the kernel does not fit the calibration block");
  const index_t width = improved ? n0 : std::min<index_t>(s.segment, n0);
  const index_t segments = improved ? 1 : (n0 + width - 1) / width;
  const index_t nA = static_cast<index_t>(P) * K * coils, nB = (R - 1) * coils;
  Array<cdouble> out(Shape{nA, nB, segments * problems});

  for (index_t q = 0; q < problems; ++q)
    for (index_t seg = 0; seg < segments; ++seg) {
      // Equation columns: basic (eq. 4.1) the Δs columns of the segment at each ACS block position;
      // improved (eq. 4.3) every K_PE x K_RO kernel position inside the ACS block.
      std::vector<Eigen::VectorXcd> as, bs;
      std::vector<index_t> shiftOf;
      for (index_t i = 0; i < shiftsPe; ++i) {
        const index_t cols = improved ? n0 - K + 1 : width;
        for (index_t j = 0; j < cols; ++j) {
          const index_t x = improved ? j : seg * width + j;  // first source column
          if (x >= n0) continue;
          Eigen::VectorXcd a(nA), b(nB);
          for (index_t c = 0; c < coils; ++c) {
            for (int kpe = 0; kpe < P; ++kpe)
              for (int kro = 0; kro < K; ++kro)
                a(kro + K * (kpe + P * c)) = cdouble(planes(x + kro, firstLine + i + kpe * R, c, q));
            for (index_t m = 1; m < R; ++m) b((m - 1) + (R - 1) * c) = cdouble(planes(x + dRo, firstLine + i + delta + m, c, q));
          }
          as.push_back(a);
          bs.push_back(b);
          shiftOf.push_back(i);
        }
      }
      const index_t nCol = static_cast<index_t>(as.size());
      // Normalization: Ψ = p^{-η/2} per group. Basic (Alg. 4.2): the power of B's block; improved
      // (Alg. 4.3): Σ_j (|a_j|² nRowB + |b_j|² nRowA) over the PE shift.
      std::vector<double> pCol(static_cast<std::size_t>(nCol)), pGroup(static_cast<std::size_t>(shiftsPe), 0.0);
      for (index_t j = 0; j < nCol; ++j) {
        const double pa = as[j].squaredNorm(), pb = bs[j].squaredNorm();
        pCol[j] = improved ? pa * static_cast<double>(nB) + pb * static_cast<double>(nA) : pb;
        pGroup[shiftOf[j]] += pCol[j];
      }
      std::vector<double> scale(static_cast<std::size_t>(nCol));
      for (index_t j = 0; j < nCol; ++j) {
        const double p = pGroup[shiftOf[j]];
        scale[j] = p > 0 ? std::pow(p, -s.eta / 2) : 0.0;
      }
      if (improved) {
        // Power clipping: the floor(κ N_sh) equations of largest p_col are removed.
        const auto discard = static_cast<index_t>(std::floor(s.kappa * static_cast<double>(nCol)));
        std::vector<index_t> order(static_cast<std::size_t>(nCol));
        std::iota(order.begin(), order.end(), index_t{0});
        std::stable_sort(order.begin(), order.end(), [&](index_t a, index_t b) { return pCol[a] > pCol[b]; });
        for (index_t d = 0; d < discard; ++d) scale[order[d]] = 0;
      }
      Eigen::MatrixXcd A(nA, nCol), B(nB, nCol);
      for (index_t j = 0; j < nCol; ++j) {
        A.col(j) = as[j] * scale[j];
        B.col(j) = bs[j] * scale[j];
      }
      // Listing 4.1, steps 3-5: W = B A^H (A A^H + λE)^{-1}, λ = χ trace(A A^H) / rows(A).
      Eigen::MatrixXcd M = A * A.adjoint();
      const double lambda = s.chi * M.trace().real() / static_cast<double>(nA);
      M.diagonal().array() += lambda;
      const Eigen::MatrixXcd U = B * A.adjoint();
      Eigen::LLT<Eigen::MatrixXcd> llt(M);
      require(llt.info() == Eigen::Success, "GRAPPA reference: A A^H + λE is not positive definite");
      // W^H = M^{-1} U^H (M Hermitian), so W^T = conj(M^{-1} U^H).
      const Eigen::MatrixXcd wt = llt.solve(U.adjoint()).conjugate();
      const index_t e = seg + segments * q;
      for (index_t r = 0; r < nA; ++r)
        for (index_t t = 0; t < nB; ++t) out(r, t, e) = wt(r, t);
    }
  return out;
}

}  // namespace larmor::recon::grappa
