#include "larmor/io/rawarray.hpp"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "larmor/recon/resources.hpp"
#include "larmor/util/atomic_file.hpp"
#include "larmor/util/input_file.hpp"

namespace fs = std::filesystem;

namespace larmor::io {

namespace {

static_assert(sizeof(cfloat) == 8, "RawArray complex float32 elements are 8 bytes");
// The RawArray flag bits that the format defines; we read neither (the header words and data would
// need byte swapping or decompression).
constexpr std::uint64_t kFlagBigEndian = 1, kFlagCompressed = 2;
constexpr std::uint64_t kMaxDims = 64;
// Far beyond any MRI array, small enough that products of dims and element sizes cannot overflow.
constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 56;

std::uint64_t le64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void putLe64(std::vector<unsigned char>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

std::string typeName(std::uint64_t eltype, std::uint64_t elbyte) {
  static const char* names[] = {"user-defined", "int", "uint", "float", "complex"};
  const std::string t = eltype < 5 ? names[eltype] : "unknown type " + std::to_string(eltype);
  return t + " with " + std::to_string(elbyte) + "-byte elements";
}

}  // namespace

RawArrayHeader readRawArrayHeader(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(path + ": no such file");
  requireRegularInput(path);
  if (!fs::is_regular_file(path, ec)) throw Error(path + ": not a regular file");
  const std::uint64_t fileBytes = fs::file_size(path, ec);
  if (ec) throw Error(path + ": cannot read (" + ec.message() + ")");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open (" + std::strerror(errno) + ")");
  unsigned char fixed[48];
  if (fileBytes < sizeof fixed || !in.read(reinterpret_cast<char*>(fixed), sizeof fixed))
    throw Error(path + ": truncated RawArray header (" + std::to_string(fileBytes) + " bytes, at least 48 needed)");
  if (le64(fixed) != kRawArrayMagic) {
    if (std::memcmp(fixed, "yarrawar", 8) == 0)  // the magic's bytes reversed: a big-endian writer
      throw Error(path + ": big-endian RawArray files are not supported");
    throw Error(path + ": not a RawArray file (no 'rawarray' magic)");
  }
  RawArrayHeader h;
  h.flags = le64(fixed + 8);
  h.eltype = le64(fixed + 16);
  h.elbyte = le64(fixed + 24);
  h.size = le64(fixed + 32);
  const std::uint64_t ndims = le64(fixed + 40);
  if (h.flags & kFlagBigEndian) throw Error(path + ": big-endian RawArray files are not supported");
  if (h.flags & kFlagCompressed) throw Error(path + ": compressed RawArray files are not supported");
  if (h.flags != 0) throw Error(path + ": unknown RawArray flags 0x" + [&] {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(h.flags));
    return std::string(buf);
  }() + " (a newer format version?)");
  if (ndims == 0 || ndims > kMaxDims)
    throw Error(path + ": RawArray header says " + std::to_string(ndims) + " dimensions (1 to " +
                std::to_string(kMaxDims) + " supported)");
  if (fileBytes < 48 + 8 * ndims)
    throw Error(path + ": truncated RawArray header (" + std::to_string(ndims) + " dimensions need " +
                std::to_string(48 + 8 * ndims) + " bytes, the file has " + std::to_string(fileBytes) + ")");
  std::vector<unsigned char> dimBytes(static_cast<std::size_t>(8 * ndims));
  if (!in.read(reinterpret_cast<char*>(dimBytes.data()), static_cast<std::streamsize>(dimBytes.size())))
    throw Error(path + ": cannot read the RawArray dimensions");
  if (h.elbyte == 0 || h.elbyte > 64)
    throw Error(path + ": RawArray element size " + std::to_string(h.elbyte) + " bytes is not valid");
  std::uint64_t bytes = h.elbyte;
  for (std::uint64_t i = 0; i < ndims; ++i) {
    const std::uint64_t d = le64(dimBytes.data() + 8 * i);
    if (d == 0) throw Error(path + ": RawArray dimension " + std::to_string(i) + " is 0");
    if (d > kMaxBytes / bytes)
      throw Error(path + ": RawArray dimensions are too large (dimension " + std::to_string(i) + " is " +
                  std::to_string(d) + ")");
    bytes *= d;
    h.dims.push_back(d);
  }
  if (bytes != h.size)
    throw Error(path + ": RawArray header is inconsistent: dimensions x element size = " + std::to_string(bytes) +
                " bytes, the size field says " + std::to_string(h.size));
  // The file's length vouches for the data before anything is allocated (no allocation bombs).
  const std::uint64_t want = h.headerBytes() + h.size;
  if (fileBytes < want)
    throw Error(path + ": truncated: holds " + std::to_string(fileBytes - h.headerBytes()) + " bytes of data, the header says " +
                std::to_string(h.size));
  if (fileBytes > want)
    throw Error(path + ": has " + std::to_string(fileBytes - want) + " bytes after the RawArray data");
  return h;
}

CArray readRawArray(const std::string& path) {
  const RawArrayHeader h = readRawArrayHeader(path);
  if (h.eltype != static_cast<std::uint64_t>(RawArrayElement::Complex) || h.elbyte != 8)
    throw Error(path + ": RawArray holds " + typeName(h.eltype, h.elbyte) +
                "; Larmor reads complex float32 (eltype 4, elbyte 8)");
  std::vector<index_t> dims(h.dims.begin(), h.dims.end());
  while (dims.size() > 1 && dims.back() == 1) dims.pop_back();
  recon::requireHostMemory(static_cast<double>(h.size), path, "the array " + Shape(dims).str());
  CArray a;
  try {
    a = CArray(Shape(dims));
  } catch (const std::bad_alloc&) {
    throw Error(path + ": not enough memory for " + Shape(dims).str());
  }
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(h.headerBytes()));
  in.read(reinterpret_cast<char*>(a.data()), static_cast<std::streamsize>(h.size));
  if (!in || in.gcount() != static_cast<std::streamsize>(h.size))
    throw Error(path + ": read " + std::to_string(in.gcount()) + " of " + std::to_string(h.size) + " data bytes");
  if constexpr (std::endian::native == std::endian::big) {
    auto* w = reinterpret_cast<std::uint32_t*>(a.data());
    for (index_t i = 0; i < 2 * a.size(); ++i) w[i] = __builtin_bswap32(w[i]);
  }
  return a;
}

