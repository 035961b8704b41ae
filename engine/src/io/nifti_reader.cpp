// NIfTI-1 input (.nii, gzip-compressed .nii.gz) for reference images in comparisons (the GUI's
// "Reference file…", `larmor-cli compare --ref`): the voxels of a single-file NIfTI-1 volume, scaled by
// scl_slope / scl_inter, in the file's storage order (voxel (i, j, k) = pixel (x = i, y = j) of plane k,
// as io::writeNifti writes them). The header fields and their offsets are the format (nifti1.h, NIfTI-1
// Data Format Working Group, 2004); zlib's gzread reads plain and gzip files alike. Our own code.
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "larmor/io/nifti.hpp"
#include "larmor/recon/resources.hpp"
#include "larmor/util/error.hpp"

namespace larmor::io {

namespace {

constexpr std::size_t kHeaderBytes = 348;
constexpr std::size_t kMaxBytes = std::size_t(1) << 34;  // 16 GiB: larger is not a reference image

// Reads `bytes` bytes from the start of the file (gzip or plain), fewer when the file is shorter. The
// buffer grows with what is read, so a short file that claims much allocates only what it holds.
std::vector<unsigned char> readPrefix(const std::string& path, std::size_t bytes) {
  gzFile f = gzopen(path.c_str(), "rb");
  require(f != nullptr, path + ": cannot open the NIfTI file");
  std::vector<unsigned char> out;
  int n = 0;
  while (out.size() < bytes) {
    const std::size_t got = out.size();
    const std::size_t want = std::min<std::size_t>(bytes - got, std::size_t(1) << 24);
    out.resize(got + want);
    n = gzread(f, out.data() + got, static_cast<unsigned>(want));
    out.resize(got + static_cast<std::size_t>(std::max(n, 0)));
    if (n <= 0) break;
  }
  int err = Z_OK;
  const char* msg = n < 0 ? gzerror(f, &err) : nullptr;
  const std::string why = msg ? msg : "";
  gzclose(f);
  require(n >= 0, path + ": not a readable NIfTI file (" + why + ")");
  return out;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::int32_t swapped(std::int32_t v) {
  const auto u = static_cast<std::uint32_t>(v);
  return static_cast<std::int32_t>((u >> 24) | ((u >> 8) & 0xff00u) | ((u << 8) & 0xff0000u) | (u << 24));
}

class Header {
 public:
  Header(const std::vector<unsigned char>& b, bool swap) : b_(b), swap_(swap) {}
  template <class T>
  T get(std::size_t offset) const {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, b_.data() + offset, sizeof(T));
    if (swap_) std::reverse(bytes, bytes + sizeof(T));
    T v;
    std::memcpy(&v, bytes, sizeof(T));
    return v;
  }

 private:
  const std::vector<unsigned char>& b_;
  bool swap_;
};

// What the header says about the voxels: their dimensions, type and place in the file.
struct Layout {
  bool swap = false;  ///< the file's byte order is not this machine's
  index_t dims[7] = {1, 1, 1, 1, 1, 1, 1};
  index_t count = 1;  ///< voxels
  int datatype = 0, bytes = 0;  ///< NIfTI datatype code, bytes a voxel
  std::size_t offset = 0;       ///< vox_offset
};

// The byte order from sizeof_hdr, after checking that b starts a single-file NIfTI-1 header.
bool byteOrderSwapped(const std::string& path, const std::vector<unsigned char>& b) {
  require(b.size() >= kHeaderBytes, path + ": too short for a NIfTI-1 header (" + std::to_string(b.size()) + " bytes)");
  std::int32_t sizeofHdr;
  std::memcpy(&sizeofHdr, b.data(), 4);
  const bool swap = sizeofHdr != 348 && swapped(sizeofHdr) == 348;
  require(sizeofHdr == 348 || swap, path + (sizeofHdr == 540 || swapped(sizeofHdr) == 540
                                                ? ": NIfTI-2 is not read (only NIfTI-1)"
                                                : ": not a NIfTI-1 file (sizeof_hdr is not 348)"));
  require(std::memcmp(b.data() + 344, "n+1", 4) == 0,
          path + ": not a single-file NIfTI-1 (.nii) image (magic is not \"n+1\"; a .hdr/.img pair is not read)");
  return swap;
}

// Bytes a voxel of a datatype this reader reads.
int voxelBytes(const std::string& path, int datatype) {
  switch (datatype) {
    case 2: case 256: return 1;    // uint8, int8
    case 4: case 512: return 2;    // int16, uint16
    case 8: case 768: case 16: return 4;  // int32, uint32, float32
    case 32: case 64: return 8;    // complex64, float64
    default:
      throw Error(path + ": NIfTI datatype " + std::to_string(datatype) +
                  " is not read (uint8/int8/int16/uint16/int32/uint32/float32/float64/complex64 are)");
  }
}

// The header's layout, checked: dimensions, datatype against bitpix, vox_offset within reason.
Layout readLayout(const std::string& path, const std::vector<unsigned char>& b) {
  Layout l;
  l.swap = byteOrderSwapped(path, b);
  const Header h0(b, l.swap);
  const int rank = h0.get<std::int16_t>(40);
  require(rank >= 1 && rank <= 7, path + ": NIfTI dim[0] = " + std::to_string(rank) + " (must be 1 to 7)");
  for (int i = 0; i < rank; ++i) {
    l.dims[i] = h0.get<std::int16_t>(42 + 2 * i);
    require(l.dims[i] >= 1, path + ": NIfTI dim[" + std::to_string(i + 1) + "] = " + std::to_string(l.dims[i]));
    l.count *= l.dims[i];  // at most 32767^7 < 2^105: checked below before any product can overflow
    require(l.count <= static_cast<index_t>(kMaxBytes), path + ": NIfTI dimensions imply more than 2^34 voxels");
  }
  l.datatype = h0.get<std::int16_t>(70);
  l.bytes = voxelBytes(path, l.datatype);
  const int bitpix = h0.get<std::int16_t>(72);
  require(bitpix == 8 * l.bytes, path + ": NIfTI datatype " + std::to_string(l.datatype) + " has " +
                                     std::to_string(8 * l.bytes) + " bits a voxel but bitpix says " +
                                     std::to_string(bitpix));
  // vox_offset is a float: compared as one before the conversion (1e30 or NaN into size_t is undefined).
  const float voxOffset = h0.get<float>(108);
  require(std::isfinite(voxOffset) && voxOffset >= static_cast<float>(kHeaderBytes),
          path + ": NIfTI vox_offset " + number(voxOffset) + " is before the end of the header");
  require(voxOffset <= static_cast<float>(kMaxBytes),
          path + ": NIfTI vox_offset " + number(voxOffset) + " is beyond any image file (16 GiB)");
  l.offset = static_cast<std::size_t>(voxOffset);
  return l;
}

// Part `part` (0: real, 1: imaginary) of voxel i as stored, in the file b.
double storedValue(const std::vector<unsigned char>& b, const Layout& l, index_t i, int part) {
  const unsigned char* q =
      b.data() + l.offset + static_cast<std::size_t>(i) * l.bytes + static_cast<std::size_t>(part) * 4;
  const Header v(b, l.swap);
  const std::size_t at = static_cast<std::size_t>(q - b.data());
  switch (l.datatype) {
    case 2: return *q;
    case 256: return static_cast<std::int8_t>(*q);
    case 4: return v.get<std::int16_t>(at);
    case 512: return v.get<std::uint16_t>(at);
    case 8: return v.get<std::int32_t>(at);
    case 768: return v.get<std::uint32_t>(at);
    case 16: case 32: return v.get<float>(at);
    default: return v.get<double>(at);  // 64
  }
}

}  // namespace

CArray readNiftiImage(const std::string& path) {
  // The header first: the size it implies is checked against the memory limit before the data are read.
  std::vector<unsigned char> b = readPrefix(path, kHeaderBytes);
  const Layout l = readLayout(path, b);
  const index_t count = l.count;
  const std::size_t need = l.offset + static_cast<std::size_t>(count) * static_cast<std::size_t>(l.bytes);
  require(need <= kMaxBytes, path + ": the NIfTI header implies " + std::to_string(need) +
                                 " bytes, larger than 16 GiB: not read as a reference image");
  // The file's bytes and the image (complex float) must fit beside each other.
  recon::requireHostMemory(static_cast<double>(need) + 8.0 * static_cast<double>(count), path,
                           "the NIfTI image of " + std::to_string(count) + " voxels");
  b = readPrefix(path, need);
  require(b.size() >= need, path + ": truncated NIfTI file: " + std::to_string(b.size()) + " bytes, the header needs " +
                                std::to_string(need));
  const Header h(b, l.swap);
  float slope = h.get<float>(112), inter = h.get<float>(116);
  if (!std::isfinite(slope) || slope == 0) slope = 1, inter = 0;  // NIfTI: scl_slope 0 means unscaled
  if (!std::isfinite(inter)) inter = 0;

  CArray out(Shape{l.dims[0], l.dims[1], count / (l.dims[0] * l.dims[1])});
  for (index_t i = 0; i < count; ++i) {
    if (l.datatype == 32) {
      // complex: unscaled
      out[i] = cfloat(static_cast<float>(storedValue(b, l, i, 0)), static_cast<float>(storedValue(b, l, i, 1)));
    } else {
      out[i] = cfloat(static_cast<float>(slope * storedValue(b, l, i, 0) + inter), 0.f);
    }
    require(std::isfinite(out[i].real()) && std::isfinite(out[i].imag()),
            [&] { return path + ": NIfTI voxel " + std::to_string(i) + " is not finite"; });
  }
  return out;
}

}  // namespace larmor::io
