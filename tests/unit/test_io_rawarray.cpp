// RawArray (.ra): byte layout, round trip, every way a header can be wrong, and .ra k-space through
// loadDataset (Cartesian, and non-Cartesian with a .ra trajectory).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <numbers>
#include <random>

#include "larmor/io/cfl.hpp"
#include "larmor/io/dataset_io.hpp"
#include "larmor/io/rawarray.hpp"
#include "test_io_export_util.hpp"

using namespace larmor;
using namespace larmor::testing;

namespace {

CArray randomArray(const Shape& s, unsigned seed = 1) {
  CArray a(s);
  std::mt19937 rng(seed);
  std::normal_distribution<float> g;
  for (index_t i = 0; i < a.size(); ++i) a[i] = cfloat(g(rng), g(rng));
  return a;
}

// A RawArray file from header words and data bytes, whatever they say.
void writeRaw(const std::string& path, std::vector<std::uint64_t> words, std::size_t dataBytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (auto w : words)
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>(w >> (8 * i)));
  for (std::size_t i = 0; i < dataBytes; ++i) out.put(static_cast<char>(i * 7));
}

constexpr std::uint64_t M = io::kRawArrayMagic;

}  // namespace

TEST(IoRawArray, ByteLayoutAndRoundTrip) {
  const std::string dir = freshTestDir("io-ra");
  const CArray a = randomArray(Shape{5, 3, 1, 2, 1, 1});
  io::writeRawArray(dir + "/k.ra", a);
  const std::string bytes = slurpFile(dir + "/k.ra");
  ASSERT_EQ(bytes.size(), 8u * (6 + 6) + 30 * 8);
  EXPECT_EQ(bytes.substr(0, 8), "rawarray");  // the magic read as bytes
  std::uint64_t w[12];
  std::memcpy(w, bytes.data(), sizeof w);
  EXPECT_EQ(w[1], 0u);        // flags
  EXPECT_EQ(w[2], 4u);        // complex
  EXPECT_EQ(w[3], 8u);        // bytes per element
  EXPECT_EQ(w[4], 30u * 8);   // data bytes
  EXPECT_EQ(w[5], 6u);        // ndims
  EXPECT_EQ(w[6], 5u);
  EXPECT_EQ(w[7], 3u);
  EXPECT_EQ(std::memcmp(bytes.data() + 96, a.data(), 30 * 8), 0);
  const CArray b = io::readRawArray(dir + "/k.ra");
  EXPECT_EQ(b.shape(), (Shape{5, 3, 1, 2}));  // trailing ones dropped, as readCfl does
  for (index_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]);
}

TEST(IoRawArray, BadHeadersAreOneClearError) {
  const std::string dir = freshTestDir("io-ra");
  const std::string f = dir + "/bad.ra";
  expectError([&] { io::readRawArray(dir + "/missing.ra"); }, "missing.ra: no such file");
  writeRaw(f, {M, 0, 4}, 0);
  expectError([&] { io::readRawArray(f); }, "bad.ra: truncated RawArray header");
  writeRaw(f, {0x1234, 0, 4, 8, 8, 1, 1}, 8);
  expectError([&] { io::readRawArray(f); }, "not a RawArray file");
  writeRaw(f, {__builtin_bswap64(M), 0, 4, 8, 8, 1, 1}, 8);
  expectError([&] { io::readRawArray(f); }, "big-endian RawArray files are not supported");
  writeRaw(f, {M, 1, 4, 8, 8, 1, 1}, 8);
  expectError([&] { io::readRawArray(f); }, "big-endian");
  writeRaw(f, {M, 2, 4, 8, 8, 1, 1}, 8);
  expectError([&] { io::readRawArray(f); }, "compressed RawArray files are not supported");
  writeRaw(f, {M, 0x40, 4, 8, 8, 1, 1}, 8);
  expectError([&] { io::readRawArray(f); }, "unknown RawArray flags 0x40");
  writeRaw(f, {M, 0, 3, 4, 16, 1, 4}, 16);
  expectError([&] { io::readRawArray(f); }, "holds float with 4-byte elements; Larmor reads complex float32");
  writeRaw(f, {M, 0, 4, 16, 16, 1, 1}, 16);
  expectError([&] { io::readRawArray(f); }, "holds complex with 16-byte elements");
  writeRaw(f, {M, 0, 9, 8, 8, 1, 1}, 8);
  expectError([&] { io::readRawArray(f); }, "unknown type 9");
  writeRaw(f, {M, 0, 4, 8, 0, 0}, 0);
  expectError([&] { io::readRawArray(f); }, "0 dimensions");
  writeRaw(f, {M, 0, 4, 8, 8, 1000000}, 0);
  expectError([&] { io::readRawArray(f); }, "1000000 dimensions");
  writeRaw(f, {M, 0, 4, 8, 8, 3, 1, 2}, 0);
  expectError([&] { io::readRawArray(f); }, "truncated RawArray header (3 dimensions need 72 bytes");
  writeRaw(f, {M, 0, 4, 8, 0, 2, 4, 0}, 0);
  expectError([&] { io::readRawArray(f); }, "RawArray dimension 1 is 0");
  writeRaw(f, {M, 0, 4, 0, 0, 1, 4}, 0);
  expectError([&] { io::readRawArray(f); }, "element size 0 bytes");
  writeRaw(f, {M, 0, 4, 8, 64, 2, 4, 4}, 64);
  expectError([&] { io::readRawArray(f); }, "dimensions x element size = 128 bytes, the size field says 64");
  // Huge dimensions: refused from the header alone, before any allocation.
  writeRaw(f, {M, 0, 4, 8, 8, 3, 1ull << 30, 1ull << 30, 1ull << 30}, 8);
  expectError([&] { io::readRawArray(f); }, "RawArray dimensions are too large");
  writeRaw(f, {M, 0, 4, 8, 8ull << 40, 2, 1ull << 20, 1ull << 20}, 64);
  expectError([&] { io::readRawArray(f); }, "truncated: holds 64 bytes of data, the header says 8796093022208");
  writeRaw(f, {M, 0, 4, 8, 32, 1, 4}, 33);
  expectError([&] { io::readRawArray(f); }, "has 1 bytes after the RawArray data");
  fs::create_directory(dir + "/dir.ra");
  expectError([&] { io::readRawArray(dir + "/dir.ra"); }, "not a regular file");
}

