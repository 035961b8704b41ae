// NIfTI-1 output, checked by reading the bytes back: header fields, the affine (RAS) against the
// slice centres the raw data's geometry defines, the qform against the sform, complex voxels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "larmor/io/export.hpp"
#include "larmor/io/nifti.hpp"
#include "test_io_export_util.hpp"

using namespace larmor;
using namespace larmor::testing;

namespace {

struct NiftiFile {
  std::string bytes;
  template <class T>
  T at(std::size_t offset) const {
    T v;
    std::memcpy(&v, bytes.data() + offset, sizeof(T));  // the writer is little-endian, as is x86
    return v;
  }
  std::int16_t dim(int i) const { return at<std::int16_t>(40 + 2 * static_cast<std::size_t>(i)); }
  float pixdim(int i) const { return at<float>(76 + 4 * static_cast<std::size_t>(i)); }
  double srow(int r, int c) const { return at<float>(280 + 16 * static_cast<std::size_t>(r) + 4 * static_cast<std::size_t>(c)); }
  std::array<double, 3> sform(double i, double j, double k) const {
    std::array<double, 3> out{};
    for (int r = 0; r < 3; ++r) out[static_cast<std::size_t>(r)] = srow(r, 0) * i + srow(r, 1) * j + srow(r, 2) * k + srow(r, 3);
    return out;
  }
  // NIfTI-1's qform: rotation from the quaternion, [x y z] = R [i, j, qfac k] * pixdim + qoffset.
  std::array<double, 3> qform(double i, double j, double k) const {
    const double b = at<float>(256), c = at<float>(260), d = at<float>(264);
    const double a = std::sqrt(std::max(0.0, 1 - b * b - c * c - d * d));
    const double R[3][3] = {{a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)},
                            {2 * (b * c + a * d), a * a + c * c - b * b - d * d, 2 * (c * d - a * b)},
                            {2 * (b * d - a * c), 2 * (c * d + a * b), a * a + d * d - c * c - b * b}};
    const double qfac = pixdim(0) < 0 ? -1 : 1;
    const double v[3] = {i * pixdim(1), j * pixdim(2), qfac * k * pixdim(3)};
    std::array<double, 3> out{};
    for (int r = 0; r < 3; ++r)
      out[static_cast<std::size_t>(r)] = R[r][0] * v[0] + R[r][1] * v[1] + R[r][2] * v[2] + at<float>(268 + 4 * static_cast<std::size_t>(r));
    return out;
  }
};

NiftiFile readNifti(const std::string& path) { return NiftiFile{slurpFile(path)}; }

// LPS (DICOM, ISMRMRD) -> RAS (NIfTI)
std::array<double, 3> ras(const std::array<double, 3>& lps) { return {-lps[0], -lps[1], lps[2]}; }

double dist(const std::array<double, 3>& a, const std::array<double, 3>& b) {
  return std::hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
}

}  // namespace

TEST(IoNifti, HeaderFieldsAndMagnitudeVoxels) {
  const std::string dir = freshTestDir("io-nifti");
  const auto rc = reconstructPhantom(16, 12, 1, 3);
  io::ExportOptions o;
  o.windowCenter = 0.4f, o.windowWidth = 0.6f;
  const auto report = io::writeImageOutput(dir + "/img.nii", rc.r, rc.d, o);
  EXPECT_EQ(report.kind, io::OutputKind::Nifti);
  const NiftiFile f = readNifti(dir + "/img.nii");
  ASSERT_EQ(f.bytes.size(), 352u + 16 * 12 * 3 * 4);
  EXPECT_EQ(f.at<std::int32_t>(0), 348);
  EXPECT_EQ(std::memcmp(f.bytes.data() + 344, "n+1\0", 4), 0);
  EXPECT_EQ(f.dim(0), 3);
  EXPECT_EQ(f.dim(1), 16);
  EXPECT_EQ(f.dim(2), 12);
  EXPECT_EQ(f.dim(3), 3);
  EXPECT_EQ(f.at<std::int16_t>(70), 16);  // FLOAT32
  EXPECT_EQ(f.at<std::int16_t>(72), 32);
  EXPECT_FLOAT_EQ(f.at<float>(108), 352);  // vox_offset
  EXPECT_EQ(static_cast<int>(f.at<std::uint8_t>(123)), 2);  // mm
  EXPECT_EQ(f.at<std::int16_t>(252), 1);  // qform_code scanner
  EXPECT_EQ(f.at<std::int16_t>(254), 1);  // sform_code scanner
  EXPECT_FLOAT_EQ(f.pixdim(1), 16.f);     // 256 mm / 16
  EXPECT_NEAR(f.pixdim(2), 256.0 / 12, 1e-5);
  EXPECT_NEAR(f.pixdim(3), 4, 1e-5);      // simulator: slices one thickness apart
  EXPECT_FLOAT_EQ(f.at<float>(128), 0.1f);  // cal_min = centre - width/2
  EXPECT_FLOAT_EQ(f.at<float>(124), 0.7f);
  EXPECT_NE(std::string(f.bytes.data() + 148).find("Larmor"), std::string::npos);
  for (index_t i = 0; i < rc.r.image.size(); ++i)
    ASSERT_FLOAT_EQ(f.at<float>(352 + 4 * static_cast<std::size_t>(i)), std::abs(rc.r.image[i])) << i;
}

