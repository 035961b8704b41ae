// Bad input through loadDataset, for the loaders that need no file-format library (BART .cfl/.hdr,
// RawArray .ra): truncated files, wrong or huge dimensions, NaN/Inf, inconsistent coil counts, unknown
// versions. Each must be one clear Error naming the file, never a crash or a huge allocation.
// ISMRMRD's cases: test_io_ismrmrd.cpp and test_io_ismrmrd_hardening.cpp.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <random>

#include "larmor/io/cfl.hpp"
#include "larmor/io/dataset_io.hpp"
#include "larmor/io/rawarray.hpp"
#include "test_io_export_util.hpp"

using namespace larmor;
using namespace larmor::testing;

namespace {

CArray kspace(const Shape& s, unsigned seed = 5) {
  CArray a(s);
  std::mt19937 rng(seed);
  std::normal_distribution<float> g;
  for (index_t i = 0; i < a.size(); ++i) a[i] = cfloat(g(rng), g(rng));
  return a;
}

void writeText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Both k-space formats: the same array as .cfl and as .ra; returns the two paths.
std::vector<std::string> writeBoth(const std::string& dir, const std::string& name, const CArray& k) {
  io::writeCfl(dir + "/" + name + ".cfl", k);
  io::writeRawArray(dir + "/" + name + ".ra", k);
  return {dir + "/" + name + ".cfl", dir + "/" + name + ".ra"};
}

}  // namespace

TEST(LoaderHardening, TruncatedData) {
  const std::string dir = freshTestDir("hardening");
  for (const auto& path : writeBoth(dir, "k", kspace(Shape{8, 6, 1, 2}))) {
    fs::resize_file(path, fs::file_size(path) - 5);
    expectError([&] { io::loadDataset(path); }, path);
    fs::resize_file(path, 3);
    expectError([&] { io::loadDataset(path); }, path);
    fs::resize_file(path, 0);
    expectError([&] { io::loadDataset(path); }, path);
  }
  // .hdr cut before the dimensions line is complete, or empty.
  writeText(dir + "/k.hdr", "# Dimensions\n");
  expectError([&] { io::loadDataset(dir + "/k.cfl"); }, "k.hdr: no dimensions after '# Dimensions'");
  writeText(dir + "/k.hdr", "");
  expectError([&] { io::loadDataset(dir + "/k.cfl"); }, "k.hdr: not a BART header");
}

TEST(LoaderHardening, HugeOrWrongDimensionsAllocateNothing) {
  const std::string dir = freshTestDir("hardening");
  io::writeCfl(dir + "/k.cfl", kspace(Shape{8, 6}));
  // Dimensions whose product overflows, and dimensions a small file cannot hold.
  writeText(dir + "/k.hdr", "# Dimensions\n4294967296 4294967296 4294967296 1\n");
  expectError([&] { io::loadDataset(dir + "/k.cfl"); }, "are too large");
  writeText(dir + "/k.hdr", "# Dimensions\n65536 65536 256 32 1\n");
  expectError([&] { io::loadDataset(dir + "/k.cfl"); }, "holds 384 bytes but");
  writeText(dir + "/k.hdr", "# Dimensions\n8 -6 1\n");
  expectError([&] { io::loadDataset(dir + "/k.cfl"); }, "dimension -6 is not positive");
  writeText(dir + "/k.hdr", "# Dimensions\n8 six 1\n");
  expectError([&] { io::loadDataset(dir + "/k.cfl"); }, "dimension 'six' is not an integer");
  writeText(dir + "/k.hdr", "# Dimensions\n99999999999999999999999 1\n");
  expectError([&] { io::loadDataset(dir + "/k.cfl"); }, "is too large");
  // A mislabelled large file as .hdr is refused by its size, not read line by line.
  {
    std::ofstream big(dir + "/big.hdr", std::ios::binary);
    big << std::string(2 << 20, 'x');
  }
  writeText(dir + "/big.cfl", "");
  expectError([&] { io::loadDataset(dir + "/big.cfl"); }, "too large for a BART header");
  // Dimensions Larmor does not read: BART dimension 4 (maps) used.
  std::vector<index_t> dims(6, 1);
  dims[0] = 4, dims[1] = 4, dims[4] = 2;
  for (const auto& path : writeBoth(dir, "four", kspace(Shape(dims))))
    expectError([&] { io::loadDataset(path); }, "uses BART dimension 4");
  // TE (dimension 5) holds frames (io/series.hpp): one Dataset cannot take two, and says how to select.
  dims[4] = 1, dims[5] = 2;
  for (const auto& path : writeBoth(dir, "six", kspace(Shape(dims))))
    expectError([&] { io::loadDataset(path); }, "holds 2 frames (2 contrasts); select one with --contrast N");
}

