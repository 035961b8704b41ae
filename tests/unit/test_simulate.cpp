// The Cartesian simulator: image scaling through a reference inverse DFT (double precision, written
// here, independent of the backends), k-space against the analytic multi-coil transform, masks, noise,
// determinism and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "larmor/phantom/coils.hpp"
#include "larmor/phantom/phantom.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/traj/cartesian.hpp"

using namespace larmor;
using namespace larmor::phantom;

namespace {

constexpr double kPi = std::numbers::pi;

// Centred unitary inverse DFT along dimension 0 and 1 of an nx × ny complex image (x fastest):
// x[n] = N^{-1/2} Σ_k X[k] exp(+2πi (k - c)(n - c)/N), c = floor(N/2).
std::vector<cdouble> inverseDft2D(const std::vector<cdouble>& k, index_t nx, index_t ny) {
  auto axis = [](index_t n) {
    std::vector<cdouble> m(static_cast<std::size_t>(n * n));
    const index_t c = n / 2;
    for (index_t a = 0; a < n; ++a)
      for (index_t b = 0; b < n; ++b)
        m[static_cast<std::size_t>(a * n + b)] =
            std::polar(1.0 / std::sqrt(static_cast<double>(n)), 2 * kPi * static_cast<double>((a - c) * (b - c)) / n);
    return m;
  };
  const auto mx = axis(nx), my = axis(ny);
  std::vector<cdouble> tmp(k.size()), out(k.size());
  for (index_t y = 0; y < ny; ++y)
    for (index_t n = 0; n < nx; ++n) {
      cdouble s = 0;
      for (index_t j = 0; j < nx; ++j) s += mx[static_cast<std::size_t>(n * nx + j)] * k[static_cast<std::size_t>(j + nx * y)];
      tmp[static_cast<std::size_t>(n + nx * y)] = s;
    }
  for (index_t n = 0; n < ny; ++n)
    for (index_t x = 0; x < nx; ++x) {
      cdouble s = 0;
      for (index_t j = 0; j < ny; ++j) s += my[static_cast<std::size_t>(n * ny + j)] * tmp[static_cast<std::size_t>(x + nx * j)];
      out[static_cast<std::size_t>(x + nx * n)] = s;
    }
  return out;
}

SimulateSettings small2D(index_t n, int coils) {
  SimulateSettings s;
  s.matrix[0] = n, s.matrix[1] = n, s.matrix[2] = 1;
  s.coils = coils;
  return s;
}

// The stored value of sample (n, j, l) is F(k) · sqrt(M0 M1 M2)/(L0 L1 L2) with
// k = ((n - c0)/L0, j - c1, l - c2): see simulate.cpp.
std::array<double, 3> sampleK(const Header& h, index_t n, index_t j, index_t l) {
  const double l0 = static_cast<double>(h.encoded[0]) / static_cast<double>(h.recon[0]);
  return {static_cast<double>(n - h.encoded[0] / 2) / l0, static_cast<double>(j - h.encoded[1] / 2),
          static_cast<double>(l - h.encoded[2] / 2)};
}
double sampleScale(const Header& h) {
  const double l0 = static_cast<double>(h.encoded[0]) / static_cast<double>(h.recon[0]);
  return std::sqrt(static_cast<double>(h.encoded[0] * h.encoded[1] * h.encoded[2])) / l0;
}

// Compares every `stride`-th sampled entry of slice `slice` with the analytic transform.
void expectMatchesAnalytic(const Dataset& d, const Phantom& ph, const CoilModel& model, index_t slice, index_t stride) {
  const Header& h = d.header;
  const index_t e0 = h.encoded[0], e1 = h.encoded[1], e2 = h.encoded[2];
  std::vector<std::array<double, 3>> ks;
  std::vector<std::array<index_t, 3>> at;
  index_t counter = 0;
  for (index_t l = 0; l < e2; ++l)
    for (index_t j = 0; j < e1; ++j) {
      if (!d.sampled(j, l, slice)) continue;
      for (index_t n = 0; n < e0; ++n)
        if (counter++ % stride == 0) {
          ks.push_back(sampleK(h, n, j, l));
          at.push_back({n, j, l});
        }
    }
  ASSERT_FALSE(ks.empty());
  const auto f = multiCoilKspace(ph, model, ks);
  const double scale = sampleScale(h);
  double peak = 0;
  for (const auto& v : f) peak = std::max(peak, std::abs(v) * scale);
  double worst = 0;
  for (int c = 0; c < model.coils; ++c)
    for (std::size_t i = 0; i < ks.size(); ++i) {
      const cfloat got = d.kspace(at[i][0], at[i][1], at[i][2], c, slice);
      worst = std::max(worst, std::abs(cdouble(got) - f[i + ks.size() * c] * scale));
    }
  EXPECT_LT(worst, 1e-5 * peak);  // float storage
}

}  // namespace

