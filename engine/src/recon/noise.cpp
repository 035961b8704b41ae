// Noise pre-whitening (recon/noise.hpp has the maths): Ψ = Nᵀ N̄ / (n − 1) in double, its Cholesky factor
// L (Eigen's LLT), W = L⁻¹ sqrt(β) by a triangular solve, and the product W η per sample.
#include "larmor/recon/noise.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <cmath>
#include <sstream>

#include "larmor/util/error.hpp"

namespace larmor::recon {

namespace {
/// A covariance whose eigenvalues spread further than this is taken as singular: float32 samples carry
/// about 7 digits, so a coil that is a linear combination of others leaves a smallest eigenvalue of that
/// order relative to the largest (squared: 1e-14), far below any real coil array's (< 1e4).
constexpr double kMaxCondition = 1e10;
}  // namespace

std::string NoiseWhitening::report() const {
  std::ostringstream o;
  o.precision(3);
  o << "noise whitening: " << coils << " coils, " << samples << " samples, condition number " << conditionNumber
    << ", bandwidth ratio " << bandwidthRatio;
  return o.str();
}

NoiseWhitening estimateNoiseWhitening(const CArray& noise, float ratio, const std::string& source) {
  const std::string src = (source.empty() ? std::string("noise whitening") : source + ": noise whitening") + ": ";
  require(noise.shape().rank() == 2, src + "noise samples must be [samples, coils], got " + noise.shape().str());
  const index_t n = noise.shape()[0], coils = noise.shape()[1];
  require(coils >= 1, src + "no coils");
  require(n >= kNoiseSamplesPerCoil * coils,
          src + std::to_string(n) + " noise samples are too few for " + std::to_string(coils) + " coils (need at least " +
              std::to_string(kNoiseSamplesPerCoil * coils) + ")");
  require(std::isfinite(ratio) && ratio > 0,
          src + "the receiver bandwidth ratio must be finite and positive, got " + std::to_string(ratio));
  for (index_t i = 0; i < noise.size(); ++i)
    if (!std::isfinite(noise[i].real()) || !std::isfinite(noise[i].imag()))
      throw Error(src + "noise sample " + std::to_string(i % n) + " of coil " + std::to_string(i / n) + " is not finite");

  // Ψ_ab = Σ_i N_ia conj(N_ib) / (n − 1): one rank-1 update per sample, in double.
  Eigen::MatrixXcd N(n, coils);
  for (index_t c = 0; c < coils; ++c)
    for (index_t i = 0; i < n; ++i) N(i, c) = cdouble(noise(i, c));
  const Eigen::MatrixXcd psi = (N.transpose() * N.conjugate()) / static_cast<double>(std::max<index_t>(n - 1, 1));

  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXcd> eig(psi, Eigen::EigenvaluesOnly);
  const double lmin = eig.eigenvalues().minCoeff(), lmax = eig.eigenvalues().maxCoeff();
  require(lmax > 0, src + "the noise samples are all zero");
  require(lmin > lmax / kMaxCondition,
          src + "the noise covariance is singular (condition number " +
              (lmin > 0 ? std::to_string(lmax / lmin) : std::string("infinite")) +
              "): a coil is silent or a combination of the others");
  const Eigen::LLT<Eigen::MatrixXcd> llt(psi);
  require(llt.info() == Eigen::Success, src + "the noise covariance is not positive definite");
  const Eigen::MatrixXcd L = llt.matrixL();
  const Eigen::MatrixXcd W = L.triangularView<Eigen::Lower>().solve(Eigen::MatrixXcd::Identity(coils, coils)) *
                             std::sqrt(static_cast<double>(ratio));

  NoiseWhitening w;
  w.coils = coils;
  w.samples = n;
  w.bandwidthRatio = ratio;
  w.conditionNumber = lmax / lmin;
  w.covariance = CArray(Shape{coils, coils});
  w.whitener = CArray(Shape{coils, coils});
  for (index_t b = 0; b < coils; ++b)
    for (index_t a = 0; a < coils; ++a) {
      w.covariance(a, b) = cfloat(psi(a, b));
      w.whitener(a, b) = b <= a ? cfloat(W(a, b)) : cfloat(0);
    }
  return w;
}

void applyNoiseWhitening(CArray& kspace, const NoiseWhitening& w) {
  const Shape& s = kspace.shape();
  require(s.rank() >= 4 && s[3] == w.coils,
          "noise whitening: k-space " + s.str() + " does not have the whitener's " + std::to_string(w.coils) +
              " coils in dimension 3");
  const index_t per = s[0] * s[1] * s[2], C = w.coils, rest = kspace.size() / (per * C);
  std::vector<cdouble> eta(static_cast<std::size_t>(C));
  for (index_t r = 0; r < rest; ++r) {
    cfloat* base = kspace.data() + per * C * r;
    for (index_t i = 0; i < per; ++i) {
      for (index_t c = 0; c < C; ++c) eta[static_cast<std::size_t>(c)] = cdouble(base[i + per * c]);
      // W is lower triangular: row a uses coils 0..a.
      for (index_t a = 0; a < C; ++a) {
        cdouble v = 0;
        for (index_t b = 0; b <= a; ++b) v += cdouble(w.whitener(a, b)) * eta[static_cast<std::size_t>(b)];
        base[i + per * a] = cfloat(v);
      }
    }
  }
}

void applyNoiseWhitening(Dataset& d, const NoiseWhitening& w) {
  applyNoiseWhitening(d.kspace, w);
  if (d.noise) {
    CArray& nz = *d.noise;
    require(nz.shape().rank() == 2 && nz.shape()[1] == w.coils,
            d.source + ": noise samples " + nz.shape().str() + " do not match the whitener's coils");
    CArray view = nz;
    view.reshape(Shape{nz.shape()[0], 1, 1, w.coils});
    applyNoiseWhitening(view, w);
    view.reshape(nz.shape());
    nz = std::move(view);
  }
}

NoiseWhitening whitenIfRequested(Dataset& d, NoiseWhiteningMode mode) {
  if (mode == NoiseWhiteningMode::Off || !d.noise || d.noise->size() == 0) return {};
  require(d.noise->shape().rank() == 2 && d.noise->shape()[1] == d.header.coils,
          d.source + ": the noise samples " + d.noise->shape().str() + " do not have the data's " +
              std::to_string(d.header.coils) + " coils");
  NoiseWhitening w = estimateNoiseWhitening(*d.noise, 1, d.source);
  applyNoiseWhitening(d, w);
  return w;
}

}  // namespace larmor::recon
