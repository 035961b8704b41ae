// ISMRMRD reading and writing: round trips, files from libismrmrd's own generator, and damaged input.
// Built only with LARMOR_IO.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/version.h>
#include <ismrmrd/xml.h>

#include <cmath>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <numbers>
#include <random>
#include <sstream>

#include "larmor/io/dataset_io.hpp"
#include "larmor/io/ismrmrd.hpp"
#include "support/expect_error.hpp"
#include "support/test_dir.hpp"

namespace fs = std::filesystem;
using namespace larmor;
using larmor::test::expectError;

namespace {

std::string testDir() { return larmor::testing::freshTestDir("io-ismrmrd"); }


void fillRandom(CArray& a, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g;
  for (index_t i = 0; i < a.size(); ++i) a[i] = cfloat(g(rng), g(rng));
}

void expectSameArray(const CArray& a, const CArray& b, const char* what) {
  ASSERT_EQ(a.shape(), b.shape()) << what << ": " << a.shape().str() << " vs " << b.shape().str();
  for (index_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << what << " element " << i;
}

// 2D Cartesian, 2 slices, R=2 with a 4-line calibration block, reference, coil maps, oblique geometry.
Dataset cartesianDataset() {
  Dataset d;
  d.source = "simulated";
  Header& h = d.header;
  h.encoded[0] = 16, h.encoded[1] = 12, h.encoded[2] = 1;
  h.recon[0] = 8, h.recon[1] = 12, h.recon[2] = 1;
  h.encodedFovMm[0] = 440, h.encodedFovMm[1] = 220, h.encodedFovMm[2] = 4;
  h.reconFovMm[0] = 220, h.reconFovMm[1] = 220, h.reconFovMm[2] = 4;
  h.coils = 3;
  h.slices = 2;
  h.accelerationPe1 = 2;
  h.calibrationLines = 4;
  h.systemFieldT = 3;
  h.patientName = "Phantom^Shepp";
  h.patientId = "SL-001";
  h.studyDescription = "unit test";
  h.protocolName = "gre_2d";
  h.deviceDescription = "Larmor simulator";
  Geometry& g = h.geometry;
  g.present = true;
  const float c = std::cos(0.3f), s = std::sin(0.3f);
  const float read[3] = {c, s, 0}, phase[3] = {-s, c, 0}, slice[3] = {0, 0, 1};
  for (int k = 0; k < 3; ++k) g.readDir[k] = read[k], g.phaseDir[k] = phase[k], g.sliceDir[k] = slice[k];
  g.position[0] = 10, g.position[1] = -5, g.position[2] = 12;
  g.slicePositions = {12, 18};
  d.kspace = CArray(Shape{16, 12, 1, 3, 2}, cfloat(0, 0));
  d.sampled = Array<std::uint8_t>(Shape{12, 1, 2}, 0);
  d.calibration = Array<std::uint8_t>(Shape{12, 1, 2}, 0);
  CArray noise(d.kspace.shape());
  fillRandom(noise, 11);
  for (index_t sl = 0; sl < 2; ++sl)
    for (index_t p = 0; p < 12; ++p) {
      const bool acs = p >= 4 && p < 8;
      if (p % 2 != 0 && !acs) continue;
      d.sampled(p, 0, sl) = 1;
      d.calibration(p, 0, sl) = acs ? 1 : 0;
      for (index_t coil = 0; coil < 3; ++coil)
        for (index_t r = 0; r < 16; ++r) d.kspace(r, p, 0, coil, sl) = noise(r, p, 0, coil, sl);
    }
  d.reference = CArray(Shape{8, 12, 1, 1, 2});
  fillRandom(*d.reference, 12);
  d.coilMaps = CArray(Shape{8, 12, 1, 3, 2});
  fillRandom(*d.coilMaps, 13);
  return d;
}

Dataset radialDataset() {
  Dataset d;
  d.source = "simulated";
  Header& h = d.header;
  h.trajectory = TrajectoryKind::Radial;
  h.encoded[0] = h.encoded[1] = h.recon[0] = h.recon[1] = 16;
  h.coils = 2;
  const index_t n = 32, spokes = 10;
  d.kspace = CArray(Shape{n, spokes, 1, 2, 1});
  fillRandom(d.kspace, 21);
  d.trajectory = RArray(Shape{3, n, spokes}, 0.f);
  for (index_t p = 0; p < spokes; ++p)
    for (index_t i = 0; i < n; ++i) {
      const double angle = std::numbers::pi * static_cast<double>(p) / spokes;
      const double r = (static_cast<double>(i) - n / 2) * 0.5;  // -8 .. 7.5 cycles/FOV
      d.trajectory(0, i, p) = static_cast<float>(r * std::cos(angle));
      d.trajectory(1, i, p) = static_cast<float>(r * std::sin(angle));
    }
  return d;
}

// A raw ISMRMRD file written with libismrmrd directly, for inputs Larmor itself would never write.
struct RawFile {
  ISMRMRD::IsmrmrdHeader header;
  std::deque<ISMRMRD::Acquisition> acquisitions;  // deque: line() hands out references that must stay valid

  RawFile(unsigned short nx, unsigned short ny, unsigned short nz = 1) {
    header.version = ISMRMRD_XMLHDR_VERSION;
    header.experimentalConditions.H1resonanceFrequency_Hz = 63500000;
    ISMRMRD::Encoding e;
    e.encodedSpace.matrixSize = ISMRMRD::MatrixSize(nx, ny, nz);
    e.encodedSpace.fieldOfView_mm = {256, 256, 5};
    e.reconSpace = e.encodedSpace;
    e.encodingLimits.kspace_encoding_step_1 = ISMRMRD::Limit(0, ny - 1, ny / 2);
    e.trajectory = ISMRMRD::TrajectoryType::CARTESIAN;
    header.encoding.push_back(e);
  }
  ISMRMRD::Acquisition& line(unsigned short pe1, unsigned short samples, unsigned short channels) {
    ISMRMRD::Acquisition a(samples, channels);
    a.idx().kspace_encode_step_1 = pe1;
    a.center_sample() = samples / 2;
    for (auto* p = a.data_begin(); p != a.data_end(); ++p) *p = std::complex<float>(1.f, 0.5f);
    acquisitions.push_back(a);
    return acquisitions.back();
  }
  void write(const std::string& path) {
    fs::remove(path);
    ISMRMRD::Dataset ds(path.c_str(), "dataset", true);
    std::ostringstream xml;
    ISMRMRD::serialize(header, xml);
    ds.writeHeader(xml.str());
    for (auto& a : acquisitions) ds.appendAcquisition(a);
  }
};

bool haveGenerator() { return std::system("command -v ismrmrd_generate_cartesian_shepp_logan >/dev/null 2>&1") == 0; }

std::string generate(const std::string& path, const std::string& args) {
  const std::string cmd = "ismrmrd_generate_cartesian_shepp_logan " + args + " -o '" + path + "' >/dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return path;
}

}  // namespace

TEST(IoIsmrmrd, RoundTripCartesian) {
  const std::string dir = testDir();
  const Dataset d = cartesianDataset();
  const nlohmann::json sim = {{"phantom", "shepp-logan"}, {"matrix", {8, 12}}, {"noise", 0.0}};
  io::writeIsmrmrd(d, dir + "/cart.h5", sim);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);  // no temporaries

