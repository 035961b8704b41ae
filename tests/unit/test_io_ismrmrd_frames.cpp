// Series, not merges: the frames of ISMRMRD and BART files (io/series.hpp), the acquisition
// kinds the ISMRMRD reader skips, collects or uses for calibration, index checks against the header's
// encoding limits, slices sorted by position, the BART non-Cartesian-without-trajectory error, and the
// series outputs (.cfl dims, NIfTI 4th dimension, DICOM temporal/echo tags). Files are written with
// libismrmrd's own API, so the reader is checked against the format, not against our writer.
#include <gtest/gtest.h>
#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/version.h>
#include <ismrmrd/xml.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "larmor/io/cfl.hpp"
#include "larmor/io/dataset_io.hpp"
#include "larmor/io/dicom.hpp"
#include "larmor/io/export.hpp"
#include "larmor/io/ismrmrd.hpp"
#include "support/expect_error.hpp"
#include "test_io_export_util.hpp"
#include "test_io_ismrmrd_file.hpp"

namespace fs = std::filesystem;
using namespace larmor;
using larmor::test::expectError;

namespace {

// A fresh directory per test (test_io_export_util.hpp).
std::string testDir() { return larmor::testing::freshTestDir("io-frames"); }

// A Cartesian ISMRMRD file of `ny` lines x `nx` samples, built acquisition by acquisition
// (test_io_ismrmrd_file.hpp), with lines of known values.
struct File : larmor::testing::IsmrmrdFile {
  File(unsigned short nx, unsigned short ny) : IsmrmrdFile(nx, ny, ISMRMRD::Limit(0, ny - 1, ny / 2)) {}
  // A line whose every sample of coil c is value + 1000 c.
  ISMRMRD::Acquisition& line(unsigned short pe1, float value, unsigned short coils = 2) {
    ISMRMRD::Acquisition a(header.encoding[0].encodedSpace.matrixSize.x, coils);
    a.idx().kspace_encode_step_1 = pe1;
    a.center_sample() = a.number_of_samples() / 2;
    for (unsigned short c = 0; c < coils; ++c)
      for (unsigned short s = 0; s < a.number_of_samples(); ++s) a.data(s, c) = std::complex<float>(value + 1000.f * c, 0);
    acquisitions.push_back(a);
    return acquisitions.back();
  }
};

// 2 contrasts x 3 phases, 4 lines each; line value 100 contrast + 10 phase + pe1; line 1 of every frame
// acquired twice (averages 0 and 1, values v and v + 2: the mean is v + 1).
File multiFrameFile() {
  File f(8, 4);
  f.enc().encodingLimits.contrast = ISMRMRD::Limit(0, 1, 0);
  f.enc().encodingLimits.phase = ISMRMRD::Limit(0, 2, 0);
  f.enc().encodingLimits.average = ISMRMRD::Limit(0, 1, 0);
  ISMRMRD::SequenceParameters sp;
  sp.TE = std::vector<float>{2.5f, 7.5f};
  f.header.sequenceParameters = sp;
  for (unsigned short c = 0; c < 2; ++c)
    for (unsigned short p = 0; p < 3; ++p)
      for (unsigned short y = 0; y < 4; ++y) {
        const float v = 100.f * c + 10.f * p + y;
        auto& a = f.line(y, v);
        a.idx().contrast = c, a.idx().phase = p;
        if (y == 1) {
          a.data(0, 0) = std::complex<float>(v, 0);
          auto& b = f.line(y, v + 2);
          b.idx().contrast = c, b.idx().phase = p, b.idx().average = 1;
        }
      }
  return f;
}

}  // namespace

