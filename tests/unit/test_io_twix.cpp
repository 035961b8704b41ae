// The Siemens twix reader (io/twix.hpp) on the two real files of tests/unit/data/twix (a VD/VE GRE and a VB
// Pulseq radial scan) against `bart twixread` (Debian's BART, the independent reader: identical complex
// values in the same order), and on small synthetic VB and VD files from tests/support/twix_writer.hpp
// (line placement from the centre counters, asymmetric readouts, noise kept apart, reference-only lines,
// REFLECT, sync data, averages, the repetition filter, the last of several measurements).
// Hostile files: test_io_twix_hardening.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <numbers>

#include "larmor/io/cfl.hpp"
#include "larmor/io/dataset_io.hpp"
#include "larmor/io/twix.hpp"
#include "support/random_data.hpp"
#include "support/twix_writer.hpp"
#include "test_io_export_util.hpp"

using namespace larmor;
using namespace larmor::testing;
using larmor::test::TwixScanSpec;
using larmor::test::TwixSpec;

namespace {

const std::string kData = std::string(LARMOR_TEST_DATA) + "/twix/";
const std::string kGre = kData + "gre.dat";
const std::string kRadial = kData + "meas_MID00118_FID33075_sol24.dat";

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// `bart twixread ARGS file out` into dir; the k-space BART reads, [readout, pe1, pe2, coils, ...].
CArray bartTwixread(const std::string& dir, const std::string& args, const std::string& file) {
  if (std::system("command -v bart >/dev/null 2>&1") != 0) {
    ADD_FAILURE() << "bart is not installed (installer/install-deps.sh installs it): the oracle of this test";
    return {};
  }
  const std::string cmd = "bart twixread " + args + " '" + file + "' '" + dir + "/bart' >/dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return io::readCfl(dir + "/bart.cfl");
}

// Largest |a - b| over the first a.size() values (same memory order), +inf on a size mismatch.
double maxDiff(const CArray& a, const CArray& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (index_t i = 0; i < a.size(); ++i) m = std::max(m, static_cast<double>(std::abs(a[i] - b[i])));
  return m;
}

TwixScanSpec line(std::uint16_t lin, std::uint16_t samples, std::uint16_t coils, unsigned seed, std::uint64_t mask = 0) {
  TwixScanSpec s;
  s.lin = lin, s.samples = samples, s.channels = coils, s.mask = mask;
  s.centreColumn = samples / 2;
  s.data = test::randomComplex(samples * coils, seed);
  return s;
}

}  // namespace

TEST(TwixReal, VeGreHeaderAndSummary) {
  const io::TwixRead r = io::readTwix(kGre);
  const Header& h = r.dataset.header;
  EXPECT_EQ(r.summary.format, "VD/VE");
  EXPECT_EQ(r.summary.measurements, 1u);
  EXPECT_EQ(r.summary.imagingScans, 160u);
  EXPECT_EQ(r.summary.noiseScans, 0u);
  EXPECT_TRUE(r.summary.acqEnd);
  EXPECT_EQ(r.dataset.kspace.shape(), (Shape{320, 160, 1, 2, 1}));
  EXPECT_EQ(h.encoded[0], 320);
  EXPECT_EQ(h.recon[0], 160);  // lBaseResolution; flReadoutOSFactor 2
  EXPECT_EQ(h.recon[1], 160);
  EXPECT_FLOAT_EQ(h.reconFovMm[0], 200.f);
  EXPECT_FLOAT_EQ(h.encodedFovMm[0], 400.f);
  EXPECT_FLOAT_EQ(h.reconFovMm[2], 4.f);
  EXPECT_FLOAT_EQ(h.readoutOversampling(), 2.f);
  EXPECT_EQ(h.protocolName, "gre");
  EXPECT_EQ(h.deviceDescription, "Siemens Skyra (syngo MR E11)");
  EXPECT_NEAR(h.systemFieldT, 2.89362, 1e-4);
  EXPECT_EQ(h.trajectory, TrajectoryKind::Cartesian);
  EXPECT_EQ(r.dataset.acquisitions.size(), 160u);
  for (index_t i = 0; i < 160; ++i) EXPECT_TRUE(r.dataset.sampled[i]);
  EXPECT_EQ(h.calibrationLines, 0);
}