void writeRawArray(const std::string& path, const CArray& a) {
  if (a.empty()) throw Error(path + ": cannot write an empty array " + a.shape().str());
  std::vector<unsigned char> head;
  putLe64(head, kRawArrayMagic);
  putLe64(head, 0);  // flags: little-endian, uncompressed
  putLe64(head, static_cast<std::uint64_t>(RawArrayElement::Complex));
  putLe64(head, sizeof(cfloat));
  putLe64(head, static_cast<std::uint64_t>(a.size()) * sizeof(cfloat));
  std::vector<index_t> dims = a.shape().dims();
  if (dims.empty()) dims.push_back(1);
  putLe64(head, dims.size());
  for (auto d : dims) putLe64(head, static_cast<std::uint64_t>(d));

  std::vector<cfloat> swapped;
  const cfloat* data = a.data();
  if constexpr (std::endian::native == std::endian::big) {
    swapped.assign(a.data(), a.data() + a.size());
    auto* w = reinterpret_cast<std::uint32_t*>(swapped.data());
    for (index_t i = 0; i < 2 * a.size(); ++i) w[i] = __builtin_bswap32(w[i]);
    data = swapped.data();
  }
  AtomicFile file(path);
  std::ofstream out(file.tempPath(), std::ios::binary | std::ios::trunc);
  if (!out) throw Error(path + ": cannot create (" + std::strerror(errno) + ")");
  out.write(reinterpret_cast<const char*>(head.data()), static_cast<std::streamsize>(head.size()));
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(a.size() * sizeof(cfloat)));
  out.close();
  if (!out) throw Error(path + ": write failed (" + std::strerror(errno) + ")");
  file.commit();
}

}  // namespace larmor::io