TEST(IoFrames, ContrastsAndPhasesAreFramesAndAveragesAreAveraged) {
  const std::string dir = testDir();
  File f = multiFrameFile();
  // Acquisitions that are not imaging data: noise (kept for pre-whitening), the others skipped.
  auto& noise = f.line(0, 0.5f);
  noise.setFlag(ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT);
  for (auto flag : {ISMRMRD::ISMRMRD_ACQ_IS_NAVIGATION_DATA, ISMRMRD::ISMRMRD_ACQ_IS_PHASECORR_DATA,
                    ISMRMRD::ISMRMRD_ACQ_IS_PHASECORR_DATA, ISMRMRD::ISMRMRD_ACQ_IS_RTFEEDBACK_DATA,
                    ISMRMRD::ISMRMRD_ACQ_IS_HPFEEDBACK_DATA})
    f.line(2, 5000.f).setFlag(flag);
  const std::string path = f.write(dir + "/mf.h5");

  const io::Series s = io::loadSeries(path);
  ASSERT_EQ(s.frames.size(), 6u);
  EXPECT_EQ(s.describeDims(), "2 contrasts x 3 phases");
  EXPECT_EQ(s.contrasts, (std::vector<int>{0, 1}));
  EXPECT_EQ(s.phases, (std::vector<int>{0, 1, 2}));
  // FrameKey order: contrast before phase (repetition fastest, then contrast, phase, set).
  for (std::size_t i = 0; i < 6; ++i) {
    const int c = static_cast<int>(i % 2), p = static_cast<int>(i / 2);
    EXPECT_EQ(s.keys[i], (io::FrameKey{c, p, 0, 0})) << i;
    EXPECT_DOUBLE_EQ(s.echoTimeMs[i], c == 0 ? 2.5 : 7.5);
    EXPECT_TRUE(std::isnan(s.triggerTimeMs[i]));
    const Dataset& d = s.frames[i];
    ASSERT_EQ(d.kspace.shape(), (Shape{8, 4, 1, 2, 1}));
    for (index_t y = 0; y < 4; ++y) {
      const float v = 100.f * c + 10.f * p + y + (y == 1 ? 1.f : 0.f);  // line 1: mean of v and v + 2
      EXPECT_EQ(d.kspace(3, y, 0, 0, 0), cfloat(v, 0)) << i << " " << y;
      EXPECT_EQ(d.kspace(3, y, 0, 1, 0), cfloat(v + 1000.f, 0)) << i << " " << y;
    }
    EXPECT_EQ(d.header.accelerationPe1, 1);
    // Noise: the one noise scan's 8 samples x 2 coils, in every frame.
    ASSERT_TRUE(d.noise.has_value());
    EXPECT_EQ(d.noise->shape(), (Shape{8, 2}));
    EXPECT_EQ((*d.noise)(0, 1), cfloat(1000.5f, 0));
    EXPECT_EQ(d.noiseScans, 1);
    ASSERT_FALSE(d.warnings.empty());
    EXPECT_NE(d.warnings[0].find("skipped 1 HP-feedback, 1 RT-feedback, 1 navigator, 2 phase-correction acquisitions"),
              std::string::npos)
        << d.warnings[0];
  }
  EXPECT_EQ(s.acquisitions.size(), f.acquisitions.size());

  // Selection: one contrast, all phases; one frame through loadDataset.
  io::LoadOptions o;
  o.contrast = 1;
  const io::Series c1 = io::loadSeries(path, o);
  ASSERT_EQ(c1.frames.size(), 3u);
  for (const auto& k : c1.keys) EXPECT_EQ(k.contrast, 1);
  expectError([&] { io::loadDataset(path); },
              "mf.h5: holds 6 frames (2 contrasts x 3 phases); select one with --contrast N, --phase N");
  o.phase = 2;
  const Dataset one = io::loadDataset(path, o);
  EXPECT_EQ(one.kspace(0, 3, 0, 0, 0), cfloat(123, 0));
  o.phase = 3;
  expectError([&] { io::loadSeries(path, o); }, "has no imaging acquisitions in contrast 1, phase 3");
}

TEST(IoFrames, IndicesBeyondTheEncodingLimitsAreOneLineErrors) {
  const std::string dir = testDir();
  for (const char* which : {"contrast", "phase", "repetition", "set"}) {
    File f = multiFrameFile();
    f.enc().encodingLimits.repetition = ISMRMRD::Limit(0, 0, 0);
    f.enc().encodingLimits.set = ISMRMRD::Limit(0, 0, 0);
    auto& a = f.line(0, 1.f);
    const std::string w = which;
    if (w == "contrast") a.idx().contrast = 2;
    if (w == "phase") a.idx().phase = 7;
    if (w == "repetition") a.idx().repetition = 1;
    if (w == "set") a.idx().set = 4;
    const std::string path = f.write(dir + "/" + w + ".h5");
    const int bad = w == "contrast" ? 2 : w == "phase" ? 7 : w == "repetition" ? 1 : 4;
    const int max = w == "contrast" ? 1 : w == "phase" ? 2 : 0;
    const std::string msg = "acquisition 30 has " + w + " index " + std::to_string(bad) +
                            " but the header's encoding limits allow " + w + "s 0.." + std::to_string(max);
    expectError([&] { io::loadSeries(path); }, path + ": " + msg);
  }
}

