// Adaptive coil combination (Walsh et al. 2000) on coil images built from known smooth sensitivities and a
// complex object: x_c = s_c rho. Where the sensitivities are nearly constant over the window, the dominant
// eigenvector of the window covariance is s / |s| (phase fixed by coil 0), so the combination is
// v^H x = rho |s| exp(i arg s_0): the magnitude of a sum of squares, |rho| sqrt(sum |s_c|^2), with the
// object's own phase kept (relative to coil 0's). Checked in 2D (with a phase-varying object) and 3D,
// on a single coil (identity), with batches (slices), and against bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "larmor/backend/registry.hpp"
#include "larmor/phantom/coils.hpp"
#include "larmor/phantom/phantom.hpp"
#include "support/coil_case.hpp"

using namespace larmor;

namespace {

std::shared_ptr<Backend> cpu() { return BackendRegistry::instance().select("cpu").backend; }

using Case = larmor::test::CoilCase;
Case makeCase(index_t n, index_t nz, int coils) { return larmor::test::makeCoilCase(n, nz, coils); }

CArray combine(Backend& be, const Case& c, index_t batch = 1, int window = 5) {
  const index_t voxels = c.dims[0] * c.dims[1] * c.dims[2];
  CArray in(Shape{voxels * c.coils * batch});
  for (index_t b = 0; b < batch; ++b)
    std::copy(c.images.data(), c.images.data() + voxels * c.coils, in.data() + b * voxels * c.coils);
  auto bi = be.allocate(static_cast<std::size_t>(in.size()) * sizeof(cfloat));
  auto bo = be.allocate(static_cast<std::size_t>(voxels * batch) * sizeof(cfloat));
  be.upload(*bi, in.data(), bi->bytes());
  be.coilCombineOps().adaptiveCombine(*bo, *bi, c.dims, c.coils, batch, window);
  CArray out(Shape{voxels * batch});
  be.download(out.data(), *bo, bo->bytes());
  return out;
}

struct Errors {
  double magnitudeRms = 0, magnitudeMax = 0, complexRms = 0;
};

/// Relative errors over the voxels where |rho| >= 10% of its maximum (elsewhere the object, and with it
/// the covariance, vanishes and the combination has nothing to estimate from).
Errors measure(const Case& c, const CArray& out, index_t offset = 0) {
  const index_t voxels = c.dims[0] * c.dims[1] * c.dims[2];
  double peak = 0;
  for (index_t v = 0; v < voxels; ++v) peak = std::max(peak, static_cast<double>(std::abs(c.rho[v])));
  Errors e;
  double sm = 0, sc = 0, ref = 0;
  for (index_t v = 0; v < voxels; ++v) {
    const cdouble rho(c.rho[v]);
    if (std::abs(rho) < 0.1 * peak) continue;
    double s2 = 0;
    for (index_t k = 0; k < c.coils; ++k) s2 += std::norm(cdouble(c.maps[v + voxels * k]));
    const cdouble s0(c.maps[v]);
    const cdouble expected = rho * std::sqrt(s2) * (s0 / std::abs(s0));
    const cdouble got(out[offset + v]);
    const double dm = std::abs(got) - std::abs(expected);
    sm += dm * dm;
    sc += std::norm(got - expected);
    ref += std::norm(expected);
    e.magnitudeMax = std::max(e.magnitudeMax, std::abs(dm) / std::abs(expected));
  }
  e.magnitudeRms = std::sqrt(sm / ref);
  e.complexRms = std::sqrt(sc / ref);
  return e;
}

}  // namespace

// Measured: magnitude 0.14% RMS (worst voxel 1.9%, at edges where the 5x5 window mixes the object's
// phase), complex 0.27% RMS. Bounds with a margin of about 3x.
TEST(AdaptiveCombine, ReproducesObjectTimesCoilNorm2D) {
  auto be = cpu();
  const Case c = makeCase(64, 1, 8);
  const CArray out = combine(*be, c);
  const Errors e = measure(c, out);
  std::printf("adaptive combine 2D: |.| RMS %.4f, worst %.4f, complex RMS %.4f\n", e.magnitudeRms, e.magnitudeMax,
              e.complexRms);
  EXPECT_LT(e.magnitudeRms, 0.005);
  EXPECT_LT(e.magnitudeMax, 0.06);
  EXPECT_LT(e.complexRms, 0.01);
}

