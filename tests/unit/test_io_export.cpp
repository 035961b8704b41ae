// Image export without DICOM: choosing the output by path, failing fast, BART and PNG output, the
// geometry both DICOM and NIfTI use, components and windows. (DICOM: test_io_ismrmrd_dicom.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "larmor/io/cfl.hpp"
#include "larmor/io/export.hpp"
#include "larmor/io/image_geometry.hpp"
#include "test_io_export_util.hpp"

using namespace larmor;
using namespace larmor::testing;

namespace {

std::uint32_t be32(const std::string& s, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

double dist(const io::Vec3& a, const std::array<double, 3>& b) {
  return std::hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
}

}  // namespace

TEST(IoExport, OutputKindByPath) {
  const std::string dir = freshTestDir("io-export");
  EXPECT_EQ(io::outputKind("out/series/"), io::OutputKind::Dicom);
  EXPECT_EQ(io::outputKind(dir), io::OutputKind::Dicom);  // an existing directory, no slash
  EXPECT_EQ(io::outputKind("a/b.nii"), io::OutputKind::Nifti);
  EXPECT_EQ(io::outputKind("a/b.NII"), io::OutputKind::Nifti);
  EXPECT_EQ(io::outputKind("b.cfl"), io::OutputKind::Bart);
  EXPECT_EQ(io::outputKind("b.png"), io::OutputKind::Png);
  const std::string e = expectError([] { io::outputKind("b.jpg"); }, "b.jpg: unsupported output '.jpg'");
  for (const char* s : {"DIR/", ".nii", ".cfl", ".png"}) EXPECT_NE(e.find(s), std::string::npos) << e;
  expectError([] { io::outputKind("b"); }, "(no extension)");
  expectError([] { io::outputKind("b.nii.gz"); }, ".nii.gz) is not supported");
  expectError([] { io::outputKind("b.dcm"); }, "end the path with '/'");
  expectError([] { io::outputKind(""); }, "no output path");
}

TEST(IoExport, CheckOutputPathFailsFast) {
  const std::string dir = freshTestDir("io-export");
  for (const char* name : {"/missing/out.nii", "/missing/out.cfl", "/missing/out.png"})
    expectError([&] { io::checkOutputPath(dir + name); }, "does not exist");
  expectError([&] { io::checkOutputPath(dir + "/out.tiff"); }, "unsupported output");
  io::ExportOptions bad;
  bad.components = {"magnitude", "modulus"};
  expectError([&] { io::checkOutputPath(dir + "/out.nii", bad); }, "image component 'modulus' is unknown");
  io::ExportOptions window;
  window.windowWidth = -1;
  expectError([&] { io::checkOutputPath(dir + "/out.nii", window); }, "window width");
  io::checkOutputPath(dir + "/out.nii");  // fine: nothing is written
  io::checkOutputPath(dir + "/out.png");
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(IoExport, BartImageKeepsSlicesAtDimension13) {
  const std::string dir = freshTestDir("io-export");
  const auto rc = reconstructPhantom(16, 12, 1, 3);
  const auto report = io::writeImageOutput(dir + "/img.cfl", rc.r, rc.d);
  EXPECT_EQ(report.kind, io::OutputKind::Bart);
  ASSERT_EQ(report.files.size(), 2u);
  const CArray back = io::readCfl(dir + "/img.cfl");
  ASSERT_EQ(back.shape().rank(), 14u) << back.shape().str();
  EXPECT_EQ(back.shape()[0], 16);
  EXPECT_EQ(back.shape()[1], 12);
  EXPECT_EQ(back.shape()[13], 3);
  for (index_t i = 0; i < back.size(); ++i) ASSERT_EQ(back[i], rc.r.image[i]);

  // A single slice: [x, y] only (BART drops trailing ones), and coils stay in dimension 3.
  CArray one(Shape{4, 3, 1, 1, 1}, cfloat(1, 2));
  EXPECT_EQ(io::toBartImage(one).shape(), (Shape{4, 3, 1}));
  CArray coils(Shape{4, 3, 1, 2, 1});
  EXPECT_EQ(io::toBartImage(coils).shape(), (Shape{4, 3, 1, 2}));
}

TEST(IoExport, PngMosaicForSlicesMiddlePartitionFor3D) {
  const std::string dir = freshTestDir("io-export");
  const auto ms = reconstructPhantom(16, 12, 1, 3);
  io::writeImageOutput(dir + "/ms.png", ms.r, ms.d);
  std::string png = slurpFile(dir + "/ms.png");
  ASSERT_GT(png.size(), 24u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  EXPECT_EQ(be32(png, 16), 16u * 3);  // IHDR width: three slices side by side
  EXPECT_EQ(be32(png, 20), 12u);

  const auto vol = reconstructPhantom(16, 12, 8, 1);
  io::writeImageOutput(dir + "/vol.png", vol.r, vol.d);
  png = slurpFile(dir + "/vol.png");
  EXPECT_EQ(be32(png, 16), 16u);  // one partition
  EXPECT_EQ(be32(png, 20), 12u);
}

TEST(IoExport, RefusesAnImageThatIsNotCombined) {
  const std::string dir = freshTestDir("io-export");
  auto rc = reconstructPhantom(8, 8, 1, 1);
  rc.r.image = CArray(Shape{8, 8, 1, 2, 1});
  expectError([&] { io::writeImageOutput(dir + "/x.nii", rc.r, rc.d); }, "expected a combined image");
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(IoExport, CancelledExportWritesNothing) {
  const std::string dir = freshTestDir("io-export");
  const auto rc = reconstructPhantom(8, 8, 1, 1);
  CancelToken token;
  token.cancel();
  const Progress p({}, &token);
  for (const char* name : {"/x.nii", "/x.png", "/x.cfl"})
    EXPECT_THROW(io::writeImageOutput(dir + name, rc.r, rc.d, {}, p), Cancelled) << name;
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(IoExportGeometry, CentrePixelIsTheSlicePosition) {
  // The convention (docs/conventions.md): pixel floor(N/2) is the centre of the FOV, which ISMRMRD's
  // position gives; so pixel (nx/2, ny/2) of slice s must sit at slice s's centre.
  for (index_t nx : {16, 15})
    for (index_t ny : {12, 9}) {
      auto rc = reconstructPhantom(nx, ny, 1, 3);
      setObliqueGeometry(rc.d.header, 7.5);
      const io::ImageGeometry g = io::imageGeometry(rc.d.header, rc.r.image.shape());
      EXPECT_TRUE(g.fromData);
      EXPECT_TRUE(g.warnings.empty()) << g.warnings.front();
      ASSERT_EQ(g.planes(), 3);
      EXPECT_NEAR(g.spacingX, 256.0 / static_cast<double>(nx), 1e-9);
      EXPECT_NEAR(g.spacingY, 256.0 / static_cast<double>(ny), 1e-9);
      EXPECT_NEAR(g.sliceThickness, 4, 1e-9);
      EXPECT_NEAR(g.planeSpacing, 7.5, 1e-4);
      for (index_t s = 0; s < 3; ++s) {
        const auto c = g.position(s, static_cast<double>(nx / 2), static_cast<double>(ny / 2));
        EXPECT_LT(dist(c, sliceCentre(rc.d.header, s)), 1e-4) << "slice " << s << " nx " << nx << " ny " << ny;
      }
      // Orthonormal, and the row direction is the read direction.
      const auto& h = rc.d.header.geometry;
      EXPECT_NEAR(g.row[0], h.readDir[0], 1e-6);
      EXPECT_NEAR(g.column[2], h.phaseDir[2], 1e-6);
      EXPECT_NEAR(g.row[0] * g.column[0] + g.row[1] * g.column[1] + g.row[2] * g.column[2], 0, 1e-12);
    }
}

TEST(IoExportGeometry, PartitionsOf3DAreOneThicknessApart) {
  const auto rc = reconstructPhantom(16, 12, 8, 1);
  const io::ImageGeometry g = io::imageGeometry(rc.d.header, rc.r.image.shape());
  EXPECT_TRUE(g.threeD);
  ASSERT_EQ(g.planes(), 8);
  EXPECT_NEAR(g.sliceThickness, 256.0 / 8, 1e-9);
  EXPECT_NEAR(g.planeSpacing, 256.0 / 8, 1e-9);
  // Partition nz/2 holds the centre; the others step along the slice direction.
  const auto c = g.position(4, 8, 6);
  EXPECT_LT(std::hypot(c[0], c[1], c[2]), 1e-9);
  EXPECT_NEAR(g.topLeft[5][2] - g.topLeft[4][2], 32, 1e-9);
}

TEST(IoExportGeometry, MissingOrDegenerateGeometryFallsBackWithAWarning) {
  auto rc = reconstructPhantom(8, 8, 1, 2);
  rc.d.header.geometry.present = false;
  io::ImageGeometry g = io::imageGeometry(rc.d.header, rc.r.image.shape());
  EXPECT_FALSE(g.fromData);
  ASSERT_FALSE(g.warnings.empty());
  EXPECT_NE(g.warnings[0].find("no geometry"), std::string::npos) << g.warnings[0];
  EXPECT_EQ(g.row, (io::Vec3{1, 0, 0}));
  EXPECT_EQ(g.column, (io::Vec3{0, 1, 0}));

  rc.d.header.geometry.present = true;
  for (int k = 0; k < 3; ++k) rc.d.header.geometry.phaseDir[k] = rc.d.header.geometry.readDir[k];  // parallel
  g = io::imageGeometry(rc.d.header, rc.r.image.shape());
  EXPECT_FALSE(g.fromData);
  ASSERT_FALSE(g.warnings.empty());
  EXPECT_NE(g.warnings[0].find("degenerate"), std::string::npos) << g.warnings[0];

  rc.d.header.geometry.readDir[0] = std::nanf("");
  g = io::imageGeometry(rc.d.header, rc.r.image.shape());
  EXPECT_FALSE(g.fromData);
  for (const auto& p : g.topLeft) EXPECT_TRUE(std::isfinite(p[0]) && std::isfinite(p[1]) && std::isfinite(p[2]));
}

TEST(IoExportGeometry, UnevenSlicesHaveNoSpacing) {
  auto rc = reconstructPhantom(8, 8, 1, 3);
  rc.d.header.geometry.slicePositions = {0, 5, 12};
  const io::ImageGeometry g = io::imageGeometry(rc.d.header, rc.r.image.shape());
  EXPECT_EQ(g.planeSpacing, 0);
  EXPECT_NEAR(g.topLeft[2][2] - g.topLeft[1][2], 7, 1e-6);
}

TEST(IoExportComponents, ExtractAndWindow) {
  CArray z(Shape{4, 1, 1, 1, 1});
  z[0] = cfloat(3, 4), z[1] = cfloat(-1, 0), z[2] = cfloat(0, -2), z[3] = cfloat(0, 0);
  const RArray m = io::extractComponent(z, io::ImageComponent::Magnitude);
  const RArray p = io::extractComponent(z, io::ImageComponent::Phase);
  const RArray re = io::extractComponent(z, io::ImageComponent::Real);
  const RArray im = io::extractComponent(z, io::ImageComponent::Imaginary);
  EXPECT_FLOAT_EQ(m[0], 5);
  EXPECT_FLOAT_EQ(p[1], std::numbers::pi_v<float>);
  EXPECT_FLOAT_EQ(p[2], -std::numbers::pi_v<float> / 2);
  EXPECT_FLOAT_EQ(re[1], -1);
  EXPECT_FLOAT_EQ(im[2], -2);
  double lo, hi;
  io::automaticWindow(p, io::ImageComponent::Phase, lo, hi);
  EXPECT_DOUBLE_EQ(lo, -std::numbers::pi);
  EXPECT_DOUBLE_EQ(hi, std::numbers::pi);
  RArray ramp(Shape{1000});
  for (index_t i = 0; i < 1000; ++i) ramp[i] = static_cast<float>(i);
  ramp[999] = 1e9f;  // one outlier does not set the window
  io::automaticWindow(ramp, io::ImageComponent::Magnitude, lo, hi);
  EXPECT_EQ(lo, 0);
  EXPECT_NEAR(hi, 995, 1);
  RArray flat(Shape{10}, 2.f);
  io::automaticWindow(flat, io::ImageComponent::Real, lo, hi);
  EXPECT_GT(hi, lo);
  EXPECT_EQ(io::componentFromString("imaginary"), io::ImageComponent::Imaginary);
  expectError([] { io::componentFromString("MAGNITUDE"); }, "expected magnitude, phase, real or imaginary");
}
