// The direct read of ISMRMRD acquisitions (engine/src/io/ismrmrd_direct.cpp: records and global heaps
// parsed by Larmor, no libhdf5 conversion) against libhdf5's conversion, the fallback, forced with
// LARMOR_ISMRMRD_HDF5_READ=1: the Datasets must be byte-identical for Cartesian, non-Cartesian,
// multi-slice, multi-frame and noise files from Larmor's writer, libismrmrd's API and libismrmrd's
// generator. Files laid out otherwise (compressed, 4-byte addresses, a user block, big-endian members)
// must take the fallback and read the same. Damaged heaps: test_io_ismrmrd_heaps.cpp.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/version.h>
#include <ismrmrd/xml.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>

#include "larmor/io/dataset_io.hpp"
#include "larmor/io/ismrmrd.hpp"
#include "test_io_ismrmrd_file.hpp"
#include "test_io_ismrmrd_patch.hpp"

using namespace larmor;
using namespace larmor::testing;

namespace {

constexpr const char* kForceHdf5 = "LARMOR_ISMRMRD_HDF5_READ";

// The fallback, for its lifetime (the sandbox helper inherits it).
struct ForceHdf5Read {
  ForceHdf5Read() { setenv(kForceHdf5, "1", 1); }
  ~ForceHdf5Read() { unsetenv(kForceHdf5); }
};

template <class T>
void expectSameBytes(const Array<T>& a, const Array<T>& b, const char* what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  if (a.size() == 0) return;  // memcmp of no bytes may still not be given null pointers
  EXPECT_EQ(std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(T)), 0) << what << " differs";
}

template <class T>
void expectSameBytes(const std::optional<Array<T>>& a, const std::optional<Array<T>>& b, const char* what) {
  ASSERT_EQ(a.has_value(), b.has_value()) << what;
  if (a) expectSameBytes(*a, *b, what);
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// Everything a reader fills, compared bit for bit (b's file name read as a's).
void expectSameDataset(const Dataset& a, const Dataset& b, const std::string& pathA, const std::string& pathB) {
  const Header &x = a.header, &y = b.header;
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(x.encoded[k], y.encoded[k]);
    EXPECT_EQ(x.recon[k], y.recon[k]);
    EXPECT_EQ(x.acquiredFraction[k], y.acquiredFraction[k]);
    EXPECT_EQ(x.geometry.position[k], y.geometry.position[k]);
    EXPECT_EQ(x.geometry.readDir[k], y.geometry.readDir[k]);
    EXPECT_EQ(x.geometry.phaseDir[k], y.geometry.phaseDir[k]);
    EXPECT_EQ(x.geometry.sliceDir[k], y.geometry.sliceDir[k]);
  }
  EXPECT_EQ(x.geometry.slicePositions, y.geometry.slicePositions);
  EXPECT_EQ(x.coils, y.coils);
  EXPECT_EQ(x.slices, y.slices);
  EXPECT_EQ(x.trajectory, y.trajectory);
  EXPECT_EQ(x.accelerationPe1, y.accelerationPe1);
  EXPECT_EQ(x.accelerationPe2, y.accelerationPe2);
  EXPECT_EQ(x.calibrationLines, y.calibrationLines);
  expectSameBytes(a.kspace, b.kspace, "kspace");
  expectSameBytes(a.sampled, b.sampled, "sampled");
  expectSameBytes(a.calibration, b.calibration, "calibration");
  expectSameBytes(a.trajectory, b.trajectory, "trajectory");
  expectSameBytes(a.reference, b.reference, "reference");
  expectSameBytes(a.coilMaps, b.coilMaps, "coil maps");
  expectSameBytes(a.noise, b.noise, "noise");
  EXPECT_EQ(a.noiseScans, b.noiseScans);
  ASSERT_EQ(a.acquisitions.size(), b.acquisitions.size());
  for (std::size_t i = 0; i < a.acquisitions.size(); ++i) {
    const AcquisitionInfo &p = a.acquisitions[i], &q = b.acquisitions[i];
    EXPECT_TRUE(p.scanCounter == q.scanCounter && p.flags == q.flags && p.samples == q.samples &&
                p.channels == q.channels && p.trajectoryDims == q.trajectoryDims && p.pe1 == q.pe1 && p.pe2 == q.pe2 &&
                p.slice == q.slice && p.repetition == q.repetition && p.contrast == q.contrast && p.phase == q.phase &&
                p.set == q.set && p.average == q.average)
        << "acquisition " << i;
  }
  ASSERT_EQ(a.warnings.size(), b.warnings.size());
  for (std::size_t i = 0; i < a.warnings.size(); ++i) EXPECT_EQ(a.warnings[i], replaced(b.warnings[i], pathB, pathA));
}

