// Analytic Shepp-Logan phantom, coil series and noise, each against a brute-force reference: direct
// double-precision DFTs of finely point-sampled images, and std::cyl_bessel_j for J1.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "larmor/phantom/coils.hpp"
#include "larmor/phantom/phantom.hpp"

using namespace larmor;
using namespace larmor::phantom;

namespace {

constexpr double kPi = std::numbers::pi;

// Position of sample i of n on the centred raster: (i - floor(n/2)) / n.
double pos(index_t i, index_t n) { return static_cast<double>(i - n / 2) / static_cast<double>(n); }

// Direct 2D DFT (Riemann sum of ∫ f exp(-2πi k·r) dr) of an n×n point-sampled image (x fastest) at
// every (kx[a], ky[b]): out[a + kx.size() * b]. Separable: first over x for each kx, then over y.
std::vector<cdouble> directDft2D(const std::vector<cdouble>& img, index_t n, const std::vector<double>& kx,
                                 const std::vector<double>& ky) {
  const std::size_t na = kx.size(), nb = ky.size();
  std::vector<cdouble> ex(na * n), ey(nb * n), partial(na * n, 0.0), out(na * nb, 0.0);
  for (std::size_t a = 0; a < na; ++a)
    for (index_t i = 0; i < n; ++i) ex[a * n + i] = std::polar(1.0, -2 * kPi * kx[a] * pos(i, n));
  for (std::size_t b = 0; b < nb; ++b)
    for (index_t i = 0; i < n; ++i) ey[b * n + i] = std::polar(1.0, -2 * kPi * ky[b] * pos(i, n));
  for (index_t iy = 0; iy < n; ++iy)
    for (std::size_t a = 0; a < na; ++a) {
      cdouble s = 0;
      const cdouble* row = img.data() + iy * n;
      const cdouble* e = ex.data() + a * n;
      for (index_t ix = 0; ix < n; ++ix) s += row[ix] * e[ix];
      partial[a * n + iy] = s;
    }
  const double area = 1.0 / (static_cast<double>(n) * static_cast<double>(n));
  for (std::size_t b = 0; b < nb; ++b)
    for (std::size_t a = 0; a < na; ++a) {
      cdouble s = 0;
      for (index_t iy = 0; iy < n; ++iy) s += partial[a * n + iy] * ey[b * n + iy];
      out[a + na * b] = s * area;
    }
  return out;
}

double relativeL2(const std::vector<cdouble>& test, const std::vector<cdouble>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    num += std::norm(test[i] - ref[i]);
    den += std::norm(ref[i]);
  }
  return std::sqrt(num / den);
}

std::vector<double> range(double from, double to, double step) {
  std::vector<double> v;
  for (double k = from; k <= to + 1e-12; k += step) v.push_back(k);
  return v;
}

}  // namespace

TEST(Phantom, BesselJ1IsAccurate) {
  // Reference values from mpmath.besselj(1, x) at 30 digits, on both sides of the branch points
  // (series | backward recurrence at x = 4 | asymptotic expansion at x = 25).
  const double table[][2] = {{0.5, 0.24226845767487388638},     {3.0, 0.33905895852593645893},
                             {3.999, -0.065662610557324969524},  {4.001, -0.066423888414422939384},
                             {7.72088, 0.18567354728600479723},  {12.5, -0.16548380461475971846},
                             {22.66405, 0.016064765741960028197}, {24.999, -0.12545146980669455586},
                             {25.001, -0.12524890825543749644},  {40.0, 0.12603831803758499921},
                             {94.97516, -0.0044247148540834889481}, {250.25, -0.048324067521795283428},
                             {399.78378, -0.00068046145790421538295}};
  for (const auto& t : table) EXPECT_NEAR(besselJ1(t[0]), t[1], 2e-15) << "x = " << t[0];
  // Everywhere on [0, 400] against libstdc++, whose own error grows to ~1e-13 at large x.
  double worst = 0;
  for (double x = 0; x < 400; x += 0.0737) worst = std::max(worst, std::fabs(besselJ1(x) - std::cyl_bessel_j(1.0, x)));
  EXPECT_LT(worst, 3e-13);
  EXPECT_DOUBLE_EQ(besselJ1(-3.7), -besselJ1(3.7));
  EXPECT_DOUBLE_EQ(unitDiskFourier(0), kPi);
  EXPECT_DOUBLE_EQ(unitBallFourier(0), 4 * kPi / 3);
  EXPECT_NEAR(unitDiskFourier(0.3), std::cyl_bessel_j(1.0, 2 * kPi * 0.3) / 0.3, 1e-14);
  // The ball's series (u < 1) and closed form (u >= 1) on both sides of the switch, against the closed
  // form in long double (no cancellation at u = 1).
  for (double u : {1 - 1e-9, 1 + 1e-9, 0.5, 3.0}) {
    const long double lu = u;
    const long double ref = 4 * std::numbers::pi_v<long double> * (std::sin(lu) - lu * std::cos(lu)) / (lu * lu * lu);
    EXPECT_NEAR(unitBallFourier(u / (2 * kPi)), static_cast<double>(ref), 1e-14) << "u = " << u;
  }
}

