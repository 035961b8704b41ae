// io::LoadOptions::structureOnly (`info` must not hold the whole k-space of a 3.3 GB file): every
// acquisition is still read and checked, the structure (header, sampling mask, calibration lines,
// acquisitions, the reference's shape) is the full read's, and no k-space, coil map or reference value
// is kept (or, for the maps and the reference, read). Named test_io_ismrmrd* so that
// LARMOR_IO=OFF builds skip it.
#include <gtest/gtest.h>
#include <ismrmrd/dataset.h>
#include <omp.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <limits>

#include "larmor/io/dataset_io.hpp"
#include "larmor/io/ismrmrd.hpp"
#include "larmor/phantom/simulate.hpp"
#include "support/expect_error.hpp"
#include "test_io_export_util.hpp"

using namespace larmor;
using namespace larmor::testing;

namespace {

Dataset accelerated() {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 32;
  s.slices = 2;
  s.coils = 4;
  s.accel = 2;
  s.acs = 8;
  return phantom::simulate(s);
}

// `from` copied record by record with libismrmrd into `to` (our writer refuses NaN), `noiseScans` noise
// scans first (copies of acquisition 0's samples), `edit` given each imaging acquisition and its index.
std::string copyIsmrmrd(const std::string& from, const std::string& to, int noiseScans,
                        const std::function<void(std::uint32_t, ISMRMRD::Acquisition&)>& edit) {
  ISMRMRD::Dataset in(from.c_str(), "dataset", false);
  std::string xml;
  in.readHeader(xml);
  std::filesystem::remove(to);
  ISMRMRD::Dataset out(to.c_str(), "dataset", true);
  out.writeHeader(xml);
  for (int k = 0; k < noiseScans; ++k) {
    ISMRMRD::Acquisition a;
    in.readAcquisition(0, a);
    a.clearAllFlags();
    a.setFlag(ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT);
    a.data(1, 0) = std::complex<float>(0.5f + static_cast<float>(k), -1.f);
    out.appendAcquisition(a);
  }
  const auto n = static_cast<std::uint32_t>(noiseScans) + in.getNumberOfAcquisitions();
  for (std::uint32_t i = static_cast<std::uint32_t>(noiseScans); i < n; ++i) {
    ISMRMRD::Acquisition a;
    in.readAcquisition(i - static_cast<std::uint32_t>(noiseScans), a);
    edit(i, a);
    out.appendAcquisition(a);
  }
  return to;
}

// Sets the OpenMP threads for a scope.
struct OmpThreads {
  int saved = omp_get_max_threads();
  explicit OmpThreads(int n) { omp_set_num_threads(n); }
  ~OmpThreads() { omp_set_num_threads(saved); }
};

}  // namespace

TEST(IoIsmrmrdStructure, StructureOnlyKeepsEverythingButTheSamples) {
  const std::string file = freshTestDir("structure") + "/acc.h5";
  io::writeIsmrmrd(accelerated(), file);
  const io::Series full = io::loadSeries(file);
  io::LoadOptions lo;
  lo.structureOnly = true;
  const io::Series shape = io::loadSeries(file, lo);
  ASSERT_EQ(full.frames.size(), 1u);
  ASSERT_EQ(shape.frames.size(), 1u);
  const Dataset &a = full.frames[0], &b = shape.frames[0];
  EXPECT_FALSE(a.kspace.empty());
  EXPECT_TRUE(b.kspace.empty());
  // The k-space shape info prints: the header's encoded matrix x coils x slices.
  EXPECT_EQ(a.kspace.shape(), (Shape{b.header.encoded[0], b.header.encoded[1], b.header.encoded[2], b.header.coils,
                                     b.header.slices}));
  EXPECT_EQ(a.header.slices, b.header.slices);
  EXPECT_EQ(a.header.accelerationPe1, b.header.accelerationPe1);
  EXPECT_EQ(a.header.calibrationLines, b.header.calibrationLines);
  EXPECT_EQ(a.sampled.vec(), b.sampled.vec());
  EXPECT_EQ(a.calibration.vec(), b.calibration.vec());
  EXPECT_EQ(full.acquisitions.size(), shape.acquisitions.size());
  // The reference is described (its shape, what info prints), its values not read.
  ASSERT_TRUE(a.reference.has_value());
  EXPECT_FALSE(b.reference.has_value());
  EXPECT_FALSE(full.referenceShape.has_value());
  ASSERT_TRUE(shape.referenceShape.has_value());
  EXPECT_EQ(a.reference->shape(), *shape.referenceShape);
  EXPECT_FALSE(b.coilMaps.has_value());
}

// The samples are still checked: a NaN is refused with or without them. (Our writer refuses NaN, so the
// file is copied record by record with libismrmrd, copyIsmrmrd, and one sample spoiled.)
TEST(IoIsmrmrdStructure, StructureOnlyStillChecksEverySample) {
  const std::string dir = freshTestDir("structure");
  io::writeIsmrmrd(accelerated(), dir + "/good.h5");
  const std::string bad = copyIsmrmrd(dir + "/good.h5", dir + "/nan.h5", 0, [](std::uint32_t i, ISMRMRD::Acquisition& a) {
    if (i == 5) a.data(3, 1) = std::complex<float>(std::numeric_limits<float>::quiet_NaN(), 0.f);
  });
  io::LoadOptions lo;
  lo.structureOnly = true;
  test::expectError([&] { (void)io::loadSeries(bad, lo); }, "acquisition 5: sample 3 of coil 1 is NaN");
  test::expectError([&] { (void)io::loadSeries(bad); }, "acquisition 5: sample 3 of coil 1 is NaN");
}