void expectSameSeries(const io::Series& a, const io::Series& b, const std::string& pathA, const std::string& pathB) {
  ASSERT_EQ(a.frames.size(), b.frames.size());
  EXPECT_EQ(a.keys, b.keys);
  EXPECT_EQ(a.acquisitions.size(), b.acquisitions.size());
  for (std::size_t f = 0; f < a.frames.size(); ++f) {
    SCOPED_TRACE("frame " + std::to_string(f));
    expectSameDataset(a.frames[f], b.frames[f], pathA, pathB);
    EXPECT_EQ(std::memcmp(&a.triggerTimeMs[f], &b.triggerTimeMs[f], sizeof(double)), 0);
  }
}

// `path` read directly (which must be the read taken) and through libhdf5; with and without
// structureOnly (`info`'s read).
void expectDirectEqualsHdf5(const std::string& path) {
  ASSERT_EQ(io::ismrmrdAcquisitionRead(path), "direct");
  for (bool structureOnly : {false, true}) {
    SCOPED_TRACE(structureOnly ? "structure only" : "whole");
    io::LoadOptions lo;
    lo.structureOnly = structureOnly;
    const io::Series direct = io::loadSeries(path, lo);
    ForceHdf5Read force;
    ASSERT_EQ(io::ismrmrdAcquisitionRead(path), "libhdf5: LARMOR_ISMRMRD_HDF5_READ is set");
    expectSameSeries(direct, io::loadSeries(path, lo), path, path);
  }
}

std::string simulated(const std::string& dir, const std::string& name, const phantom::SimulateSettings& s) {
  const std::string path = dir + "/" + name;
  io::writeIsmrmrd(phantom::simulate(s), path);
  return path;
}

}  // namespace

TEST(IoIsmrmrdDirect, CartesianFilesFromLarmorsWriter) {
  const std::string dir = freshTestDir("ismrmrd-direct");
  phantom::SimulateSettings s;  // 2D multi-slice, accelerated with calibration lines, noisy samples
  s.matrix[0] = 32, s.matrix[1] = 24;
  s.slices = 3;
  s.coils = 4;
  s.accel = 2;
  s.acs = 8;
  s.noiseSigma = 0.01f;
  expectDirectEqualsHdf5(simulated(dir, "multislice.h5", s));
  phantom::SimulateSettings v;  // 3D
  v.matrix[0] = 16, v.matrix[1] = 12, v.matrix[2] = 8;
  v.coils = 3;
  expectDirectEqualsHdf5(simulated(dir, "volume.h5", v));
}

TEST(IoIsmrmrdDirect, NonCartesianFilesCarryTheirTrajectory) {
  const std::string dir = freshTestDir("ismrmrd-direct");
  for (TrajectoryKind kind : {TrajectoryKind::Radial, TrajectoryKind::GoldenAngle, TrajectoryKind::Spiral}) {
    SCOPED_TRACE(toString(kind));
    phantom::SimulateSettings s;
    s.matrix[0] = s.matrix[1] = 32;
    s.slices = 2;
    s.coils = 3;
    s.trajectory = kind;
    s.noiseSigma = 0.02f;
    const std::string path = simulated(dir, toString(kind) + ".h5", s);
    expectDirectEqualsHdf5(path);
    EXPECT_FALSE(io::loadDataset(path).trajectory.empty());
  }
}

