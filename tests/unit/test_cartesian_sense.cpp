// SENSE on Cartesian data (ops/cartesian_sampling.hpp, --method cg on Cartesian k-space): the FFT + mask
// operators against a float64 brute-force DFT written here, their adjointness, and whole reconstructions
// against the FFT pipeline (fully sampled: the same image) and against the fully sampled image (R = 2 with
// the true coil maps: SENSE recovers it).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "larmor/backend/registry.hpp"
#include "larmor/ops/cartesian_sampling.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/iterative.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/recon/settings_table.hpp"
#include "../support/error_norms.hpp"
#include "../support/exact_dft.hpp"
#include "../support/grappa_problem.hpp"

using namespace larmor;
using larmor::test::relL2Error;

namespace {

std::shared_ptr<Backend> cpu() { return BackendRegistry::instance().select("cpu").backend; }

std::vector<cfloat> randomVector(index_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g;
  std::vector<cfloat> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = cfloat(g(rng), g(rng));
  return v;
}

/// The raw forward sum of ops/nufft.hpp in double (tests/support/exact_dft.hpp) at grid points `index`
/// (k = i - floor(N/2) per dimension).
std::vector<cfloat> bruteForward(const std::vector<cfloat>& x, const Shape& grid, const std::vector<std::int64_t>& index) {
  NufftGeometry g;
  g.dims = grid[2] > 1 ? 3 : 2;
  for (int d = 0; d < 3; ++d) g.image[d] = grid[static_cast<std::size_t>(d)];
  g.trajectory = RArray(Shape{3, static_cast<index_t>(index.size())});
  for (std::size_t j = 0; j < index.size(); ++j) {
    index_t r = index[j];
    for (int d = 0; d < 3; ++d) {
      g.trajectory[static_cast<index_t>(3 * j) + d] = static_cast<float>(r % grid[static_cast<std::size_t>(d)] - grid[static_cast<std::size_t>(d)] / 2);
      r /= grid[static_cast<std::size_t>(d)];
    }
  }
  const auto d = test::ExactDft(g).forward(x, 1);
  return std::vector<cfloat>(d.begin(), d.end());
}

std::vector<cfloat> download(Backend& b, const Buffer& buf, index_t n) {
  std::vector<cfloat> v(static_cast<std::size_t>(n));
  b.download(v.data(), buf, v.size() * sizeof(cfloat));
  return v;
}

std::unique_ptr<Buffer> upload(Backend& b, const std::vector<cfloat>& v) {
  auto buf = b.allocate(v.size() * sizeof(cfloat));
  b.upload(*buf, v.data(), v.size() * sizeof(cfloat));
  return buf;
}

}  // namespace

// F on odd, even, 2D and 3D grids equals the brute-force sum; F^H is its adjoint; the Gram operator is
// N^{-1} F^H F; a grid point sampled twice is refused.
TEST(CartesianSense, PlanMatchesTheBruteForceSumAndIsAdjoint) {
  auto be = cpu();
  for (const Shape grid : {Shape{6, 5, 1}, Shape{4, 3, 5}, Shape{1, 8, 7}}) {
    const index_t voxels = grid.size();
    std::vector<std::int64_t> index;
    for (index_t i = 0; i < voxels; i += 2) index.push_back(i);
    index.push_back(1);
    const index_t m = static_cast<index_t>(index.size());
    ops::CartesianPlan plan(*be, grid, index);
    const auto x = randomVector(voxels, 3), y = randomVector(m, 4);
    auto xb = upload(*be, x), yb = upload(*be, y);
    auto fx = be->allocate(static_cast<std::size_t>(m) * sizeof(cfloat));
    auto fhy = be->allocate(static_cast<std::size_t>(voxels) * sizeof(cfloat));
    plan.forward(*xb, *fx, 1);
    plan.adjoint(*yb, *fhy, 1);
    EXPECT_LT(relL2Error(download(*be, *fx, m), bruteForward(x, grid, index)), 1e-5) << grid.str();
    const cdouble lhs = be->dot(*yb, *fx, m), rhs = be->dot(*fhy, *xb, voxels);  // <y, F x> = <F^H y, x>
    EXPECT_LT(std::abs(lhs - rhs) / std::abs(lhs), 1e-5) << grid.str();

    ops::CartesianGram gram(*be, plan);
    auto tx = be->allocate(static_cast<std::size_t>(voxels) * sizeof(cfloat));
    gram.apply(*xb, *tx);
    plan.adjoint(*fx, *fhy, 1);
    std::vector<cfloat> expect = download(*be, *fhy, voxels);
    for (auto& v : expect) v /= static_cast<float>(voxels);
    EXPECT_LT(relL2Error(download(*be, *tx, voxels), expect), 1e-5) << grid.str();
    EXPECT_DOUBLE_EQ(gram.diagonal(), static_cast<double>(m) / voxels);
    index.push_back(1);
    EXPECT_THROW(ops::CartesianPlan(*be, grid, index), Error);
  }
}