TEST(TwixReal, VeGreKspaceEqualsBartTwixread) {
  const std::string dir = freshTestDir("twix");
  const CArray bart = bartTwixread(dir, "-A", kGre);
  const Dataset d = io::loadDataset(kGre);
  ASSERT_EQ(bart.size(), d.kspace.size()) << bart.shape().str();
  EXPECT_EQ(bart.shape()[0], 320);
  EXPECT_EQ(bart.shape()[1], 160);
  EXPECT_EQ(bart.shape()[3], 2);
  EXPECT_EQ(maxDiff(d.kspace, bart), 0.0);  // the same float32 values in the same order
}

TEST(TwixReal, VbRadialAsLinesEqualsBartTwixread) {
  const std::string dir = freshTestDir("twix");
  const CArray bart = bartTwixread(dir, "-x 256 -y 256 -c 4", kRadial);
  const io::TwixRead r = io::readTwix(kRadial);
  EXPECT_EQ(r.summary.format, "VB");
  EXPECT_EQ(r.summary.channels, 4);
  EXPECT_EQ(r.dataset.header.protocolName, "sol24");
  EXPECT_EQ(r.dataset.header.deviceDescription, "Siemens TrioTim (syngo MR B19)");
  // The protocol's 64 lines cannot hold line counters 0..255 (Pulseq): the counters are the indices.
  EXPECT_EQ(r.dataset.kspace.shape(), (Shape{256, 256, 1, 4, 1}));
  EXPECT_EQ(maxDiff(r.dataset.kspace, bart), 0.0);
}

TEST(TwixReal, VbRadialWithComputedTrajectory) {
  io::LoadOptions o;
  o.trajectoryPath = "radial:180";
  const Dataset d = io::loadDataset(kRadial, o);
  const Dataset lines = io::loadDataset(kRadial);
  EXPECT_EQ(d.header.trajectory, TrajectoryKind::Radial);
  EXPECT_EQ(d.kspace.shape(), (Shape{256, 256, 1, 4, 1}));
  EXPECT_EQ(maxDiff(d.kspace, lines.kspace), 0.0);  // profile p = line counter p, as read
  EXPECT_EQ(d.header.recon[0], 256);
  EXPECT_EQ(d.header.recon[1], 256);
  for (index_t p : {0, 1, 64, 255})
    for (index_t n : {0, 128, 255}) {
      const double phi = std::numbers::pi * static_cast<double>(p) / 256;
      EXPECT_NEAR(d.trajectory(0, n, p), (n - 128) * std::cos(phi), 1e-4);
      EXPECT_NEAR(d.trajectory(1, n, p), (n - 128) * std::sin(phi), 1e-4);
      EXPECT_EQ(d.trajectory(2, n, p), 0.f);
    }
  // A trajectory file must match the readouts.
  const std::string dir = freshTestDir("twix");
  io::writeCfl(dir + "/t.cfl", CArray(Shape{3, 256, 255}, cfloat(1, 0)));
  o.trajectoryPath = dir + "/t.cfl";
  expectError([&] { io::loadDataset(kRadial, o); }, "the trajectory " + dir + "/t.cfl [3, 256, 255] does not match");
}

TEST(TwixSynthetic, LinesPlacedByCentreCountersVbAndVd) {
  for (bool vd : {false, true}) {
    SCOPED_TRACE(vd ? "VD" : "VB");
    TwixSpec spec;
    spec.vd = vd;
    spec.measYaps = test::twixProtocol(8, 8);
    spec.meas = test::twixXprot(2.0);
    // Lines 2..7 of 8 with the centre line 4 (partial Fourier): placed at the same indices.
    for (std::uint16_t l = 2; l < 8; ++l) {
      spec.scans.push_back(line(l, 16, 3, 10 + l));
      spec.scans.back().centreLine = 4;
    }
    const std::string dir = freshTestDir("twix");
    writeBytes(dir + "/s.dat", test::twixBytes(spec));
    const Dataset d = io::loadDataset(dir + "/s.dat");
    EXPECT_EQ(d.kspace.shape(), (Shape{16, 8, 1, 3, 1}));
    EXPECT_EQ(d.header.recon[0], 8);
    EXPECT_EQ(d.header.patientName, "Doe^Jane");
    for (std::uint16_t l = 0; l < 8; ++l) EXPECT_EQ(d.sampled(l, 0, 0), l >= 2) << l;
    for (std::uint16_t l = 2; l < 8; ++l)
      for (index_t c = 0; c < 3; ++c)
        for (index_t k = 0; k < 16; ++k) ASSERT_EQ(d.kspace(k, l, 0, c, 0), spec.scans[l - 2].data[c * 16 + k]);
    // The centre two lines lower: line counters 0..5, centre 2 -> indices 2..7 again.
    for (auto& s : spec.scans) s.lin -= 2, s.centreLine = 2;
    writeBytes(dir + "/s.dat", test::twixBytes(spec));
    EXPECT_EQ(maxDiff(io::loadDataset(dir + "/s.dat").kspace, d.kspace), 0.0);
  }
}

