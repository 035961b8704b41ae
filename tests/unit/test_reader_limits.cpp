// The readers' limits and plausibility checks (docs/reliability.md, "Limits and plausibility"): the size a
// header implies against the memory limit before anything is allocated; header lies (ISMRMRD fields of
// view, an encoded z on a 2-D trajectory, a twix measurement without ACQEND, NIfTI offsets and datatypes)
// and corrupt samples (trajectories in normalised units, one far coordinate, denormals, one k-space sample
// of 1e30) as one Error line naming the file, or a warning where the data can still be read right.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

#include "larmor/io/cfl.hpp"
#include "larmor/io/dataset_io.hpp"
#include "larmor/io/dicom.hpp"
#include "larmor/io/export.hpp"
#include "larmor/io/ismrmrd.hpp"
#include "larmor/io/nifti.hpp"
#include "larmor/io/rawarray.hpp"
#include "larmor/phantom/simulate.hpp"
#include "support/expect_error.hpp"
#include "support/test_dir.hpp"
#include "support/twix_writer.hpp"
#include "test_io_export_util.hpp"

using namespace larmor;
using larmor::test::expectError;
using larmor::testing::freshTestDir;

namespace {

// LARMOR_MEMORY_LIMIT for one scope.
class MemoryLimit {
 public:
  explicit MemoryLimit(const char* bytes) { ::setenv("LARMOR_MEMORY_LIMIT", bytes, 1); }
  ~MemoryLimit() { ::unsetenv("LARMOR_MEMORY_LIMIT"); }
};

// A 2D radial trajectory [3, n, spokes] in cycles per FOV (|k| up to n / 2) and k-space [1, n, spokes, 2].
struct Radial {
  CArray traj, kspace;
};
Radial radial(index_t n = 64, index_t spokes = 48) {
  Radial r{CArray(Shape{3, n, spokes}), CArray(Shape{1, n, spokes, 2})};
  for (index_t p = 0; p < spokes; ++p) {
    const double a = M_PI * static_cast<double>(p) / static_cast<double>(spokes);
    for (index_t i = 0; i < n; ++i) {
      const double k = static_cast<double>(i) - static_cast<double>(n) / 2;
      r.traj[3 * (i + n * p)] = cfloat(static_cast<float>(k * std::cos(a)), 0.f);
      r.traj[3 * (i + n * p) + 1] = cfloat(static_cast<float>(k * std::sin(a)), 0.f);
    }
  }
  for (index_t i = 0; i < r.kspace.size(); ++i)
    r.kspace[i] = cfloat(std::exp(-0.01f * static_cast<float>(i % n - n / 2) * static_cast<float>(i % n - n / 2)),
                         0.1f * static_cast<float>(i % 7));
  return r;
}

Dataset loadRadial(const std::string& dir, const Radial& r) {
  io::writeCfl(dir + "/k.cfl", r.kspace);
  io::writeCfl(dir + "/t.cfl", r.traj);
  io::LoadOptions lo;
  lo.trajectoryPath = dir + "/t.cfl";
  return io::loadDataset(dir + "/k.cfl", lo);
}

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A minimal NIfTI-1 file: 4 x 4 x 1 float32 voxels of 1 at vox_offset 352.
std::string niftiBytes() {
  std::string b(352 + 16 * 4, '\0');
  auto put16 = [&](std::size_t at, std::int16_t v) { std::memcpy(&b[at], &v, 2); };
  const std::int32_t size = 348;
  std::memcpy(&b[0], &size, 4);
  put16(40, 3), put16(42, 4), put16(44, 4), put16(46, 1);
  put16(70, 16), put16(72, 32);  // float32, 32 bits
  const float offset = 352, one = 1;
  std::memcpy(&b[108], &offset, 4);
  std::memcpy(&b[344], "n+1", 4);
  for (std::size_t i = 0; i < 16; ++i) std::memcpy(&b[352 + 4 * i], &one, 4);
  return b;
}

}  // namespace