TEST(Simulate, FullySampled2DInverseFftGivesThePhantom) {
  // Tolerances: band-limited to N lines, the image rings (Gibbs) at every edge, worst at the skull,
  // a step of 1 only 0.0138 FOV thick (under 2 pixels at 128²), and pixel means differ from point
  // samples of the band-limited image along edges (partial volume). Measured relative L2 error: 0.16 at
  // 64², 0.086 at 128², 0.062 at 256²; bound 0.1 at 128². The mean is set by the DC sample: 1e-3.
  // A one-pixel misregistration would raise the error to above 0.4, a scaling error would show in the
  // mean.
  const index_t n = 128;
  SimulateSettings s = small2D(n, 1);
  const Dataset d = simulate(s);
  const Header& h = d.header;
  const index_t e0 = h.encoded[0];
  ASSERT_EQ(e0, 2 * n);
  ASSERT_EQ(d.kspace.shape(), (Shape{e0, n, 1, 1, 1}));
  std::vector<cdouble> k(d.kspace.vec().begin(), d.kspace.vec().end());
  const auto img = inverseDft2D(k, e0, n);
  ASSERT_TRUE(d.reference.has_value());
  const CArray& ref = *d.reference;
  ASSERT_EQ(ref.shape(), (Shape{n, n, 1, 1, 1}));
  auto at = [&](index_t x, index_t y) { return img[static_cast<std::size_t>((x + e0 / 2 - n / 2) + e0 * y)]; };  // centred crop
  auto error = [&](int sx, int sy) {
    double num = 0, den = 0;
    for (index_t y = 1; y < n - 1; ++y)
      for (index_t x = 1; x < n - 1; ++x) {
        const double r = ref(x + sx, y + sy, 0, 0, 0).real();
        num += std::norm(at(x, y) - r);
        den += r * r;
      }
    return std::sqrt(num / den);
  };
  const double err = error(0, 0);
  EXPECT_LT(err, 0.1);
  EXPECT_GT(error(1, 0), 4 * err);
  EXPECT_GT(error(0, 1), 4 * err);
  double meanImg = 0, meanRef = 0, maxImag = 0;
  for (index_t y = 0; y < n; ++y)
    for (index_t x = 0; x < n; ++x) {
      meanImg += at(x, y).real();
      meanRef += ref(x, y, 0, 0, 0).real();
      maxImag = std::max(maxImag, std::fabs(at(x, y).imag()));
    }
  EXPECT_NEAR(meanImg / meanRef, 1.0, 1e-3);
  EXPECT_LT(maxImag, 0.05);  // the phantom is real: the imaginary part is ringing only
  // The readout oversampling is cropped away: the outer half of the readout FOV is (nearly) empty.
  double outside = 0;
  for (index_t y = 0; y < n; ++y)
    for (index_t x = 0; x < e0 / 8; ++x) outside = std::max(outside, std::abs(img[static_cast<std::size_t>(x + e0 * y)]));
  EXPECT_LT(outside, 0.05);
}