  const Dataset r = io::readIsmrmrd(dir + "/cart.h5");
  EXPECT_EQ(r.source, dir + "/cart.h5");
  const Header& a = d.header;
  const Header& b = r.header;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(b.encoded[i], a.encoded[i]);
    EXPECT_EQ(b.recon[i], a.recon[i]);
    EXPECT_FLOAT_EQ(b.encodedFovMm[i], a.encodedFovMm[i]);
    EXPECT_FLOAT_EQ(b.reconFovMm[i], a.reconFovMm[i]);
  }
  EXPECT_EQ(b.coils, 3);
  EXPECT_EQ(b.slices, 2);
  EXPECT_EQ(b.trajectory, TrajectoryKind::Cartesian);
  EXPECT_EQ(b.accelerationPe1, 2);
  EXPECT_EQ(b.accelerationPe2, 1);
  EXPECT_EQ(b.calibrationLines, 4);
  EXPECT_FLOAT_EQ(b.systemFieldT, 3);
  EXPECT_EQ(b.patientName, a.patientName);
  EXPECT_EQ(b.patientId, a.patientId);
  EXPECT_EQ(b.studyDescription, a.studyDescription);
  EXPECT_EQ(b.protocolName, a.protocolName);
  EXPECT_EQ(b.deviceDescription, a.deviceDescription);
  EXPECT_TRUE(b.geometry.present);
  for (int k = 0; k < 3; ++k) {
    EXPECT_FLOAT_EQ(b.geometry.position[k], a.geometry.position[k]);
    EXPECT_FLOAT_EQ(b.geometry.readDir[k], a.geometry.readDir[k]);
    EXPECT_FLOAT_EQ(b.geometry.phaseDir[k], a.geometry.phaseDir[k]);
    EXPECT_FLOAT_EQ(b.geometry.sliceDir[k], a.geometry.sliceDir[k]);
  }
  ASSERT_EQ(b.geometry.slicePositions.size(), 2u);
  EXPECT_NEAR(b.geometry.slicePositions[0], 12, 1e-4);
  EXPECT_NEAR(b.geometry.slicePositions[1], 18, 1e-4);

  expectSameArray(r.kspace, d.kspace, "kspace");
  ASSERT_EQ(r.sampled.shape(), d.sampled.shape());
  EXPECT_EQ(r.sampled.vec(), d.sampled.vec());
  EXPECT_EQ(r.calibration.vec(), d.calibration.vec());
  ASSERT_TRUE(r.reference.has_value());
  expectSameArray(*r.reference, *d.reference, "reference");
  ASSERT_TRUE(r.coilMaps.has_value());
  expectSameArray(*r.coilMaps, *d.coilMaps, "coil maps");

  // One acquisition per sampled line; ACS lines carry the calibration-and-imaging flag.
  ASSERT_EQ(r.acquisitions.size(), 16u);
  EXPECT_EQ(r.noiseScans, 0);
  int acs = 0;
  for (const auto& acq : r.acquisitions) {
    EXPECT_EQ(acq.samples, 16);
    EXPECT_EQ(acq.channels, 3);
    if (describeAcquisitionFlags(acq.flags).find("parallel_calibration_and_imaging") != std::string::npos) {
      ++acs;
      EXPECT_TRUE(acq.pe1 >= 4 && acq.pe1 < 8) << acq.pe1;
    }
  }
  EXPECT_EQ(acs, 8);
  EXPECT_NE(describeAcquisitionFlags(r.acquisitions.front().flags).find("first_in_slice"), std::string::npos);
  EXPECT_NE(describeAcquisitionFlags(r.acquisitions.back().flags).find("last_in_measurement"), std::string::npos);

  EXPECT_EQ(nlohmann::json::parse(io::readIsmrmrdSimulatorSettings(dir + "/cart.h5")), sim);
  // Same through the dispatcher.
  expectSameArray(io::loadDataset(dir + "/cart.h5").kspace, d.kspace, "loadDataset kspace");
}

