// Dataset::validate and the small helpers of data/dataset.hpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "larmor/array/finite.hpp"
#include "larmor/data/dataset.hpp"
#include "support/expect_error.hpp"

using namespace larmor;
using larmor::test::expectError;

namespace {

Dataset cartesian() {
  Dataset d;
  d.source = "scan.h5";
  Header& h = d.header;
  h.encoded[0] = 8, h.encoded[1] = 6, h.encoded[2] = 1;
  h.recon[0] = 4, h.recon[1] = 6, h.recon[2] = 1;
  h.coils = 3;
  h.slices = 2;
  d.kspace = CArray(Shape{8, 6, 1, 3, 2}, cfloat(0, 0));
  d.sampled = Array<std::uint8_t>(Shape{6, 1, 2}, 0);
  d.calibration = Array<std::uint8_t>(Shape{6, 1, 2}, 0);
  for (index_t s = 0; s < 2; ++s)
    for (index_t p = 0; p < 6; p += 2) {
      d.sampled(p, 0, s) = 1;
      for (index_t c = 0; c < 3; ++c)
        for (index_t r = 0; r < 8; ++r) d.kspace(r, p, 0, c, s) = cfloat(float(r + 1), float(c));
    }
  d.sampled(3, 0, 0) = d.calibration(3, 0, 0) = 1;
  return d;
}

Dataset radial() {
  Dataset d;
  d.source = "radial.h5";
  Header& h = d.header;
  h.trajectory = TrajectoryKind::Radial;
  h.encoded[0] = h.encoded[1] = h.recon[0] = h.recon[1] = 8;
  h.coils = 2;
  d.kspace = CArray(Shape{16, 5, 1, 2, 1}, cfloat(1, 0));
  d.trajectory = RArray(Shape{3, 16, 5}, 0.f);
  return d;
}


}  // namespace

TEST(DatasetValidate, ValidDatasetsPass) {
  EXPECT_NO_THROW(cartesian().validate());
  EXPECT_NO_THROW(radial().validate());
  Dataset d = cartesian();
  d.calibration = Array<std::uint8_t>();  // an absent calibration mask is allowed
  EXPECT_NO_THROW(d.validate());
  d.reference = CArray(Shape{4, 6, 1, 1, 2});
  d.coilMaps = CArray(Shape{4, 6, 1, 3, 2});
  EXPECT_NO_THROW(d.validate());
}

TEST(DatasetValidate, ZeroCoilsAndEmptyData) {
  Dataset d = cartesian();
  d.header.coils = 0;
  expectError([&] { d.validate(); }, "scan.h5: the data have no coils");
  d = cartesian();
  d.kspace = CArray();
  expectError([&] { d.validate(); }, "scan.h5: k-space is empty");
  d = cartesian();
  d.sampled = Array<std::uint8_t>(Shape{6, 1, 2}, 0);
  expectError([&] { d.validate(); }, "no k-space line is sampled");
  d = Dataset();
  expectError([&] { d.validate(); }, "dataset: ");  // no source: still a named, one-line error
}

TEST(DatasetValidate, ShapesAgainstHeader) {
  Dataset d = cartesian();
  d.header.coils = 4;
  expectError([&] { d.validate(); }, "has 3 coils, the header says 4");
  d = cartesian();
  d.header.slices = 1;
  expectError([&] { d.validate(); }, "has 2 slices, the header says 1");
  d = cartesian();
  d.header.encoded[0] = 16;
  expectError([&] { d.validate(); }, "does not match the encoded matrix");
  d = cartesian();
  d.header.recon[1] = 0;
  expectError([&] { d.validate(); }, "is not positive");
  d = cartesian();
  d.kspace = CArray(Shape{8, 6, 1, 3, 2, 2});
  expectError([&] { d.validate(); }, "more than 5 dimensions");
  d = cartesian();
  d.sampled = Array<std::uint8_t>(Shape{6, 2}, 1);
  expectError([&] { d.validate(); }, "sampling mask");
  d = cartesian();
  d.calibration = Array<std::uint8_t>(Shape{5, 1, 2}, 0);
  expectError([&] { d.validate(); }, "calibration mask");
  d = cartesian();
  d.calibration(1, 0, 1) = 1;
  expectError([&] { d.validate(); }, "calibration line pe1=1 pe2=0 is not marked as sampled");
  d = cartesian();
  d.reference = CArray(Shape{8, 6, 1, 1, 2});
  expectError([&] { d.validate(); }, "reference image");
  d = cartesian();
  d.coilMaps = CArray(Shape{4, 6, 1, 2, 2});
  expectError([&] { d.validate(); }, "coil maps");
}

