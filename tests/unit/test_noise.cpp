// Noise pre-whitening (recon/noise.hpp) against a known covariance: noise drawn in float64 as η = A g (g white,
// E[g gᴴ] = I) has Ψ = A Aᴴ; the estimate must lie within its statistical error of Ψ, independent noise whitened
// with the estimate must have identity covariance within its statistical error, and whitening must bring the
// matched-filter combination of a coil array to the SNR-optimal one (Roemer 1990: sqrt(sᴴ Ψ⁻¹ s)). Plus the
// dataset path (k-space and noise samples whitened, the reconstruction reports it) and the bad inputs.
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <Eigen/LU>
#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/noise.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/settings.hpp"
#include "support/grappa_problem.hpp"
#include "support/expect_error.hpp"

using namespace larmor;
using recon::NoiseWhitening;

namespace {
using larmor::test::expectError;

constexpr index_t kCoils = 8;

/// A fixed Hermitian positive definite covariance Ψ = A Aᴴ with strong coupling between neighbours (A lower
/// triangular, unequal coil gains): condition number ~50.
Eigen::MatrixXcd mixing() {
  Eigen::MatrixXcd A = Eigen::MatrixXcd::Zero(kCoils, kCoils);
  for (index_t a = 0; a < kCoils; ++a) {
    A(a, a) = 0.5 + 0.2 * static_cast<double>(a);
    if (a > 0) A(a, a - 1) = cdouble(0.6, 0.3);
    if (a > 1) A(a, a - 2) = cdouble(-0.2, 0.25);
  }
  return A;
}

/// n samples of η = A g, [samples, coils] (float32 as the data are), drawn in double.
CArray correlatedNoise(const Eigen::MatrixXcd& A, index_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, std::sqrt(0.5));
  CArray out(Shape{n, kCoils});
  Eigen::VectorXcd w(kCoils);
  for (index_t i = 0; i < n; ++i) {
    for (index_t c = 0; c < kCoils; ++c) w(c) = cdouble(g(rng), g(rng));
    const Eigen::VectorXcd eta = A * w;
    for (index_t c = 0; c < kCoils; ++c) out(i, c) = cfloat(eta(c));
  }
  return out;
}

Eigen::MatrixXcd toEigen(const CArray& m) {
  Eigen::MatrixXcd e(m.shape()[0], m.shape()[1]);
  for (index_t b = 0; b < m.shape()[1]; ++b)
    for (index_t a = 0; a < m.shape()[0]; ++a) e(a, b) = cdouble(m(a, b));
  return e;
}

/// The sample covariance Σ η ηᴴ / n of [samples, coils] (the test's own, in double).
Eigen::MatrixXcd sampleCovariance(const CArray& x) {
  const index_t n = x.shape()[0], c = x.shape()[1];
  Eigen::MatrixXcd X(n, c);
  for (index_t j = 0; j < c; ++j)
    for (index_t i = 0; i < n; ++i) X(i, j) = cdouble(x(i, j));
  return X.transpose() * X.conjugate() / static_cast<double>(n);
}


}  // namespace