TEST(IoIsmrmrd, RoundTripNonCartesian) {
  const std::string dir = testDir();
  const Dataset d = radialDataset();
  io::writeIsmrmrd(d, dir + "/radial.mrd");
  const Dataset r = io::loadDataset(dir + "/radial.mrd");
  EXPECT_EQ(r.header.trajectory, TrajectoryKind::Radial);
  EXPECT_EQ(r.header.coils, 2);
  EXPECT_EQ(r.header.recon[0], 16);
  EXPECT_FALSE(r.header.geometry.present);
  EXPECT_FALSE(r.reference.has_value());
  expectSameArray(r.kspace, d.kspace, "kspace");
  ASSERT_EQ(r.trajectory.shape(), d.trajectory.shape());
  for (index_t i = 0; i < d.trajectory.size(); ++i) ASSERT_EQ(r.trajectory[i], d.trajectory[i]) << i;
  EXPECT_EQ(r.acquisitions.size(), 10u);
  EXPECT_EQ(r.acquisitions[0].trajectoryDims, 2);
  EXPECT_EQ(io::readIsmrmrdSimulatorSettings(dir + "/radial.mrd"), "");

  // Larmor's finer kinds survive although ISMRMRD's enumeration lacks them.
  Dataset s = radialDataset();
  s.header.trajectory = TrajectoryKind::StackOfSpirals;
  s.header.encoded[2] = s.header.recon[2] = 4;
  for (index_t p = 0; p < 10; ++p)
    for (index_t i = 0; i < 32; ++i) s.trajectory(2, i, p) = static_cast<float>(p % 4) - 2.f;
  io::writeIsmrmrd(s, dir + "/sos.h5");
  const Dataset rs = io::readIsmrmrd(dir + "/sos.h5");
  EXPECT_EQ(rs.header.trajectory, TrajectoryKind::StackOfSpirals);
  EXPECT_EQ(rs.acquisitions[0].trajectoryDims, 3);
  for (index_t i = 0; i < s.trajectory.size(); ++i) ASSERT_EQ(rs.trajectory[i], s.trajectory[i]) << i;
}