TEST(Phantom, ValuesAtKnownPoints) {
  // Toft's intensities: skull 1, brain 1 - 0.8 = 0.2, top ellipse 0.2 + 0.1; FOV units are half the
  // classic [-1, 1] coordinates, y mirrored (the "top" ellipse at y = -0.175 is at the top of a
  // picture drawn with dimension 1 downwards).
  EXPECT_DOUBLE_EQ(sheppLogan2D(0, 0), 1 - 0.8);
  EXPECT_DOUBLE_EQ(sheppLogan2D(0, -0.175), 1 - 0.8 + 0.1);
  EXPECT_DOUBLE_EQ(sheppLogan2D(0, 0.175), 1 - 0.8);
  EXPECT_DOUBLE_EQ(sheppLogan2D(-0.04, 0.3025), 1 - 0.8 + 0.1);  // a "mouth" ellipse, at the bottom
  EXPECT_DOUBLE_EQ(sheppLogan2D(0, 0.45), 1);
  EXPECT_DOUBLE_EQ(sheppLogan2D(0.45, 0.45), 0);
  EXPECT_DOUBLE_EQ(sheppLogan2D(0.11, 0), 1 - 0.8 - 0.2);  // right ventricle
  EXPECT_DOUBLE_EQ(sheppLogan3D(0, 0, 0), 1 - 0.8);
  EXPECT_DOUBLE_EQ(sheppLogan3D(0, 0, 0.39), 1);   // skull cap above the brain (c = 0.39 vs 0.405)
  EXPECT_DOUBLE_EQ(sheppLogan3D(0, -0.05, 0.125), 1 - 0.8 + 0.1);
  EXPECT_DOUBLE_EQ(sheppLogan3D(0, 0, 0.45), 0);
}

TEST(Phantom, ZeroFrequencyIsTheIntegral) {
  double area = 0;
  for (const auto& e : sheppLogan2DEllipses()) area += e.value * kPi * e.a * e.b;
  const cdouble f0 = sheppLogan2DKspace(0, 0);
  EXPECT_NEAR(f0.real(), area, 1e-14);
  EXPECT_EQ(f0.imag(), 0);
  double volume = 0;
  for (const auto& e : sheppLogan3DEllipsoids()) volume += e.value * 4 * kPi / 3 * e.axes[0] * e.axes[1] * e.axes[2];
  EXPECT_NEAR(sheppLogan3DKspace(0, 0, 0).real(), volume, 1e-14);
  EXPECT_NEAR(Phantom::sheppLogan3D().integral(), volume, 1e-14);
  // The FOV has area 1, so the mean of the partial-volume raster is the integral, up to the s×s
  // sub-sampling of the edge pixels (~1e-5 here).
  const CArray img = Phantom::sheppLogan2D().rasterize(Shape{256, 256});
  double mean = 0;
  for (index_t i = 0; i < img.size(); ++i) mean += img[i].real();
  mean /= static_cast<double>(img.size());
  EXPECT_NEAR(mean, area, 1e-4 * area);
}

