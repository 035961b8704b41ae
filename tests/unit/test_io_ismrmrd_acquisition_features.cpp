// ISMRMRD acquisition features through the whole program: partial Fourier stated by the encoding
// limits (centre off the middle of the steps) with an asymmetric echo (center_sample), read, detected and
// filled by `larmor-cli recon`; limits whose partial-Fourier claim the data break; cardiac trigger times from
// physiology_time_stamp[0] into DICOM TriggerTime and `info --json`; the per-acquisition geometry of an
// oblique slice in the NIfTI affine as nibabel reads it. Files are written with libismrmrd's own API.
#include <gtest/gtest.h>
#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/version.h>
#include <ismrmrd/xml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "larmor/io/cfl.hpp"
#include "larmor/io/dataset_io.hpp"
#include "larmor/io/dicom.hpp"
#include "larmor/phantom/simulate.hpp"
#include "support/error_norms.hpp"
#include "support/expect_error.hpp"
#include "test_io_export_util.hpp"
#include "test_io_ismrmrd_file.hpp"

namespace fs = std::filesystem;
using namespace larmor;
using larmor::test::expectError;

namespace {

constexpr unsigned short kN = 128;

using File = larmor::testing::IsmrmrdFile;

/// The simulator's 8-coil phantom, 128^2, no oversampling: [x, y, 1, coils, 1].
const Dataset& phantom8() {
  static const Dataset d = [] {
    phantom::SimulateSettings s;
    s.matrix[0] = s.matrix[1] = kN;
    s.coils = 8;
    s.readoutOversampling = 1;
    return phantom::simulate(s);
  }();
  return d;
}

/// Lines firstLine..127 as steps 0.., samples firstSample..127 (center_sample at k = 0), limits that say so.
File partialFile(unsigned short firstLine, unsigned short firstSample) {
  const Dataset& d = phantom8();
  const auto steps = static_cast<unsigned short>(kN - firstLine);
  File f(kN, kN, ISMRMRD::Limit(0, steps - 1, kN / 2 - firstLine));
  for (unsigned short y = firstLine; y < kN; ++y) {
    ISMRMRD::Acquisition a(kN - firstSample, 8);
    a.idx().kspace_encode_step_1 = y - firstLine;
    a.center_sample() = kN / 2 - firstSample;
    for (unsigned short c = 0; c < 8; ++c)
      for (unsigned short x = firstSample; x < kN; ++x) a.data(x - firstSample, c) = d.kspace[x + kN * (y + kN * c)];
    f.acquisitions.push_back(a);
  }
  return f;
}

int run(const std::string& args, const std::string& dir) {
  return std::system((std::string(LARMOR_CLI) + " " + args + " >" + dir + "/out.txt 2>" + dir + "/err.txt").c_str());
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

// 5/8 of pe1 (steps 0..79, centre step 16: lines 48..127) and an echo at sample 26 of 90 (samples 38..127):
// the reader places them, records the acquired fractions, and `recon` fills the edge by POCS (the default,
// said in the JSON and on stderr); its image is closer to the fully sampled file's than zero-filling's
// (measured: see the printout; bound 0.6 x).
TEST(IsmrmrdAcquisitionFeatures, PartialFourierFileReconstructsEndToEnd) {
  const std::string dir = larmor::testing::freshTestDir("io-acqfeat");
  const std::string full = partialFile(0, 0).write(dir + "/full.h5");
  const std::string pf = partialFile(48, 38).write(dir + "/pf.h5");
  const Dataset d = io::loadDataset(pf);
  EXPECT_FLOAT_EQ(d.header.acquiredFraction[1], 80.f / 128.f);
  EXPECT_FLOAT_EQ(d.header.acquiredFraction[0], 90.f / 128.f);
  EXPECT_FLOAT_EQ(d.header.acquiredFraction[2], 1.f);
  EXPECT_EQ(d.kspace(37, 100, 0, 0, 0), cfloat(0));
  EXPECT_EQ(d.kspace(38, 100, 0, 0, 0), phantom8().kspace(38, 100, 0, 0, 0));
  EXPECT_TRUE(d.sampled(48, 0, 0) && !d.sampled(47, 0, 0));

  ASSERT_EQ(run("recon " + full + " --device cpu --output " + dir + "/full.cfl", dir), 0) << slurp(dir + "/err.txt");
  ASSERT_EQ(run("recon " + pf + " --device cpu --output " + dir + "/pocs.cfl --json " + dir + "/pocs.json", dir), 0)
      << slurp(dir + "/err.txt");
  EXPECT_NE(slurp(dir + "/err.txt").find("filled by POCS"), std::string::npos) << slurp(dir + "/err.txt");
  ASSERT_EQ(run("recon " + pf + " --device cpu --partial-fourier homodyne --output " + dir + "/hd.cfl", dir), 0);
  ASSERT_EQ(run("recon " + pf + " --device cpu --partial-fourier zerofill --output " + dir + "/zf.cfl", dir), 0);
  const nlohmann::json j = nlohmann::json::parse(slurp(dir + "/pocs.json"));
  ASSERT_TRUE(j.contains("partial_fourier")) << j.dump(1);
  EXPECT_EQ(j["partial_fourier"]["method"], "pocs");
  EXPECT_NEAR(j["partial_fourier"]["axes"]["pe1"]["fraction"].get<double>(), 0.625, 1e-9);
  EXPECT_EQ(j["partial_fourier"]["axes"]["readout"]["first"], 38);
  const CArray ref = io::readCfl(dir + "/full.cfl");
  const double ez = test::relL2Error(io::readCfl(dir + "/zf.cfl"), ref);
  const double ep = test::relL2Error(io::readCfl(dir + "/pocs.cfl"), ref);
  const double eh = test::relL2Error(io::readCfl(dir + "/hd.cfl"), ref);
  std::printf("ISMRMRD 5/8 pe1 + 90/128 echo via larmor-cli: zero-filled %.4f, POCS %.4f, homodyne %.4f\n", ez, ep, eh);
  EXPECT_LT(ep, 0.6 * ez);
  EXPECT_LT(eh, 0.6 * ez);
}

// Limits that claim partial Fourier (80 steps, centre 16) but an acquisition beyond them: one line naming
// the file, before any k-space is placed.
TEST(IsmrmrdAcquisitionFeatures, PartialFourierClaimTheDataBreakIsAnError) {
  const std::string dir = larmor::testing::freshTestDir("io-acqfeat");
  File f = partialFile(48, 0);
  f.acquisitions[10].idx().kspace_encode_step_1 = 85;
  const std::string bad = f.write(dir + "/bad.h5");
  const std::string msg = expectError([&] { io::loadDataset(bad); }, "bad.h5");
  EXPECT_NE(msg.find("partial Fourier"), std::string::npos) << msg;
  EXPECT_NE(msg.find("85"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

// Cine: 3 cardiac phases, physiology_time_stamp[0] of phase p = 40 p + (line % 2) ticks of 2.5 ms: the
// frame's trigger time is the mean x 2.5 = 100 p + 1.25 ms, in `info --json` and DICOM TriggerTime; a file
// without stamps has none.
TEST(IsmrmrdAcquisitionFeatures, TriggerTimesFromPhysiologyStamps) {
  const std::string dir = larmor::testing::freshTestDir("io-acqfeat");
  File f(16, 8, ISMRMRD::Limit(0, 7, 4));
  f.enc().encodingLimits.phase = ISMRMRD::Limit(0, 2, 0);
  for (unsigned short p = 0; p < 3; ++p)
    for (unsigned short y = 0; y < 8; ++y) {
      ISMRMRD::Acquisition a(16, 1);
      a.idx().kspace_encode_step_1 = y;
      a.idx().phase = p;
      a.center_sample() = 8;
      larmor::testing::editHead(a, [&](auto& h) { h.physiology_time_stamp[0] = 40u * p + (y % 2); });
      for (unsigned short x = 0; x < 16; ++x) a.data(x, 0) = std::complex<float>(1.f + p, 0.f);
      f.acquisitions.push_back(a);
    }
  const std::string cine = f.write(dir + "/cine.h5");
  ASSERT_EQ(run("info " + cine + " --json " + dir + "/info.json", dir), 0) << slurp(dir + "/err.txt");
  const nlohmann::json info = nlohmann::json::parse(slurp(dir + "/info.json"));
  ASSERT_EQ(info["frames"].size(), 3u) << info.dump(1);
  for (int p = 0; p < 3; ++p) EXPECT_DOUBLE_EQ(info["frames"][p]["trigger_time_ms"].get<double>(), 100.0 * p + 1.25);

  ASSERT_EQ(run("recon " + cine + " --device cpu --output " + dir + "/dcm/", dir), 0) << slurp(dir + "/err.txt");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir + "/dcm"))
    if (e.path().extension() == ".dcm") files.push_back(e.path().string());
  ASSERT_EQ(files.size(), 3u);
  std::vector<std::string> triggers;
  for (const auto& file : files) {
    const io::DicomInstance inst = io::readDicomFile(file);
    const int instance = std::stoi(inst.get(0x0020, 0x0013));
    triggers.resize(3);
    triggers.at(static_cast<std::size_t>(instance - 1)) = inst.get(0x0018, 0x1060);
  }
  EXPECT_EQ(triggers[0], "1.25");
  EXPECT_EQ(triggers[1], "101.25");
  EXPECT_EQ(triggers[2], "201.25");

  for (auto& a : f.acquisitions) larmor::testing::editHead(a, [](auto& h) { h.physiology_time_stamp[0] = 0; });
  const std::string plain = f.write(dir + "/plain.h5");
  ASSERT_EQ(run("info " + plain + " --json " + dir + "/plain.json", dir), 0);
  const nlohmann::json none = nlohmann::json::parse(slurp(dir + "/plain.json"));
  EXPECT_FALSE(none["frames"][0].contains("trigger_time_ms")) << none.dump(1);

  // An ungated scan converted from twix: the stamps are the free-running PMU clock (~1e7 ticks), not times
  // since a trigger: no trigger time (io/physiology_stamps.hpp, the rule the twix reader uses).
  for (std::size_t i = 0; i < f.acquisitions.size(); ++i)
    larmor::testing::editHead(f.acquisitions[i], [&](auto& h) { h.physiology_time_stamp[0] = static_cast<std::uint32_t>(10000000u + 4u * i); });
  const std::string ungated = f.write(dir + "/ungated.h5");
  ASSERT_EQ(run("info " + ungated + " --json " + dir + "/ungated.json", dir), 0);
  const nlohmann::json free = nlohmann::json::parse(slurp(dir + "/ungated.json"));
  for (const auto& fr : free["frames"]) EXPECT_FALSE(fr.contains("trigger_time_ms")) << free.dump(1);
}

// An oblique single slice (read, phase and slice directions rotated about two axes, centre off the
// isocentre): the NIfTI that `recon` writes has, as nibabel reads it (qform and sform), the affine that
// docs/conventions.md gives: columns row x dx, column x dy, normal x thickness in RAS (LPS with x and y
// negated), translation = the centre of pixel (0, 0) = position - floor(N/2) (dx row + dy column).
TEST(IsmrmrdAcquisitionFeatures, ObliqueGeometryReachesTheNiftiAffine) {
  const std::string dir = larmor::testing::freshTestDir("io-acqfeat");
  const double a = 0.3, b = -0.5;  // rotations about z then x
  const double read[3] = {std::cos(a), std::sin(a) * std::cos(b), std::sin(a) * std::sin(b)};
  const double ph0[3] = {-std::sin(a), std::cos(a), 0};
  const double phase[3] = {ph0[0], ph0[1] * std::cos(b), ph0[1] * std::sin(b)};
  const double slice[3] = {read[1] * phase[2] - read[2] * phase[1], read[2] * phase[0] - read[0] * phase[2],
                           read[0] * phase[1] - read[1] * phase[0]};
  const float pos[3] = {12.5f, -30.f, 41.f};
  File f(32, 16, ISMRMRD::Limit(0, 15, 8));
  f.enc().encodedSpace.fieldOfView_mm = {256, 128, 4};
  f.enc().reconSpace = f.enc().encodedSpace;
  for (unsigned short y = 0; y < 16; ++y) {
    ISMRMRD::Acquisition acq(32, 1);
    acq.idx().kspace_encode_step_1 = y;
    acq.center_sample() = 16;
    larmor::testing::editHead(acq, [&](auto& h) {
      for (int k = 0; k < 3; ++k) {
        h.position[k] = pos[k];
        h.read_dir[k] = static_cast<float>(read[k]);
        h.phase_dir[k] = static_cast<float>(phase[k]);
        h.slice_dir[k] = static_cast<float>(slice[k]);
      }
    });
    for (unsigned short x = 0; x < 32; ++x) acq.data(x, 0) = std::complex<float>(x == 16 && y == 8 ? 1.f : 0.f, 0.f);
    f.acquisitions.push_back(acq);
  }
  const std::string file = f.write(dir + "/oblique.h5");
  ASSERT_EQ(run("recon " + file + " --device cpu --output " + dir + "/oblique.nii", dir), 0) << slurp(dir + "/err.txt");
  const std::string py = dir + "/affine.py";
  std::ofstream(py) << "import nibabel, sys\n"
                       "img = nibabel.load(sys.argv[1])\n"
                       "for m in (img.get_qform(), img.get_sform()):\n"
                       "    print(' '.join('%.6f' % v for v in m[:3].ravel()))\n";
  ASSERT_EQ(std::system(("/usr/bin/python3 " + py + " " + dir + "/oblique.nii >" + dir + "/affine.txt 2>&1").c_str()), 0)
      << slurp(dir + "/affine.txt");
  const double dx = 256.0 / 32, dy = 128.0 / 16, dz = 4;
  const double flip[3] = {-1, -1, 1};
  double expected[12];
  for (int r = 0; r < 3; ++r) {
    expected[4 * r + 0] = flip[r] * read[r] * dx;
    expected[4 * r + 1] = flip[r] * phase[r] * dy;
    expected[4 * r + 2] = flip[r] * slice[r] * dz;
    expected[4 * r + 3] = flip[r] * (pos[r] - 16 * dx * read[r] - 8 * dy * phase[r]);
  }
  std::ifstream in(dir + "/affine.txt");
  for (const char* form : {"qform", "sform"})
    for (int i = 0; i < 12; ++i) {
      double v = 0;
      ASSERT_TRUE(in >> v) << form << ": " << slurp(dir + "/affine.txt");
      EXPECT_NEAR(v, expected[i], 1e-3) << form << " entry " << i;
    }
}