TEST(ReaderLimits, CflHeaderLargerThanTheFileIsOneLineWithTheFigures) {
  const std::string dir = freshTestDir("limits");
  writeBytes(dir + "/big.hdr", "# Dimensions\n1024 1024 48 32 1 1 1 1 1 1 1 1 1 1 1 1\n");
  writeBytes(dir + "/big.cfl", std::string(4096, '\0'));
  const std::string what = expectError([&] { (void)io::readCfl(dir + "/big.cfl"); }, "big.cfl: holds 4096 bytes");
  EXPECT_NE(what.find("12884901888"), std::string::npos) << what;
}

TEST(ReaderLimits, CflAndRawArrayOverTheMemoryLimitAreRefusedBeforeReading) {
  const std::string dir = freshTestDir("limits");
  const CArray a(Shape{64, 64, 4}, cfloat(1, 0));  // 131 kB
  io::writeCfl(dir + "/a.cfl", a);
  io::writeRawArray(dir + "/a.ra", a);
  {
    const MemoryLimit limit("100000");
    const std::string what = expectError([&] { (void)io::readCfl(dir + "/a"); }, "a.cfl: the array [64, 64, 4] needs");
    EXPECT_NE(what.find("LARMOR_MEMORY_LIMIT"), std::string::npos) << what;
    expectError([&] { (void)io::readRawArray(dir + "/a.ra"); }, "a.ra: the array [64, 64, 4] needs");
    expectError([&] { (void)io::loadDataset(dir + "/a.cfl"); }, "not read");
  }
  EXPECT_EQ(io::readCfl(dir + "/a").size(), a.size());  // without the limit it reads
}

TEST(ReaderLimits, NormalisedTrajectoryIsScaledWithAWarning) {
  const std::string dir = freshTestDir("limits");
  const Dataset ref = loadRadial(dir, radial());
  Radial r = radial();
  for (index_t i = 0; i < r.traj.size(); ++i) r.traj[i] /= 64.f;  // [-0.5, 0.5)
  const Dataset d = loadRadial(dir, r);
  EXPECT_EQ(d.header.recon[0], ref.header.recon[0]);
  EXPECT_EQ(d.header.recon[1], ref.header.recon[1]);
  ASSERT_EQ(d.trajectory.size(), ref.trajectory.size());
  for (index_t i = 0; i < d.trajectory.size(); ++i) ASSERT_NEAR(d.trajectory[i], ref.trajectory[i], 1e-4f);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("normalised units, scaled"), std::string::npos) << d.warnings[0];
  // A largest |k| below 1 that is not 0.5: refused.
  for (index_t i = 0; i < r.traj.size(); ++i) r.traj[i] *= 1.6f;
  expectError([&] { (void)loadRadial(dir, r); }, "encodes at most a 2x2 image");
}

TEST(ReaderLimits, OneFarCoordinateIsOutsideTheExtent) {
  const std::string dir = freshTestDir("limits");
  Radial r = radial();
  r.traj[3 * 100] = cfloat(-1000.f, 0.f);
  expectError([&] { (void)loadRadial(dir, r); }, "coordinate 0 of sample 100 is -1000 cycles/FOV, outside the k-space extent");
}

TEST(ReaderLimits, DenormalTrajectoryIsEffectivelyAllZero) {
  const std::string dir = freshTestDir("limits");
  Radial r = radial();
  for (index_t i = 0; i < r.traj.size(); ++i) r.traj[i] *= 1e-40f;
  expectError([&] { (void)loadRadial(dir, r); }, "effectively all zero");
}

TEST(ReaderLimits, OneHugeSampleIsRefusedAndAnOutlierWarned) {
  const std::string dir = freshTestDir("limits");
  Radial r = radial();
  r.kspace[77] = cfloat(1e30f, 0.f);
  expectError([&] { (void)loadRadial(dir, r); }, "k-space sample 77 has magnitude 1e+30");
  r.kspace[77] = cfloat(1e8f, 0.f);
  const Dataset d = loadRadial(dir, r);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("sample 77 has magnitude 1e+08"), std::string::npos) << d.warnings[0];
}