// The batched transforms equal one batch at a time.
TEST(CartesianSense, BatchedPlanEqualsOneAtATime) {
  auto be = cpu();
  const Shape grid{8, 6, 1};
  std::vector<std::int64_t> index;
  for (index_t i = 0; i < grid.size(); i += 3) index.push_back(i);
  const index_t m = static_cast<index_t>(index.size()), n = grid.size();
  ops::CartesianPlan plan(*be, grid, index);
  const auto x = randomVector(3 * n, 7);
  auto xb = upload(*be, x);
  auto all = be->allocate(static_cast<std::size_t>(3 * m) * sizeof(cfloat));
  plan.forward(*xb, *all, 3);
  const auto batched = download(*be, *all, 3 * m);
  for (index_t b = 0; b < 3; ++b) {
    auto one = upload(*be, std::vector<cfloat>(x.begin() + b * n, x.begin() + (b + 1) * n));
    auto out = be->allocate(static_cast<std::size_t>(m) * sizeof(cfloat));
    plan.forward(*one, *out, 1);
    const auto single = download(*be, *out, m);
    EXPECT_LT(relL2Error(std::vector<cfloat>(batched.begin() + b * m, batched.begin() + (b + 1) * m), single), 1e-6);
  }
}

namespace {

recon::ReconResult runMethod(const Dataset& d, recon::Method method, int iterations = 60) {
  recon::ReconRequest req;
  req.dataset = &d;
  req.device = "cpu";
  req.settings.method = method;
  recon::settings::applyMethodDefaults(req.settings);
  req.settings.iterative.coilMaps = recon::CoilMapSource::Dataset;
  req.settings.iterative.iterations = iterations;
  req.settings.iterative.cacheDirectory = "none";
  return recon::run(req);
}

}  // namespace

// Fully sampled, one coil: SENSE is the inverse FFT, readout oversampling cropped as the FFT pipeline does.
TEST(CartesianSense, FullySampledSingleCoilIsTheFftImage) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 48;
  s.coils = 1;  // readout oversampling 2 (the default): the solve grid is the recon FOV
  const Dataset d = phantom::simulate(s);
  const auto fft = runMethod(d, recon::Method::Fft);
  const auto cg = runMethod(d, recon::Method::Cg, 5);
  ASSERT_EQ(cg.image.shape(), fft.image.shape());
  // The FFT pipeline's single-coil "combination" is the magnitude; SENSE keeps the phase.
  CArray mag = cg.image;
  for (index_t i = 0; i < mag.size(); ++i) mag[i] = std::abs(mag[i]);
  EXPECT_LT(relL2Error(mag, fft.image), 1e-5);
}