TEST(DatasetValidate, NonCartesianTrajectory) {
  Dataset d = radial();
  d.trajectory = RArray(Shape{2, 16, 5});
  expectError([&] { d.validate(); }, "radial.h5: trajectory [2, 16, 5] does not match [3, readout, profiles]");
  d = radial();
  d.trajectory = RArray();
  expectError([&] { d.validate(); }, "trajectory");
  d = radial();
  d.kspace = CArray(Shape{16, 5, 2, 2, 1}, cfloat(1, 0));
  expectError([&] { d.validate(); }, "[readout, profiles, 1, coils, slices]");
  d = radial();
  d.trajectory[7] = std::numeric_limits<float>::quiet_NaN();
  expectError([&] { d.validate(); }, "trajectory coordinate 1 of sample 2 is NaN");
}

TEST(DatasetValidate, NonFiniteSamples) {
  Dataset d = cartesian();
  // Coil 2 of slice 0: sample index within the coil's [readout, pe1, pe2] block.
  d.kspace(3, 2, 0, 2, 0) = cfloat(std::numeric_limits<float>::quiet_NaN(), 0);
  expectError([&] { d.validate(); }, "scan.h5: sample 19 of coil 2 in slice 0 is NaN");
  d = cartesian();
  d.kspace(0, 1, 0, 1, 1) = cfloat(0, -std::numeric_limits<float>::infinity());
  expectError([&] { d.validate(); }, "sample 8 of coil 1 in slice 1 is Inf");
  d = radial();
  d.kspace[16 * 5 + 4] = cfloat(std::numeric_limits<float>::quiet_NaN(), 0);
  const std::string msg = expectError([&] { d.validate(); }, "radial.h5: sample 4 of coil 1 is NaN");
  EXPECT_EQ(msg.find("slice"), std::string::npos);  // single-slice data do not mention slices
}

// Arrays of 2^20 floats and more are scanned in parts over the cores: the answer must still be the first bad
// value (the smallest index, whichever part finds its own first), at a part's edges and in the tail.
TEST(DatasetValidate, FirstNonFiniteOfLargeArraysIsTheFirst) {
  const std::size_t n = (std::size_t{1} << 22) + 777;
  std::vector<float> v(n, 1.5f);
  EXPECT_EQ(firstNonFinite(v.data(), n), n);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const std::size_t at : {std::size_t{0}, std::size_t{65535}, std::size_t{65536}, std::size_t{3000001}, n - 1}) {
    std::vector<float> w = v;
    w[at] = nan;
    if (at + 70000 < n) w[at + 70000] = inf;  // a later bad value in another part
    if (at + 5 < n) w[at + 5] = -inf;          // and one in the same block
    EXPECT_EQ(firstNonFinite(w.data(), n), at) << "bad value at " << at;
  }
  std::vector<float> w = v;
  w[n - 1] = inf;
  w[n / 2] = -inf;
  EXPECT_EQ(firstNonFinite(w.data(), n), n / 2);
}

TEST(DatasetValidate, TrajectoryKindNames) {
  for (auto k : {TrajectoryKind::Cartesian, TrajectoryKind::Radial, TrajectoryKind::GoldenAngle,
                 TrajectoryKind::Spiral, TrajectoryKind::StackOfSpirals, TrajectoryKind::Radial3D,
                 TrajectoryKind::Other})
    EXPECT_EQ(trajectoryKindFromString(toString(k)), k);
  EXPECT_EQ(toString(TrajectoryKind::GoldenAngle), "golden");
  EXPECT_EQ(toString(TrajectoryKind::StackOfSpirals), "stack-of-spirals");
  EXPECT_EQ(trajectoryKindFromString("Radial"), TrajectoryKind::Radial);
  expectError([] { trajectoryKindFromString("rosette"); }, "unknown trajectory 'rosette'");
}

TEST(DatasetValidate, AcquisitionFlagNames) {
  auto bit = [](int flag) { return std::uint64_t{1} << (flag - 1); };
  EXPECT_EQ(describeAcquisitionFlags(0), "");
  EXPECT_EQ(describeAcquisitionFlags(bit(7) | bit(20)), "first_in_slice|parallel_calibration");
  EXPECT_EQ(describeAcquisitionFlags(bit(1) | bit(21) | bit(25)),
            "first_in_encode_step1|parallel_calibration_and_imaging|last_in_measurement");
  EXPECT_EQ(describeAcquisitionFlags(bit(19)), "noise_measurement");
  EXPECT_EQ(describeAcquisitionFlags(bit(53) | bit(57) | bit(64)), "compression1|user1|user8");
  EXPECT_EQ(describeAcquisitionFlags(bit(40)), "flag40");
}
