// NIfTI-1 input (.nii, gzip-compressed .nii.gz) for reference images in comparisons (the GUI's
// "Reference file…", `larmor-cli compare --ref`): the voxels of a single-file NIfTI-1 volume, scaled by
// scl_slope / scl_inter, in the file's storage order (voxel (i, j, k) = pixel (x = i, y = j) of plane k,
// as io::writeNifti writes them). The header fields and their offsets are the format (nifti1.h, NIfTI-1
// Data Format Working Group, 2004); zlib's gzread reads plain and gzip files alike. Our own code.
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "larmor/io/nifti.hpp"
#include "larmor/util/error.hpp"

namespace larmor::io {

namespace {

constexpr std::size_t kHeaderBytes = 348;
constexpr std::size_t kMaxBytes = std::size_t(1) << 34;  // 16 GiB: larger is not a reference image

std::vector<unsigned char> readAll(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  require(f != nullptr, path + ": cannot open the NIfTI file");
  std::vector<unsigned char> out;
  unsigned char chunk[1 << 16];
  int n = 0;
  while ((n = gzread(f, chunk, sizeof chunk)) > 0) {
    out.insert(out.end(), chunk, chunk + n);
    if (out.size() > kMaxBytes) break;
  }
  int err = Z_OK;
  const char* msg = n < 0 ? gzerror(f, &err) : nullptr;
  const std::string why = msg ? msg : "";
  gzclose(f);
  require(n >= 0, path + ": not a readable NIfTI file (" + why + ")");
  require(out.size() <= kMaxBytes, path + ": larger than 16 GiB, not read as a reference image");
  return out;
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

}  // namespace

CArray readNiftiImage(const std::string& path) {
  const std::vector<unsigned char> b = readAll(path);
  require(b.size() >= kHeaderBytes, path + ": too short for a NIfTI-1 header (" + std::to_string(b.size()) + " bytes)");
  std::int32_t sizeofHdr;
  std::memcpy(&sizeofHdr, b.data(), 4);
  const bool swap = sizeofHdr != 348 && swapped(sizeofHdr) == 348;
  require(sizeofHdr == 348 || swap, path + (sizeofHdr == 540 || swapped(sizeofHdr) == 540
                                                ? ": NIfTI-2 is not read (only NIfTI-1)"
                                                : ": not a NIfTI-1 file (sizeof_hdr is not 348)"));
  require(std::memcmp(b.data() + 344, "n+1", 4) == 0,
          path + ": not a single-file NIfTI-1 (.nii) image (magic is not \"n+1\"; a .hdr/.img pair is not read)");
  const Header h(b, swap);
  const int rank = h.get<std::int16_t>(40);
  require(rank >= 1 && rank <= 7, path + ": NIfTI dim[0] = " + std::to_string(rank) + " (must be 1 to 7)");
  index_t dims[7] = {1, 1, 1, 1, 1, 1, 1};
  index_t count = 1;
  for (int i = 0; i < rank; ++i) {
    dims[i] = h.get<std::int16_t>(42 + 2 * i);
    require(dims[i] >= 1, path + ": NIfTI dim[" + std::to_string(i + 1) + "] = " + std::to_string(dims[i]));
    count *= dims[i];
  }
  const int datatype = h.get<std::int16_t>(70);
  int bytes = 0;
  switch (datatype) {
    case 2: case 256: bytes = 1; break;    // uint8, int8
    case 4: case 512: bytes = 2; break;    // int16, uint16
    case 8: case 768: case 16: bytes = 4; break;  // int32, uint32, float32
    case 32: case 64: bytes = 8; break;    // complex64, float64
    default:
      throw Error(path + ": NIfTI datatype " + std::to_string(datatype) +
                  " is not read (uint8/int8/int16/uint16/int32/uint32/float32/float64/complex64 are)");
  }
  const float voxOffset = h.get<float>(108);
  require(std::isfinite(voxOffset) && voxOffset >= static_cast<float>(kHeaderBytes),
          path + ": NIfTI vox_offset " + std::to_string(voxOffset) + " is before the end of the header");
  const std::size_t offset = static_cast<std::size_t>(voxOffset);
  const std::size_t need = offset + static_cast<std::size_t>(count) * static_cast<std::size_t>(bytes);
  require(b.size() >= need, path + ": truncated NIfTI file: " + std::to_string(b.size()) + " bytes, the header needs " +
                                std::to_string(need));
  float slope = h.get<float>(112), inter = h.get<float>(116);
  if (!std::isfinite(slope) || slope == 0) slope = 1, inter = 0;  // NIfTI: scl_slope 0 means unscaled
  if (!std::isfinite(inter)) inter = 0;

  CArray out(Shape{dims[0], dims[1], count / (dims[0] * dims[1])});
  const unsigned char* p = b.data() + offset;
  auto value = [&](index_t i, int part) -> double {
    const unsigned char* q = p + static_cast<std::size_t>(i) * bytes + static_cast<std::size_t>(part) * 4;
    const Header v(b, swap);
    const std::size_t at = static_cast<std::size_t>(q - b.data());
    switch (datatype) {
      case 2: return *q;
      case 256: return static_cast<std::int8_t>(*q);
      case 4: return v.get<std::int16_t>(at);
      case 512: return v.get<std::uint16_t>(at);
      case 8: return v.get<std::int32_t>(at);
      case 768: return v.get<std::uint32_t>(at);
      case 16: case 32: return v.get<float>(at);
      default: return v.get<double>(at);  // 64
    }
  };
  for (index_t i = 0; i < count; ++i) {
    if (datatype == 32) {
      out[i] = cfloat(static_cast<float>(value(i, 0)), static_cast<float>(value(i, 1)));  // complex: unscaled
    } else {
      out[i] = cfloat(static_cast<float>(slope * value(i, 0) + inter), 0.f);
    }
    require(std::isfinite(out[i].real()) && std::isfinite(out[i].imag()),
            [&] { return path + ": NIfTI voxel " + std::to_string(i) + " is not finite"; });
  }
  return out;
}

}  // namespace larmor::io