TEST(ReaderLimits, IsmrmrdFieldOfViewMustBePositiveAndFinite) {
  const std::string dir = freshTestDir("limits");
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 16;
  s.coils = 2;
  const Dataset good = phantom::simulate(s);
  const float lies[] = {std::numeric_limits<float>::quiet_NaN(), 0.f, -5.f, std::numeric_limits<float>::infinity(), 1e30f};
  for (float lie : lies) {
    Dataset d = good;
    d.header.encodedFovMm[1] = lie;
    io::writeIsmrmrd(d, dir + "/fov.h5");
    expectError([&] { (void)io::loadDataset(dir + "/fov.h5"); }, "encodedSpace fieldOfView_mm y is");
  }
  Dataset d = good;
  d.header.reconFovMm[0] = 0.f;
  io::writeIsmrmrd(d, dir + "/fov.h5");
  expectError([&] { (void)io::loadDataset(dir + "/fov.h5"); }, "reconSpace fieldOfView_mm x is 0");
}

TEST(ReaderLimits, IsmrmrdEncodedZOnA2DRadialTrajectory) {
  const std::string dir = freshTestDir("limits");
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 16;
  s.coils = 2;
  s.trajectory = TrajectoryKind::Radial;
  Dataset d = phantom::simulate(s);
  d.header.encoded[2] = 65535;
  io::writeIsmrmrd(d, dir + "/z.h5");
  expectError([&] { (void)io::loadDataset(dir + "/z.h5"); }, "encoded matrix z is 65535 but every kz");
}

TEST(ReaderLimits, TwixWithoutAcqEndIsTruncated) {
  const std::string dir = freshTestDir("limits");
  for (bool vd : {false, true}) {
    test::TwixSpec spec;
    spec.vd = vd;
    spec.measYaps = test::twixProtocol(4, 8);
    spec.meas = test::twixXprot(2.0);
    for (std::uint16_t l = 0; l < 4; ++l) {  // 4 of the protocol's 8 lines
      test::TwixScanSpec sc;
      sc.lin = l, sc.samples = 8, sc.channels = 2, sc.centreColumn = 4, sc.centreLine = 4;
      sc.data.assign(16, cfloat(1, 1));
      spec.scans.push_back(sc);
    }
    spec.acqEnd = false;
    // Cut where the next scan would start (the writer pads the file with zeros; a cut file is not padded),
    // and for VD/VE the measurement's length in the raid entry with it.
    std::string bytes = test::twixBytes(spec);
    while (bytes.back() == '\0') bytes.pop_back();
    if (vd) {
      const std::uint64_t length = bytes.size() - 10240;
      std::memcpy(&bytes[8 + 16], &length, 8);
    }
    writeBytes(dir + "/t.dat", bytes);
    expectError([&] { (void)io::loadDataset(dir + "/t.dat"); }, "no ACQEND: it was cut short after 4 scans");
    io::LoadOptions describe;  // `info`: described, with the reason as a warning
    describe.structureOnly = true;
    const Dataset d = io::loadDataset(dir + "/t.dat", describe);
    ASSERT_FALSE(d.warnings.empty());
    EXPECT_NE(d.warnings[0].find("t.dat: the measurement has no ACQEND"), std::string::npos) << d.warnings[0];
    spec.acqEnd = true;
    writeBytes(dir + "/t.dat", test::twixBytes(spec));
    EXPECT_NO_THROW((void)io::loadDataset(dir + "/t.dat"));
  }
}

