// ESPIRiT (ops/espirit.hpp) and the calibration region (recon/calibration.hpp): the calibration matrix
// against a brute-force construction, the pointwise eigen kernel against Eigen's SelfAdjointEigenSolver,
// the calibration box of Cartesian masks (1D and 2D undersampling, BART's [1, Ny, Nz] planes), and maps
// from simulated phantoms with known smooth coil maps (2D and 3D Cartesian, 2D radial) against the truth up
// to a common phase per voxel; the --coil-maps setting (names, alias, FILE.cfl, errors).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "larmor/backend/registry.hpp"
#include "larmor/io/cfl.hpp"
#include "larmor/ops/espirit.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/calibration.hpp"
#include "larmor/recon/coil_maps.hpp"
#include "larmor/recon/iterative.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/util/error.hpp"

using namespace larmor;

namespace {

Backend& cpu() {
  static std::shared_ptr<Backend> be = BackendRegistry::instance().select("cpu").backend;
  return *be;
}

CArray randomArray(const Shape& s, unsigned seed) {
  CArray a(s);
  std::mt19937 rng(seed);
  std::normal_distribution<float> g;
  for (index_t i = 0; i < a.size(); ++i) a[i] = cfloat(g(rng), g(rng));
  return a;
}

struct Agreement {
  double minimum = 1, mean = 0;
  index_t voxels = 0;
};

/// |<S_est, S_true>| / (|S_est| |S_true|) over the voxels of the mask.
Agreement agreement(const CArray& est, const CArray& truth, index_t n, index_t coils, const std::vector<bool>& mask) {
  Agreement a;
  for (index_t v = 0; v < n; ++v) {
    if (!mask[static_cast<std::size_t>(v)]) continue;
    cdouble ip = 0;
    double ne = 0, nt = 0;
    for (index_t c = 0; c < coils; ++c) {
      const cdouble e(est[v + n * c]), t(truth[v + n * c]);
      ip += std::conj(e) * t;
      ne += std::norm(e);
      nt += std::norm(t);
    }
    const double r = ne > 0 && nt > 0 ? std::abs(ip) / std::sqrt(ne * nt) : 0;
    a.minimum = std::min(a.minimum, r);
    a.mean += r;
    ++a.voxels;
  }
  a.mean /= std::max<index_t>(1, a.voxels);
  return a;
}

/// Voxels of the object: |reference| > 5% of its peak, eroded by `erode` voxels in-plane (edges excluded).
std::vector<bool> objectMask(const CArray& ref, const index_t dims[3], int erode) {
  const index_t n = dims[0] * dims[1] * dims[2];
  float peak = 0;
  for (index_t v = 0; v < n; ++v) peak = std::max(peak, std::abs(ref[v]));
  std::vector<bool> in(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n), false);
  for (index_t v = 0; v < n; ++v) in[static_cast<std::size_t>(v)] = std::abs(ref[v]) > 0.05f * peak;
  for (index_t z = 0; z < dims[2]; ++z)
    for (index_t y = erode; y < dims[1] - erode; ++y)
      for (index_t x = erode; x < dims[0] - erode; ++x) {
        bool all = true;
        for (int dy = -erode; dy <= erode && all; ++dy)
          for (int dx = -erode; dx <= erode && all; ++dx)
            all = in[static_cast<std::size_t>((x + dx) + dims[0] * ((y + dy) + dims[1] * z))];
        out[static_cast<std::size_t>(x + dims[0] * (y + dims[1] * z))] = all;
      }
  return out;
}

recon::ReconSettings espiritSettings() {
  recon::ReconSettings s;
  s.method = recon::Method::Cg;
  s.iterative.coilMaps = recon::CoilMapSource::Espirit;
  return s;
}

}  // namespace