TEST(IoIsmrmrd, NormalisedTrajectoryIsScaledToCyclesPerFov) {
  const std::string dir = testDir();
  RawFile f(64, 64);
  f.header.encoding[0].trajectory = ISMRMRD::TrajectoryType::RADIAL;
  f.header.encoding[0].reconSpace.matrixSize = ISMRMRD::MatrixSize(32, 48, 1);
  for (unsigned short p = 0; p < 4; ++p) {
    ISMRMRD::Acquisition a(8, 1, 2);
    a.idx().kspace_encode_step_1 = p;
    for (unsigned short i = 0; i < 8; ++i) {
      a.traj(0, i) = (i - 4) / 8.f;  // -0.5 .. 0.375
      a.traj(1, i) = 0.25f;
      a.data(i, 0) = std::complex<float>(float(i), float(p));
    }
    f.acquisitions.push_back(a);
  }
  f.write(dir + "/norm.h5");
  const Dataset r = io::readIsmrmrd(dir + "/norm.h5");
  EXPECT_EQ(r.header.trajectory, TrajectoryKind::Radial);
  EXPECT_EQ(r.kspace.shape(), (Shape{8, 4, 1, 1, 1}));
  EXPECT_FLOAT_EQ(r.trajectory(0, 0, 0), -0.5f * 32);
  EXPECT_FLOAT_EQ(r.trajectory(1, 0, 0), 0.25f * 48);
  EXPECT_FLOAT_EQ(r.trajectory(2, 0, 0), 0.f);
  EXPECT_EQ(r.kspace(3, 2, 0, 0, 0), cfloat(3, 2));
}

TEST(IoIsmrmrd, GeneratorFile) {
  if (!haveGenerator()) GTEST_SKIP() << "ismrmrd_generate_cartesian_shepp_logan is not installed";
  const std::string dir = testDir();
  const std::string file = generate(dir + "/sl.h5", "-n 0 -m 64 -c 4");
  const Dataset d = io::readIsmrmrd(file);
  EXPECT_EQ(d.header.coils, 4);
  EXPECT_EQ(d.header.encoded[0], 128);
  EXPECT_EQ(d.header.encoded[1], 64);
  EXPECT_EQ(d.header.encoded[2], 1);
  EXPECT_EQ(d.header.recon[0], 64);
  EXPECT_EQ(d.header.recon[1], 64);
  EXPECT_EQ(d.header.recon[2], 1);
  EXPECT_FLOAT_EQ(d.header.readoutOversampling(), 2.f);
  EXPECT_EQ(d.header.slices, 1);
  EXPECT_EQ(d.header.trajectory, TrajectoryKind::Cartesian);
  EXPECT_EQ(d.kspace.shape(), (Shape{128, 64, 1, 4, 1}));
  EXPECT_EQ(d.acquisitions.size(), 64u);
  for (index_t p = 0; p < 64; ++p) {
    EXPECT_EQ(d.sampled(p, 0, 0), 1) << p;
    EXPECT_EQ(d.calibration(p, 0, 0), 0) << p;
  }
  // The generator's truth: phantom (object) and csm (coil maps) at the recon matrix.
  ASSERT_TRUE(d.reference.has_value());
  EXPECT_EQ(d.reference->shape(), (Shape{64, 64, 1, 1, 1}));
  ASSERT_TRUE(d.coilMaps.has_value());
  EXPECT_EQ(d.coilMaps->shape(), (Shape{64, 64, 1, 4, 1}));
  // Centred k-space: the DC sample of the centre line is the largest.
  const cfloat dc = d.kspace(64, 32, 0, 0, 0);
  EXPECT_GT(std::abs(dc), std::abs(d.kspace(10, 32, 0, 0, 0)));
  EXPECT_GT(std::abs(dc), std::abs(d.kspace(64, 5, 0, 0, 0)));

  // Noise scans are counted, not placed in k-space.
  const std::string withNoise = generate(dir + "/noise.h5", "-n 0.01 -m 32 -c 2 -C");
  const Dataset n = io::readIsmrmrd(withNoise);
  EXPECT_EQ(n.noiseScans, 1);
  EXPECT_EQ(n.acquisitions.size(), 33u);
  // The noise samples, kept for pre-whitening: [samples, coils].
  ASSERT_TRUE(n.noise.has_value());
  EXPECT_EQ(n.noise->shape()[1], 2);
  EXPECT_GT(n.noise->shape()[0], 0);
  EXPECT_NE(describeAcquisitionFlags(n.acquisitions[0].flags).find("noise_measurement"), std::string::npos);
}

