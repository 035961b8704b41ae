#pragma once
// The GRAPPA tests' float64 reference weights (tests/unit/test_grappa.cpp, tests/gpu/test_gpu_grappa.cpp), written in
// the tests and sharing no code with the engine: the calibration matrices A (sources) and B (targets) built entry by
// entry from the thesis's eqs. 2.5, 4.1 and 4.3 in plain loops, the normalisation and power clipping of Algorithms
// 4.2 / 4.3, and the regularised least-squares solve by Householder QR of the stacked system (the engine forms
// A A^H + lambda I and factors it by Cholesky). Returns W^T [rows(A), rows(B), entries], entry = segment +
// segments * problem, the layout of grappa::calibrationWeights.
// Pe1 x pe2 acceleration (2D GRAPPA, Blaimer 2006 / Brau 2008): the same fit with sources on the Ry x Rz
// lattice (P lines x P2 partitions x K_RO columns) and one row of B per missing offset (my, mz) of a cell,
// my + Ry mz = 1 .. Ry Rz - 1, from every kernel position inside the fully sampled centre box.
// planes: [columns, lines, depth, coils, problems] (grappa::calibrationDomain).
#include <Eigen/Core>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "larmor/recon/grappa.hpp"

namespace larmor::test {

inline Array<cdouble> grappaLsWeights(const CArray& planes, const recon::grappa::Sampling& smp,
                                      const recon::GrappaSettings& s) {
  using recon::GrappaCalibration;
  const index_t n0 = planes.shape()[0], n1 = planes.shape()[1], depth = planes.shape()[2];
  const index_t coils = planes.shape()[3], problems = planes.shape()[4];
  require(n1 == smp.lines && depth == smp.depth, "GRAPPA least-squares reference: planes and sampling differ");
  const bool improved = s.calibration == GrappaCalibration::Improved;
  const index_t R = smp.accel, Rz = smp.accelPe2;
  const int P = improved ? s.kernelPe : s.blocks, P2 = Rz > 1 ? s.kernelPe2 : 1, K = improved ? s.kernelRo : 1;
  const int dRo = (K - 1) / 2;
  // The symmetric mask of eq. 2.5: sources at bR, targets between source ⌊P/2⌋-1 and ⌊P/2⌋; along pe2 the
  // cell starts at source max(⌊P2/2⌋-1, 0). Targets: offsets (my, mz) of the cell but (0, 0).
  const index_t delta = R * (P / 2 - 1), deltaZ = Rz * std::max(P2 / 2 - 1, 0), T = R * Rz - 1;
  const index_t lo = std::min<index_t>(0, delta + (Rz > 1 ? 0 : 1)), hi = std::max<index_t>((P - 1) * R, delta + R - 1);
  const index_t hiZ = std::max<index_t>((P2 - 1) * Rz, deltaZ + Rz - 1);
  const index_t shiftsY = smp.acsCount - (hi - lo + 1) + 1, shiftsZ = smp.acsCountPe2 - hiZ;
  const index_t shiftsPe = shiftsY * shiftsZ, firstLine = smp.acsFirst - lo, firstPart = smp.acsFirstPe2;
  require(shiftsY >= 1 && shiftsZ >= 1, "GRAPPA least-squares reference: the kernel does not fit the calibration block");
  const index_t width = improved ? n0 : std::min<index_t>(s.segment, n0);
  const index_t segments = improved ? 1 : (n0 + width - 1) / width;
  const index_t nA = static_cast<index_t>(P) * P2 * K * coils, nB = T * coils;
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
          const index_t y0 = firstLine + i % shiftsY, z0 = firstPart + i / shiftsY;
          for (index_t c = 0; c < coils; ++c) {
            for (int kpz = 0; kpz < P2; ++kpz)
              for (int kpe = 0; kpe < P; ++kpe)
                for (int kro = 0; kro < K; ++kro)
                  a(kro + K * (kpe + P * (kpz + P2 * c))) = cdouble(planes(x + kro, y0 + kpe * R, z0 + kpz * Rz, c, q));
            for (index_t t = 0; t < T; ++t) {
              const index_t my = (t + 1) % R, mz = (t + 1) / R;
              b(t + T * c) = cdouble(planes(x + dRo, y0 + delta + my, z0 + deltaZ + mz, c, q));
            }
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
      // The regularised least-squares problem of Listing 4.1, min_W ||W A - B||^2 + lambda ||W||^2 with
      // lambda = chi trace(A A^H) / rows(A), solved as the stacked system [A^H; sqrt(lambda) I] W^H = [B^H; 0] by
      // Householder QR in double (no normal equations, no Cholesky: not the engine's route).
      const double lambda = s.chi * (A.cwiseAbs2().sum()) / static_cast<double>(nA);
      Eigen::MatrixXcd lhs = Eigen::MatrixXcd::Zero(nCol + nA, nA), rhs = Eigen::MatrixXcd::Zero(nCol + nA, nB);
      lhs.topRows(nCol) = A.adjoint();
      lhs.bottomRows(nA) = std::sqrt(lambda) * Eigen::MatrixXcd::Identity(nA, nA);
      rhs.topRows(nCol) = B.adjoint();
      const Eigen::MatrixXcd wh = lhs.householderQr().solve(rhs);  // W^H, so W^T = conj(W^H)
      const Eigen::MatrixXcd wt = wh.conjugate();
      const index_t e = seg + segments * q;
      for (index_t r = 0; r < nA; ++r)
        for (index_t t = 0; t < nB; ++t) out(r, t, e) = wt(r, t);
    }
  return out;
}


}  // namespace larmor::test