TEST(Espirit, CalibrationMatrixMatchesBruteForce) {
  // The backend's EspiritOps::calibrationMatrix (what ESPIRiT runs; the CUDA twin is checked against this one
  // in EspiritGpu.CalibrationMatrixMatchesCpu) against the matrix's definition, element by element.
  auto be = BackendRegistry::instance().select("cpu").backend;
  for (const auto& c : {std::array<index_t, 7>{7, 8, 1, 3, 3, 4, 1}, std::array<index_t, 7>{5, 6, 4, 2, 2, 3, 2}}) {
    const CArray cal = randomArray(Shape{c[0], c[1], c[2], c[3]}, 3);
    const index_t k[3] = {c[4], c[5], c[6]};
    const index_t p0 = c[0] - k[0] + 1, p1 = c[1] - k[1] + 1, p2 = c[2] - k[2] + 1, K = k[0] * k[1] * k[2];
    CArray a(Shape{p0 * p1 * p2, K * c[3]});
    auto dcal = be->allocate(static_cast<std::size_t>(cal.size()) * sizeof(cfloat));
    be->upload(*dcal, cal.data(), static_cast<std::size_t>(cal.size()) * sizeof(cfloat));
    auto da = be->allocate(static_cast<std::size_t>(a.size()) * sizeof(cfloat));
    const index_t box[4] = {c[0], c[1], c[2], c[3]};
    be->espiritOps().calibrationMatrix(*da, *dcal, box, k);
    be->download(a.data(), *da, static_cast<std::size_t>(a.size()) * sizeof(cfloat));
    index_t row = 0;
    for (index_t q2 = 0; q2 < p2; ++q2)
      for (index_t q1 = 0; q1 < p1; ++q1)
        for (index_t q0 = 0; q0 < p0; ++q0, ++row) {
          index_t col = 0;
          for (index_t coil = 0; coil < c[3]; ++coil)
            for (index_t r2 = 0; r2 < k[2]; ++r2)
              for (index_t r1 = 0; r1 < k[1]; ++r1)
                for (index_t r0 = 0; r0 < k[0]; ++r0, ++col)
                  ASSERT_EQ(a[row + a.shape()[0] * col], cal(q0 + r0, q1 + r1, q2 + r2, coil)) << row << " " << col;
        }
  }
}

// Step 3's small-grid matrices (EspiritOps::smallGridMatrices) against a plain complex<double> loop over the
// kernels, for 1, 3 and 8 channels: M(x)_ab = scale sum_i u_ia(x) conj(u_ib(x)), packed lower triangle.
TEST(Espirit, SmallGridMatricesMatchThePlainSum) {
  auto be = BackendRegistry::instance().select("cpu").backend;
  for (const index_t C : {1, 3, 8}) {
    const index_t S = 12 * 12, kept = 7, L = C * (C + 1) / 2;
    const double scale = 4.0;
    const CArray u = randomArray(Shape{S, C, kept}, static_cast<unsigned>(10 + C));
    auto du = be->allocate(static_cast<std::size_t>(u.size()) * sizeof(cfloat));
    be->upload(*du, u.data(), static_cast<std::size_t>(u.size()) * sizeof(cfloat));
    auto dc = be->allocate(static_cast<std::size_t>(S * L) * sizeof(cfloat));
    be->espiritOps().smallGridMatrices(*dc, *du, S, C, kept, scale);
    CArray got(Shape{S * L});
    be->download(got.data(), *dc, static_cast<std::size_t>(S * L) * sizeof(cfloat));
    for (index_t x = 0; x < S; ++x)
      for (index_t a = 0; a < C; ++a)
        for (index_t b = 0; b <= a; ++b) {
          cdouble s = 0;
          for (index_t i = 0; i < kept; ++i) s += cdouble(u[x + S * (a + C * i)]) * std::conj(cdouble(u[x + S * (b + C * i)]));
          const cfloat want(s * scale), g = got[x + S * (a * (a + 1) / 2 + b)];
          ASSERT_LE(std::abs(g - want), 1e-5f * (1.f + std::abs(want))) << "C " << C << " x " << x << " (" << a << ", " << b << ")";
        }
  }
}