TEST(Simulate, HeaderAndLayout) {
  SimulateSettings s = small2D(32, 4);
  s.matrix[1] = 24;
  s.slices = 3;
  s.accel = 2;
  s.acs = 8;
  s.fovMm = 220;
  s.sliceThicknessMm = 4;
  const Dataset d = simulate(s);
  const Header& h = d.header;
  EXPECT_EQ(d.source, "simulated");
  EXPECT_EQ(h.encoded[0], 64);
  EXPECT_EQ(h.encoded[1], 24);
  EXPECT_EQ(h.encoded[2], 1);
  EXPECT_EQ(h.recon[0], 32);
  EXPECT_EQ(h.recon[1], 24);
  EXPECT_FLOAT_EQ(h.encodedFovMm[0], 440);
  EXPECT_FLOAT_EQ(h.reconFovMm[0], 220);
  EXPECT_FLOAT_EQ(h.reconFovMm[2], 4);
  EXPECT_EQ(h.coils, 4);
  EXPECT_EQ(h.slices, 3);
  EXPECT_EQ(h.accelerationPe1, 2);
  EXPECT_EQ(h.calibrationLines, 8);
  EXPECT_EQ(h.trajectory, TrajectoryKind::Cartesian);
  EXPECT_EQ(h.deviceDescription, "Larmor simulator");
  EXPECT_EQ(h.protocolName, "larmor-simulate shepp-logan");
  EXPECT_TRUE(h.patientName.empty());
  EXPECT_FLOAT_EQ(h.readoutOversampling(), 2);
  EXPECT_TRUE(h.geometry.present);
  ASSERT_EQ(h.geometry.slicePositions.size(), 3u);
  EXPECT_FLOAT_EQ(h.geometry.slicePositions[0], -4);
  EXPECT_FLOAT_EQ(h.geometry.slicePositions[1], 0);
  EXPECT_FLOAT_EQ(h.geometry.slicePositions[2], 4);
  EXPECT_EQ(d.kspace.shape(), (Shape{64, 24, 1, 4, 3}));
  EXPECT_EQ(d.sampled.shape(), (Shape{24, 1, 3}));
  EXPECT_EQ(d.calibration.shape(), (Shape{24, 1, 3}));
  ASSERT_TRUE(d.reference.has_value());
  EXPECT_EQ(d.reference->shape(), (Shape{32, 24, 1, 1, 3}));
  EXPECT_TRUE(d.trajectory.empty());
  ASSERT_TRUE(d.coilMaps.has_value());
  EXPECT_EQ(d.coilMaps->shape(), (Shape{32, 24, 1, 4, 3}));
  EXPECT_NO_THROW(d.validate());
  // Single 2D slice and no acceleration: no calibration lines.
  const Dataset full = simulate(small2D(16, 2));
  EXPECT_EQ(full.header.calibrationLines, 0);
  EXPECT_EQ(traj::countLines(full.calibration), 0);
  EXPECT_EQ(traj::countLines(full.sampled), 16);
}

TEST(Simulate, UndersampledMasksAndZeros) {
  SimulateSettings s = small2D(64, 2);
  s.accel = 4;
  s.acs = 8;
  const Dataset d = simulate(s);
  EXPECT_EQ(traj::countLines(d.sampled), 22);  // 16 grid lines + 8 ACS - 2 shared
  EXPECT_EQ(traj::countLines(d.calibration), 8);
  EXPECT_EQ(d.sampled(32, 0, 0), 1);
  for (int c = 0; c < 2; ++c)
    for (index_t j = 0; j < 64; ++j) {
      double energy = 0;
      for (index_t n = 0; n < 128; ++n) energy += std::norm(d.kspace(n, j, 0, c, 0));
      if (d.sampled(j, 0, 0))
        EXPECT_GT(energy, 0) << "line " << j;
      else
        EXPECT_EQ(energy, 0) << "line " << j;
    }
}