TEST(IoFrames, RepetitionsWithShiftedLinesHaveTheirOwnAcceleration) {
  // Like ismrmrd_generate_cartesian_shepp_logan -a 4: repetition r holds lines r, r + 4, ...
  const std::string dir = testDir();
  File f(8, 16);
  f.enc().encodingLimits.repetition = ISMRMRD::Limit(0, 3, 0);
  for (unsigned short r = 0; r < 4; ++r)
    for (unsigned short y = r; y < 16; y += 4) f.line(y, 1.f + r).idx().repetition = r;
  const io::Series s = io::loadSeries(f.write(dir + "/r4.h5"));
  ASSERT_EQ(s.frames.size(), 4u);
  for (std::size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(s.frames[r].header.accelerationPe1, 4) << r;
    for (index_t y = 0; y < 16; ++y) EXPECT_EQ(s.frames[r].sampled(y, 0, 0), y % 4 == static_cast<index_t>(r) ? 1 : 0);
  }
}

TEST(IoFrames, SeparateReferenceScansAreCalibrationNotImageLines) {
  const std::string dir = testDir();
  File f(8, 8);
  f.enc().encodingLimits.repetition = ISMRMRD::Limit(0, 1, 0);
  // Two repetitions of R = 2 (even lines); reference lines 3..5 acquired once, at repetition 0, with
  // their own values (100 + line): line 4 is also an imaging line and keeps its imaging samples.
  for (unsigned short r = 0; r < 2; ++r)
    for (unsigned short y = 0; y < 8; y += 2) f.line(y, 10.f * r + y).idx().repetition = r;
  for (unsigned short y = 3; y <= 5; ++y) f.line(y, 100.f + y).setFlag(ISMRMRD::ISMRMRD_ACQ_IS_PARALLEL_CALIBRATION);
  const io::Series s = io::loadSeries(f.write(dir + "/ref.h5"));
  ASSERT_EQ(s.frames.size(), 2u);  // the reference scans make no frame of their own
  for (std::size_t r = 0; r < 2; ++r) {
    const Dataset& d = s.frames[r];
    for (index_t y = 0; y < 8; ++y) {
      const bool ref = y >= 3 && y <= 5;
      EXPECT_EQ(d.calibration(y, 0, 0), ref ? 1 : 0) << r << " " << y;
      EXPECT_EQ(d.sampled(y, 0, 0), (y % 2 == 0 || ref) ? 1 : 0) << r << " " << y;
    }
    EXPECT_EQ(d.kspace(0, 4, 0, 0, 0), cfloat(10.f * static_cast<float>(r) + 4, 0));  // the imaging readout
    EXPECT_EQ(d.kspace(0, 3, 0, 0, 0), cfloat(103, 0));                             // the reference readout
    EXPECT_EQ(d.kspace(0, 5, 0, 0, 0), cfloat(105, 0));
    EXPECT_EQ(d.header.calibrationLines, 3);
    EXPECT_EQ(d.header.accelerationPe1, 2);
  }
  // Lines flagged parallel_calibration_and_imaging stay imaging lines (and calibration lines).
  File g(8, 8);
  for (unsigned short y = 0; y < 8; ++y)
    if (y % 2 == 0 || y == 3) {
      auto& a = g.line(y, y);
      if (y >= 2 && y <= 4) a.setFlag(ISMRMRD::ISMRMRD_ACQ_IS_PARALLEL_CALIBRATION_AND_IMAGING);
    }
  const Dataset d = io::loadDataset(g.write(dir + "/both.h5"));
  EXPECT_EQ(d.calibration(3, 0, 0), 1);
  EXPECT_EQ(d.kspace(0, 3, 0, 0, 0), cfloat(3, 0));
}