TEST(AdaptiveCombine, ReproducesObjectTimesCoilNorm3DAndBatches) {
  auto be = cpu();
  const Case c = makeCase(20, 16, 4);
  const CArray out = combine(*be, c, 2, 3);
  const index_t voxels = 20 * 20 * 16;
  for (index_t b = 0; b < 2; ++b) {
    const Errors e = measure(c, out, b * voxels);
    std::printf("adaptive combine 3D (batch %ld): |.| RMS %.4f, worst %.4f, complex RMS %.4f\n", static_cast<long>(b),
                e.magnitudeRms, e.magnitudeMax, e.complexRms);
    EXPECT_LT(e.magnitudeRms, 0.01);
    EXPECT_LT(e.complexRms, 0.02);
  }
  for (index_t v = 0; v < voxels; ++v) EXPECT_EQ(out[v], out[v + voxels]);
}

TEST(AdaptiveCombine, SingleCoilIsIdentity) {
  auto be = cpu();
  const Case c = makeCase(16, 1, 1);
  const CArray out = combine(*be, c);
  for (index_t v = 0; v < out.size(); ++v) {
    EXPECT_NEAR(out[v].real(), c.images[v].real(), 1e-6f);
    EXPECT_NEAR(out[v].imag(), c.images[v].imag(), 1e-6f);
  }
}

TEST(AdaptiveCombine, BadArguments) {
  auto be = cpu();
  auto small = be->allocate(64);
  const index_t dims[3] = {8, 8, 1};
  EXPECT_THROW(be->coilCombineOps().adaptiveCombine(*small, *small, dims, 4, 1, 5), Error);
  auto in = be->allocate(8 * 8 * 4 * sizeof(cfloat)), out = be->allocate(8 * 8 * sizeof(cfloat));
  EXPECT_THROW(be->coilCombineOps().adaptiveCombine(*out, *in, dims, 4, 1, 0), Error);
  EXPECT_NO_THROW(be->coilCombineOps().adaptiveCombine(*out, *in, dims, 4, 1, 5));  // zeros in, zeros out
}

// With noise (64^2, 16 coils, complex Gaussian noise of sigma 0.02 per part, window 7: the case of
// tests/gpu/test_gpu_adaptive.cpp) the error against the noise-free rho |s| exp(i arg s_0) is the noise the
// combination lets through: a unit-norm v passes the noise of one coil, E|v^H n|^2 = 2 sigma^2, so the
// SNR-optimal floor is sqrt(2 sigma^2 voxels / sum |expected|^2). Adaptive combination must come close to
// it (the window's eigenvector estimate adds a little; the noise-free bias is ~0.3%, above).
TEST(AdaptiveCombine, NoisyDataComesCloseToTheNoiseFloor) {
  const float sigma = 0.02f;
  Case c = makeCase(64, 1, 16);
  const index_t voxels = 64 * 64;
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.f, sigma);
  for (index_t k = 0; k < c.coils; ++k)
    for (index_t v = 0; v < voxels; ++v) c.images[v + voxels * k] += cfloat(g(rng), g(rng));
  const CArray out = combine(*cpu(), c, 1, 7);
  double peak = 0, ref = 0;
  index_t counted = 0;
  for (index_t v = 0; v < voxels; ++v) peak = std::max(peak, static_cast<double>(std::abs(c.rho[v])));
  for (index_t v = 0; v < voxels; ++v) {
    if (std::abs(c.rho[v]) < 0.1 * peak) continue;
    double s2 = 0;
    for (index_t k = 0; k < c.coils; ++k) s2 += std::norm(cdouble(c.maps[v + voxels * k]));
    ref += std::norm(cdouble(c.rho[v])) * s2;
    ++counted;
  }
  const double floor = std::sqrt(2.0 * sigma * sigma * static_cast<double>(counted) / ref);
  const Errors e = measure(c, out);
  std::printf("adaptive, noise %.2f: complex %.4f, magnitude %.4f, SNR-optimal floor %.4f\n", sigma, e.complexRms,
              e.magnitudeRms, floor);
  EXPECT_LT(e.complexRms, 1.3 * floor);  // measured 1.19x
  EXPECT_GT(e.complexRms, 0.8 * floor);  // the noise must be there: the test would not see a smoothing bug
}