// Ψ̂ within 5 standard errors of Ψ elementwise (std of a sample covariance element: sqrt(Ψ_aa Ψ_bb / n)); W lower
// triangular with W Ψ̂ Wᴴ = I to rounding; W Ψ Wᴴ = I within the estimate's error; and independent noise
// whitened by W has identity sample covariance within 5 / sqrt(n) per element (plus the estimate's error).
TEST(NoiseWhitening, MatchesKnownCovariance) {
  const Eigen::MatrixXcd A = mixing(), psi = A * A.adjoint();
  const index_t n = 20000;
  const NoiseWhitening w = recon::estimateNoiseWhitening(correlatedNoise(A, n, 1));
  EXPECT_EQ(w.coils, kCoils);
  EXPECT_EQ(w.samples, n);
  const Eigen::MatrixXcd est = toEigen(w.covariance), W = toEigen(w.whitener);
  for (index_t a = 0; a < kCoils; ++a)
    for (index_t b = 0; b < kCoils; ++b) {
      const double se = std::sqrt(psi(a, a).real() * psi(b, b).real() / static_cast<double>(n));
      EXPECT_LT(std::abs(est(a, b) - psi(a, b)), 5 * se) << a << "," << b;
      if (b > a) EXPECT_EQ(std::abs(W(a, b)), 0.0);
    }
  EXPECT_LT((W * est * W.adjoint() - Eigen::MatrixXcd::Identity(kCoils, kCoils)).cwiseAbs().maxCoeff(), 1e-5);
  const double tol = 5 / std::sqrt(static_cast<double>(n));
  EXPECT_LT((W * psi * W.adjoint() - Eigen::MatrixXcd::Identity(kCoils, kCoils)).cwiseAbs().maxCoeff(), 2 * tol);

  CArray fresh = correlatedNoise(A, n, 2);
  CArray k = fresh;
  k.reshape(Shape{n, 1, 1, kCoils});
  recon::applyNoiseWhitening(k, w);
  k.reshape(Shape{n, kCoils});
  const Eigen::MatrixXcd white = sampleCovariance(k);
  EXPECT_LT((white - Eigen::MatrixXcd::Identity(kCoils, kCoils)).cwiseAbs().maxCoeff(), 3 * tol);
  const Eigen::MatrixXcd before = sampleCovariance(fresh);
  EXPECT_GT((before - Eigen::MatrixXcd::Identity(kCoils, kCoils)).cwiseAbs().maxCoeff(), 0.3);  // it was coloured
  // The condition number reported is Ψ̂'s.
  EXPECT_GT(w.conditionNumber, 5.0);
  EXPECT_NE(w.report().find("8 coils, 20000 samples"), std::string::npos) << w.report();
}

// The bandwidth ratio β scales W by sqrt(β): whitened noise has covariance β I.
TEST(NoiseWhitening, BandwidthRatioScalesWhitener) {
  const CArray noise = correlatedNoise(mixing(), 4000, 3);
  const NoiseWhitening w1 = recon::estimateNoiseWhitening(noise), w2 = recon::estimateNoiseWhitening(noise, 2.0f);
  EXPECT_LT((toEigen(w2.whitener) - std::sqrt(2.0) * toEigen(w1.whitener)).cwiseAbs().maxCoeff(), 1e-5);
  EXPECT_FLOAT_EQ(w2.bandwidthRatio, 2.0f);
}

// A coil array with sensitivities s and noise Ψ: the matched filter sᴴ η of unwhitened coils has SNR
// |sᴴ s| / sqrt(sᴴ Ψ s), below the optimum sqrt(sᴴ Ψ⁻¹ s) (Roemer 1990); after whitening (s' = W s) the same
// combination reaches the optimum (within the estimate's error, 1 %) and improves on the unwhitened one.
TEST(NoiseWhitening, WhiteningMakesMatchedFilterSnrOptimal) {
  const Eigen::MatrixXcd A = mixing(), psi = A * A.adjoint();
  const NoiseWhitening w = recon::estimateNoiseWhitening(correlatedNoise(A, 20000, 4));
  const Eigen::MatrixXcd W = toEigen(w.whitener);
  Eigen::VectorXcd s(kCoils);
  for (index_t c = 0; c < kCoils; ++c)
    s(c) = std::polar(1.0 / (1.0 + 0.3 * static_cast<double>(c)), 0.4 * static_cast<double>(c));
  const double optimal = std::sqrt((s.adjoint() * psi.inverse() * s)(0).real());
  const double plain = std::abs((s.adjoint() * s)(0)) / std::sqrt((s.adjoint() * psi * s)(0).real());
  // Whitened: combination weights s' = W s applied to W η, i.e. (W s)ᴴ W η; its SNR with the true Ψ.
  const Eigen::VectorXcd sw = W * s;
  const Eigen::MatrixXcd noiseW = W * psi * W.adjoint();
  const double whitened = std::abs((sw.adjoint() * sw)(0)) / std::sqrt((sw.adjoint() * noiseW * sw)(0).real());
  std::printf("SNR: unwhitened %.4f, whitened %.4f, optimal %.4f\n", plain, whitened, optimal);
  EXPECT_GT(whitened, plain * 1.05);
  EXPECT_NEAR(whitened / optimal, 1.0, 0.01);
}