TEST(Phantom, Kspace2DMatchesDirectDft) {
  // 2048² point samples; the Riemann sum's error comes from the edges (each edge pixel counts wholly in
  // or out, ~1/N), measured 2.5e-4 relative L2 here; the midpoint phase error (π k h)²/6 is only 3e-6
  // at |k| = 8. Tolerance 1e-3.
  const index_t n = 2048;
  std::vector<cdouble> img(static_cast<std::size_t>(n * n));
  const Phantom ph = Phantom::sheppLogan2D();
#pragma omp parallel for
  for (index_t iy = 0; iy < n; ++iy)
    for (index_t ix = 0; ix < n; ++ix) img[static_cast<std::size_t>(ix + n * iy)] = ph.value(pos(ix, n), pos(iy, n));
  const auto kx = range(-8, 8, 1), ky = range(-7.5, 7.5, 1.5);
  const auto dft = directDft2D(img, n, kx, ky);
  std::vector<cdouble> exact;
  for (double b : ky)
    for (double a : kx) exact.push_back(sheppLogan2DKspace(a, b));
  EXPECT_LT(relativeL2(exact, dft), 1e-3);
}

TEST(Phantom, Kspace3DMatchesDirectDft) {
  // 160³ point samples: edge discretisation ~1/N; measured up to 8.6e-4 · |F(0)|. Tolerance 2e-3 · |F(0)|.
  const index_t n = 160;
  const Phantom ph = Phantom::sheppLogan3D();
  std::vector<double> img(static_cast<std::size_t>(n * n * n));
#pragma omp parallel for
  for (index_t iz = 0; iz < n; ++iz)
    for (index_t iy = 0; iy < n; ++iy)
      for (index_t ix = 0; ix < n; ++ix)
        img[static_cast<std::size_t>(ix + n * (iy + n * iz))] = ph.value(pos(ix, n), pos(iy, n), pos(iz, n));
  const double f0 = std::abs(ph.kspace(0, 0, 0));
  const double ks[][3] = {{0, 0, 0}, {1, 0, 0}, {0, 2, -1}, {3, -2, 1}, {-4, 1, 2.5}, {5, 5, -5}, {0.5, -6, 3}};
  for (const auto& k : ks) {
    std::vector<cdouble> ex(n), ey(n), ez(n);
    for (index_t i = 0; i < n; ++i) {
      ex[i] = std::polar(1.0, -2 * kPi * k[0] * pos(i, n));
      ey[i] = std::polar(1.0, -2 * kPi * k[1] * pos(i, n));
      ez[i] = std::polar(1.0, -2 * kPi * k[2] * pos(i, n));
    }
    cdouble sum = 0;
    for (index_t iz = 0; iz < n; ++iz) {
      cdouble sy = 0;
      for (index_t iy = 0; iy < n; ++iy) {
        cdouble sx = 0;
        const double* row = img.data() + n * (iy + n * iz);
        for (index_t ix = 0; ix < n; ++ix) sx += row[ix] * ex[ix];
        sy += sx * ey[iy];
      }
      sum += sy * ez[iz];
    }
    sum /= static_cast<double>(n * n * n);
    EXPECT_LT(std::abs(sum - ph.kspace(k[0], k[1], k[2])), 2e-3 * f0) << "k = " << k[0] << "," << k[1] << "," << k[2];
  }
}

TEST(Phantom, SliceOf3DKspaceMatchesDirectDft) {
  const index_t n = 1024;
  for (double z0 : {0.0, 0.12, -0.2}) {
    std::vector<cdouble> img(static_cast<std::size_t>(n * n));
#pragma omp parallel for
    for (index_t iy = 0; iy < n; ++iy)
      for (index_t ix = 0; ix < n; ++ix) img[static_cast<std::size_t>(ix + n * iy)] = sheppLogan3D(pos(ix, n), pos(iy, n), z0);
    const auto kx = range(-6, 6, 1.5), ky = range(-6, 6, 1);
    const auto dft = directDft2D(img, n, kx, ky);
    std::vector<cdouble> exact;
    for (double b : ky)
      for (double a : kx) exact.push_back(sheppLogan3DSliceKspace(a, b, z0));
    EXPECT_LT(relativeL2(exact, dft), 3e-3) << "z0 = " << z0;  // measured up to 1.4e-3 at 1024²
  }
}