TEST(IoRawArray, CartesianKspaceLoadsLikeCfl) {
  const std::string dir = freshTestDir("io-ra");
  const auto sim = phantom::simulate([] {
    phantom::SimulateSettings s;
    s.matrix[0] = 16, s.matrix[1] = 12;
    s.coils = 3;
    s.accel = 2;
    s.acs = 4;
    return s;
  }());
  // BART layout: [readout, pe1, pe2, coils]
  CArray k = sim.kspace;
  k.reshape(Shape{k.shape()[0], k.shape()[1], k.shape()[2], k.shape()[3]});
  io::writeRawArray(dir + "/k.ra", k);
  io::writeCfl(dir + "/k.cfl", k);
  const Dataset a = io::loadDataset(dir + "/k.ra");
  const Dataset b = io::loadDataset(dir + "/k.cfl");
  EXPECT_EQ(a.source, dir + "/k.ra");
  EXPECT_EQ(a.header.trajectory, TrajectoryKind::Cartesian);
  EXPECT_EQ(a.kspace.shape(), b.kspace.shape());
  EXPECT_EQ(a.header.coils, 3);
  EXPECT_EQ(a.header.accelerationPe1, b.header.accelerationPe1);
  EXPECT_EQ(a.header.calibrationLines, b.header.calibrationLines);
  for (index_t i = 0; i < a.kspace.size(); ++i) ASSERT_EQ(a.kspace[i], b.kspace[i]);
  for (index_t i = 0; i < a.sampled.size(); ++i) ASSERT_EQ(a.sampled[i], b.sampled[i]);
}

TEST(IoRawArray, NonCartesianWithRawArrayTrajectory) {
  const std::string dir = freshTestDir("io-ra");
  const index_t n = 32, spokes = 8;
  CArray t(Shape{3, n, spokes}, cfloat(0, 0));
  for (index_t p = 0; p < spokes; ++p)
    for (index_t i = 0; i < n; ++i) {
      const double angle = std::numbers::pi * static_cast<double>(p) / spokes;
      const double r = (static_cast<double>(i) - n / 2) * 0.5;
      t(0, i, p) = cfloat(static_cast<float>(r * std::cos(angle)), 0);
      t(1, i, p) = cfloat(static_cast<float>(r * std::sin(angle)), 0);
    }
  io::writeRawArray(dir + "/traj.ra", t);
  io::writeRawArray(dir + "/k.ra", randomArray(Shape{1, n, spokes, 2}, 3));
  io::LoadOptions lo;
  lo.trajectoryPath = dir + "/traj.ra";
  const Dataset d = io::loadDataset(dir + "/k.ra", lo);
  EXPECT_EQ(d.header.trajectory, TrajectoryKind::Radial);
  EXPECT_EQ(d.kspace.shape(), (Shape{n, spokes, 1, 2, 1}));
  EXPECT_EQ(d.header.recon[0], 16);
  // A mismatching k-space names both files.
  io::writeRawArray(dir + "/k5.ra", randomArray(Shape{1, n, spokes + 1, 2}, 3));
  expectError([&] { io::loadDataset(dir + "/k5.ra", lo); }, "does not match the trajectory " + dir + "/traj.ra");
}
