#include "larmor/io/nifti.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

#include "larmor/util/atomic_file.hpp"

namespace larmor::io {

namespace {

// NIfTI-1 constants (nifti1.h defines them; the values are the format, not code).
constexpr std::int16_t kFloat32 = 16, kComplex64 = 32;
constexpr std::int16_t kXformScannerAnat = 1;
constexpr std::uint8_t kUnitsMm = 2;
constexpr std::size_t kHeaderBytes = 348, kVoxOffset = 352;

// Little-endian stores into the header buffer at the offsets of the nifti_1_header struct.
class HeaderBuffer {
 public:
  HeaderBuffer() : b_(kVoxOffset, 0) {}
  template <class T>
  void put(std::size_t offset, T v) {
    static_assert(std::is_arithmetic_v<T>);
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    if constexpr (std::endian::native == std::endian::big) std::reverse(bytes, bytes + sizeof(T));
    std::memcpy(b_.data() + offset, bytes, sizeof(T));
  }
  void putText(std::size_t offset, const std::string& s, std::size_t field) {
    std::memcpy(b_.data() + offset, s.data(), std::min(s.size(), field - 1));  // keep a terminating NUL
  }
  const std::vector<char>& bytes() const { return b_; }

 private:
  std::vector<char> b_;
};

using M3 = std::array<std::array<double, 3>, 3>;

// Quaternion (b, c, d; a >= 0 implied) of a proper rotation matrix (Shepperd's method: take the largest
// of the four squared components for numerical stability).
void rotationToQuaternion(const M3& r, double& b, double& c, double& d) {
  const double tr = r[0][0] + r[1][1] + r[2][2];
  double a;
  if (tr > 0) {
    const double s = 2 * std::sqrt(1 + tr);
    a = s / 4, b = (r[2][1] - r[1][2]) / s, c = (r[0][2] - r[2][0]) / s, d = (r[1][0] - r[0][1]) / s;
  } else if (r[0][0] > r[1][1] && r[0][0] > r[2][2]) {
    const double s = 2 * std::sqrt(1 + r[0][0] - r[1][1] - r[2][2]);
    a = (r[2][1] - r[1][2]) / s, b = s / 4, c = (r[0][1] + r[1][0]) / s, d = (r[0][2] + r[2][0]) / s;
  } else if (r[1][1] > r[2][2]) {
    const double s = 2 * std::sqrt(1 + r[1][1] - r[0][0] - r[2][2]);
    a = (r[0][2] - r[2][0]) / s, b = (r[0][1] + r[1][0]) / s, c = s / 4, d = (r[1][2] + r[2][1]) / s;
  } else {
    const double s = 2 * std::sqrt(1 + r[2][2] - r[0][0] - r[1][1]);
    a = (r[1][0] - r[0][1]) / s, b = (r[0][2] + r[2][0]) / s, c = (r[1][2] + r[2][1]) / s, d = s / 4;
  }
  if (a < 0) b = -b, c = -c, d = -d;  // NIfTI stores a >= 0 implicitly
}

}  // namespace

Affine niftiAffine(const ImageGeometry& g, std::vector<std::string>* warnings) {
  require(!g.topLeft.empty(), "NIfTI: empty geometry");
  // Planes stacked along k: all planes of a single slab / all 2D slices; with several 3D slabs only the
  // partitions of slab 0 (the 4th dimension holds the slabs).
  const bool slabs = g.threeD && g.slices > 1;
  const index_t stack = slabs ? g.nz : g.planes();
  const Vec3& p0 = g.topLeft[0];
  Vec3 step;
  if (stack > 1) {
    const Vec3& pl = g.topLeft[static_cast<std::size_t>(stack - 1)];
    for (int i = 0; i < 3; ++i) step[static_cast<std::size_t>(i)] = (pl[i] - p0[i]) / static_cast<double>(stack - 1);
    if (!slabs && g.planeSpacing == 0 && warnings)
      warnings->push_back("the slices are not evenly spaced; the NIfTI affine uses their mean spacing");
  } else {
    for (int i = 0; i < 3; ++i) step[static_cast<std::size_t>(i)] = g.sliceDir[i] * g.sliceThickness;
  }
  // LPS -> RAS: negate x and y.
  const double flip[3] = {-1, -1, 1};
  Affine a{};
  for (int r = 0; r < 3; ++r) {
    a[r][0] = flip[r] * g.row[r] * g.spacingX;
    a[r][1] = flip[r] * g.column[r] * g.spacingY;
    a[r][2] = flip[r] * step[r];
    a[r][3] = flip[r] * p0[r];
  }
  return a;
}

namespace {

// The qform: pixdim and a rotation. The rotation's third column is the unit normal with the sign of the
// plane step (the affine a's third column); qfac (pixdim[0]) = -1 records a left-handed voxel grid (NIfTI-1's
// convention).
void putQform(HeaderBuffer& h, const ImageGeometry& g, const Affine& a) {
  M3 r{};
  const Vec3 n = g.normal();
  const double flip[3] = {-1, -1, 1};
  const double stepDotN = a[0][2] * flip[0] * n[0] + a[1][2] * flip[1] * n[1] + a[2][2] * n[2];
  for (int i = 0; i < 3; ++i) {
    r[i][0] = flip[i] * g.row[i];
    r[i][1] = flip[i] * g.column[i];
    r[i][2] = flip[i] * n[i] * (stepDotN < 0 ? -1 : 1);
  }
  const double det = r[0][0] * (r[1][1] * r[2][2] - r[1][2] * r[2][1]) - r[0][1] * (r[1][0] * r[2][2] - r[1][2] * r[2][0]) +
                     r[0][2] * (r[1][0] * r[2][1] - r[1][1] * r[2][0]);
  const double qfac = det < 0 ? -1 : 1;
  if (qfac < 0)
    for (int i = 0; i < 3; ++i) r[i][2] = -r[i][2];
  double qb, qc, qd;
  rotationToQuaternion(r, qb, qc, qd);
  // The qform's k spacing is the step's component along the normal (equal to |step| for the usual
  // perpendicular stacks; the sform keeps an oblique step exactly).
  const double pixdim[8] = {qfac, g.spacingX, g.spacingY, std::max(std::abs(stepDotN), 1e-6), 1, 1, 1, 1};
  for (int i = 0; i < 8; ++i) h.put<float>(76 + 4 * i, static_cast<float>(pixdim[i]));
  h.put<std::int16_t>(252, kXformScannerAnat);  // qform_code
  h.put<float>(256, static_cast<float>(qb));
  h.put<float>(260, static_cast<float>(qc));
  h.put<float>(264, static_cast<float>(qd));
  for (int i = 0; i < 3; ++i) h.put<float>(268 + 4 * i, static_cast<float>(a[i][3]));
}

// The header: dimensions (frames in dimension 4, or 5 when several 3D slabs hold dimension 4), data type, the
// qform and sform from the affine a, display range and description.
HeaderBuffer niftiHeader(const ImageGeometry& g, const Affine& a, index_t frames, const NiftiOptions& o) {
  const bool slabs = g.threeD && g.slices > 1;
  HeaderBuffer h;
  h.put<std::int32_t>(0, static_cast<std::int32_t>(kHeaderBytes));  // sizeof_hdr
  h.put<char>(38, 'r');                                              // regular (ANALYZE heritage)
  const int rank = (slabs ? 4 : 3) + (frames > 1 ? 1 : 0);
  const std::int16_t dims[8] = {static_cast<std::int16_t>(rank),
                                static_cast<std::int16_t>(g.nx),
                                static_cast<std::int16_t>(g.ny),
                                static_cast<std::int16_t>(slabs ? g.nz : g.planes()),
                                static_cast<std::int16_t>(slabs ? g.slices : frames),
                                static_cast<std::int16_t>(slabs ? frames : 1),
                                1, 1};
  for (int i = 0; i < 8; ++i) h.put<std::int16_t>(40 + 2 * i, dims[i]);
  h.put<std::int16_t>(70, o.complex ? kComplex64 : kFloat32);  // datatype
  h.put<std::int16_t>(72, o.complex ? 64 : 32);                // bitpix
  putQform(h, g, a);
  h.put<float>(108, static_cast<float>(kVoxOffset));  // vox_offset
  h.put<float>(112, 1.f);                              // scl_slope: stored values are the image values
  h.put<float>(116, 0.f);                              // scl_inter
  h.put<std::uint8_t>(123, kUnitsMm);                  // xyzt_units
  h.put<float>(124, static_cast<float>(o.calMax));
  h.put<float>(128, static_cast<float>(o.calMin));
  h.putText(148, o.description, 80);
  h.put<std::int16_t>(254, kXformScannerAnat);  // sform_code
  for (int row = 0; row < 3; ++row)
    for (int c = 0; c < 4; ++c) h.put<float>(280 + 16 * row + 4 * c, static_cast<float>(a[row][c]));
  h.putText(344, std::string("n+1", 3), 4);  // magic "n+1\0": header and data in one file
  return h;
}

// Voxels, little-endian: complex64 as interleaved (re, im) float32 pairs, which is cfloat's layout, or magnitudes.
std::vector<float> voxelData(const CArray& image, bool complex) {
  const index_t count = image.size();
  std::vector<float> data(static_cast<std::size_t>(complex ? 2 * count : count));
  for (index_t i = 0; i < count; ++i) {
    const cfloat v = image[i];
    if (complex) {
      data[static_cast<std::size_t>(2 * i)] = v.real();
      data[static_cast<std::size_t>(2 * i + 1)] = v.imag();
    } else {
      data[static_cast<std::size_t>(i)] = std::abs(v);
    }
  }
  if constexpr (std::endian::native == std::endian::big) {
    for (auto& f : data) {
      std::uint32_t u;
      std::memcpy(&u, &f, 4);
      u = __builtin_bswap32(u);
      std::memcpy(&f, &u, 4);
    }
  }
  return data;
}

}  // namespace

std::vector<std::string> writeNifti(const std::string& path, const CArray& image, const ImageGeometry& g,
                                    const NiftiOptions& o) {
  std::vector<std::string> warnings;
  const index_t frames = std::max<index_t>(1, o.frames);
  require(image.size() == g.nx * g.ny * g.planes() * frames,
          path + ": image " + image.shape().str() + " does not match its geometry");
  for (index_t n : {g.nx, g.ny, g.nz, g.slices, g.planes(), frames})
    require(n <= 32767, path + ": NIfTI-1 dimensions are limited to 32767 (image " + image.shape().str() + ")");
  const bool slabs = g.threeD && g.slices > 1;
  if (slabs) warnings.push_back("several 3D slabs: written as 4D [x, y, z, slab] with the first slab's affine");
  const Affine a = niftiAffine(g, &warnings);
  const HeaderBuffer h = niftiHeader(g, a, frames, o);
  const std::vector<float> data = voxelData(image, o.complex);

  AtomicFile file(path);
  std::ofstream out(file.tempPath(), std::ios::binary | std::ios::trunc);
  if (!out) throw Error(path + ": cannot create the NIfTI file (" + std::strerror(errno) + ")");
  out.write(h.bytes().data(), static_cast<std::streamsize>(h.bytes().size()));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size() * sizeof(float)));
  out.close();
  if (!out) throw Error(path + ": write failed (" + std::strerror(errno) + ")");
  file.commit();
  return warnings;
}

}  // namespace larmor::io