// Written with libismrmrd's API: 2 slices x 2 contrasts x 2 repetitions (phase = repetition, set =
// contrast) of 8 lines of 16 samples on 3 coils, random samples; noise scans, a navigator, separate
// reference lines, an averaged line, reversed readouts, an asymmetric readout, discarded samples (2
// before, 1 after), physiology stamps, slice positions and an oblique orientation: every header member
// the reader uses differs somewhere, so a member taken from the wrong offset shows.
TEST(IoIsmrmrdDirect, MultiFrameFileFromLibismrmrd) {
  const std::string path = freshTestDir("ismrmrd-direct") + "/frames.h5";
  {
    larmor::testing::IsmrmrdFile f(16, 8, ISMRMRD::Limit(0, 7, 4));
    ISMRMRD::EncodingLimits& limits = f.enc().encodingLimits;
    limits.slice = limits.contrast = limits.repetition = ISMRMRD::Limit(0, 1, 0);
    limits.phase = limits.set = limits.average = ISMRMRD::Limit(0, 1, 0);
    std::mt19937 rng(15);
    std::normal_distribution<float> gauss;
    const auto fill = [&](ISMRMRD::Acquisition& a) {
      for (std::uint16_t c = 0; c < a.active_channels(); ++c)
        for (std::uint16_t k = 0; k < a.number_of_samples(); ++k) a.data(k, c) = {gauss(rng), gauss(rng)};
    };
    for (int n = 0; n < 2; ++n) {
      ISMRMRD::Acquisition noise(24, 3);
      noise.setFlag(ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT);
      fill(noise);
      f.acquisitions.push_back(noise);
    }
    ISMRMRD::Acquisition nav(16, 3);
    nav.setFlag(ISMRMRD::ISMRMRD_ACQ_IS_NAVIGATION_DATA);
    fill(nav);
    f.acquisitions.push_back(nav);
    std::uint32_t counter = 0;
    for (std::uint16_t slice = 0; slice < 2; ++slice)
      for (std::uint16_t contrast = 0; contrast < 2; ++contrast)
        for (std::uint16_t rep = 0; rep < 2; ++rep)
          for (std::uint16_t pe1 = 0; pe1 < 8; ++pe1) {
            const bool asymmetric = pe1 == 6, discards = pe1 == 5;
            ISMRMRD::Acquisition a(asymmetric ? 12 : discards ? 19 : 16, 3);
            larmor::testing::editHead(a, [&](auto& h) { h.scan_counter = counter++; });
            a.idx().kspace_encode_step_1 = pe1;
            a.idx().slice = slice, a.idx().contrast = contrast, a.idx().repetition = rep;
            a.idx().phase = rep, a.idx().set = contrast;  // every index differs somewhere
            a.center_sample() = asymmetric ? 4 : 8;
            if (discards) a.discard_pre() = 2, a.discard_post() = 1, a.center_sample() = 10;
            if (pe1 % 3 == 1) a.setFlag(ISMRMRD::ISMRMRD_ACQ_IS_REVERSE);
            larmor::testing::editHead(a, [&](auto& h) {
              h.physiology_time_stamp[0] = 400u + 7u * pe1;
              h.position[2] = 6.f * slice - 3.f;
              h.read_dir[0] = 0.8f, h.read_dir[1] = 0.6f;  // oblique
              h.phase_dir[0] = -0.6f, h.phase_dir[1] = 0.8f;
              h.slice_dir[2] = 1.f;
            });
            fill(a);
            f.acquisitions.push_back(a);
            if (pe1 == 2) {  // a second average of this line
              a.idx().average = 1;
              fill(a);
              f.acquisitions.push_back(a);
            }
            if (pe1 == 3 || pe1 == 4) {  // and a separate reference line
              ISMRMRD::Acquisition r = a;
              r.clearAllFlags();
              r.setFlag(ISMRMRD::ISMRMRD_ACQ_IS_PARALLEL_CALIBRATION);
              fill(r);
              f.acquisitions.push_back(r);
            }
          }
    f.write(path);
  }
  expectDirectEqualsHdf5(path);
  const io::Series s = io::loadSeries(path);
  EXPECT_EQ(s.frames.size(), 4u);
  EXPECT_EQ(s.frames[0].noiseScans, 2);
}