// Data made by the SENSE model itself (k_c = FFT(S_c rho) with the true maps, fully sampled, several
// coils): the solution is rho, and the combined image rho sqrt(sum |S|^2) in amplitude and phase.
TEST(CartesianSense, ConsistentDataGiveTheirImageInAmplitudeAndPhase) {
  phantom::SimulateSettings s;
  s.matrix[0] = 40;
  s.matrix[1] = 32;
  s.coils = 4;
  s.readoutOversampling = 1;
  Dataset d = phantom::simulate(s);
  auto be = cpu();
  const index_t n = 40 * 32;
  CArray rho = *d.reference;
  for (index_t i = 0; i < n; ++i) rho[i] *= std::polar(1.f, 0.3f * static_cast<float>(i % 7));  // a phase
  CArray k(Shape{40, 32, 1, 4});
  for (index_t c = 0; c < 4; ++c)
    for (index_t i = 0; i < n; ++i) k[i + n * c] = (*d.coilMaps)[i + n * c] * rho[i];
  auto kb = be->allocate(static_cast<std::size_t>(k.size()) * sizeof(cfloat));
  be->upload(*kb, k.data(), static_cast<std::size_t>(k.size()) * sizeof(cfloat));
  be->fft(*kb, k.shape(), 2, FftDirection::Forward);
  be->download(d.kspace.data(), *kb, static_cast<std::size_t>(k.size()) * sizeof(cfloat));
  const auto cg = runMethod(d, recon::Method::Cg, 40);
  CArray expect(rho.shape());
  for (index_t i = 0; i < n; ++i) {
    double sos = 0;
    for (index_t c = 0; c < 4; ++c) sos += std::norm((*d.coilMaps)[i + n * c]);
    expect[i] = rho[i] * static_cast<float>(std::sqrt(sos));
  }
  EXPECT_LT(relL2Error(cg.image, expect), 1e-4);
}

// R = 2 along pe1 with 24 calibration lines, 8 coils, true maps, no noise: SENSE unfolds the aliasing and
// reaches the fully sampled image (the bound: the fully sampled FFT image's own error against the truth
// plus a hundredth), where the zero-filled FFT image is far off.
TEST(CartesianSense, UndersampledSenseReachesTheFullySampledImage) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 96;
  s.coils = 8;
  const Dataset full = phantom::simulate(s);
  s.accel = 2;
  const Dataset r2 = phantom::simulate(s);
  const auto reference = runMethod(full, recon::Method::Fft);
  const auto zeroFilled = runMethod(r2, recon::Method::Fft);
  const auto sense = runMethod(r2, recon::Method::Cg, 60);
  const double eFull = reference.metrics["percent_error"].get<double>();
  const double eZero = zeroFilled.metrics["percent_error"].get<double>();
  const double eSense = sense.metrics["percent_error"].get<double>();
  std::printf("R2 Cartesian 96^2 x 8: fully sampled FFT %.3f %%, zero-filled %.3f %%, SENSE %.3f %%\n", eFull, eZero,
              eSense);
  EXPECT_LT(eSense, eFull + 1.0);
  EXPECT_GT(eZero, eFull + 5.0);
  EXPECT_EQ(sense.convergence["encoding"], "cartesian");
}

// recon::run leaves the NaN/Inf check of iterative Cartesian data to a count on the backend
// (recon::samplesCheckedOnBackend): the error is still Dataset::validate's, word for word, for a bad sample
// on a line that is not sampled (which SENSE never reads), on a sampled one, in a later slice, and for CS.
TEST(CartesianSense, NonFiniteSamplesGiveTheDatasetsError) {
  const Dataset clean = phantom::simulate(test::grappaSim(32, 4, 2, 0.f, 2));  // R 2, 24 ACS lines, 2 slices
  const index_t e0 = clean.header.encoded[0], e1 = clean.header.encoded[1], coils = clean.header.coils;
  index_t unsampled = -1, sampled = -1;
  for (index_t p1 = 0; p1 < e1; ++p1) (clean.sampled(p1, 0, 0) ? sampled : unsampled) = p1;
  ASSERT_GE(unsampled, 0);
  ASSERT_GE(sampled, 0);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  struct Case {
    index_t slice, coil, line;
    cfloat value;
  };
  for (const Case& c : {Case{0, 2, unsampled, cfloat(nan, 0.f)}, Case{0, 1, sampled, cfloat(0.f, inf)},
                        Case{1, 3, sampled, cfloat(nan, nan)}}) {
    Dataset d = clean;
    d.source = "bad.h5";
    d.kspace[5 + e0 * (c.line + e1 * (c.coil + coils * c.slice))] = c.value;
    std::string expected;
    try {
      d.validate();
    } catch (const Error& e) {
      expected = e.what();
    }
    ASSERT_FALSE(expected.empty());
    for (const recon::Method m : {recon::Method::Cg, recon::Method::Cs}) {
      ASSERT_TRUE(recon::samplesCheckedOnBackend(d, [&] {
        recon::ReconSettings rs;
        rs.method = m;
        return rs;
      }()));
      try {
        (void)runMethod(d, m, 3);
        ADD_FAILURE() << "no error for " << expected;
      } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), expected);
      }
    }
  }
}