TEST(Espirit, PointwiseEigenMatchesEigen) {
  for (const index_t C : {1, 3, 8, 13}) {
    const index_t voxels = 40, L = C * (C + 1) / 2;
    std::mt19937 rng(static_cast<unsigned>(C));
    std::normal_distribution<double> g;
    std::uniform_real_distribution<double> u(0.0, 0.75);
    std::vector<cfloat> cov(static_cast<std::size_t>(voxels * L));
    std::vector<Eigen::MatrixXcd> mats;
    for (index_t v = 0; v < voxels; ++v) {
      Eigen::MatrixXcd q = Eigen::MatrixXcd::Zero(C, C);
      for (index_t i = 0; i < C; ++i)
        for (index_t j = 0; j < C; ++j) q(i, j) = cdouble(g(rng), g(rng));
      const Eigen::HouseholderQR<Eigen::MatrixXcd> qr(q);
      const Eigen::MatrixXcd U = qr.householderQ();
      Eigen::VectorXd lam(C);
      for (index_t i = 0; i < C; ++i) lam(i) = i == 0 ? 0.9 + 0.1 * u(rng) : u(rng);  // gap >= 0.15
      const Eigen::MatrixXcd m = U * lam.asDiagonal() * U.adjoint();
      mats.push_back(m);
      for (index_t i = 0; i < C; ++i)
        for (index_t j = 0; j <= i; ++j) cov[static_cast<std::size_t>(v + voxels * (i * (i + 1) / 2 + j))] = cfloat(m(i, j));
    }
    std::vector<cfloat> ref(static_cast<std::size_t>(C));
    for (index_t c = 0; c < C; ++c) ref[static_cast<std::size_t>(c)] = cfloat(std::polar(1.0, 0.3 * c));
    Backend& be = cpu();
    auto dc = be.allocate(cov.size() * sizeof(cfloat));
    be.upload(*dc, cov.data(), cov.size() * sizeof(cfloat));
    auto dm = be.allocate(voxels * C * sizeof(cfloat)), dv = be.allocate(voxels * sizeof(cfloat));
    be.espiritOps().dominantEigenvectors(*dm, *dv, *dc, voxels, C, ref, 0.f);
    std::vector<cfloat> maps(static_cast<std::size_t>(voxels * C)), val(static_cast<std::size_t>(voxels));
    be.download(maps.data(), *dm, maps.size() * sizeof(cfloat));
    be.download(val.data(), *dv, val.size() * sizeof(cfloat));
    for (index_t v = 0; v < voxels; ++v) {
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXcd> es(mats[static_cast<std::size_t>(v)]);
      const Eigen::VectorXcd top = es.eigenvectors().col(C - 1);
      EXPECT_NEAR(val[static_cast<std::size_t>(v)].real(), es.eigenvalues()(C - 1), 2e-5);
      cdouble ip = 0, p = 0;
      double nn = 0;
      for (index_t c = 0; c < C; ++c) {
        const cdouble s(maps[static_cast<std::size_t>(v + voxels * c)]);
        ip += std::conj(s) * top(c);
        p += std::conj(cdouble(ref[static_cast<std::size_t>(c)])) * s;
        nn += std::norm(s);
      }
      EXPECT_NEAR(nn, 1.0, 1e-5);
      EXPECT_NEAR(std::abs(ip), 1.0, 1e-5) << "C " << C << " voxel " << v;
      EXPECT_NEAR(p.imag(), 0.0, 1e-5);  // the phase rule: ref^H s real and >= 0
      EXPECT_GE(p.real(), 0.0);
    }
    // Crop: every eigenvalue is below 1.01, so all maps vanish.
    be.espiritOps().dominantEigenvectors(*dm, *dv, *dc, voxels, C, ref, 1.01f);
    be.download(maps.data(), *dm, maps.size() * sizeof(cfloat));
    for (const cfloat& s : maps) EXPECT_EQ(s, cfloat(0.f));
  }
}

