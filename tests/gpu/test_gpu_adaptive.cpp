// The CUDA adaptive (Walsh) coil combination (cuda/coil_combine.cu) against its definition and against the
// CPU backend, on coil images built from known smooth sensitivities and a complex object (as
// tests/unit/test_adaptive_combine.cpp): where the sensitivities are nearly constant over the window the
// result is rho |s| exp(i arg s_0). Coil counts across every thread-group size (1 .. 64), 2D and 3D,
// batches, odd windows and an even one, noise, and the errors.
#include <cstdio>

#include "support/buffers.hpp"
#include "support/coil_case.hpp"
#include "support/device.hpp"
#include "support/error_norms.hpp"
#include "support/expect_error.hpp"

using namespace larmor;
using namespace larmor::test;

namespace {

class AdaptiveGpu : public GpuTest {};

using Case = CoilCase;

Case makeCase(index_t n, index_t nz, int coils, double noise = 0, unsigned seed = 1) {
  return makeCoilCase(n, nz, coils, noise, seed);
}

std::vector<cfloat> combine(Backend& be, const Case& c, index_t batch, int window) {
  std::vector<cfloat> in;
  for (index_t b = 0; b < batch; ++b) in.insert(in.end(), c.images.begin(), c.images.end());
  auto bi = toBuffer(be, in);
  auto bo = poisoned(be, c.voxels() * batch);
  be.coilCombineOps().adaptiveCombine(*bo, *bi, c.dims, c.coils, batch, window);
  return fromBuffer(be, *bo, c.voxels() * batch);
}

/// Relative complex RMS error against rho |s| exp(i arg s_0) over the voxels where |rho| >= 10% of its
/// peak (elsewhere there is nothing to estimate the covariance from).
double errorAgainstDefinition(const Case& c, const std::vector<cfloat>& out, index_t offset = 0) {
  const index_t voxels = c.voxels();
  double peak = 0;
  for (index_t v = 0; v < voxels; ++v) peak = std::max(peak, static_cast<double>(std::abs(c.rho[v])));
  double num = 0, den = 0;
  for (index_t v = 0; v < voxels; ++v) {
    const cdouble rho(c.rho[v]);
    if (std::abs(rho) < 0.1 * peak) continue;
    double s2 = 0;
    for (index_t k = 0; k < c.coils; ++k) s2 += std::norm(cdouble(c.maps[v + voxels * k]));
    const cdouble s0(c.maps[v]);
    const cdouble expected = rho * std::sqrt(s2) * (s0 / std::abs(s0));
    num += std::norm(cdouble(out[static_cast<std::size_t>(offset + v)]) - expected);
    den += std::norm(expected);
  }
  return std::sqrt(num / den);
}

}  // namespace

TEST_F(AdaptiveGpu, MatchesDefinitionAndCpu) {
  auto host = cpu_;
  struct Config {
    index_t n, nz;
    int coils, window;
    index_t batch;
  };
  // Coil counts cover every group size of the kernel (1, 2, 4, 8, 16, 32, 64 threads a voxel).
  for (const Config& k : {Config{32, 1, 1, 5, 1}, Config{32, 1, 2, 5, 1}, Config{48, 1, 3, 5, 2}, Config{64, 1, 8, 5, 1},
                          Config{40, 1, 12, 3, 1}, Config{32, 1, 32, 5, 1}, Config{32, 1, 33, 5, 1},
                          Config{24, 1, 64, 5, 1}, Config{20, 16, 4, 3, 2}, Config{16, 12, 8, 4, 1}}) {
    const Case c = makeCase(k.n, k.nz, k.coils);
    const auto g = combine(*gpu_, c, k.batch, k.window);
    const auto h = combine(*host, c, k.batch, k.window);
    ASSERT_TRUE(allFinite(g));
    const double vsCpu = relL2Error(g, h);
    double worst = 0;
    for (index_t b = 0; b < k.batch; ++b) worst = std::max(worst, errorAgainstDefinition(c, g, b * c.voxels()));
    std::printf("adaptive %ldx%ldx%ld, %d coils, window %d, batch %ld: vs CPU %.2e, vs definition %.2e\n",
                static_cast<long>(k.n), static_cast<long>(k.n), static_cast<long>(k.nz), k.coils, k.window,
                static_cast<long>(k.batch), vsCpu, worst);
    EXPECT_LE(vsCpu, 1e-4) << k.coils << " coils";
    // Against the definition the window's averaging of varying sensitivities is the error (CPU test:
    // ~0.3% complex RMS at 64^2); small images are mostly edge, hence the wider bound.
    EXPECT_LE(worst, k.coils == 1 ? 1e-6 : 0.05) << k.coils << " coils";
  }
}