// Non-Cartesian profiles are small: structure only keeps them and the coil maps (a radial file read with
// it used to fail on its maps, whose values it had not read).
TEST(IoIsmrmrdStructure, NonCartesianFilesAreReadWhole) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 32;
  s.slices = 2;
  s.coils = 4;
  s.trajectory = TrajectoryKind::Radial;
  s.spokes = 16;
  const std::string file = freshTestDir("structure") + "/radial.h5";
  io::writeIsmrmrd(phantom::simulate(s), file);
  io::LoadOptions lo;
  lo.structureOnly = true;
  const Dataset a = io::loadDataset(file), b = io::loadDataset(file, lo);
  EXPECT_EQ(a.kspace.vec(), b.kspace.vec());
  EXPECT_EQ(a.trajectory.vec(), b.trajectory.vec());
  ASSERT_EQ(a.coilMaps.has_value(), b.coilMaps.has_value());
  if (a.coilMaps) EXPECT_EQ(a.coilMaps->vec(), b.coilMaps->vec());
}

// Structure-only reads check the samples on every OpenMP thread, a block of 256 records at a time
// (DirectRecords::verifySamplesOnly); what is reported must not change: the first bad record in file
// order, with the same words as the full read, across blocks and threads; a non-finite value outside the
// kept samples is not an error in either read; noise scans keep their samples.
TEST(IoIsmrmrdStructure, StructureOnlyChecksEverySampleOnEveryThread) {
  const OmpThreads four(4);
  const std::string dir = freshTestDir("structure");
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 32;
  s.slices = 21;  // 672 acquisitions: three blocks of records
  s.coils = 4;
  const std::string good = dir + "/many.h5";
  io::writeIsmrmrd(phantom::simulate(s), good);
  io::LoadOptions lo;
  lo.structureOnly = true;

  // Two noise scans first; acquisition 9 discards its last sample, an Inf (not a kept sample).
  const std::string noisy = copyIsmrmrd(good, dir + "/many-noise.h5", 2, [](std::uint32_t i, ISMRMRD::Acquisition& a) {
    if (i != 9) return;
    a.discard_post() = 1;
    a.data(a.number_of_samples() - 1, 2) = std::complex<float>(std::numeric_limits<float>::infinity(), 0.f);
  });
  const io::Series full = io::loadSeries(noisy), shape = io::loadSeries(noisy, lo);
  ASSERT_EQ(full.frames.size(), 1u);
  ASSERT_EQ(shape.frames.size(), 1u);
  const Dataset &a = full.frames[0], &b = shape.frames[0];
  EXPECT_TRUE(b.kspace.empty());
  EXPECT_EQ(a.header.slices, 21);
  EXPECT_EQ(a.header.slices, b.header.slices);
  EXPECT_EQ(a.sampled.vec(), b.sampled.vec());
  EXPECT_EQ(a.calibration.vec(), b.calibration.vec());
  EXPECT_EQ(full.acquisitions.size(), shape.acquisitions.size());
  EXPECT_EQ(a.noiseScans, 2);
  EXPECT_EQ(b.noiseScans, 2);
  ASSERT_TRUE(a.noise.has_value());
  ASSERT_TRUE(b.noise.has_value());
  EXPECT_EQ(a.noise->vec(), b.noise->vec());

  // Bad samples in acquisitions 600, 301 and 260 (two in the second block): 260 is the one reported.
  const std::string bad = copyIsmrmrd(good, dir + "/many-nan.h5", 0, [](std::uint32_t i, ISMRMRD::Acquisition& a) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    if (i == 260) a.data(7, 3) = std::complex<float>(1.f, nan);
    if (i == 301) a.data(0, 0) = std::complex<float>(nan, 0.f);
    if (i == 600) a.data(2, 1) = std::complex<float>(nan, nan);
  });
  for (const int threads : {1, 2, 4}) {
    const OmpThreads t(threads);
    test::expectError([&] { (void)io::loadSeries(bad, lo); }, "acquisition 260: sample 7 of coil 3 is NaN");
    test::expectError([&] { (void)io::loadSeries(bad); }, "acquisition 260: sample 7 of coil 3 is NaN");
  }
  // The last record of the file, alone in its block.
  const std::string last = copyIsmrmrd(good, dir + "/many-last.h5", 0, [](std::uint32_t i, ISMRMRD::Acquisition& a) {
    if (i == 671) a.data(31, 0) = std::complex<float>(-std::numeric_limits<float>::infinity(), 0.f);
  });
  test::expectError([&] { (void)io::loadSeries(last, lo); }, "acquisition 671: sample 31 of coil 0 is Inf");
}
