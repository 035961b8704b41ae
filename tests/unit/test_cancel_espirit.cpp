// Cancel within 0.5 s inside 3D ESPIRiT and 3D GRAPPA, whose calibrations were single long library calls: the
// Gram's eigen-decomposition (1728^2 for a 24^3 box, 6^3 kernel, 8 coils: seconds in SelfAdjointEigenSolver; now
// its steps with checks, cpu/hermitian_eigen.hpp, the same bits), the pointwise eigenvectors of a 3D grid, and
// --method cg (ESPIRiT maps) and grappa on a 3D phantom through recon::run, cancelled inside their calibrations.
// The products themselves: test_cancel_products.cpp.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cstdio>
#include <cstring>

#include "larmor/backend/espirit_ops.hpp"
#include "larmor/backend/registry.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/util/cancel_scope.hpp"
#include "support/cancel_latency.hpp"
#include "support/random_data.hpp"

using namespace larmor;
using namespace larmor::test;

namespace {

std::shared_ptr<Backend> cpu() { return BackendRegistry::instance().select("cpu").backend; }

/// A random Hermitian n x n matrix X + X^H, column-major, in double.
std::vector<cdouble> randomGram(index_t n, unsigned seed) {
  const auto x = randomComplex(n * n, seed);
  const Eigen::MatrixXcd m = Eigen::Map<const Eigen::MatrixXcf>(x.data(), n, n).cast<cdouble>();
  const Eigen::MatrixXcd g = m + m.adjoint();
  return std::vector<cdouble>(g.data(), g.data() + n * n);
}

/// A 3D phantom with the 24^3 calibration box of the case (2x2 acceleration, 8 coils) on a 64^3 matrix:
/// ESPIRiT's Gram is the 128^3 case's (6859 x 1728), GRAPPA's calibration has 49104 equations.
Dataset phantom3D() {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = s.matrix[2] = 64;
  s.coils = 8;
  s.accel = 2;
  s.accelPe2 = 2;
  s.acs = 24;
  return phantom::simulate(s);
}

}  // namespace

TEST(CancelEspirit, EigenDecompositionGivesTheBitsOfEigen) {
  auto be = cpu();
  for (const index_t n : {1, 2, 7, 300}) {
    std::vector<cdouble> a = randomGram(n, static_cast<unsigned>(50 + n));
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXcd> es(Eigen::Map<const Eigen::MatrixXcd>(a.data(), n, n));
    std::vector<double> values;
    be->espiritOps().hermitianEigen(a, values, n);
    EXPECT_EQ(0, std::memcmp(a.data(), es.eigenvectors().data(), a.size() * sizeof(cdouble))) << n;
    EXPECT_EQ(0, std::memcmp(values.data(), es.eigenvalues().data(), values.size() * sizeof(double))) << n;
  }
}

TEST(CancelEspirit, GramEigenDecompositionStopsWithinHalfASecond) {
  auto be = cpu();
  constexpr index_t n = 1728;  // 6^3 kernel x 8 coils
  std::vector<cdouble> a = randomGram(n, 51);
  std::vector<cfloat> g(a.begin(), a.end());
  auto gram = be->allocate(g.size() * sizeof(cfloat)), kernels = be->allocate(g.size() * sizeof(cfloat));
  be->upload(*gram, g.data(), g.size() * sizeof(cfloat));
  std::vector<double> values;
  expectPrompt(cancelAfter([&](const Progress& progress) {
                 const CancelScope cancel(progress);
                 be->espiritOps().gramKernels(*gram, n, values, *kernels);
               }),
               "ESPIRiT Gram eigen-decomposition (1728^2)");
}

TEST(CancelEspirit, PointwiseEigenvectorsStopWithinHalfASecond) {
  auto be = cpu();
  constexpr index_t voxels = 256 * 128 * 64, coils = 8, packed = coils * (coils + 1) / 2;
  const auto cov = randomComplex(voxels * packed, 52);
  auto dcov = be->allocate(cov.size() * sizeof(cfloat)), maps = be->allocate(voxels * coils * sizeof(cfloat));
  auto values = be->allocate(voxels * sizeof(cfloat));
  be->upload(*dcov, cov.data(), cov.size() * sizeof(cfloat));
  const std::vector<cfloat> reference(coils, cfloat(1.f, 0.f));
  expectPrompt(cancelAfter([&](const Progress& progress) {
                 const CancelScope cancel(progress);
                 be->espiritOps().dominantEigenvectors(*maps, *values, *dcov, voxels, coils, reference, 0.8f);
               }),
               "ESPIRiT pointwise eigenvectors (256 x 128 x 64, 8 coils)");
}

TEST(CancelEspirit, Recon3DCalibrationsStopWithinHalfASecond) {
  const Dataset d = phantom3D();
  recon::ReconRequest r;
  r.dataset = &d;
  r.device = "cpu";
  r.settings.method = recon::Method::Cg;  // ESPIRiT maps: the 24^3 box's Gram and eigen-decomposition first
  r.settings.iterative.iterations = 1;
  for (const double after : {0.3, 2.0})
    expectPrompt(cancelAfter([&](const Progress& progress) { recon::run(r, progress); }, after),
                 after < 1 ? "3D cg: cancel in ESPIRiT's calibration (0.3 s)" : "3D cg: cancel in ESPIRiT (2 s)");
  r.settings.method = recon::Method::Grappa;  // 2x2: A A^H of 49104 equations x 320 sources
  for (const double after : {0.3, 1.0})
    expectPrompt(cancelAfter([&](const Progress& progress) { recon::run(r, progress); }, after),
                 after < 0.5 ? "3D GRAPPA: cancel at 0.3 s" : "3D GRAPPA: cancel at 1 s");
}