TEST(Simulate, KspaceEqualsTheAnalyticMultiCoilTransform) {
  SimulateSettings s = small2D(32, 4);
  s.accel = 2;
  s.acs = 6;
  const Dataset d = simulate(s);
  expectMatchesAnalytic(d, Phantom::sheppLogan2D(), makeCoilModel(4, 2), 0, 7);

  // Odd readout (no oversampling, odd matrix): shifted readout positions fall between samples.
  SimulateSettings odd = small2D(21, 3);
  odd.readoutOversampling = 1;
  const Dataset o = simulate(odd);
  EXPECT_EQ(o.header.encoded[0], 21);
  expectMatchesAnalytic(o, Phantom::sheppLogan2D(), makeCoilModel(3, 2), 0, 3);
}

TEST(Simulate, MultiSliceImagesCrossSectionsOf3D) {
  SimulateSettings s = small2D(24, 2);
  s.slices = 3;
  const Dataset d = simulate(s);
  const CoilModel model3D = makeCoilModel(2, 3);
  for (index_t sl = 0; sl < 3; ++sl) {
    const double z = simulatedSliceZ(sl, 3);
    expectMatchesAnalytic(d, Phantom::sheppLogan3DSlice(z), sliceCoilModel(model3D, z), sl, 5);
    const CArray ref = Phantom::sheppLogan3DSlice(z).rasterize(Shape{24, 24});
    for (index_t i = 0; i < ref.size(); ++i) ASSERT_EQ((*d.reference)[i + ref.size() * sl], ref[i]);
    const CArray maps = coilMaps(sliceCoilModel(model3D, z), Shape{24, 24});
    for (index_t i = 0; i < maps.size(); ++i) ASSERT_EQ((*d.coilMaps)[i + maps.size() * sl], maps[i]);
  }
  EXPECT_DOUBLE_EQ(simulatedSliceZ(0, 3), -0.35);
  EXPECT_DOUBLE_EQ(simulatedSliceZ(2, 3), 0.35);
  EXPECT_DOUBLE_EQ(simulatedSliceZ(0, 1), 0);
}

TEST(Simulate, ThreeDimensional) {
  SimulateSettings s;
  s.matrix[0] = 16, s.matrix[1] = 12, s.matrix[2] = 8;
  s.coils = 2;
  s.accel = 2;
  s.acs = 4;
  const Dataset d = simulate(s);
  const Header& h = d.header;
  EXPECT_TRUE(h.is3D());
  EXPECT_EQ(d.kspace.shape(), (Shape{32, 12, 8, 2, 1}));
  EXPECT_EQ(d.sampled.shape(), (Shape{12, 8, 1}));
  EXPECT_EQ(traj::countLines(d.calibration), 4 * 8);  // ACS along pe1, all of pe2
  EXPECT_EQ(traj::countLines(d.sampled), (6 + 2) * 8);  // 6 grid lines + 2 ACS-only lines per pe2
  EXPECT_FLOAT_EQ(h.reconFovMm[2], s.fovMm);
  EXPECT_EQ(d.reference->shape(), (Shape{16, 12, 8, 1, 1}));
  EXPECT_EQ(d.coilMaps->shape(), (Shape{16, 12, 8, 2, 1}));
  EXPECT_NO_THROW(d.validate());
  expectMatchesAnalytic(d, Phantom::sheppLogan3D(), makeCoilModel(2, 3), 0, 11);
  EXPECT_THROW(
      [] {
        SimulateSettings bad;
        bad.matrix[2] = 4;
        bad.slices = 2;
        simulate(bad);
      }(),
      Error);
}