TEST(TwixSynthetic, AsymmetricEchoReadoutPlacedAtItsCentreColumn) {
  TwixSpec spec;
  spec.measYaps = test::twixProtocol(8, 4);
  spec.meas = test::twixXprot(2.0);  // encoded readout 16
  for (std::uint16_t l = 0; l < 4; ++l) {
    spec.scans.push_back(line(l, 12, 1, l));
    spec.scans.back().centreColumn = 4;  // k = 0 at sample 4: the readout starts at 16/2 - 4 = 4
    spec.scans.back().centreLine = 2;
  }
  const std::string dir = freshTestDir("twix");
  writeBytes(dir + "/s.dat", test::twixBytes(spec));
  const Dataset d = io::loadDataset(dir + "/s.dat");
  ASSERT_EQ(d.kspace.shape(), (Shape{16, 4, 1, 1, 1}));
  for (index_t k = 0; k < 16; ++k)
    EXPECT_EQ(d.kspace(k, 1, 0, 0, 0), k >= 4 ? spec.scans[1].data[k - 4] : cfloat(0, 0)) << k;
}

TEST(TwixSynthetic, NoiseApartReferenceLinesReflectSyncAndAverages) {
  TwixSpec spec;
  spec.measYaps = test::twixProtocol(4, 8) + "sPat.lAccelFactPE = 2\n";
  spec.meas = test::twixXprot(2.0);
  const std::uint64_t noise = 1ull << 25, patRef = 1ull << 22, patRefIma = (1ull << 22) | (1ull << 23),
                      reflect = 1ull << 24, phascor = 1ull << 21;
  spec.scans.push_back(line(0, 8, 2, 100, noise));
  spec.scans.push_back(line(0, 8, 2, 101, noise));
  TwixScanSpec sync;
  sync.mask = 1ull << 5, sync.syncBytes = 200;
  spec.scans.push_back(sync);
  spec.scans.push_back(line(3, 8, 2, 102, patRef));     // reference only, line 3: no imaging readout there
  spec.scans.push_back(line(4, 8, 2, 103, patRef));     // reference only, line 4: imaging readout below wins
  spec.scans.push_back(line(4, 8, 2, 104, patRefIma));  // imaging and calibration
  spec.scans.push_back(line(2, 8, 2, 105, reflect));
  spec.scans.push_back(line(6, 8, 2, 106));
  spec.scans.push_back(line(6, 8, 2, 107));  // second average of line 6
  spec.scans.back().ave = 1;
  spec.scans.push_back(line(0, 8, 2, 108, phascor));  // skipped
  for (auto& s : spec.scans) s.centreLine = 4;
  const std::string dir = freshTestDir("twix");
  writeBytes(dir + "/s.dat", test::twixBytes(spec));
  const io::TwixRead r = io::readTwix(dir + "/s.dat");
  const Dataset& d = r.dataset;
  EXPECT_EQ(r.summary.noiseScans, 2u);
  EXPECT_EQ(r.summary.referenceScans, 2u);
  EXPECT_EQ(r.summary.skippedScans, 1u);
  EXPECT_EQ(r.summary.syncScans, 1u);
  EXPECT_EQ(d.noiseScans, 2);
  ASSERT_EQ(r.noise.shape(), (Shape{8, 2, 2}));
  for (index_t c = 0; c < 2; ++c)
    for (index_t k = 0; k < 8; ++k) {
      EXPECT_EQ(r.noise(k, 1, c), spec.scans[1].data[c * 8 + k]);
      EXPECT_EQ(d.kspace(k, 3, 0, c, 0), spec.scans[3].data[c * 8 + k]);
      EXPECT_EQ(d.kspace(k, 4, 0, c, 0), spec.scans[5].data[c * 8 + k]);
      EXPECT_EQ(d.kspace(k, 2, 0, c, 0), spec.scans[6].data[c * 8 + 7 - k]);  // reversed
      const cfloat mean = 0.5f * (spec.scans[7].data[c * 8 + k] + spec.scans[8].data[c * 8 + k]);
      EXPECT_NEAR(std::abs(d.kspace(k, 6, 0, c, 0) - mean), 0.f, 1e-6f);
      EXPECT_EQ(d.kspace(k, 0, 0, c, 0), cfloat(0, 0));  // noise and phase correction are not k-space
    }
  const std::vector<int> sampled = {0, 0, 1, 1, 1, 0, 1, 0}, calib = {0, 0, 0, 1, 1, 0, 0, 0};
  for (index_t l = 0; l < 8; ++l) {
    EXPECT_EQ(d.sampled(l, 0, 0), sampled[l]) << l;
    EXPECT_EQ(d.calibration(l, 0, 0), calib[l]) << l;
  }
  EXPECT_EQ(d.header.calibrationLines, 2);
  EXPECT_EQ(d.header.accelerationPe1, 2);
  EXPECT_EQ(describeAcquisitionFlags(d.acquisitions[0].flags), "noise_measurement");
  EXPECT_EQ(describeAcquisitionFlags(d.acquisitions[4].flags), "parallel_calibration_and_imaging");
}