TEST(IoIsmrmrd, GeneratorFileAccelerated) {
  if (!haveGenerator()) GTEST_SKIP() << "ismrmrd_generate_cartesian_shepp_logan is not installed";
  const std::string dir = testDir();
  const std::string file = generate(dir + "/acc.h5", "-n 0 -m 64 -c 4 -a 2 -w 16");
  // The generator writes R shifted undersampled repetitions (together they fill k-space) and flags
  // the 16 central lines 24..39 as calibration. They are R frames, never merged.
  expectError([&] { io::readIsmrmrd(file); }, "holds 2 frames (2 repetitions); select one with --repetition N");
  const io::Series all = io::loadSeries(file);
  ASSERT_EQ(all.frames.size(), 2u);
  EXPECT_EQ(all.acquisitions.size(), 80u);
  const Dataset full = io::readIsmrmrd(generate(dir + "/full.h5", "-n 0 -m 64 -c 4"));
  for (std::size_t f = 0; f < 2; ++f) {
    const Dataset& d = all.frames[f];
    EXPECT_EQ(all.keys[f].repetition, static_cast<int>(f));
    EXPECT_EQ(d.header.accelerationPe1, 2);
    EXPECT_EQ(d.header.calibrationLines, 16);
    EXPECT_EQ(d.acquisitions.size(), 40u);
    for (index_t p = 0; p < 64; ++p) {
      EXPECT_EQ(d.sampled(p, 0, 0), (p % 2 == static_cast<index_t>(f) || (p >= 24 && p <= 39)) ? 1 : 0) << p;
      EXPECT_EQ(d.calibration(p, 0, 0), (p >= 24 && p <= 39) ? 1 : 0) << p;
      // A noise-free frame's lines are the fully sampled file's lines.
      if (d.sampled(p, 0, 0))
        for (index_t c = 0; c < 4; ++c)
          for (index_t r = 0; r < 128; ++r)
            ASSERT_NEAR(std::abs(d.kspace(r, p, 0, c, 0) - full.kspace(r, p, 0, c, 0)), 0.f,
                        1e-5f * (1.f + std::abs(full.kspace(r, p, 0, c, 0))));
    }
  }

  // One repetition: every other line plus the calibration block.
  io::LoadOptions opt;
  opt.repetition = 0;
  const Dataset rep0 = io::loadDataset(file, opt);
  index_t lines = 0;
  for (index_t p = 0; p < 64; ++p) {
    const bool expected = p % 2 == 0 || (p >= 24 && p <= 39);
    EXPECT_EQ(rep0.sampled(p, 0, 0), expected ? 1 : 0) << p;
    EXPECT_EQ(rep0.calibration(p, 0, 0), (p >= 24 && p <= 39) ? 1 : 0) << p;
    lines += rep0.sampled(p, 0, 0);
    if (!expected)
      for (index_t r = 0; r < 128; ++r) ASSERT_EQ(rep0.kspace(r, p, 0, 0, 0), cfloat(0, 0));
  }
  EXPECT_EQ(lines, 40);
  opt.repetition = 5;
  expectError([&] { io::loadDataset(file, opt); }, "no imaging acquisitions in repetition 5");
}