TEST(Simulate, NoiseSigmaAndSeeds) {
  SimulateSettings s = small2D(64, 1);
  s.accel = 2;
  s.acs = 8;
  const Dataset clean = simulate(s);
  s.noiseSigma = 0.05f;
  s.seed = 11;
  const Dataset noisy = simulate(s);
  const Dataset again = simulate(s);
  s.seed = 12;
  const Dataset other = simulate(s);
  EXPECT_EQ(noisy.kspace.vec(), again.kspace.vec());
  EXPECT_NE(noisy.kspace.vec(), other.kspace.vec());
  double sum2 = 0;
  index_t count = 0;
  for (index_t j = 0; j < 64; ++j)
    for (index_t n = 0; n < 128; ++n) {
      const cfloat diff = noisy.kspace(n, j, 0, 0, 0) - clean.kspace(n, j, 0, 0, 0);
      if (!noisy.sampled(j, 0, 0)) {
        ASSERT_EQ(noisy.kspace(n, j, 0, 0, 0), cfloat(0));
        continue;
      }
      sum2 += std::norm(diff);
      count += 2;
    }
  EXPECT_NEAR(std::sqrt(sum2 / static_cast<double>(count)), 0.05, 0.05 * 0.03);  // ~9000 values: 0.75% error
  // The noise-free simulation is deterministic too.
  s.noiseSigma = 0;
  EXPECT_EQ(simulate(s).kspace.vec(), clean.kspace.vec());
}

TEST(Simulate, BadSettingsThrow) {
  auto expectError = [](SimulateSettings s, const std::string& fragment) {
    try {
      simulate(s);
      ADD_FAILURE() << "no error for " << fragment;
    } catch (const Cancelled&) {
      ADD_FAILURE() << "cancelled";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(fragment), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos);
    }
  };
  SimulateSettings s = small2D(32, 2);
  s.trajectory = TrajectoryKind::Other;  // every named kind is simulated now; "other" has no recipe
  expectError(s, "cannot be simulated");
  s = small2D(32, 2);
  s.phantom = "brain";
  expectError(s, "brain");
  s = small2D(32, 2);
  s.accel = 32;
  expectError(s, "acceleration");
  s = small2D(32, 2);
  s.accel = 2;
  s.acs = 40;
  expectError(s, "ACS");
  s = small2D(32, 0);
  expectError(s, "coils");
  s = small2D(32, 2);
  s.matrix[0] = 0;
  expectError(s, "matrix");
  s = small2D(32, 2);
  s.readoutOversampling = 0.5f;
  expectError(s, "oversampling");
  s = small2D(32, 2);
  s.noiseSigma = -1;
  expectError(s, "noise");
  s = small2D(32, 2);
  s.slices = 0;
  expectError(s, "slices");
  s = small2D(32, 2);
  s.fovMm = 0;
  expectError(s, "FOV");
  // Without acceleration the ACS setting is irrelevant.
  s = small2D(16, 1);
  s.acs = 40;
  EXPECT_NO_THROW(simulate(s));
}

TEST(Simulate, ProgressAndCancel) {
  SimulateSettings s = small2D(16, 2);
  s.slices = 4;
  std::vector<double> fractions;
  simulate(s, Progress([&](double f, const std::string&) { fractions.push_back(f); }));
  ASSERT_GE(fractions.size(), 5u);
  EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
  EXPECT_DOUBLE_EQ(fractions.back(), 1.0);
  CancelToken token;
  int calls = 0;
  const Progress cancelling([&](double, const std::string&) {
    if (++calls == 2) token.cancel();
  }, &token);
  EXPECT_THROW(simulate(s, cancelling), Cancelled);
  EXPECT_EQ(calls, 2);
}

TEST(Simulate, SettingsToJson) {
  SimulateSettings s;
  s.matrix[2] = 1;
  s.noiseSigma = 0.25f;
  const auto j = toJson(s);
  EXPECT_EQ(j.at("phantom"), "shepp-logan");
  EXPECT_EQ(j.at("matrix").size(), 3u);
  EXPECT_EQ(j.at("matrix")[0], 256);
  EXPECT_EQ(j.at("coils"), 8);
  EXPECT_EQ(j.at("trajectory"), "cartesian");
  EXPECT_EQ(j.at("acs"), 24);
  EXPECT_FLOAT_EQ(j.at("noiseSigma").get<float>(), 0.25f);
  EXPECT_FLOAT_EQ(j.at("readoutOversampling").get<float>(), 2.f);
}