TEST(Phantom, CrossSectionOfATiltedEllipsoidIsExact) {
  Ellipsoid e;
  e.value = 1;
  e.centre[0] = 0.05, e.centre[1] = -0.02, e.centre[2] = 0.03;
  e.axes[0] = 0.3, e.axes[1] = 0.2, e.axes[2] = 0.15;
  e.phi = 0.3, e.theta = 0.6, e.psi = -0.4;
  const Phantom solid({e});
  std::mt19937_64 gen(3);
  std::uniform_real_distribution<double> u(-0.45, 0.45);
  for (double z0 : {0.0, 0.1, -0.08}) {
    const auto sec = crossSection(e, z0);
    ASSERT_TRUE(sec.has_value());
    const Phantom slice({*sec});
    int mismatches = 0, insideCount = 0;
    for (int i = 0; i < 20000; ++i) {
      const double x = u(gen), y = u(gen);
      const double a = solid.value(x, y, z0), b = slice.value(x, y);
      mismatches += a != b;
      insideCount += a > 0;
    }
    EXPECT_EQ(mismatches, 0) << "z0 = " << z0;
    EXPECT_GT(insideCount, 100);
    // The cross-section's transform is the 2D transform of the slice of the solid.
    const double area = kPi * sec->a * sec->b;
    EXPECT_NEAR(slice.kspace(0, 0).real(), area, 1e-14);
  }
  EXPECT_FALSE(crossSection(e, 0.4).has_value());
}

TEST(Phantom, RasterIsThePixelMeanOfSubSamples) {
  // Brute force: every pixel averaged over the same s×s sub-samples, no edge classification.
  const index_t nx = 48, ny = 40;
  const int s = 4;
  const CArray img = Phantom::sheppLogan2D().rasterize(Shape{nx, ny}, s);
  ASSERT_EQ(img.shape(), (Shape{nx, ny}));
  double worst = 0;
  for (index_t iy = 0; iy < ny; ++iy)
    for (index_t ix = 0; ix < nx; ++ix) {
      double v = 0;
      for (int b = 0; b < s; ++b)
        for (int a = 0; a < s; ++a)
          v += sheppLogan2D(pos(ix, nx) + ((a + 0.5) / s - 0.5) / nx, pos(iy, ny) + ((b + 0.5) / s - 0.5) / ny);
      worst = std::max(worst, std::fabs(v / (s * s) - img(ix, iy).real()));
      EXPECT_EQ(img(ix, iy).imag(), 0.f);
    }
  EXPECT_LT(worst, 1e-6);
  // s = 1 is point sampling at (n - floor(N/2))/N.
  const CArray point = Phantom::sheppLogan2D().rasterize(Shape{33, 32, 1}, 1);
  for (index_t iy = 0; iy < 32; ++iy)
    for (index_t ix = 0; ix < 33; ++ix)
      ASSERT_FLOAT_EQ(point(ix, iy, 0).real(), static_cast<float>(sheppLogan2D(pos(ix, 33), pos(iy, 32))));

  const index_t n3 = 20;
  const int s3 = 2;
  const CArray vol = Phantom::sheppLogan3D().rasterize(Shape{n3, n3, n3}, s3);
  worst = 0;
  for (index_t iz = 0; iz < n3; ++iz)
    for (index_t iy = 0; iy < n3; ++iy)
      for (index_t ix = 0; ix < n3; ++ix) {
        double v = 0;
        for (int c = 0; c < s3; ++c)
          for (int b = 0; b < s3; ++b)
            for (int a = 0; a < s3; ++a)
              v += sheppLogan3D(pos(ix, n3) + ((a + 0.5) / s3 - 0.5) / n3, pos(iy, n3) + ((b + 0.5) / s3 - 0.5) / n3,
                                pos(iz, n3) + ((c + 0.5) / s3 - 0.5) / n3);
        worst = std::max(worst, std::fabs(v / (s3 * s3 * s3) - vol(ix, iy, iz).real()));
      }
  EXPECT_LT(worst, 1e-6);
}

TEST(Phantom, ReadoutLineMatchesPointwiseTransform) {
  const std::vector<double> k0 = range(-20.5, 19.5, 0.5);
  for (const Phantom& ph : {Phantom::sheppLogan2D(), Phantom::sheppLogan3D(), Phantom::sheppLogan3DSlice(0.1)}) {
    const auto phases = ph.readoutPhases(k0);
    std::vector<cdouble> line(k0.size());
    ph.kspaceLine(k0, phases, -3.5, 2, line.data());
    for (std::size_t i = 0; i < k0.size(); ++i) {
      const cdouble ref = ph.kspace(k0[i], -3.5, 2);
      EXPECT_NEAR(std::abs(line[i] - ref), 0, 1e-13);
    }
  }
}