TEST(IoIsmrmrd, MissingAndNonHdf5Files) {
  const std::string dir = testDir();
  expectError([&] { io::readIsmrmrd(dir + "/missing.h5"); }, "missing.h5: no such file");
  {
    std::ofstream(dir + "/text.h5") << "this is not HDF5\n";
  }
  expectError([&] { io::readIsmrmrd(dir + "/text.h5"); }, "text.h5: not an HDF5 file");
  {
    std::ofstream(dir + "/empty.h5");
  }
  expectError([&] { io::readIsmrmrd(dir + "/empty.h5"); }, "empty.h5");
  fs::create_directory(dir + "/dir.h5");
  expectError([&] { io::readIsmrmrd(dir + "/dir.h5"); }, "dir.h5: is a directory");
}

TEST(IoIsmrmrd, TruncatedFile) {
  const std::string dir = testDir();
  const std::string file = dir + "/trunc.h5";
  io::writeIsmrmrd(cartesianDataset(), file);
  for (double fraction : {0.5, 0.9, 0.02}) {
    fs::copy_file(file, dir + "/cut.h5", fs::copy_options::overwrite_existing);
    fs::resize_file(dir + "/cut.h5", static_cast<std::uintmax_t>(fs::file_size(file) * fraction));
    expectError([&] { io::readIsmrmrd(dir + "/cut.h5"); }, "cut.h5");
  }
  if (haveGenerator()) {
    const std::string gen = generate(dir + "/gen.h5", "-n 0 -m 64 -c 4");
    fs::resize_file(gen, fs::file_size(gen) / 2);
    expectError([&] { io::readIsmrmrd(gen); }, "gen.h5: damaged or truncated HDF5 file (the file ends after ");
  }
}