TEST_F(AdaptiveGpu, SingleCoilIsIdentity) {
  const Case c = makeCase(16, 1, 1);
  const auto out = combine(*gpu_, c, 1, 5);
  EXPECT_LE(relL2Error(out, c.images), 1e-6);
}

// With noise the eigenvector of a noise-only window is ill-defined (each backend iterates to some vector of
// the noise subspace), so the backends are compared where the object is (|rho| >= 10% of its peak).
TEST_F(AdaptiveGpu, NoisyDataMatchesCpu) {
  const Case c = makeCase(64, 1, 16, 0.02, 7);
  const auto g = combine(*gpu_, c, 1, 7);
  const auto h = combine(*cpu_, c, 1, 7);
  double peak = 0, num = 0, den = 0;
  for (index_t v = 0; v < c.voxels(); ++v) peak = std::max(peak, static_cast<double>(std::abs(c.rho[v])));
  for (index_t v = 0; v < c.voxels(); ++v) {
    if (std::abs(c.rho[v]) < 0.1 * peak) continue;
    num += std::norm(cdouble(g[static_cast<std::size_t>(v)]) - cdouble(h[static_cast<std::size_t>(v)]));
    den += std::norm(cdouble(h[static_cast<std::size_t>(v)]));
  }
  const double d = std::sqrt(num / den);
  // Against the noise-free definition the error is the noise let through: the SNR-optimal floor is
  // sqrt(2 sigma^2 voxels / sum |expected|^2) (tests/unit/test_adaptive_combine.cpp: the CPU at 1.19x).
  double ref = 0;
  index_t counted = 0;
  for (index_t v = 0; v < c.voxels(); ++v) {
    if (std::abs(c.rho[v]) < 0.1 * peak) continue;
    double s2 = 0;
    for (index_t k = 0; k < c.coils; ++k) s2 += std::norm(cdouble(c.maps[v + c.voxels() * k]));
    ref += std::norm(cdouble(c.rho[v])) * s2;
    ++counted;
  }
  const double floor = std::sqrt(2.0 * 0.02 * 0.02 * static_cast<double>(counted) / ref);
  const double eg = errorAgainstDefinition(c, g), eh = errorAgainstDefinition(c, h);
  std::printf("adaptive 64^2, 16 coils, noise 0.02: GPU vs CPU %.2e; vs definition GPU %.4f, CPU %.4f, floor %.4f\n",
              d, eg, eh, floor);
  // docs/status.md claims GPU = CPU within 1e-7 here (measured 1.0e-7 on the H100, 2026-11-22); the bound was 2e-3
  // (20000x the claim) and is now 1e-6.
  EXPECT_LE(d, 1e-6);
  EXPECT_LE(eg, 1.3 * floor);
}

TEST_F(AdaptiveGpu, Errors) {
  const Case c = makeCase(8, 1, 2);
  auto in = toBuffer(*gpu_, c.images);
  auto out = gpu_->allocate(static_cast<std::size_t>(c.voxels()) * sizeof(cfloat));
  expectError([&] { gpu_->coilCombineOps().adaptiveCombine(*out, *in, c.dims, 65, 1, 5); }, "coils");
  expectError([&] { gpu_->coilCombineOps().adaptiveCombine(*out, *in, c.dims, 2, 1, 0); }, "window");
  auto small = gpu_->allocate(8);
  expectError([&] { gpu_->coilCombineOps().adaptiveCombine(*small, *in, c.dims, 2, 1, 5); }, "adaptiveCombine");
}