TEST(IoFrames, SlicesAreSortedByPosition) {
  const std::string dir = testDir();
  File f(8, 4);
  f.enc().encodingLimits.slice = ISMRMRD::Limit(0, 2, 0);
  const float z[3] = {5.f, -5.f, 0.f};  // acquisition order, not position order
  for (unsigned short sl = 0; sl < 3; ++sl)
    for (unsigned short y = 0; y < 4; ++y) {
      auto& a = f.line(y, 10.f * sl);
      a.idx().slice = sl;
      // The header is 2-byte packed: its floats are set on a copy by member access, not through float*.
      ISMRMRD::AcquisitionHeader head = a.getHead();
      head.position[2] = z[sl];
      head.read_dir[0] = 1, head.phase_dir[1] = 1, head.slice_dir[2] = 1;
      a.setHead(head);
    }
  const Dataset d = io::loadDataset(f.write(dir + "/sl.h5"));
  ASSERT_EQ(d.header.slices, 3);
  EXPECT_EQ(d.header.geometry.slicePositions, (std::vector<float>{-5.f, 0.f, 5.f}));
  EXPECT_EQ(d.kspace(0, 0, 0, 0, 0), cfloat(10, 0));
  EXPECT_EQ(d.kspace(0, 0, 0, 0, 1), cfloat(20, 0));
  EXPECT_EQ(d.kspace(0, 0, 0, 0, 2), cfloat(0, 0));
}

TEST(IoFrames, BartTeAndTimeDimsAreFrames) {
  const std::string dir = testDir();
  std::vector<index_t> dims(14, 1);
  dims[0] = 4, dims[1] = 4, dims[3] = 2, dims[5] = 2, dims[10] = 3, dims[13] = 2;
  CArray k{Shape(dims)};
  // Value = 100 te + 10 time + slice, at every sample.
  for (index_t i = 0; i < k.size(); ++i) {
    const index_t te = (i / 32) % 2, time = (i / 64) % 3, slice = i / 192;
    k[i] = cfloat(100.f * te + 10.f * time + slice + 1, 0);
  }
  io::writeCfl(dir + "/k", k);
  const io::Series s = io::loadSeries(dir + "/k.cfl");
  ASSERT_EQ(s.frames.size(), 6u);
  EXPECT_EQ(s.describeDims(), "2 contrasts x 3 repetitions");
  for (std::size_t i = 0; i < 6; ++i) {
    const int time = static_cast<int>(i % 3), te = static_cast<int>(i / 3);
    EXPECT_EQ(s.keys[i], (io::FrameKey{te, 0, time, 0}));
    ASSERT_EQ(s.frames[i].kspace.shape(), (Shape{4, 4, 1, 2, 2}));
    EXPECT_EQ(s.frames[i].kspace(1, 2, 0, 1, 1), cfloat(100.f * te + 10.f * time + 2, 0));
  }
  io::LoadOptions o;
  o.repetition = 2, o.contrast = 1;
  EXPECT_EQ(io::loadDataset(dir + "/k.cfl", o).kspace(0, 0, 0, 0, 0), cfloat(121, 0));
  o.repetition = 3;
  expectError([&] { io::loadSeries(dir + "/k.cfl", o); }, "k.cfl: has no frame contrast 1, repetition 3");
}

TEST(IoFrames, BartNonCartesianWithoutTrajectoryIsRefused) {
  const std::string dir = testDir();
  // BART's radial layout [1, readout, spokes, coils]: every spoke through k = 0 (a peak at its centre).
  const index_t n = 32, spokes = 16;
  CArray k(Shape{1, n, spokes, 2});
  for (index_t c = 0; c < 2; ++c)
    for (index_t p = 0; p < spokes; ++p)
      for (index_t i = 0; i < n; ++i)
        k(0, i, p, c) = cfloat(1.f / (1.f + std::abs(static_cast<float>(i - n / 2))), 0.01f * static_cast<float>(p + 1));
  fs::create_directories(dir + "/a");
  io::writeCfl(dir + "/a/ksp", k);
  expectError([&] { io::loadDataset(dir + "/a/ksp.cfl"); },
              "a/ksp.cfl: k-space [1, 32, 16, 2] looks non-Cartesian (readout dimension 1, every profile through k = 0) "
              "and no trajectory was given; pass --traj");
  // A trajectory beside it that fits: named in the error.
  fs::create_directories(dir + "/b");
  io::writeCfl(dir + "/b/ksp", k);
  io::writeCfl(dir + "/b/ksp_traj", CArray(Shape{3, n, spokes}, cfloat(0.5f, 0)));
  expectError([&] { io::loadDataset(dir + "/b/ksp.cfl"); }, "beside it fits it as a trajectory; pass --traj " + dir + "/b/ksp_traj.cfl");
  // A Cartesian ky-kz plane [1, ny, nz] (energy at the centre, undersampled points empty) is read as before.
  CArray plane(Shape{1, n, spokes, 2}, cfloat(0, 0));
  for (index_t c = 0; c < 2; ++c)
    for (index_t z = 0; z < spokes; ++z)
      for (index_t y = 0; y < n; y += (std::abs(z - spokes / 2) < 3 ? 1 : 2))
        plane(0, y, z, c) = cfloat(1.f / (1.f + std::abs(static_cast<float>(y - n / 2)) + std::abs(static_cast<float>(z - spokes / 2))), 0);
  io::writeCfl(dir + "/a/plane", plane);
  EXPECT_EQ(io::loadDataset(dir + "/a/plane.cfl").header.trajectory, TrajectoryKind::Cartesian);
}