TEST(Espirit, CalibrationBoxOfCartesianMasks) {
  Dataset d;
  d.source = "mask";
  d.header.coils = 1;
  // 2D undersampling (pe1 x pe2): a fully sampled 10 x 14 centre, random lines elsewhere.
  d.kspace = CArray(Shape{40, 32, 30, 1, 1}, cfloat(1.f));
  d.sampled = Array<std::uint8_t>(Shape{32, 30, 1}, 0);
  std::mt19937 rng(5);
  for (index_t z = 0; z < 30; ++z)
    for (index_t y = 0; y < 32; ++y) {
      const bool centre = y >= 16 - 5 && y < 16 + 5 && z >= 15 - 7 && z < 15 + 7;
      d.sampled(y, z, 0) = centre || (rng() % 3 == 0);
    }
  d.sampled(16 - 6, 15, 0) = 0;  // the row just outside the centre is not complete
  d.sampled(16 + 5, 15, 0) = 0;
  d.sampled(16, 15 - 8, 0) = 0;
  d.sampled(16, 15 + 7, 0) = 0;
  d.calibration = Array<std::uint8_t>(Shape{32, 30, 1}, 0);
  recon::CalibrationBox b = recon::findCalibrationBox(d, 0, 24);
  EXPECT_EQ(b.str(), "24x10x14");
  b = recon::findCalibrationBox(d, 0, 8);
  EXPECT_EQ(b.str(), "8x8x8");
  // 1D undersampling (every other pe1 line, 12 ACS lines marked as calibration), 2D.
  d.kspace = CArray(Shape{64, 48, 1, 1, 1}, cfloat(1.f));
  d.sampled = Array<std::uint8_t>(Shape{48, 1, 1}, 0);
  d.calibration = Array<std::uint8_t>(Shape{48, 1, 1}, 0);
  for (index_t y = 0; y < 48; y += 2) d.sampled(y, 0, 0) = 1;
  for (index_t y = 24 - 6; y < 24 + 6; ++y) d.calibration(y, 0, 0) = 1;
  EXPECT_EQ(recon::findCalibrationBox(d, 0, 24).str(), "24x13x1");  // ACS 18..29 and the sampled line 30
  // BART's plane [1, Ny, Nz]: readout 1.
  d.kspace = CArray(Shape{1, 20, 18, 1, 1}, cfloat(1.f));
  d.sampled = Array<std::uint8_t>(Shape{20, 18, 1}, 1);
  d.calibration = Array<std::uint8_t>(Shape{20, 18, 1}, 0);
  EXPECT_EQ(recon::findCalibrationBox(d, 0, 24).str(), "1x20x18");
  const CArray cal = recon::extractCalibration(d, 0, recon::findCalibrationBox(d, 0, 12));
  EXPECT_EQ(cal.shape(), (Shape{1, 12, 12, 1}));
}

TEST(Espirit, PhantomCartesian2DMatchesTrueMaps) {
  phantom::SimulateSettings ss;
  ss.matrix[0] = ss.matrix[1] = 128;
  ss.coils = 8;
  ss.accel = 2;
  ss.acs = 24;
  ss.noiseSigma = 0.002f;
  const Dataset d = phantom::simulate(ss);  // readout oversampled 2x: maps on 256, cropped to 128
  const index_t out[3] = {128, 128, 1}, n = 128 * 128;
  nlohmann::json info;
  const CArray maps = recon::coilMapsForSlice(cpu(), d, 0, out, espiritSettings(), &info);
  EXPECT_EQ(info["coil_maps"], "espirit");
  EXPECT_EQ(info["calibration_region"], "24x24x1");
  const Agreement a = agreement(maps, *d.coilMaps, n, 8, objectMask(*d.reference, out, 2));
  EXPECT_GT(a.voxels, 5000);
  EXPECT_GE(a.minimum, 0.99);
  EXPECT_GE(a.mean, 0.999);
  // Unit norm inside the mask, 0 where cropped; the eigenvalue ~1 inside the object, cropped in the corners.
  const recon::CalibrationRegion r = recon::calibrationRegion(cpu(), d, 0, 24, 6);
  const index_t grid[3] = {256, 128, 1};
  const ops::EspiritResult e = ops::espirit(cpu(), r.data, grid, {});
  const auto inside = objectMask(*d.reference, out, 2);
  double lam = 0;
  index_t count = 0, corners = 0, cropped = 0;
  for (index_t y = 0; y < 128; ++y)
    for (index_t x = 0; x < 128; ++x) {
      const index_t v = x + 128 * y, g = (x + 64) + 256 * y;
      double sos = 0;
      for (index_t c = 0; c < 8; ++c) sos += std::norm(cdouble(maps[v + n * c]));
      const float l = e.eigenvalues[g];
      if (l >= 0.8f) EXPECT_NEAR(sos, 1.0, 1e-4);
      else EXPECT_EQ(sos, 0.0);
      if (inside[static_cast<std::size_t>(v)]) lam += l, ++count;
      if (std::hypot(x - 64.0, y - 64.0) > 0.5 * 128 * std::sqrt(2.0) - 8) ++corners, cropped += l < 0.8f;
    }
  EXPECT_GT(lam / count, 0.98);
  EXPECT_GT(corners, 0);
  EXPECT_GT(cropped, corners * 9 / 10);
}

