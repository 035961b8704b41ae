// ESPIRiT on the GPU (cuda/espirit.cu and the backend-neutral pipeline ops/espirit.cpp on the CUDA backend)
// against the CPU backend on the same inputs: the pointwise eigen kernel on random Hermitian matrices (1 to
// 32 coils: the lane-group kernel up to 16, the one-thread kernel above), and whole maps from a simulated 2D
// phantom (256 x 256, 8 coils) and a small 3D one (32^3, 4 coils, kernel 4). Maps agree to float rounding
// inside the mask; the masks (eigenvalue >= 0.8) agree except where the eigenvalue lies within 1e-4 of the
// threshold.
#include <array>
#include <cmath>
#include <random>

#include "larmor/ops/espirit.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/calibration.hpp"
#include "../support/buffers.hpp"
#include "../support/device.hpp"

using namespace larmor;
using namespace larmor::test;

namespace {

class EspiritGpu : public larmor::test::GpuTest {};

struct Eig {
  std::vector<cfloat> maps, values;
};

Eig runKernel(Backend& be, const std::vector<cfloat>& cov, index_t voxels, index_t C, const std::vector<cfloat>& ref,
              float crop) {
  auto dc = toBuffer(be, cov);
  auto dm = poisoned(be, voxels * C), dv = poisoned(be, voxels);
  be.espiritOps().dominantEigenvectors(*dm, *dv, *dc, voxels, C, ref, crop);
  return {fromBuffer(be, *dm, voxels * C), fromBuffer(be, *dv, voxels)};
}

void compareMaps(const larmor::ops::EspiritResult& g, const larmor::ops::EspiritResult& c, index_t coils,
                 double tolerance) {
  const index_t n = c.eigenvalues.size();
  ASSERT_EQ(g.maps.size(), c.maps.size());
  ASSERT_EQ(g.kernelsKept, c.kernelsKept);
  index_t inside = 0;
  for (index_t v = 0; v < n; ++v) {
    const float lg = g.eigenvalues[v], lc = c.eigenvalues[v];
    ASSERT_NEAR(lg, lc, 1e-4) << "voxel " << v;
    if (std::abs(lc - 0.8f) < 1e-4f) continue;
    for (index_t k = 0; k < coils; ++k) {
      const cfloat a = g.maps[v + n * k], b = c.maps[v + n * k];
      ASSERT_LE(std::abs(a - b), tolerance) << "voxel " << v << " coil " << k;
    }
    inside += lc >= 0.8f;
  }
  EXPECT_GT(inside, n / 10);
}

}  // namespace

TEST_F(EspiritGpu, PointwiseKernelMatchesCpu) {
  auto cpuBe = cpu_;
  for (const index_t C : {1, 2, 4, 8, 13, 16, 32}) {  // groups of 4, 8 and 16 lanes a voxel; 32: one thread
    const index_t voxels = 1000, L = C * (C + 1) / 2;
    std::mt19937 rng(static_cast<unsigned>(C));
    std::normal_distribution<float> g;
    // M = B B^H / trace: Hermitian positive semidefinite, eigenvalues <= 1.
    std::vector<cfloat> cov(static_cast<std::size_t>(voxels * L));
    for (index_t v = 0; v < voxels; ++v) {
      std::vector<cfloat> b(static_cast<std::size_t>(C * 3));
      for (auto& x : b) x = cfloat(g(rng), g(rng));
      double tr = 0;
      for (auto& x : b) tr += std::norm(x);
      for (index_t i = 0; i < C; ++i)
        for (index_t j = 0; j <= i; ++j) {
          cdouble s = 0;
          for (index_t r = 0; r < 3; ++r) s += cdouble(b[i + C * r]) * std::conj(cdouble(b[j + C * r]));
          cov[static_cast<std::size_t>(v + voxels * (i * (i + 1) / 2 + j))] = cfloat(s / tr);
        }
    }
    std::vector<cfloat> ref(static_cast<std::size_t>(C), cfloat(0.f));
    ref[0] = 1.f;
    const Eig a = runKernel(*gpu_, cov, voxels, C, ref, 0.3f), b = runKernel(*cpuBe, cov, voxels, C, ref, 0.3f);
    for (index_t v = 0; v < voxels; ++v) {
      ASSERT_NEAR(a.values[v].real(), b.values[v].real(), 1e-5) << "C " << C << " voxel " << v;
      if (std::abs(b.values[v].real() - 0.3f) < 1e-5f) continue;
      for (index_t k = 0; k < C; ++k)
        ASSERT_LE(std::abs(a.maps[v + voxels * k] - b.maps[v + voxels * k]), 2e-4) << "C " << C << " voxel " << v;
    }
  }
  const std::vector<cfloat> one(40, cfloat(1.f));
  EXPECT_THROW(runKernel(*gpu_, std::vector<cfloat>(40 * 41 / 2), 1, 40, one, 0.f), larmor::Error);
}

