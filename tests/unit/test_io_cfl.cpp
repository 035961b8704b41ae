// BART .cfl/.hdr reading and writing, atomic output files, and loadDataset's dispatch for BART input.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numbers>
#include <random>
#include <sstream>

#include "larmor/io/cfl.hpp"
#include "larmor/io/dataset_io.hpp"
#include "larmor/util/atomic_file.hpp"
#include "larmor/util/provenance.hpp"
#include "support/expect_error.hpp"
#include "support/test_dir.hpp"

namespace fs = std::filesystem;
using namespace larmor;
using larmor::test::expectError;

namespace {

std::string testDir() { return larmor::testing::freshTestDir("io-cfl"); }

CArray randomArray(const Shape& s, unsigned seed = 1) {
  CArray a(s);
  std::mt19937 rng(seed);
  std::normal_distribution<float> g;
  for (index_t i = 0; i < a.size(); ++i) a[i] = cfloat(g(rng), g(rng));
  return a;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void writeText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

std::vector<std::string> listDir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}


}  // namespace

TEST(IoCfl, RoundTripDropsTrailingOnes) {
  const std::string dir = testDir();
  const CArray a = randomArray(Shape{5, 3, 1, 2, 1, 1});
  io::writeCfl(dir + "/k.cfl", a);
  // BART's layout, then BART's "# Creator" section naming Larmor (the provenance output_safety recognises).
  EXPECT_EQ(slurp(dir + "/k.hdr"),
            "# Dimensions\n5 3 1 2 1 1 1 1 1 1 1 1 1 1 1 1 \n# Creator\nLarmor " + versionString() + "\n");
  EXPECT_EQ(fs::file_size(dir + "/k.cfl"), static_cast<std::uintmax_t>(a.size() * 8));
  for (const std::string p : {"/k", "/k.cfl", "/k.hdr"}) {
    const CArray b = io::readCfl(dir + p);
    EXPECT_EQ(b.shape().dims(), (std::vector<index_t>{5, 3, 1, 2}));
    ASSERT_EQ(b.size(), a.size());
    for (index_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << i;
  }
  EXPECT_EQ(listDir(dir), (std::vector<std::string>{"k.cfl", "k.hdr"}));  // no temporaries left
}

TEST(IoCfl, ScalarAndSixteenDims) {
  const std::string dir = testDir();
  CArray one(Shape{1});
  one[0] = cfloat(2, -3);
  io::writeCfl(dir + "/one", one);
  const CArray r = io::readCfl(dir + "/one");
  EXPECT_EQ(r.shape().dims(), (std::vector<index_t>{1}));
  EXPECT_EQ(r[0], cfloat(2, -3));

  std::vector<index_t> dims(16, 1);
  dims[13] = 2;  // BART's SLICE_DIM
  dims[3] = 2;
  const CArray a = randomArray(Shape(dims), 3);
  io::writeCfl(dir + "/sixteen", a);
  EXPECT_EQ(io::readCfl(dir + "/sixteen").shape().dims(), (std::vector<index_t>{1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2}));

  std::vector<index_t> tooMany(17, 1);
  tooMany[16] = 2;
  expectError([&] { io::writeCfl(dir + "/many", CArray(Shape(tooMany))); }, "many.hdr");
}

TEST(IoCfl, ReadsHeadersWithOtherSectionsAndFewerDims) {
  const std::string dir = testDir();
  const CArray a = randomArray(Shape{4, 2}, 5);
  io::writeCfl(dir + "/x", a);
  writeText(dir + "/x.hdr", "# Command\nbart something\n# Dimensions\n4 2\n# Files\n>x\n");
  EXPECT_EQ(io::readCfl(dir + "/x").shape().dims(), (std::vector<index_t>{4, 2}));
}

TEST(IoCfl, EmptyArrayIsRefused) {
  const std::string dir = testDir();
  expectError([&] { io::writeCfl(dir + "/empty", CArray(Shape{4, 0, 2})); }, "empty.cfl");
  EXPECT_TRUE(listDir(dir).empty());
}

TEST(IoCfl, HeaderLyingAboutTheSize) {
  const std::string dir = testDir();
  io::writeCfl(dir + "/lie", randomArray(Shape{4, 4}));
  writeText(dir + "/lie.hdr", "# Dimensions\n4 8 1 1 1 1 1 1 1 1 1 1 1 1 1 1 \n");
  std::string msg = expectError([&] { io::readCfl(dir + "/lie"); }, "lie.cfl");
  EXPECT_NE(msg.find("128 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("256 bytes"), std::string::npos) << msg;
  writeText(dir + "/lie.hdr", "# Dimensions\n4 2\n");
  msg = expectError([&] { io::readCfl(dir + "/lie"); }, "lie.cfl");
  EXPECT_NE(msg.find("64 bytes"), std::string::npos) << msg;
}

TEST(IoCfl, MissingFiles) {
  const std::string dir = testDir();
  expectError([&] { io::readCfl(dir + "/nothere"); }, "nothere.hdr: no such file");
  writeText(dir + "/halfpair.hdr", "# Dimensions\n2 2\n");
  expectError([&] { io::readCfl(dir + "/halfpair.cfl"); }, "halfpair.cfl: no such file");
}

TEST(IoCfl, GarbageHeaders) {
  const std::string dir = testDir();
  writeText(dir + "/g.cfl", std::string(32, '\0'));
  const std::pair<const char*, const char*> cases[] = {
      {"hello world\n", "no '# Dimensions'"},
      {"", "no '# Dimensions'"},
      {"# Dimensions\n", "no dimensions"},
      {"# Dimensions\n\n", "holds no dimensions"},
      {"# Dimensions\n2 abc 2\n", "not an integer"},
      {"# Dimensions\n2 2.5\n", "not an integer"},
      {"# Dimensions\n4 -1\n", "not positive"},
      {"# Dimensions\n4 0 1\n", "not positive"},
      {"# Dimensions\n99999999999999999999999 1\n", "too large"},
      {"# Dimensions\n1000000000 1000000000 1000000000\n", "too large"},
  };
  for (const auto& [text, needle] : cases) {
    writeText(dir + "/g.hdr", text);
    const std::string msg = expectError([&] { io::readCfl(dir + "/g"); }, "g.hdr");
    EXPECT_NE(msg.find(needle), std::string::npos) << "header '" << text << "' gave: " << msg;
  }
}

TEST(IoCfl, WriteIntoMissingDirectoryLeavesNothing) {
  const std::string dir = testDir();
  expectError([&] { io::writeCfl(dir + "/no/such/dir/x", randomArray(Shape{2, 2})); }, "does not exist");
  EXPECT_TRUE(listDir(dir).empty());
}

TEST(IoCfl, FailedWriteKeepsTheOldFileAndLeavesNoTemporary) {
  const std::string dir = testDir();
  const CArray old = randomArray(Shape{3, 3}, 7);
  io::writeCfl(dir + "/keep", old);
  // A directory where the .hdr should go: the .cfl of the new pair must not replace the old one either.
  fs::remove(dir + "/keep.hdr");
  fs::create_directory(dir + "/keep.hdr");
  expectError([&] { io::writeCfl(dir + "/keep", randomArray(Shape{5, 5}, 8)); }, "keep.hdr");
  EXPECT_EQ(fs::file_size(dir + "/keep.cfl"), 72u);
  EXPECT_EQ(listDir(dir), (std::vector<std::string>{"keep.cfl", "keep.hdr"}));
}

TEST(IoCfl, OverwriteReplacesBothFiles) {
  const std::string dir = testDir();
  io::writeCfl(dir + "/o", randomArray(Shape{3, 3}, 1));
  const CArray b = randomArray(Shape{2, 7}, 2);
  io::writeCfl(dir + "/o", b);
  const CArray r = io::readCfl(dir + "/o");
  EXPECT_EQ(r.shape().dims(), (std::vector<index_t>{2, 7}));
  EXPECT_EQ(r[13], b[13]);
}

TEST(IoCfl, RequireFinite) {
  CArray a = randomArray(Shape{4, 4});
  EXPECT_NO_THROW(io::requireFinite(a, "k"));
  a[5] = cfloat(1, std::numeric_limits<float>::quiet_NaN());
  expectError([&] { io::requireFinite(a, "k.cfl"); }, "k.cfl: sample 5 is NaN");
  a[5] = 0;
  a[2] = cfloat(std::numeric_limits<float>::infinity(), 0);
  expectError([&] { io::requireFinite(a, "k.cfl"); }, "k.cfl: sample 2 is Inf");
  // NaN is allowed on read (images may hold it); the check is the caller's.
  const std::string dir = testDir();
  io::writeCfl(dir + "/nan", a);
  EXPECT_TRUE(std::isinf(io::readCfl(dir + "/nan")[2].real()));
}

TEST(IoCfl, AtomicFileRemovesTemporaryOnException) {
  const std::string dir = testDir();
  std::string temp;
  try {
    AtomicFile f(dir + "/out.bin");
    temp = f.tempPath();
    EXPECT_EQ(fs::path(temp).parent_path(), fs::path(dir));
    writeText(temp, "partial");
    throw std::runtime_error("writer failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_FALSE(temp.empty());
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_FALSE(fs::exists(dir + "/out.bin"));
  {
    AtomicFile f(dir + "/out.bin");
    writeText(f.tempPath(), "whole");
    f.commit();
  }
  EXPECT_EQ(slurp(dir + "/out.bin"), "whole");
  EXPECT_EQ(listDir(dir), (std::vector<std::string>{"out.bin"}));
}

TEST(IoCfl, AtomicFileCommitFailure) {
  const std::string dir = testDir();
  AtomicFile f(dir + "/target");
  writeText(f.tempPath(), "data");
  fs::create_directories(dir + "/target/inside");  // appears after the check: rename must fail
  expectError([&] { f.commit(); }, "target");
  EXPECT_FALSE(fs::exists(f.tempPath()));
  EXPECT_TRUE(fs::is_directory(dir + "/target"));
  AtomicFile nothing(dir + "/never");
  expectError([&] { nothing.commit(); }, "never");
}

// A ky-kz plane [1, ny, nz, coils] sampled like BART's Poisson-disc brain: a fully sampled 8 x 8 centre, and the
// centre row and column sampled on beyond it. The calibration block is the full centre (grown ring by ring),
// not nothing (a cross from the centre overshoots the block).
TEST(IoCfl, PoissonPlaneCalibrationIsTheFullCentre) {
  const std::string dir = testDir();
  const index_t ny = 40, nz = 50, cy = ny / 2, cz = nz / 2;
  CArray k(Shape{1, ny, nz, 2}, cfloat(0, 0));
  const auto sampled = [&](index_t y, index_t z) {
    const bool box = y >= cy - 4 && y < cy + 4 && z >= cz - 4 && z < cz + 4;
    return box || y == cy || z == cz || (y * 7 + z * 13) % 5 == 0;
  };
  for (index_t c = 0; c < 2; ++c)
    for (index_t z = 0; z < nz; ++z)
      for (index_t y = 0; y < ny; ++y)
        if (sampled(y, z)) k(0, y, z, c) = cfloat(1.0f + static_cast<float>(y), 0.5f);
  io::writeCfl(dir + "/plane", k);
  const Dataset d = io::loadDataset(dir + "/plane.cfl");
  EXPECT_EQ(d.header.calibrationLines, 8);
  index_t inside = 0;
  for (index_t z = 0; z < nz; ++z)
    for (index_t y = 0; y < ny; ++y) {
      const bool box = y >= cy - 4 && y < cy + 4 && z >= cz - 4 && z < cz + 4;
      EXPECT_EQ(d.calibration(y, z, 0), box ? 1 : 0) << y << ", " << z;
      inside += d.calibration(y, z, 0);
    }
  EXPECT_EQ(inside, 64);
}

TEST(IoCfl, LoadCartesianKspace) {
  const std::string dir = testDir();
  // [readout 8, pe1 6, pe2 1, coils 2]: every other line plus the centre block 2..4.
  CArray k(Shape{8, 6, 1, 2}, cfloat(0, 0));
  const bool lines[6] = {true, false, true, true, true, false};
  std::mt19937 rng(4);
  std::normal_distribution<float> g;
  for (index_t c = 0; c < 2; ++c)
    for (index_t p = 0; p < 6; ++p)
      for (index_t r = 0; r < 8; ++r)
        if (lines[p]) k(r, p, 0, c) = cfloat(g(rng), g(rng));
  io::writeCfl(dir + "/cart", k);
  const Dataset d = io::loadDataset(dir + "/cart.cfl");
  EXPECT_EQ(d.header.trajectory, TrajectoryKind::Cartesian);
  EXPECT_EQ(d.header.coils, 2);
  EXPECT_EQ(d.header.slices, 1);
  EXPECT_EQ(d.header.encoded[0], 8);
  EXPECT_EQ(d.header.encoded[1], 6);
  EXPECT_EQ(d.header.recon[0], 8);
  EXPECT_EQ(d.kspace.shape(), (Shape{8, 6, 1, 2, 1}));
  for (index_t p = 0; p < 6; ++p) EXPECT_EQ(d.sampled(p, 0, 0), lines[p] ? 1 : 0) << p;
  for (index_t p = 0; p < 6; ++p) EXPECT_EQ(d.calibration(p, 0, 0), (p >= 2 && p <= 4) ? 1 : 0) << p;
  EXPECT_EQ(d.header.calibrationLines, 3);
  EXPECT_EQ(d.header.accelerationPe1, 2);

  io::LoadOptions opt;
  opt.matrix[0] = 4;
  const Dataset d2 = io::loadDataset(dir + "/cart", opt);  // base path, no extension
  EXPECT_EQ(d2.header.recon[0], 4);
  EXPECT_EQ(d2.header.recon[1], 6);
  EXPECT_EQ(d2.header.encoded[0], 8);
}

TEST(IoCfl, LoadCartesianSlicesAndRejectsOtherDims) {
  const std::string dir = testDir();
  std::vector<index_t> dims(14, 1);
  dims[0] = 4, dims[1] = 4, dims[3] = 3, dims[13] = 2;
  io::writeCfl(dir + "/slices", randomArray(Shape(dims)));
  const Dataset d = io::loadDataset(dir + "/slices.hdr");
  EXPECT_EQ(d.kspace.shape(), (Shape{4, 4, 1, 3, 2}));
  EXPECT_EQ(d.header.slices, 2);
  dims[13] = 1, dims[5] = 2;
  io::writeCfl(dir + "/maps", randomArray(Shape(dims)));
  expectError([&] { io::loadDataset(dir + "/maps.cfl"); }, "maps.cfl");
  io::writeCfl(dir + "/zeros", CArray(Shape{4, 4, 1, 2}, cfloat(0, 0)));
  expectError([&] { io::loadDataset(dir + "/zeros.cfl"); }, "no k-space line is sampled");
  CArray bad = randomArray(Shape{4, 4, 1, 2});
  bad[4 * 4 + 3] = cfloat(std::nanf(""), 0);
  io::writeCfl(dir + "/nan", bad);
  expectError([&] { io::loadDataset(dir + "/nan.cfl"); }, "nan.cfl: sample 3 of coil 1 is NaN");
}

TEST(IoCfl, LoadRadialWithTrajectory) {
  const std::string dir = testDir();
  const index_t n = 16, spokes = 6, coils = 2;
  CArray t(Shape{3, n, spokes});
  for (index_t s = 0; s < spokes; ++s)
    for (index_t i = 0; i < n; ++i) {
      const double angle = std::numbers::pi * static_cast<double>(s) / spokes;
      const double r = static_cast<double>(i) - n / 2;  // -8 .. 7 cycles/FOV
      t(0, i, s) = cfloat(static_cast<float>(r * std::cos(angle)), 0);
      t(1, i, s) = cfloat(static_cast<float>(r * std::sin(angle)), 0);
    }
  io::writeCfl(dir + "/traj", t);
  io::writeCfl(dir + "/rad", randomArray(Shape{1, n, spokes, coils}));  // BART's layout
  io::LoadOptions opt;
  opt.trajectoryPath = dir + "/traj.cfl";
  const Dataset d = io::loadDataset(dir + "/rad.cfl", opt);
  EXPECT_EQ(d.header.trajectory, TrajectoryKind::Radial);
  EXPECT_EQ(d.kspace.shape(), (Shape{n, spokes, 1, coils, 1}));
  EXPECT_EQ(d.trajectory.shape(), (Shape{3, n, spokes}));
  EXPECT_EQ(d.header.recon[0], 16);  // 2 * ceil(max |k| = 8)
  EXPECT_EQ(d.header.recon[2], 1);
  EXPECT_FLOAT_EQ(d.trajectory[3 * 2 + 0], t(0, 2, 0).real());

  opt.matrix[0] = opt.matrix[1] = 32;
  EXPECT_EQ(io::loadDataset(dir + "/rad.cfl", opt).header.recon[1], 32);

  io::writeCfl(dir + "/rad2", randomArray(Shape{n, spokes, 1, coils}));  // [readout, spokes, 1, coils]
  EXPECT_EQ(io::loadDataset(dir + "/rad2.cfl", opt).kspace.shape(), (Shape{n, spokes, 1, coils, 1}));

  io::writeCfl(dir + "/short", randomArray(Shape{1, n - 1, spokes, coils}));
  expectError([&] { io::loadDataset(dir + "/short.cfl", opt); }, "does not match the trajectory");

  CArray ti = t;
  ti[7] = cfloat(ti[7].real(), 0.5f);
  io::writeCfl(dir + "/trajc", ti);
  opt.trajectoryPath = dir + "/trajc";
  expectError([&] { io::loadDataset(dir + "/rad.cfl", opt); }, "trajc.cfl");

  // Spokes not through the origin are not radial.
  CArray off = t;
  for (index_t s = 0; s < spokes; ++s)
    for (index_t i = 0; i < n; ++i) off(1, i, s) += cfloat(1.5f, 0);
  io::writeCfl(dir + "/trajoff", off);
  opt.trajectoryPath = dir + "/trajoff";
  EXPECT_EQ(io::loadDataset(dir + "/rad.cfl", opt).header.trajectory, TrajectoryKind::Other);
}

TEST(IoCfl, LoadDatasetDispatch) {
  const std::string dir = testDir();
  expectError([&] { io::loadDataset(dir + "/scan.ra"); }, "scan.ra");  // missing file: RawArray reader named it
  const std::string msg = expectError([&] { io::loadDataset(dir + "/scan.xyz"); }, "scan.xyz");
  EXPECT_NE(msg.find(".cfl"), std::string::npos);
  EXPECT_NE(msg.find(".h5"), std::string::npos);
  expectError([&] { io::loadDataset(dir + "/none.cfl"); }, "none.hdr: no such file");
  if (!io::ismrmrdSupported())
    expectError([&] { io::loadDataset(dir + "/scan.h5"); }, "no ISMRMRD support (LARMOR_IO=OFF)");
  else
    expectError([&] { io::loadDataset(dir + "/scan.h5"); }, "scan.h5: no such file");
}