TEST(Espirit, PhantomCartesian3DMatchesTrueMaps) {
  phantom::SimulateSettings ss;
  ss.matrix[0] = ss.matrix[1] = ss.matrix[2] = 32;
  ss.coils = 4;
  ss.readoutOversampling = 1;
  ss.noiseSigma = 0.002f;
  const Dataset d = phantom::simulate(ss);
  const index_t out[3] = {32, 32, 32}, n = 32 * 32 * 32;
  const recon::CalibrationRegion r = recon::calibrationRegion(cpu(), d, 0, 12, 4);
  EXPECT_EQ(r.box.str(), "12x12x12");
  ops::EspiritOptions o;
  o.kernel = 4;
  const ops::EspiritResult e = ops::espirit(cpu(), r.data, out, o);
  std::vector<bool> mask = objectMask(*d.reference, out, 2);
  for (index_t z = 0; z < 32; ++z)  // away from the top and bottom of the ellipsoid too
    if (z < 8 || z >= 24)
      for (index_t v = 0; v < 32 * 32; ++v) mask[static_cast<std::size_t>(v + 32 * 32 * z)] = false;
  const Agreement a = agreement(e.maps, *d.coilMaps, n, 4, mask);
  EXPECT_GT(a.voxels, 2000);
  EXPECT_GE(a.minimum, 0.99);
  EXPECT_GE(a.mean, 0.999);
}

TEST(Espirit, PhantomRadial2DMatchesTrueMaps) {
  phantom::SimulateSettings ss;
  ss.matrix[0] = ss.matrix[1] = 128;
  ss.coils = 8;
  ss.trajectory = TrajectoryKind::Radial;
  ss.noiseSigma = 0.002f;
  const Dataset d = phantom::simulate(ss);
  const index_t out[3] = {128, 128, 1}, n = 128 * 128;
  nlohmann::json info;
  const CArray maps = recon::coilMapsForSlice(cpu(), d, 0, out, espiritSettings(), &info);
  EXPECT_EQ(info["calibration_region"], "24x24x1");
  const Agreement a = agreement(maps, *d.coilMaps, n, 8, objectMask(*d.reference, out, 2));
  EXPECT_GT(a.voxels, 5000);
  EXPECT_GE(a.minimum, 0.99);
  EXPECT_GE(a.mean, 0.999);
}