// The calibration matrix made on the device (EspiritOps::calibrationMatrix): the CPU's, bit for bit, 2D and 3D.
TEST_F(EspiritGpu, CalibrationMatrixMatchesCpu) {
  for (const auto& c : {std::array<index_t, 7>{24, 24, 1, 8, 6, 6, 1}, std::array<index_t, 7>{12, 10, 9, 3, 5, 4, 3}}) {
    const index_t cells = c[0] * c[1] * c[2] * c[3];
    const index_t rows = (c[0] - c[4] + 1) * (c[1] - c[5] + 1) * (c[2] - c[6] + 1), cols = c[4] * c[5] * c[6] * c[3];
    std::mt19937 rng(static_cast<unsigned>(cells));
    std::normal_distribution<float> g;
    std::vector<cfloat> cal(static_cast<std::size_t>(cells));
    for (auto& x : cal) x = cfloat(g(rng), g(rng));
    const index_t box[4] = {c[0], c[1], c[2], c[3]}, kernel[3] = {c[4], c[5], c[6]};
    std::vector<cfloat> out[2];
    Backend* bes[2] = {gpu_.get(), cpu_.get()};
    for (int i = 0; i < 2; ++i) {
      auto dc = toBuffer(*bes[i], cal);
      auto da = poisoned(*bes[i], rows * cols);
      bes[i]->espiritOps().calibrationMatrix(*da, *dc, box, kernel);
      out[i] = fromBuffer(*bes[i], *da, rows * cols);
    }
    for (index_t e = 0; e < rows * cols; ++e) ASSERT_EQ(out[0][e], out[1][e]) << "entry " << e;
  }
}

// The small grid's matrices (EspiritOps::smallGridMatrices): the same double sums on both devices.
TEST_F(EspiritGpu, SmallGridMatricesMatchCpu) {
  for (const index_t C : {1, 8, 32}) {
    const index_t S = 12 * 12, kept = 40, L = C * (C + 1) / 2;
    std::mt19937 rng(static_cast<unsigned>(C));
    std::normal_distribution<float> g;
    std::vector<cfloat> u(static_cast<std::size_t>(S * C * kept));
    for (auto& x : u) x = cfloat(g(rng), g(rng));
    std::vector<cfloat> out[2];
    Backend* bes[2] = {gpu_.get(), cpu_.get()};
    for (int i = 0; i < 2; ++i) {
      auto du = toBuffer(*bes[i], u);
      auto dc = poisoned(*bes[i], S * L);
      bes[i]->espiritOps().smallGridMatrices(*dc, *du, S, C, kept, 2.5);
      out[i] = fromBuffer(*bes[i], *dc, S * L);
    }
    for (index_t e = 0; e < S * L; ++e)
      ASSERT_LE(std::abs(out[0][e] - out[1][e]), 1e-6f * (1.f + std::abs(out[1][e]))) << "C " << C << " entry " << e;
  }
}

TEST_F(EspiritGpu, Phantom2D256MatchesCpu) {
  larmor::phantom::SimulateSettings ss;
  ss.matrix[0] = ss.matrix[1] = 256;
  ss.coils = 8;
  ss.readoutOversampling = 1;
  ss.noiseSigma = 0.002f;
  const larmor::Dataset d = larmor::phantom::simulate(ss);
  auto cpuBe = cpu_;
  const auto r = larmor::recon::calibrationRegion(*cpuBe, d, 0, 24, 6);
  const index_t grid[3] = {256, 256, 1};
  const auto g = larmor::ops::espirit(*gpu_, r.data, grid), c = larmor::ops::espirit(*cpuBe, r.data, grid);
  compareMaps(g, c, 8, 2e-3);
}

TEST_F(EspiritGpu, Phantom3DMatchesCpu) {
  larmor::phantom::SimulateSettings ss;
  ss.matrix[0] = ss.matrix[1] = ss.matrix[2] = 32;
  ss.coils = 4;
  ss.readoutOversampling = 1;
  ss.noiseSigma = 0.002f;
  const larmor::Dataset d = larmor::phantom::simulate(ss);
  auto cpuBe = cpu_;
  const auto r = larmor::recon::calibrationRegion(*cpuBe, d, 0, 12, 4);
  const index_t grid[3] = {32, 32, 32};
  larmor::ops::EspiritOptions o;
  o.kernel = 4;
  const auto g = larmor::ops::espirit(*gpu_, r.data, grid, o), c = larmor::ops::espirit(*cpuBe, r.data, grid, o);
  compareMaps(g, c, 4, 2e-3);
}