TEST(Phantom, RasterizeRejectsBadShapes) {
  EXPECT_THROW(Phantom::sheppLogan2D().rasterize(Shape{8, 8, 4}), Error);
  EXPECT_THROW(Phantom::sheppLogan2D().rasterize(Shape{8}), Error);
  EXPECT_THROW(Phantom::sheppLogan2D().rasterize(Shape{8, 8}, 0), Error);
  EXPECT_NO_THROW(Phantom::sheppLogan3D().rasterize(Shape{4, 4, 4}));
}

// --- coils -----------------------------------------------------------------------------------------

TEST(PhantomCoils, SensitivityEqualsMapsAtPixels) {
  const CoilModel m2 = makeCoilModel(8, 2);
  EXPECT_EQ(m2.terms.size(), 25u);
  const CArray maps2 = coilMaps(m2, Shape{32, 24});
  ASSERT_EQ(maps2.shape(), (Shape{32, 24, 1, 8}));
  for (int c = 0; c < 8; ++c)
    for (index_t iy = 0; iy < 24; ++iy)
      for (index_t ix = 0; ix < 32; ++ix) {
        const cdouble s = coilSensitivity(m2, c, pos(ix, 32), pos(iy, 24));
        ASSERT_NEAR(std::abs(s - cdouble(maps2(ix, iy, 0, c))), 0, 1e-6);
      }
  const CoilModel m3 = makeCoilModel(4, 3);
  EXPECT_EQ(m3.terms.size(), 75u);  // 5 × 5 in-plane, 3 along z
  const CArray maps3 = coilMaps(m3, Shape{12, 10, 8});
  ASSERT_EQ(maps3.shape(), (Shape{12, 10, 8, 4}));
  for (int c = 0; c < 4; ++c)
    for (index_t iz = 0; iz < 8; ++iz)
      for (index_t iy = 0; iy < 10; ++iy)
        for (index_t ix = 0; ix < 12; ++ix) {
          const cdouble s = coilSensitivity(m3, c, pos(ix, 12), pos(iy, 10), pos(iz, 8));
          ASSERT_NEAR(std::abs(s - cdouble(maps3(ix, iy, iz, c))), 0, 1e-6);
        }
  // The 2D model of a plane of the 3D model is the 3D model on that plane.
  const CoilModel sliced = sliceCoilModel(m3, 0.13);
  EXPECT_EQ(sliced.dims, 2);
  for (int c = 0; c < 4; ++c)
    EXPECT_NEAR(std::abs(coilSensitivity(sliced, c, 0.1, -0.2) - coilSensitivity(m3, c, 0.1, -0.2, 0.13)), 0, 1e-14);
}

TEST(PhantomCoils, RootSumOfSquaresPeaksAtOne) {
  for (int dims : {2, 3}) {
    const CoilModel m = makeCoilModel(8, dims);
    const Shape grid = dims == 2 ? Shape{200, 200} : Shape{64, 64, 64};
    const CArray maps = coilMaps(m, grid);
    const index_t voxels = grid.size();
    double peak = 0, low = 1e9;
    for (index_t v = 0; v < voxels; ++v) {
      double s = 0;
      for (int c = 0; c < 8; ++c) s += std::norm(cdouble(maps[v + voxels * c]));
      peak = std::max(peak, std::sqrt(s));
      low = std::min(low, std::sqrt(s));
    }
    EXPECT_GT(peak, 0.98) << dims << "D";
    EXPECT_LT(peak, 1.01) << dims << "D";
    EXPECT_GT(low, 0.05) << dims << "D: a coverage hole in the FOV";
  }
}

TEST(PhantomCoils, MapsAreBrightestNearTheirCoil) {
  const int coils = 8;
  const CoilModel m = makeCoilModel(coils, 2);
  for (int c = 0; c < coils; ++c) {
    const double a = 2 * kPi * c / coils;
    const double nearCoil = std::abs(coilSensitivity(m, c, 0.4 * std::cos(a), 0.4 * std::sin(a)));
    const double farSide = std::abs(coilSensitivity(m, c, -0.4 * std::cos(a), -0.4 * std::sin(a)));
    EXPECT_GT(nearCoil, 2.5 * farSide) << "coil " << c;
  }
}