// Dataset: k-space and the noise samples go through W; a reconstruction of data with noise samples whitens by
// default and reports it, and --noise-whitening off leaves the data alone.
TEST(NoiseWhitening, DatasetAndReconstruction) {
  Dataset d = phantom::simulate(larmor::test::grappaSim(32, static_cast<int>(kCoils), 1));
  d.noise = correlatedNoise(mixing(), 2000, 5);
  const Dataset original = d;
  const NoiseWhitening w = recon::whitenIfRequested(d, recon::NoiseWhiteningMode::Auto);
  ASSERT_EQ(w.coils, kCoils);
  const Eigen::MatrixXcd W = toEigen(w.whitener);
  // One sample's coil vector.
  Eigen::VectorXcd eta(kCoils), got(kCoils);
  for (index_t c = 0; c < kCoils; ++c) {
    eta(c) = cdouble(original.kspace(3, 16, 0, c, 0));
    got(c) = cdouble(d.kspace(3, 16, 0, c, 0));
  }
  EXPECT_LT((W * eta - got).norm(), 1e-5 * eta.norm());
  EXPECT_LT((sampleCovariance(*d.noise) * 2000.0 / 1999.0 - Eigen::MatrixXcd::Identity(kCoils, kCoils)).cwiseAbs().maxCoeff(),
            1e-4);

  Dataset off = original;
  EXPECT_EQ(recon::whitenIfRequested(off, recon::NoiseWhiteningMode::Off).coils, 0);
  EXPECT_EQ(off.kspace(3, 16, 0, 2, 0), original.kspace(3, 16, 0, 2, 0));

  recon::ReconRequest req;
  req.dataset = &original;
  req.device = "cpu";
  const recon::ReconResult r = recon::run(req);
  ASSERT_TRUE(r.provenance.contains("noise_whitening"));
  EXPECT_EQ(r.provenance["noise_whitening"]["coils"], kCoils);
  EXPECT_EQ(r.provenance["settings"]["noise_whitening"], "auto");
  req.settings.noiseWhitening = recon::NoiseWhiteningMode::Off;
  EXPECT_FALSE(recon::run(req).provenance.contains("noise_whitening"));
}

TEST(NoiseWhitening, RefusesBadNoise) {
  const CArray good = correlatedNoise(mixing(), 400, 6);
  // Too few samples: fewer than 4 per coil.
  CArray few(Shape{31, kCoils});
  for (index_t i = 0; i < few.size(); ++i) few[i] = good[i];
  expectError([&] { recon::estimateNoiseWhitening(few); }, "too few for 8 coils");
  // Singular: coil 3 a copy of coil 2.
  CArray copy = good;
  for (index_t i = 0; i < 400; ++i) copy(i, 3) = copy(i, 2);
  expectError([&] { recon::estimateNoiseWhitening(copy); }, "singular");
  // A silent coil.
  CArray silent = good;
  for (index_t i = 0; i < 400; ++i) silent(i, 5) = 0;
  expectError([&] { recon::estimateNoiseWhitening(silent); }, "singular");
  // Not finite.
  CArray nan = good;
  nan(17, 4) = cfloat(std::nanf(""), 0);
  expectError([&] { recon::estimateNoiseWhitening(nan); }, "noise sample 17 of coil 4 is not finite");
  // All zero, wrong rank, bad ratio, and a name in the message.
  expectError([&] { recon::estimateNoiseWhitening(CArray(Shape{400, kCoils}, cfloat(0))); }, "all zero");
  expectError([&] { recon::estimateNoiseWhitening(CArray(Shape{400, kCoils, 1})); }, "[samples, coils]");
  expectError([&] { recon::estimateNoiseWhitening(good, -1.0f); }, "bandwidth ratio");
  expectError([&] { recon::estimateNoiseWhitening(few, 1.0f, "scan.h5"); }, "scan.h5: noise whitening");
  // k-space whose coils differ from the whitener's.
  const NoiseWhitening w = recon::estimateNoiseWhitening(good);
  CArray k(Shape{4, 4, 1, 3, 1});
  expectError([&] { recon::applyNoiseWhitening(k, w); }, "coils");
}