TEST(TwixSynthetic, LastMeasurementSlicesPartitionsAndRepetitionFilter) {
  TwixSpec spec;
  spec.measurements = 3;  // two adjustment measurements (only an ACQEND) before the imaging one
  spec.measYaps = test::twixProtocol(4, 2, 4, true);
  spec.meas = test::twixXprot(1.0);
  for (std::uint16_t rep = 0; rep < 2; ++rep)
    for (std::uint16_t sli = 0; sli < 2; ++sli)
      for (std::uint16_t par = 0; par < 4; ++par)
        for (std::uint16_t l = 0; l < 2; ++l) {
          spec.scans.push_back(line(l, 4, 1, 1000u * rep + 100u * sli + 10u * par + l));
          TwixScanSpec& s = spec.scans.back();
          s.par = par, s.sli = sli, s.rep = rep, s.centreLine = 1, s.centrePartition = 2;
        }
  const std::string dir = freshTestDir("twix");
  writeBytes(dir + "/s.dat", test::twixBytes(spec));
  io::LoadOptions o;
  o.repetition = 1;
  const io::TwixSummary all = io::inspectTwix(dir + "/s.dat");
  EXPECT_EQ(all.measurements, 3u);
  EXPECT_EQ(all.repetitions, 2);
  // Two repetitions are two frames: never merged into one k-space.
  expectError([&] { io::readTwix(dir + "/s.dat"); }, "holds 2 frames");
  expectError([&] { io::loadDataset(dir + "/s.dat"); }, "holds 2 frames (2 repetitions); select one with --repetition N");
  const Dataset d = io::loadDataset(dir + "/s.dat", o);
  ASSERT_EQ(d.kspace.shape(), (Shape{4, 2, 4, 1, 2}));
  EXPECT_TRUE(d.header.is3D());
  for (const TwixScanSpec& s : spec.scans)
    if (s.rep == 1)
      for (index_t k = 0; k < 4; ++k) ASSERT_EQ(d.kspace(k, s.lin, s.par, 0, s.sli), s.data[k]);
  o.repetition = 2;
  expectError([&] { io::loadDataset(dir + "/s.dat", o); }, "no imaging readouts of repetition 2");
}

TEST(TwixSynthetic, InfoDescribesTheHeaders) {
  const std::vector<std::string> lines = io::describeTwix(io::inspectTwix(kRadial));
  ASSERT_GE(lines.size(), 6u);
  EXPECT_EQ(lines[0], "format: Siemens twix VB, 1 measurement (the last is read)");
  EXPECT_NE(lines.back().find("Pulseq"), std::string::npos);
}
