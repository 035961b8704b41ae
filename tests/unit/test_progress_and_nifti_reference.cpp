// Progress::Sub (util/progress.hpp): a stage's 0..1 onto a slice of the caller's bar, the prefix, clamping,
// nesting and the parent's cancellation. And NIfTI-1 as a reference image (io::readNiftiImage;
// compare anything with anything): our writer's .nii read back voxel for voxel, the same file gzip-compressed
// (.nii.gz), a big-endian file and the other datatypes built byte by byte here from the NIfTI-1 layout, bad
// files refused in one line naming them, and `larmor-cli compare --ref x.nii(.gz)` scoring our own export of
// an image against that image at ~0 %.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "larmor/io/image_geometry.hpp"
#include "larmor/io/nifti.hpp"
#include "larmor/util/error.hpp"
#include "larmor/util/progress.hpp"

using namespace larmor;
namespace fs = std::filesystem;

namespace {

std::string tmp(const std::string& name) {
  const fs::path d = fs::path(LARMOR_TEST_TMP) / ("progress-nifti-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return (d / name).string();
}

int sh(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

CArray testImage(index_t nx, index_t ny, index_t nz) {
  CArray a(Shape{nx, ny, nz});
  for (index_t i = 0; i < a.size(); ++i) a[i] = cfloat(0.25f * static_cast<float>(i % 97) + 0.5f, 0.1f * static_cast<float>(i % 13));
  return a;
}

/// A minimal NIfTI-1 header (little- or big-endian) for `dims` of `datatype`, data right after it (352).
std::vector<char> niftiBytes(const std::vector<short>& dims, short datatype, short bitpix, bool bigEndian,
                             float slope, float inter, const std::vector<char>& data) {
  std::vector<char> b(352, 0);
  auto put = [&](std::size_t at, const void* v, std::size_t n) {
    std::memcpy(b.data() + at, v, n);
    if (bigEndian) std::reverse(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + n));
  };
  const int hdr = 348;
  put(0, &hdr, 4);
  const short rank = static_cast<short>(dims.size());
  put(40, &rank, 2);
  for (std::size_t i = 0; i < dims.size(); ++i) put(42 + 2 * i, &dims[i], 2);
  put(70, &datatype, 2);
  put(72, &bitpix, 2);
  const float off = 352;
  put(108, &off, 4);
  put(112, &slope, 4);
  put(116, &inter, 4);
  std::memcpy(b.data() + 344, "n+1", 4);
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

void writeBytes(const std::string& path, const std::vector<char>& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(b.data(), static_cast<std::streamsize>(b.size()));
}

}  // namespace

TEST(ProgressSub, MapsPrefixesClampsNestsAndCancels) {
  std::vector<std::pair<double, std::string>> seen;
  CancelToken token;
  const Progress run([&](double f, const std::string& s) { seen.emplace_back(f, s); }, &token);
  const Progress::Sub stage(run, 0.2, 0.6, "cg: ");
  stage.report(0.0, "Q");
  stage.report(0.5, "Q");
  stage.report(1.0, "Q");
  stage.report(1.7, "over");   // clamped
  stage.report(-0.3, "under");
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_DOUBLE_EQ(seen[0].first, 0.2);
  EXPECT_DOUBLE_EQ(seen[1].first, 0.4);
  EXPECT_DOUBLE_EQ(seen[2].first, 0.6);
  EXPECT_DOUBLE_EQ(seen[3].first, 0.6);
  EXPECT_DOUBLE_EQ(seen[4].first, 0.2);
  EXPECT_EQ(seen[1].second, "cg: Q");
  const Progress::Sub inner(stage, 0.5, 1.0, "box ");  // [0.4, 0.6] of the run
  inner.report(0.5, "3");
  EXPECT_DOUBLE_EQ(seen.back().first, 0.5);
  EXPECT_EQ(seen.back().second, "cg: box 3");
  // The parent's token: both report and checkCancelled throw, and nothing reaches the callback.
  token.cancel();
  const std::size_t before = seen.size();
  EXPECT_THROW(inner.report(0.9, "x"), Cancelled);
  EXPECT_THROW(stage.checkCancelled(), Cancelled);
  EXPECT_EQ(seen.size(), before);
  // A Sub of a Progress without callback or token is silent.
  const Progress none;
  EXPECT_NO_THROW(Progress::Sub(none, 0, 1).report(0.5, "x"));
}

TEST(NiftiReference, OurExportReadsBackPlainAndGzipped) {
  const CArray img = testImage(12, 10, 3);
  io::ImageGeometry g;  // an axial stack: the reader takes voxels in stored order, whatever the affine
  g.nx = 12, g.ny = 10, g.nz = 3;
  g.threeD = true;
  for (int z = 0; z < 3; ++z) g.topLeft.push_back({-6, -5, static_cast<double>(z)});
  g.planeSpacing = 1;
  const std::string nii = tmp("ref.nii");
  io::NiftiOptions o;
  io::writeNifti(nii, img, g, o);
  const CArray back = io::readNiftiImage(nii);
  ASSERT_EQ(back.shape(), (Shape{12, 10, 3}));
  for (index_t i = 0; i < img.size(); ++i) {
    ASSERT_FLOAT_EQ(back[i].real(), std::abs(img[i])) << i;  // float32 magnitude
    ASSERT_EQ(back[i].imag(), 0.f);
  }
  ASSERT_EQ(sh("gzip -c " + nii + " > " + nii + ".gz"), 0);
  const CArray gz = io::readNiftiImage(nii + ".gz");
  ASSERT_EQ(gz.vec(), back.vec());
  // complex64 as stored.
  o.complex = true;
  io::writeNifti(tmp("c.nii"), img, g, o);
  EXPECT_EQ(io::readNiftiImage(tmp("c.nii")).vec(), img.vec());
}

TEST(NiftiReference, DatatypesScalingAndByteOrder) {
  // int16, big-endian, scl_slope 0.5, scl_inter 1: value = 0.5 v + 1, dims [3, 2, 2].
  std::vector<char> data;
  for (short v = -3; v < 9; ++v) {
    char c[2];
    std::memcpy(c, &v, 2);
    std::swap(c[0], c[1]);
    data.insert(data.end(), c, c + 2);
  }
  writeBytes(tmp("be.nii"), niftiBytes({3, 2, 2}, 4, 16, true, 0.5f, 1.f, data));
  const CArray be = io::readNiftiImage(tmp("be.nii"));
  ASSERT_EQ(be.shape(), (Shape{3, 2, 2}));
  for (index_t i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(be[i].real(), 0.5f * static_cast<float>(i - 3) + 1.f);
  // uint8, 4D [2, 2, 1, 3] -> [2, 2, 3]; slope 0 means unscaled.
  std::vector<char> u8;
  for (int i = 0; i < 12; ++i) u8.push_back(static_cast<char>(200 + i));
  writeBytes(tmp("u8.nii"), niftiBytes({2, 2, 1, 3}, 2, 8, false, 0.f, 5.f, u8));
  const CArray b = io::readNiftiImage(tmp("u8.nii"));
  ASSERT_EQ(b.shape(), (Shape{2, 2, 3}));
  EXPECT_FLOAT_EQ(b[11].real(), 211.f);
  // float64.
  std::vector<char> f64(4 * 8);
  const double vals[4] = {1.5, -2.25, 3e3, 0};
  std::memcpy(f64.data(), vals, sizeof vals);
  writeBytes(tmp("f64.nii"), niftiBytes({2, 2}, 64, 64, false, 1.f, 0.f, f64));
  EXPECT_FLOAT_EQ(io::readNiftiImage(tmp("f64.nii"))[2].real(), 3000.f);
}

TEST(NiftiReference, BadFilesAreOneLineErrorsNamingThem) {
  auto expectError = [](const std::string& path, const std::string& mention) {
    try {
      io::readNiftiImage(path);
      ADD_FAILURE() << path << " was read";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find(mention), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  };
  expectError(tmp("missing.nii"), "cannot open");
  writeBytes(tmp("short.nii"), std::vector<char>(100, 0));
  expectError(tmp("short.nii"), "too short");
  std::vector<char> data(4 * 6, 0);
  auto full = niftiBytes({3, 2}, 16, 32, false, 1, 0, data);
  writeBytes(tmp("trunc.nii"), std::vector<char>(full.begin(), full.end() - 5));
  expectError(tmp("trunc.nii"), "truncated");
  auto pair = full;
  std::memcpy(pair.data() + 344, "ni1", 4);
  writeBytes(tmp("pair.nii"), pair);
  expectError(tmp("pair.nii"), ".hdr/.img");
  auto n2 = full;
  const int v2 = 540;
  std::memcpy(n2.data(), &v2, 4);
  writeBytes(tmp("n2.nii"), n2);
  expectError(tmp("n2.nii"), "NIfTI-2");
  writeBytes(tmp("rgb.nii"), niftiBytes({3, 2}, 128, 24, false, 1, 0, std::vector<char>(18, 0)));
  expectError(tmp("rgb.nii"), "datatype 128");
  auto nan = niftiBytes({3, 2}, 16, 32, false, 1, 0, data);
  const float q = std::nanf("");
  std::memcpy(nan.data() + 352 + 8, &q, 4);
  writeBytes(tmp("nan.nii"), nan);
  expectError(tmp("nan.nii"), "not finite");
}

#ifdef LARMOR_HAVE_IO
TEST(NiftiReference, CliCompareTakesNiftiReferences) {
  const std::string cli = LARMOR_CLI, h5 = tmp("p.h5"), cfl = tmp("img.cfl"), nii = tmp("img.nii");
  const std::string quiet = " > " + tmp("cli.out") + " 2>&1";
  ASSERT_EQ(sh(cli + " simulate --matrix 48 --coils 4 --output " + h5 + quiet), 0);
  ASSERT_EQ(sh(cli + " recon " + h5 + " --method fft --device cpu --output " + cfl + quiet), 0);
  ASSERT_EQ(sh(cli + " recon " + h5 + " --method fft --device cpu --output " + nii + quiet), 0);
  ASSERT_EQ(sh("gzip -c " + nii + " > " + nii + ".gz"), 0);
  for (const std::string ref : {nii, nii + ".gz"}) {
    const std::string out = tmp("cmp.out");
    ASSERT_EQ(sh(cli + " compare --ref " + ref + " --test " + cfl + " > " + out + " 2>&1"), 0) << ref;
    std::ifstream f(out);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const auto at = text.find("percent error ");
    ASSERT_NE(at, std::string::npos) << text;
    EXPECT_LT(std::stod(text.substr(at + 14)), 0.01) << text;  // the SoS image against its own float32 export
  }
  // A broken reference: one line naming it, non-zero exit.
  writeBytes(tmp("bad.nii"), std::vector<char>(10, 0));
  EXPECT_NE(sh(cli + " compare --ref " + tmp("bad.nii") + " --test " + cfl + quiet), 0);
}
#endif