// EspiritOps::hermitianEigen: cuSOLVER zheevd against Eigen on a random Hermitian matrix of ESPIRiT's size
// (kernel 6 x 6, 8 coils: 288), eigenvalues spread over [0, 1e3]: eigenvalues to double rounding, each
// eigenvector up to its phase (|v_cpu^H v_gpu| = 1), and both sets orthonormal.
TEST_F(EspiritGpu, HermitianEigenMatchesCpu) {
  const index_t n = 288;
  std::mt19937 rng(7);
  std::normal_distribution<double> g;
  std::vector<cdouble> b(static_cast<std::size_t>(n * n)), a(static_cast<std::size_t>(n * n));
  for (auto& e : b) e = cdouble(g(rng), g(rng));
  for (index_t j = 0; j < n; ++j)  // a = b^H b / n: positive semidefinite, well separated eigenvalues
    for (index_t i = 0; i < n; ++i) {
      cdouble s = 0;
      for (index_t k = 0; k < n; ++k) s += std::conj(b[k + n * i]) * b[k + n * j];
      a[i + n * j] = s / static_cast<double>(n);
    }
  std::vector<cdouble> ac = a, ag = a;
  std::vector<double> vc, vg;
  cpu_->espiritOps().hermitianEigen(ac, vc, n);
  gpu_->espiritOps().hermitianEigen(ag, vg, n);
  ASSERT_EQ(vg.size(), vc.size());
  for (index_t j = 0; j < n; ++j) {
    ASSERT_NEAR(vg[j], vc[j], 1e-10 * vc[n - 1]) << "eigenvalue " << j;
    if (j > 0) ASSERT_LE(vg[j - 1], vg[j]);
  }
  for (index_t j = 0; j < n; ++j) {
    // The smallest eigenvalues of a Wishart matrix crowd near 0: compare where the gap to the neighbours
    // is at least 1e-6 of the largest.
    const double gap = std::min(j > 0 ? vc[j] - vc[j - 1] : 1e300, j + 1 < n ? vc[j + 1] - vc[j] : 1e300);
    cdouble d = 0;
    double ng = 0;
    for (index_t i = 0; i < n; ++i) {
      d += std::conj(ac[i + n * j]) * ag[i + n * j];
      ng += std::norm(ag[i + n * j]);
    }
    ASSERT_NEAR(ng, 1.0, 1e-10) << "eigenvector " << j;
    if (gap > 1e-6 * vc[n - 1]) ASSERT_NEAR(std::abs(d), 1.0, 1e-8) << "eigenvector " << j;
  }
}

// EspiritOps::gramKernels: the device-resident Gram (complex float) decomposed on the GPU equals hermitianEigen
// of the same matrix on the host (the eigenvalues to double rounding, each kernel the conjugated eigenvector of
// the reversed index up to its phase), and the CPU twin agrees.
TEST_F(EspiritGpu, GramKernelsMatchHermitianEigen) {
  const index_t n = 200;
  std::mt19937 rng(8);
  std::normal_distribution<float> g;
  std::vector<cfloat> b(static_cast<std::size_t>(n * n));
  for (auto& e : b) e = cfloat(g(rng), g(rng));
  std::vector<cfloat> gram(static_cast<std::size_t>(n * n));
  for (index_t j = 0; j < n; ++j)
    for (index_t i = 0; i < n; ++i) {
      cdouble s = 0;
      for (index_t k = 0; k < n; ++k) s += std::conj(cdouble(b[k + n * i])) * cdouble(b[k + n * j]);
      gram[i + n * j] = cfloat(s / static_cast<double>(n));
    }
  for (index_t j = 0; j < n; ++j)  // exactly Hermitian in float
    for (index_t i = 0; i < j; ++i) gram[j + n * i] = std::conj(gram[i + n * j]);
  std::vector<cdouble> a(gram.begin(), gram.end());
  std::vector<double> want;
  cpu_->espiritOps().hermitianEigen(a, want, n);
  for (Backend* be : {gpu_.get(), cpu_.get()}) {
    CArray host(Shape{n * n});
    std::copy(gram.begin(), gram.end(), host.data());
    CDeviceArray dg = CDeviceArray::upload(*be, host), dk(*be, Shape{n * n});
    std::vector<double> values;
    be->espiritOps().gramKernels(dg.buffer(), n, values, dk.buffer());
    const CArray k = dk.download();
    ASSERT_EQ(values.size(), want.size());
    for (index_t j = 0; j < n; ++j) ASSERT_NEAR(values[j], want[j], 1e-9 * want[n - 1]) << "eigenvalue " << j;
    for (index_t i = 0; i < n; ++i) {
      const index_t j = n - 1 - i;  // kernel i is the eigenvector of the i-th largest eigenvalue
      const double gap = std::min(j > 0 ? want[j] - want[j - 1] : 1e300, j + 1 < n ? want[j + 1] - want[j] : 1e300);
      if (gap <= 1e-6 * want[n - 1]) continue;
      cdouble d = 0;
      for (index_t e = 0; e < n; ++e) d += cdouble(k[e + n * i]) * a[e + n * j];  // conj(conj(v)) . v
      ASSERT_NEAR(std::abs(d), 1.0, 1e-5) << be->info().id << " kernel " << i;
    }
  }
}
