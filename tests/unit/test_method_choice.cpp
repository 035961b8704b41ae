// The method chosen when a file opens (ui/model/method_choice.hpp): FFT for fully sampled Cartesian data,
// GRAPPA for regular undersampling with calibration lines, CS for Poisson-disc-like sampling with a full
// centre (the BART brain), gridding or CS for non-Cartesian data; the sampling summary the header shows;
// a radial twix read as Cartesian flagged; GRAPPA refused where it cannot apply.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "larmor/io/dataset_io.hpp"
#include "larmor/phantom/simulate.hpp"
#include "method_choice.hpp"
#include "method_fit.hpp"

using namespace larmor;
using namespace larmor::model;

namespace {

Dataset cartesian(int accel, int acs, index_t n = 64) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = n;
  s.coils = 4;
  s.accel = accel;
  s.acs = acs;
  return phantom::simulate(s);
}

// A 2D ky-kz plane (BART [1, n1, n2, coils]) Poisson-disc-like: a full centre and random points outside.
Dataset poissonLike(index_t n1, index_t n2, double keep, index_t centre) {
  Dataset d;
  d.source = "poisson";
  Header& h = d.header;
  h.encoded[0] = h.recon[0] = 1;
  h.encoded[1] = h.recon[1] = n1;
  h.encoded[2] = h.recon[2] = n2;
  h.coils = 2;
  d.kspace = CArray(Shape{1, n1, n2, 2, 1});
  d.sampled = Array<std::uint8_t>(Shape{n1, n2, 1}, 0);
  d.calibration = Array<std::uint8_t>(Shape{n1, n2, 1}, 0);
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  for (index_t j = 0; j < n2; ++j)
    for (index_t i = 0; i < n1; ++i) {
      const bool in = std::abs(i - n1 / 2) < centre / 2 && std::abs(j - n2 / 2) < centre / 2;
      if (!in && u(rng) > keep) continue;
      d.sampled(i, j, 0) = 1;
      for (index_t c = 0; c < 2; ++c) d.kspace(0, i, j, c, 0) = cfloat(1.f, 0.f);
    }
  return d;
}

}  // namespace

TEST(MethodChoice, FullySampledCartesianIsFft) {
  const Dataset d = cartesian(1, 0);
  const MethodChoice c = chooseMethod(d);
  EXPECT_EQ(c.method, recon::Method::Fft);
  EXPECT_NE(c.reason.find("Fully sampled"), std::string::npos) << c.reason;
  EXPECT_EQ(c.warning, "");
  EXPECT_EQ(describeSampling(d).summary(), "fully sampled");
  EXPECT_FALSE(describeSampling(d).looksRadial);
}

TEST(MethodChoice, RegularUndersamplingWithCalibrationIsGrappa) {
  const Dataset d = cartesian(4, 16);
  const SamplingFacts f = describeSampling(d);
  EXPECT_FALSE(f.fullySampled);
  EXPECT_TRUE(f.regular);
  EXPECT_EQ(f.acceleration[0], 4);
  EXPECT_EQ(f.calibrationLines, 16);
  EXPECT_GE(f.centre[0], 16);  // a lattice line next to the calibration block joins the fully sampled centre
  EXPECT_NE(f.summary().find("R 4 × 1, 16 calibration lines"), std::string::npos) << f.summary();
  const MethodChoice c = chooseMethod(d);
  EXPECT_EQ(c.method, recon::Method::Grappa);
  EXPECT_NE(c.reason.find("R 4"), std::string::npos) << c.reason;
  // FFT of the same data: the aliasing is warned of.
  EXPECT_NE(aliasingWarning(recon::Method::Fft, f).find("aliasing"), std::string::npos);
  EXPECT_EQ(aliasingWarning(recon::Method::Grappa, f), "");
  EXPECT_EQ(methodProblem(recon::Method::Grappa, d), "");
}

TEST(MethodChoice, PoissonDiscWithFullCentreIsCompressedSensing) {
  const Dataset d = poissonLike(90, 115, 0.1, 16);
  const SamplingFacts f = describeSampling(d);
  EXPECT_FALSE(f.fullySampled);
  EXPECT_FALSE(f.regular);
  EXPECT_GE(f.centre[0], 15);
  EXPECT_GE(f.centre[1], 15);
  EXPECT_NE(f.summary().find("irregular"), std::string::npos) << f.summary();
  EXPECT_EQ(chooseMethod(d).method, recon::Method::Cs);
  EXPECT_NE(methodProblem(recon::Method::Grappa, d).find("irregular"), std::string::npos);
}

TEST(MethodChoice, UndersampledWithoutCalibrationWarnsOfAliasing) {
  Dataset d = cartesian(4, 16);
  for (index_t i = 0; i < d.sampled.size(); ++i)  // drop the calibration lines between the lattice's
    if (d.calibration[i] && i % 4 != 0) d.sampled[i] = d.calibration[i] = 0;
  d.header.calibrationLines = 0;
  const MethodChoice c = chooseMethod(d);
  EXPECT_EQ(c.method, recon::Method::Fft);
  EXPECT_NE(c.warning.find("aliasing"), std::string::npos) << c.warning;
}

TEST(MethodChoice, GrappaOnFullySampledDataIsAProblem) {
  EXPECT_NE(methodProblem(recon::Method::Grappa, cartesian(1, 0)).find("fully sampled"), std::string::npos);
  EXPECT_EQ(methodProblem(recon::Method::Fft, cartesian(1, 0)), "");
}

TEST(MethodChoice, NonCartesianIsGriddingOrCs) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 64;
  s.coils = 2;
  s.trajectory = TrajectoryKind::Radial;
  s.spokes = 128;  // above pi/2 * 64
  EXPECT_EQ(chooseMethod(phantom::simulate(s)).method, recon::Method::Gridding);
  s.spokes = 24;
  const Dataset under = phantom::simulate(s);
  EXPECT_EQ(chooseMethod(under).method, recon::Method::Cs);
  EXPECT_NE(aliasingWarning(recon::Method::Gridding, describeSampling(under)).find("streaks"), std::string::npos);
}

// The real scanner files of the test data: the Cartesian twix is fully sampled; the radial Pulseq twix,
// which stores no trajectory, is read as Cartesian and flagged as looking radial.
TEST(MethodChoice, RadialTwixReadAsCartesianIsFlagged) {
  const std::string dir = std::string(LARMOR_TEST_DATA) + "/twix/";
  const Dataset gre = io::loadDataset(dir + "gre.dat");
  EXPECT_FALSE(describeSampling(gre).looksRadial);
  EXPECT_EQ(chooseMethod(gre).warning, "");
  const Dataset radial = io::loadDataset(dir + "meas_MID00118_FID33075_sol24.dat");
  EXPECT_TRUE(describeSampling(radial).looksRadial);
  EXPECT_NE(chooseMethod(radial).warning.find("radial"), std::string::npos);
}