TEST(ReaderLimits, NiftiOffsetAndDatatypeLies) {
  const std::string dir = freshTestDir("limits");
  const std::string path = dir + "/r.nii";
  writeBytes(path, niftiBytes());
  EXPECT_EQ(io::readNiftiImage(path).size(), 16);
  std::string b = niftiBytes();
  const float huge = 1e30f;
  std::memcpy(&b[108], &huge, 4);
  writeBytes(path, b);
  expectError([&] { (void)io::readNiftiImage(path); }, "vox_offset 1e+30 is beyond any image file");
  b = niftiBytes();
  const std::int16_t bitpix = 16;
  std::memcpy(&b[72], &bitpix, 2);
  writeBytes(path, b);
  expectError([&] { (void)io::readNiftiImage(path); }, "datatype 16 has 32 bits a voxel but bitpix says 16");
  // A header that claims 32767 x 32767 x 2 voxels of a 416-byte file: refused by the limit, not allocated.
  b = niftiBytes();
  const std::int16_t big = 32767, two = 2;
  std::memcpy(&b[42], &big, 2), std::memcpy(&b[44], &big, 2), std::memcpy(&b[46], &two, 2);
  writeBytes(path, b);
  {
    const MemoryLimit limit("1000000000");
    expectError([&] { (void)io::readNiftiImage(path); }, "r.nii: the NIfTI image of 2147352578 voxels needs");
  }
  b = niftiBytes();
  const std::int16_t sixtyFour = 64;
  std::memcpy(&b[42], &sixtyFour, 2);
  writeBytes(path, b);
  expectError([&] { (void)io::readNiftiImage(path); }, "truncated NIfTI file");
}

TEST(ReaderLimits, DicomReferenceWithWrongRowsOrNoPixelData) {
  const std::string dir = freshTestDir("limits");
  const auto rc = larmor::testing::reconstructPhantom(16, 12, 1, 1);
  io::writeImageOutput(dir + "/dcm/", rc.r, rc.d);
  const std::string file = dir + "/dcm/" + io::dicomFileName(io::ImageComponent::Magnitude, 1, 1);
  EXPECT_EQ(io::readDicomSeriesImage(file).size(), 16 * 12);
  const std::string good = larmor::testing::slurpFile(file);
  // Rows (0028,0010) US, explicit VR little endian: one row more than the pixels hold.
  const std::string rowsTag("\x28\x00\x10\x00US\x02\x00", 8);
  const auto at = good.find(rowsTag);
  ASSERT_NE(at, std::string::npos);
  std::string bad = good;
  bad[at + 8] = static_cast<char>(static_cast<unsigned char>(bad[at + 8]) + 1);
  writeBytes(file, bad);
  expectError([&] { (void)io::readDicomSeriesImage(file); }, "magnitude_0001.dcm: Rows x Columns 13 x 16 need 208 pixels but PixelData holds 192");
  // Cut before the PixelData element (7FE0,0010): an instance without pixel data.
  const auto pixels = good.find(std::string("\xe0\x7f\x10\x00", 4));
  ASSERT_NE(pixels, std::string::npos);
  writeBytes(file, good.substr(0, pixels));
  expectError([&] { (void)io::readDicomSeriesImage(file); }, "has no 16-bit pixel data");
}

TEST(ReaderLimits, IsmrmrdAndTwixKspaceOverTheMemoryLimitAreRefusedBeforeReading) {
  const std::string dir = freshTestDir("limits");
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 16;
  s.coils = 2;
  io::writeIsmrmrd(phantom::simulate(s), dir + "/c.h5");
  test::TwixSpec spec;
  spec.vd = false;
  spec.measYaps = test::twixProtocol(4, 4);
  spec.meas = test::twixXprot(2.0);
  for (std::uint16_t l = 0; l < 4; ++l) {
    test::TwixScanSpec sc;
    sc.lin = l, sc.samples = 8, sc.channels = 2, sc.centreColumn = 4, sc.centreLine = 2;
    sc.data.assign(16, cfloat(1, 1));
    spec.scans.push_back(sc);
  }
  writeBytes(dir + "/t.dat", test::twixBytes(spec));
  {
    const MemoryLimit limit("6000");  // the coil maps (4096 bytes) fit, the k-space (8192 bytes) does not
    expectError([&] { (void)io::loadDataset(dir + "/c.h5"); }, "c.h5: the k-space [32, 16, 1, 2, 1] needs 8192 bytes");
  }
  {
    const MemoryLimit limit("100");
    expectError([&] { (void)io::loadDataset(dir + "/t.dat"); }, "t.dat: the k-space [8, 4, 1, 2, 1] needs 512 bytes");
  }
  EXPECT_NO_THROW((void)io::loadDataset(dir + "/c.h5"));
  EXPECT_NO_THROW((void)io::loadDataset(dir + "/t.dat"));
}