TEST(LoaderHardening, NonFiniteSamples) {
  const std::string dir = freshTestDir("hardening");
  CArray k = kspace(Shape{8, 6, 1, 2});
  k[17] = cfloat(std::numeric_limits<float>::quiet_NaN(), 0);
  for (const auto& path : writeBoth(dir, "nan", k)) expectError([&] { io::loadDataset(path); }, "is NaN");
  k[17] = cfloat(0, -std::numeric_limits<float>::infinity());
  for (const auto& path : writeBoth(dir, "inf", k)) expectError([&] { io::loadDataset(path); }, "is Inf");
  // A trajectory with NaN, or with absurd coordinates (it would imply an enormous matrix).
  CArray t(Shape{3, 8, 2}, cfloat(0.5f, 0));
  io::writeCfl(dir + "/k1.cfl", kspace(Shape{1, 8, 2, 2}));
  t[4] = cfloat(std::numeric_limits<float>::quiet_NaN(), 0);
  io::writeCfl(dir + "/t.cfl", t);
  io::LoadOptions lo;
  lo.trajectoryPath = dir + "/t.cfl";
  expectError([&] { io::loadDataset(dir + "/k1.cfl", lo); }, "t.cfl: coordinate 1 of sample 1 is NaN");
  t[4] = cfloat(1e30f, 0);
  io::writeCfl(dir + "/t.cfl", t);
  expectError([&] { io::loadDataset(dir + "/k1.cfl", lo); }, "beyond any plausible k-space extent");
}

TEST(LoaderHardening, InconsistentCoilsAndTrajectories) {
  const std::string dir = freshTestDir("hardening");
  CArray t(Shape{3, 8, 4}, cfloat(0, 0));
  for (index_t i = 0; i < t.size(); i += 3) t[i] = cfloat(static_cast<float>(i % 7) - 3, 0);
  io::writeCfl(dir + "/t.cfl", t);
  io::LoadOptions lo;
  lo.trajectoryPath = dir + "/t.cfl";
  // k-space with 5 spokes for a 4-spoke trajectory; coils in the wrong dimension.
  for (const auto& path : writeBoth(dir, "k", kspace(Shape{1, 8, 5, 2})))
    expectError([&] { io::loadDataset(path, lo); }, "does not match the trajectory");
  for (const auto& path : writeBoth(dir, "kc", kspace(Shape{2, 8, 4})))
    expectError([&] { io::loadDataset(path, lo); }, "does not match the trajectory");
  CArray t4(Shape{4, 8, 4});
  io::writeCfl(dir + "/t4.cfl", t4);
  lo.trajectoryPath = dir + "/t4.cfl";
  expectError([&] { io::loadDataset(dir + "/k.cfl", lo); }, "must have 3 coordinates in dimension 0");
  lo.trajectoryPath = dir + "/missing.cfl";
  expectError([&] { io::loadDataset(dir + "/k.cfl", lo); }, "missing.hdr: no such file");
}

TEST(LoaderHardening, UnknownVersionsAndTypes) {
  const std::string dir = freshTestDir("hardening");
  io::writeRawArray(dir + "/k.ra", kspace(Shape{8, 6, 1, 2}));
  std::string bytes = slurpFile(dir + "/k.ra");
  bytes[8] = 0x10;  // a flag bit this reader does not know
  std::ofstream(dir + "/v.ra", std::ios::binary) << bytes;
  expectError([&] { io::loadDataset(dir + "/v.ra"); }, "v.ra: unknown RawArray flags 0x10");
  bytes[8] = 0;
  bytes[16] = 3;  // float
  std::ofstream(dir + "/f.ra", std::ios::binary) << bytes;
  expectError([&] { io::loadDataset(dir + "/f.ra"); }, "f.ra: RawArray holds float");
  writeText(dir + "/notes.txt", "hello");
  expectError([&] { io::loadDataset(dir + "/notes.txt"); }, "unknown file type '.txt'");
}

TEST(LoaderHardening, FuzzCorpusRegressions) {
  // Inputs the fuzzers (tests/fuzz) found or that exercise the same paths; each must be an Error.
  const std::string dir = freshTestDir("hardening");
  // A dimensions line with a very long run of digits and spaces.
  writeText(dir + "/a.hdr", "# Dimensions\n" + std::string(5000, '1') + "\n");
  writeText(dir + "/a.cfl", "");
  expectError([&] { io::loadDataset(dir + "/a.cfl"); }, "a.hdr");
  // 65 dimensions of 1.
  std::string line;
  for (int i = 0; i < 65; ++i) line += "1 ";
  writeText(dir + "/b.hdr", "# Dimensions\n" + line + "\n");
  writeText(dir + "/b.cfl", "12345678");
  expectError([&] { io::loadDataset(dir + "/b.cfl"); }, "more than 64 dimensions");
}
