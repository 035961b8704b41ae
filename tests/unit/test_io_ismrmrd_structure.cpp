// io::LoadOptions::structureOnly (issue 15: `info` held the whole k-space of a 3.3 GB file): every
// acquisition is still read and checked, the structure (header, sampling mask, calibration lines,
// acquisitions, the reference's shape) is the full read's, and no k-space, coil map or reference value
// is kept (or, for the maps and the reference, read). Named test_io_ismrmrd* so that
// LARMOR_IO=OFF builds skip it.
#include <gtest/gtest.h>
#include <ismrmrd/dataset.h>

#include <cmath>
#include <complex>
#include <cstdint>
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

}  // namespace

TEST(IoIsmrmrdStructure, StructureOnlyKeepsEverythingButTheSamples) {
  const std::string file = exportTestDir("structure") + "/acc.h5";
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
// file is copied record by record with libismrmrd and one sample spoiled.)
TEST(IoIsmrmrdStructure, StructureOnlyStillChecksEverySample) {
  const std::string dir = exportTestDir("structure");
  io::writeIsmrmrd(accelerated(), dir + "/good.h5");
  const std::string bad = dir + "/nan.h5";
  {
    ISMRMRD::Dataset in((dir + "/good.h5").c_str(), "dataset", false);
    std::string xml;
    in.readHeader(xml);
    ISMRMRD::Dataset out(bad.c_str(), "dataset", true);
    out.writeHeader(xml);
    for (std::uint32_t i = 0; i < in.getNumberOfAcquisitions(); ++i) {
      ISMRMRD::Acquisition a;
      in.readAcquisition(i, a);
      if (i == 5) a.data(3, 1) = std::complex<float>(std::numeric_limits<float>::quiet_NaN(), 0.f);
      out.appendAcquisition(a);
    }
  }
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
  const std::string file = exportTestDir("structure") + "/radial.h5";
  io::writeIsmrmrd(phantom::simulate(s), file);
  io::LoadOptions lo;
  lo.structureOnly = true;
  const Dataset a = io::loadDataset(file), b = io::loadDataset(file, lo);
  EXPECT_EQ(a.kspace.vec(), b.kspace.vec());
  EXPECT_EQ(a.trajectory.vec(), b.trajectory.vec());
  ASSERT_EQ(a.coilMaps.has_value(), b.coilMaps.has_value());
  if (a.coilMaps) EXPECT_EQ(a.coilMaps->vec(), b.coilMaps->vec());
}