TEST(IoFrames, SeriesOutputs) {
  const std::string dir = testDir();
  io::Series s;
  std::vector<recon::ReconResult> results;
  for (int c = 0; c < 2; ++c)
    for (int r = 0; r < 3; ++r) {
      Dataset d;
      d.source = "test";
      d.header.recon[0] = 4, d.header.recon[1] = 3, d.header.recon[2] = 1, d.header.coils = 1;
      d.header.geometry.slicePositions = {0.f, 5.f};
      d.header.slices = 2;
      s.frames.push_back(d);
      s.keys.push_back(io::FrameKey{c, 0, r, 0});
      s.echoTimeMs.push_back(c == 0 ? 3.0 : 9.0);
      s.triggerTimeMs.push_back(std::nan(""));
      recon::ReconResult res;
      res.image = CArray(Shape{4, 3, 1, 1, 2});
      for (index_t i = 0; i < res.image.size(); ++i) res.image[i] = cfloat(1.f + static_cast<float>(10 * c + r), 0);
      results.push_back(res);
    }
  io::ExportOptions o;
  o.printWarnings = false;
  // .cfl: TE at dim 5, TIME at dim 10, slices at 13.
  io::writeSeriesOutput(dir + "/img.cfl", results, s, o);
  const CArray b = io::readCfl(dir + "/img");
  ASSERT_EQ(b.shape(), (Shape{4, 3, 1, 1, 1, 2, 1, 1, 1, 1, 3, 1, 1, 2}));
  EXPECT_EQ(b[4 * 3 * (1 + 2 * 2) + 4 * 3 * 2 * 3], cfloat(13, 0));  // TE 1, TIME 2, slice 1
  // NIfTI: [x, y, planes, frames].
  io::writeSeriesOutput(dir + "/img.nii", results, s, o);
  std::ifstream nii(dir + "/img.nii", std::ios::binary);
  char hdr[352];
  nii.read(hdr, 352);
  std::int16_t dim[8];
  std::memcpy(dim, hdr + 40, sizeof dim);
  EXPECT_EQ(dim[0], 4);
  EXPECT_EQ(dim[1], 4);
  EXPECT_EQ(dim[2], 3);
  EXPECT_EQ(dim[3], 2);
  EXPECT_EQ(dim[4], 6);
  float voxels[4 * 3 * 2 * 6];
  nii.read(reinterpret_cast<char*>(voxels), sizeof voxels);
  EXPECT_FLOAT_EQ(voxels[4 * 3 * 2 * 5], 13.f);  // frame 5 = contrast 1, repetition 2
#ifdef LARMOR_HAVE_IO
  // DICOM: one instance per slice and frame, sorted by InstanceNumber, with the temporal and echo tags.
  const io::ExportReport rep = io::writeSeriesOutput(dir + "/dcm/", results, s, o);
  ASSERT_EQ(rep.files.size(), 12u);
  const io::DicomInstance last = io::readDicomFile(rep.files[11]);
  EXPECT_EQ(last.get(0x0020, 0x0013), "12");   // InstanceNumber
  EXPECT_EQ(last.get(0x0020, 0x0100), "3");    // TemporalPositionIdentifier: repetition 2
  EXPECT_EQ(last.get(0x0020, 0x0105), "3");    // NumberOfTemporalPositions
  EXPECT_EQ(last.get(0x0018, 0x0086), "2");    // EchoNumbers: contrast 1
  EXPECT_EQ(last.get(0x0018, 0x0081), "9");    // EchoTime
  EXPECT_NEAR(last.value(0), 13.0, 0.01);
  const io::DicomInstance first = io::readDicomFile(rep.files[0]);
  EXPECT_EQ(first.get(0x0020, 0x0100), "1");
  EXPECT_EQ(first.get(0x0018, 0x0081), "3");
  EXPECT_EQ(first.get(0x0018, 0x1060), "");    // TriggerTime: unknown, absent
#endif
}