TEST(Espirit, OneCalibrationGriddingServesEverySlice) {
  // The gridded calibration planned once (CalibrationGridding, reused by the slices of a multi-slice call) gives
  // each slice the box that a plan of its own gives, bit for bit; a dataset of another trajectory is refused.
  phantom::SimulateSettings ss;
  ss.matrix[0] = ss.matrix[1] = 64;
  ss.slices = 3;
  ss.coils = 4;
  ss.trajectory = TrajectoryKind::GoldenAngle;
  ss.spokes = 60;
  ss.noiseSigma = 0.002f;
  const Dataset d = phantom::simulate(ss);
  std::shared_ptr<const recon::CalibrationGridding> kept;
  for (index_t sl = 0; sl < 3; ++sl) {
    const recon::CalibrationRegion alone = recon::calibrationRegion(cpu(), d, sl, 24, 6);
    const recon::CalibrationRegion shared = recon::calibrationRegion(cpu(), d, sl, 24, 6, {}, {}, &kept);
    ASSERT_TRUE(kept);
    ASSERT_EQ(shared.data.shape(), alone.data.shape());
    EXPECT_TRUE(alone.gridded && shared.gridded);
    EXPECT_EQ(shared.box.str(), alone.box.str());
    EXPECT_EQ(std::memcmp(shared.data.data(), alone.data.data(), alone.data.size() * sizeof(cfloat)), 0) << sl;
    if (sl > 0) EXPECT_FALSE(std::equal(shared.data.data(), shared.data.data() + shared.data.size(),
                                        recon::calibrationRegion(cpu(), d, 0, 24, 6).data.data()));
  }
  ss.spokes = 40;
  const Dataset other = phantom::simulate(ss);
  EXPECT_THROW((void)kept->region(other, 0), Error);
}

TEST(Espirit, ErrorsAndSettings) {
  phantom::SimulateSettings ss;
  ss.matrix[0] = ss.matrix[1] = 64;
  ss.coils = 4;
  ss.accel = 2;
  ss.acs = 4;
  const Dataset d = phantom::simulate(ss);
  const index_t out[3] = {64, 64, 1};
  try {
    recon::coilMapsForSlice(cpu(), d, 0, out, espiritSettings());
    ADD_FAILURE() << "a 4-line calibration region passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("smaller than the kernel"), std::string::npos) << e.what();
  }
  namespace st = recon::settings;
  recon::ReconSettings s;
  EXPECT_EQ(s.iterative.coilMaps, recon::CoilMapSource::Espirit);
  st::set(s, st::find("coil-maps"), "estimate");
  EXPECT_EQ(s.iterative.coilMaps, recon::CoilMapSource::Walsh);
  st::set(s, st::find("coil-maps"), "/tmp/m.cfl");
  EXPECT_EQ(s.iterative.coilMaps, recon::CoilMapSource::File);
  EXPECT_EQ(st::toJson(s)["iterative"]["coil_maps"], "/tmp/m.cfl");
  EXPECT_EQ(st::fromJson(st::toJson(s)).iterative.coilMapsPath, "/tmp/m.cfl");
  EXPECT_THROW(st::set(s, st::find("coil-maps"), "bogus"), Error);
  EXPECT_THROW(st::set(s, st::find("espirit-crop"), "1"), Error);
  EXPECT_THROW(st::set(s, st::find("calibration-size"), "0"), Error);
  // A file of the wrong size: one clear error.
  const std::string path = std::string(LARMOR_TEST_TMP) + "/espirit_bad_maps.cfl";
  std::filesystem::create_directories(LARMOR_TEST_TMP);
  io::writeCfl(path, CArray(Shape{32, 64, 1, 4}));
  recon::ReconSettings f = espiritSettings();
  st::set(f, st::find("coil-maps"), path);
  try {
    recon::coilMapsForSlice(cpu(), d, 0, out, f);
    ADD_FAILURE() << "maps of the wrong size passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("do not match the reconstruction's [x, y, z, coils(, slices)] [64, 64, 1, 4]"),
              std::string::npos)
        << e.what();
  }
  io::writeCfl(path, recon::coilMapsForSlice(cpu(), d, 0, out, [] {
                       recon::ReconSettings w = espiritSettings();
                       w.iterative.coilMaps = recon::CoilMapSource::Dataset;
                       return w;
                     }()));
  const CArray back = recon::coilMapsForSlice(cpu(), d, 0, out, f);
  EXPECT_EQ(back.shape(), (Shape{64, 64, 1, 4}));
  EXPECT_EQ(back[100], (*d.coilMaps)[100]);
}