TEST(PhantomCoils, SingleCoilIsUniform) {
  const CoilModel m = makeCoilModel(1, 2);
  ASSERT_EQ(m.terms.size(), 1u);
  EXPECT_EQ(coilSensitivity(m, 0, 0.3, -0.2), cdouble(1));
  const std::vector<std::array<double, 3>> k = {{0, 0, 0}, {2.5, -1, 0}};
  const auto f = multiCoilKspace(Phantom::sheppLogan2D(), m, k);
  EXPECT_EQ(f[1], sheppLogan2DKspace(2.5, -1));
  EXPECT_THROW(makeCoilModel(0, 2), Error);
  EXPECT_THROW(makeCoilModel(4, 4), Error);
  EXPECT_THROW(coilSensitivity(m, 1, 0, 0), Error);
}

TEST(PhantomCoils, MultiCoilKspaceMatchesDirectDft) {
  // Σ_m a_{c,m} F(k - m/P) against the Riemann sum of s_c·ρ point-sampled on 1024²: edge
  // discretisation, measured 5e-4 to 9e-4 relative. Tolerance 2e-3 per coil.
  const int coils = 4;
  const index_t n = 1024;
  const CoilModel m = makeCoilModel(coils, 2);
  const Phantom ph = Phantom::sheppLogan2D();
  const CArray maps = coilMaps(m, Shape{n, n});
  std::vector<double> rho(static_cast<std::size_t>(n * n));
#pragma omp parallel for
  for (index_t iy = 0; iy < n; ++iy)
    for (index_t ix = 0; ix < n; ++ix) rho[static_cast<std::size_t>(ix + n * iy)] = ph.value(pos(ix, n), pos(iy, n));
  const auto kx = range(-4, 4, 1.25), ky = range(-4, 4, 1);
  std::vector<std::array<double, 3>> k;
  for (double b : ky)
    for (double a : kx) k.push_back({a, b, 0});
  const auto analytic = multiCoilKspace(ph, m, k);
  std::vector<cdouble> img(rho.size());
  for (int c = 0; c < coils; ++c) {
    for (std::size_t i = 0; i < rho.size(); ++i) img[i] = rho[i] * cdouble(maps[static_cast<index_t>(i) + n * n * c]);
    const auto dft = directDft2D(img, n, kx, ky);
    const std::vector<cdouble> mine(analytic.begin() + static_cast<long>(c * k.size()),
                                    analytic.begin() + static_cast<long>((c + 1) * k.size()));
    EXPECT_LT(relativeL2(mine, dft), 2e-3) << "coil " << c;
  }
}

TEST(PhantomNoise, HasTheRequestedSigmaAndIsDeterministic) {
  const index_t n = 200000;
  CArray a(Shape{n}, cfloat(0)), b(Shape{n}, cfloat(0)), c(Shape{n}, cfloat(0));
  addNoise(a, 0.5f, 7);
  addNoise(b, 0.5f, 7);
  addNoise(c, 0.5f, 8);
  double sr = 0, si = 0, mr = 0, mi = 0, cross = 0;
  for (index_t i = 0; i < n; ++i) {
    mr += a[i].real();
    mi += a[i].imag();
    sr += a[i].real() * a[i].real();
    si += a[i].imag() * a[i].imag();
    cross += a[i].real() * a[i].imag();
  }
  EXPECT_NEAR(std::sqrt(sr / n), 0.5, 0.005);  // 1/sqrt(2n) ≈ 0.16% relative standard error
  EXPECT_NEAR(std::sqrt(si / n), 0.5, 0.005);
  EXPECT_NEAR(mr / n, 0, 0.005);
  EXPECT_NEAR(mi / n, 0, 0.005);
  EXPECT_NEAR(cross / n, 0, 0.005);
  EXPECT_EQ(a.vec(), b.vec());
  EXPECT_NE(a.vec(), c.vec());
  CArray z(Shape{16}, cfloat(1, 2));
  addNoise(z, 0.f, 1);
  EXPECT_EQ(z[5], cfloat(1, 2));
  EXPECT_THROW(addNoise(z, -1.f, 1), Error);
}