TEST(IoNifti, AffineMapsSliceCentresObliqueInRas) {
  const std::string dir = freshTestDir("io-nifti");
  for (double gap : {6.0, -6.0}) {  // slices along +normal, and along -normal (left-handed voxel grid)
    auto rc = reconstructPhantom(16, 12, 1, 3);
    setObliqueGeometry(rc.d.header, gap);
    io::writeImageOutput(dir + "/obl.nii", rc.r, rc.d);
    const NiftiFile f = readNifti(dir + "/obl.nii");
    for (index_t s = 0; s < 3; ++s) {
      const auto want = ras(sliceCentre(rc.d.header, s));
      EXPECT_LT(dist(f.sform(8, 6, static_cast<double>(s)), want), 1e-3) << "gap " << gap << " slice " << s;
      EXPECT_LT(dist(f.qform(8, 6, static_cast<double>(s)), want), 1e-3) << "qform, gap " << gap << " slice " << s;
    }
    // One voxel step along i moves one pixel along the read direction (in RAS).
    const auto& g = rc.d.header.geometry;
    const auto a = f.sform(0, 0, 0), b = f.sform(1, 0, 0);
    EXPECT_NEAR(b[0] - a[0], -g.readDir[0] * 16, 1e-4);
    EXPECT_NEAR(b[2] - a[2], g.readDir[2] * 16, 1e-4);
    EXPECT_NEAR(f.pixdim(0), gap > 0 ? 1 : -1, 0) << "qfac";
  }
}

TEST(IoNifti, VolumeAndComplex) {
  const std::string dir = freshTestDir("io-nifti");
  auto rc = reconstructPhantom(16, 12, 8, 1);
  addPhaseRamp(rc.r);
  io::ExportOptions o;
  o.niftiComplex = true;
  io::writeImageOutput(dir + "/vol.nii", rc.r, rc.d, o);
  const NiftiFile f = readNifti(dir + "/vol.nii");
  EXPECT_EQ(f.dim(3), 8);
  EXPECT_EQ(f.at<std::int16_t>(70), 32);  // COMPLEX64
  EXPECT_EQ(f.at<std::int16_t>(72), 64);
  ASSERT_EQ(f.bytes.size(), 352u + 16 * 12 * 8 * 8);
  for (index_t i = 0; i < rc.r.image.size(); i += 7) {
    ASSERT_FLOAT_EQ(f.at<float>(352 + 8 * static_cast<std::size_t>(i)), rc.r.image[i].real());
    ASSERT_FLOAT_EQ(f.at<float>(356 + 8 * static_cast<std::size_t>(i)), rc.r.image[i].imag());
  }
  EXPECT_NEAR(f.pixdim(3), 32, 1e-5);
  // The centre voxel (8, 6, 4) is the isocentre (the simulator's position), in any frame.
  const auto c = f.sform(8, 6, 4);
  EXPECT_LT(std::hypot(c[0], c[1], c[2]), 1e-4);
  // Partition 5 lies 32 mm further along +z (superior: same sign in LPS and RAS).
  EXPECT_NEAR(f.sform(8, 6, 5)[2], 32, 1e-4);
}

TEST(IoNifti, NoGeometryWarnsAndFailedWriteLeavesNothing) {
  const std::string dir = freshTestDir("io-nifti");
  auto rc = reconstructPhantom(8, 8, 1, 1);
  rc.d.header.geometry.present = false;
  io::ExportOptions o;
  o.printWarnings = false;
  const auto report = io::writeImageOutput(dir + "/plain.nii", rc.r, rc.d, o);
  ASSERT_FALSE(report.warnings.empty());
  EXPECT_NE(report.warnings[0].find("no geometry"), std::string::npos);
  expectError([&] { io::writeImageOutput(dir + "/no/such/dir/x.nii", rc.r, rc.d, o); }, "does not exist");
  // Only the successful file is there (no temporaries).
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"plain.nii"});
}