TEST(IoIsmrmrd, FileWithoutTheDatasetGroupIsNotModified) {
  const std::string dir = testDir();
  const std::string file = dir + "/other.h5";
  {
    ISMRMRD::Dataset ds(file.c_str(), "elsewhere", true);
  }
  const auto before = fs::file_size(file);
  expectError([&] { io::readIsmrmrd(file); }, "other.h5: no ISMRMRD group /dataset (it has /elsewhere)");
  EXPECT_EQ(fs::file_size(file), before);
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  EXPECT_LE(H5Lexists(f, "/dataset", H5P_DEFAULT), 0);
  H5Fclose(f);
  expectError([&] { io::readIsmrmrd(file, "elsewhere"); }, "no ISMRMRD XML header");

  const hid_t g = H5Fcreate((dir + "/bare.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Fclose(g);
  expectError([&] { io::readIsmrmrd(dir + "/bare.h5"); }, "bare.h5: no ISMRMRD group /dataset (the HDF5 file holds no objects at its root)");
}

TEST(IoIsmrmrd, MismatchedChannels) {
  const std::string dir = testDir();
  RawFile f(16, 8);
  for (unsigned short p = 0; p < 8; ++p) f.line(p, 16, p == 5 ? 7 : 8);
  f.write(dir + "/chan.h5");
  expectError([&] { io::readIsmrmrd(dir + "/chan.h5"); }, "chan.h5: acquisition 5 has 7 channels, expected 8");
}

TEST(IoIsmrmrd, NonFiniteSample) {
  const std::string dir = testDir();
  RawFile f(16, 8);
  for (unsigned short p = 0; p < 8; ++p) f.line(p, 16, 2);
  f.acquisitions[3].data(9, 1) = std::complex<float>(std::numeric_limits<float>::quiet_NaN(), 0);
  f.write(dir + "/nan.h5");
  expectError([&] { io::readIsmrmrd(dir + "/nan.h5"); }, "nan.h5: acquisition 3: sample 9 of coil 1 is NaN");
  f.acquisitions[3].data(9, 1) = std::complex<float>(0, std::numeric_limits<float>::infinity());
  f.write(dir + "/inf.h5");
  expectError([&] { io::readIsmrmrd(dir + "/inf.h5"); }, "is Inf");
}

TEST(IoIsmrmrd, ZeroCoilsAndNoAcquisitions) {
  const std::string dir = testDir();
  RawFile f(16, 8);
  f.line(0, 16, 0);
  f.write(dir + "/nocoil.h5");
  expectError([&] { io::readIsmrmrd(dir + "/nocoil.h5"); }, "nocoil.h5: acquisition 0 has no channels");
  RawFile e(16, 8);
  e.write(dir + "/noacq.h5");
  expectError([&] { io::readIsmrmrd(dir + "/noacq.h5"); }, "noacq.h5: has no acquisitions");
  RawFile n(16, 8);
  n.line(0, 16, 2).setFlag(ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT);
  n.write(dir + "/onlynoise.h5");
  expectError([&] { io::readIsmrmrd(dir + "/onlynoise.h5"); }, "has no imaging acquisitions (of 1, 1 noise scans)");
}

TEST(IoIsmrmrd, AbsurdHeaderDimensions) {
  const std::string dir = testDir();
  RawFile huge(65535, 65535, 65535);
  huge.line(0, 16, 2);
  huge.write(dir + "/huge.h5");
  expectError([&] { io::readIsmrmrd(dir + "/huge.h5"); }, "huge.h5: the header's matrix [65535, 65535, 65535]");
  // Sane per dimension, but far more than the few samples present could fill.
  RawFile big(4096, 4096, 64);
  big.line(0, 4096, 2);
  big.write(dir + "/big.h5");
  expectError([&] { io::readIsmrmrd(dir + "/big.h5"); }, "but the file holds only");
  RawFile zero(16, 0);
  zero.line(0, 16, 2);
  zero.write(dir + "/zero.h5");
  expectError([&] { io::readIsmrmrd(dir + "/zero.h5"); }, "zero.h5: the XML header's matrix size is zero");
}

TEST(IoIsmrmrd, LinesThatDoNotFit) {
  const std::string dir = testDir();
  RawFile f(16, 8);
  f.line(0, 16, 2);
  f.line(20, 16, 2);  // centre 4 -> line 20 is outside 0..7
  f.write(dir + "/outside.h5");
  expectError([&] { io::readIsmrmrd(dir + "/outside.h5"); }, "acquisition 1 lies at k-space line (20, 0)");
  RawFile s(16, 8);
  s.line(0, 16, 2);
  s.line(1, 12, 2).center_sample() = 12;  // too asymmetric to place
  s.write(dir + "/samples.h5");
  expectError([&] { io::readIsmrmrd(dir + "/samples.h5"); }, "acquisition 1 has 12 samples, expected 16");
  RawFile t(16, 8);
  t.header.encoding[0].trajectory = ISMRMRD::TrajectoryType::SPIRAL;
  t.line(0, 16, 2);
  t.write(dir + "/notraj.h5");
  expectError([&] { io::readIsmrmrd(dir + "/notraj.h5"); }, "stores no k-space coordinates");
}

TEST(IoIsmrmrd, ReadoutHandling) {
  const std::string dir = testDir();
  RawFile f(16, 4);
  // Discarded samples are dropped; an asymmetric echo lands with its centre at 16/2; a reversed line
  // is flipped; a repeated line is averaged.
  auto& a = f.line(0, 20, 1);
  a.discard_pre() = 2;
  a.discard_post() = 2;
  a.center_sample() = 10;
  for (unsigned short i = 0; i < 20; ++i) a.data(i, 0) = std::complex<float>(float(i), 0);
  auto& b = f.line(1, 12, 1);
  b.center_sample() = 4;  // samples 0..11 go to 4..15
  for (unsigned short i = 0; i < 12; ++i) b.data(i, 0) = std::complex<float>(float(i + 1), 0);
  auto& c = f.line(2, 16, 1);
  c.setFlag(ISMRMRD::ISMRMRD_ACQ_IS_REVERSE);
  for (unsigned short i = 0; i < 16; ++i) c.data(i, 0) = std::complex<float>(float(i), 0);
  for (float v : {1.f, 3.f}) {
    auto& r = f.line(3, 16, 1);
    for (unsigned short i = 0; i < 16; ++i) r.data(i, 0) = std::complex<float>(v, 0);
  }
  auto& nav = f.line(3, 16, 1);
  nav.setFlag(ISMRMRD::ISMRMRD_ACQ_IS_NAVIGATION_DATA);
  f.write(dir + "/readout.h5");
  const Dataset d = io::readIsmrmrd(dir + "/readout.h5");
  // Line index = kspace_encode_step_1 + (4/2 - centre 2) = step.
  EXPECT_EQ(d.kspace(0, 0, 0, 0, 0), cfloat(2, 0));
  EXPECT_EQ(d.kspace(15, 0, 0, 0, 0), cfloat(17, 0));
  EXPECT_EQ(d.kspace(3, 1, 0, 0, 0), cfloat(0, 0));
  EXPECT_EQ(d.kspace(4, 1, 0, 0, 0), cfloat(1, 0));
  EXPECT_EQ(d.kspace(15, 1, 0, 0, 0), cfloat(12, 0));
  EXPECT_EQ(d.kspace(0, 2, 0, 0, 0), cfloat(15, 0));
  EXPECT_EQ(d.kspace(5, 3, 0, 0, 0), cfloat(2, 0));
  EXPECT_EQ(d.acquisitions.size(), 6u);
}

TEST(IoIsmrmrd, Cancellation) {
  const std::string dir = testDir();
  io::writeIsmrmrd(cartesianDataset(), dir + "/c.h5");
  CancelToken token;
  token.cancel();
  EXPECT_THROW(io::readIsmrmrd(dir + "/c.h5", "dataset", Progress(nullptr, &token)), Cancelled);
  double last = -1;
  io::readIsmrmrd(dir + "/c.h5", "dataset", Progress([&](double f, const std::string&) { last = f; }));
  EXPECT_DOUBLE_EQ(last, 1.0);
}

TEST(IoIsmrmrd, WriteFailuresLeaveNothing) {
  const std::string dir = testDir();
  expectError([&] { io::writeIsmrmrd(cartesianDataset(), dir + "/no/dir/x.h5"); }, "does not exist");
  Dataset bad = cartesianDataset();
  bad.header.coils = 0;
  expectError([&] { io::writeIsmrmrd(bad, dir + "/bad.h5"); }, "no coils");
  Dataset wide = radialDataset();
  wide.kspace = CArray(Shape{70000, 1, 1, 2, 1}, cfloat(1, 0));
  wide.trajectory = RArray(Shape{3, 70000, 1}, 0.f);
  expectError([&] { io::writeIsmrmrd(wide, dir + "/wide.h5"); }, "wide.h5: readout length 70000");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 0);
}

TEST(IoIsmrmrd, SlicesComeFromTheData) {
  const std::string dir = testDir();
  // Limits announce 3 slices, only slice 0 was acquired.
  RawFile fewer(16, 4);
  fewer.header.encoding[0].encodingLimits.slice = ISMRMRD::Limit(0, 2, 0);
  for (unsigned short p = 0; p < 4; ++p) fewer.line(p, 16, 2);
  fewer.write(dir + "/fewer.h5");
  const Dataset a = io::readIsmrmrd(dir + "/fewer.h5");
  EXPECT_EQ(a.header.slices, 1);
  EXPECT_EQ(a.kspace.shape(), (Shape{16, 4, 1, 2, 1}));
  // No slice limits, but three slices in the data (k-space grows as they appear).
  RawFile more(16, 4);
  for (unsigned short sl = 0; sl < 3; ++sl)
    for (unsigned short p = 0; p < 4; ++p) more.line(p, 16, 2).idx().slice = sl;
  more.acquisitions.back().data(0, 0) = std::complex<float>(7, 7);
  more.write(dir + "/more.h5");
  const Dataset b = io::readIsmrmrd(dir + "/more.h5");
  EXPECT_EQ(b.header.slices, 3);
  EXPECT_EQ(b.kspace.shape(), (Shape{16, 4, 1, 2, 3}));
  EXPECT_EQ(b.kspace(0, 3, 0, 0, 2), cfloat(7, 7));
  EXPECT_EQ(b.sampled.size(), 12);
  EXPECT_FALSE(b.header.geometry.present);
  ASSERT_EQ(b.header.geometry.slicePositions.size(), 3u);
  EXPECT_FLOAT_EQ(b.header.geometry.slicePositions[0], -5.f);  // evenly spaced by the slab thickness

  // Non-Cartesian, two slices sharing one trajectory.
  Dataset r = radialDataset();
  r.header.slices = 2;
  r.kspace = CArray(Shape{32, 10, 1, 2, 2});
  fillRandom(r.kspace, 31);
  io::writeIsmrmrd(r, dir + "/radial2.h5");
  const Dataset rr = io::readIsmrmrd(dir + "/radial2.h5");
  EXPECT_EQ(rr.header.slices, 2);
  expectSameArray(rr.kspace, r.kspace, "two-slice radial kspace");
}