TEST(IoIsmrmrdDirect, GeneratorFiles) {
  if (std::system("command -v ismrmrd_generate_cartesian_shepp_logan >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "ismrmrd_generate_cartesian_shepp_logan is not installed";
  const std::string dir = freshTestDir("ismrmrd-direct");
  // With noise scans (-C), and accelerated: shifted repetitions, each its own frame.
  for (const std::string& args : {std::string("-n 0.01 -m 32 -c 4 -C"), std::string("-n 0.01 -m 32 -c 4 -a 2 -w 8")}) {
    SCOPED_TRACE(args);
    const std::string path = dir + "/gen.h5";
    std::filesystem::remove(path);
    const std::string command = "ismrmrd_generate_cartesian_shepp_logan " + args + " -o '" + path + "' >/dev/null 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0);
    expectDirectEqualsHdf5(path);
  }
}

TEST(IoIsmrmrdDirect, OtherLayoutsTakeTheFallbackAndReadTheSame) {
  const std::string dir = freshTestDir("ismrmrd-direct");
  phantom::SimulateSettings cartesian;
  cartesian.matrix[0] = 24, cartesian.matrix[1] = 16;
  cartesian.slices = 2;
  cartesian.coils = 3;
  cartesian.noiseSigma = 0.01f;
  phantom::SimulateSettings radial = cartesian;
  radial.matrix[1] = radial.matrix[0];
  radial.trajectory = TrajectoryKind::Radial;
  for (const auto& [name, s] : {std::pair{"cartesian", cartesian}, std::pair{"radial", radial}}) {
    SCOPED_TRACE(name);
    const std::string original = simulated(dir, std::string(name) + ".h5", s);
    const io::Series want = io::loadSeries(original);
    H5 addr4{H5Pcreate(H5P_FILE_CREATE), H5Pclose}, length4{H5Pcreate(H5P_FILE_CREATE), H5Pclose};
    H5 userBlock{H5Pcreate(H5P_FILE_CREATE), H5Pclose};
    H5Pset_sizes(addr4.id, 4, 4);  // (the heap walk misread such files before 2026-11-27)
    H5Pset_sizes(length4.id, 8, 4);
    H5Pset_userblock(userBlock.id, 512);
    const std::pair<std::string, std::string> cases[] = {
        {copyWithRecords(original, dir + "/deflate.h5", true, false), "filters (compressed chunks)"},
        {copyWithRecords(original, dir + "/be.h5", false, true),
         "member head.version is not stored as libismrmrd writes it"},
        {copyWithFileLayout(original, dir + "/addr4.h5", addr4.id),
         "4-byte addresses and 4-byte lengths (not 8 and 8)"},
        {copyWithFileLayout(original, dir + "/length4.h5", length4.id),
         "8-byte addresses and 4-byte lengths (not 8 and 8)"},
        {copyWithFileLayout(original, dir + "/userblock.h5", userBlock.id), "a user block"}};
    for (const auto& [path, reason] : cases) {
      SCOPED_TRACE(path);
      EXPECT_EQ(io::ismrmrdAcquisitionRead(path), "libhdf5: " + reason);
      expectSameSeries(want, io::loadSeries(path), original, path);
    }
  }
}

TEST(IoIsmrmrdDirect, AveragedLinesThatOverflowAreRefused) {
  // Every sample is checked once, as read; a line averaged from readouts near the float limit can still
  // sum to Inf, which the reader refuses (it does not pass over the k-space again).
  const std::string path = freshTestDir("ismrmrd-direct") + "/overflow.h5";
  {
    larmor::testing::IsmrmrdFile f(8, 4, ISMRMRD::Limit(0, 3, 2));
    f.enc().encodingLimits.average = ISMRMRD::Limit(0, 1, 0);
    for (std::uint16_t pe1 = 0; pe1 < 4; ++pe1)
      for (std::uint16_t average = 0; average < (pe1 == 1 ? 2 : 1); ++average) {
        ISMRMRD::Acquisition a(8, 1);
        a.idx().kspace_encode_step_1 = pe1, a.idx().average = average;
        a.center_sample() = 4;
        for (std::uint16_t k = 0; k < 8; ++k) a.data(k, 0) = {pe1 == 1 ? 3e38f : 1.f, 0.f};
        f.acquisitions.push_back(a);
      }
    f.write(path);
  }
  ASSERT_EQ(io::ismrmrdAcquisitionRead(path), "direct");
  expectError([&] { (void)io::loadDataset(path); }, "k-space line (1, 0) of coil 0 averages 2 readouts to a value beyond");
  ForceHdf5Read force;
  expectError([&] { (void)io::loadDataset(path); }, "k-space line (1, 0) of coil 0 averages 2 readouts to a value beyond");
}
