#pragma once
// RawArray (.ra): a small header of little-endian uint64 words, then the elements raw:
//   magic 0x7961727261776172 ("rawarray" read as bytes), flags, eltype, elbyte, size (data bytes),
//   ndims, dims[ndims] (dimension 0 fastest), data.
// eltype: 0 user, 1 int, 2 uint, 3 float, 4 complex; elbyte: bytes per element. Larmor reads complex
// float32 (eltype 4, elbyte 8) laid out like BART's k-space [readout, pe1, pe2, coils, ..., slices at 13];
// anything else is refused with an Error that says what the file holds.
#include <cstdint>
#include <string>
#include <vector>

#include "larmor/array/array.hpp"

namespace larmor::io {

inline constexpr std::uint64_t kRawArrayMagic = 0x7961727261776172ull;
enum class RawArrayElement : std::uint64_t { User = 0, Int = 1, Uint = 2, Float = 3, Complex = 4 };

struct RawArrayHeader {
  std::uint64_t flags = 0;
  std::uint64_t eltype = static_cast<std::uint64_t>(RawArrayElement::Complex);
  std::uint64_t elbyte = 8;
  std::uint64_t size = 0;  ///< bytes of data
  std::vector<std::uint64_t> dims;
  std::uint64_t headerBytes() const { return 8 * (6 + dims.size()); }
};

/// Reads and checks the header only (magic, flags, dims against the size and the file's length).
RawArrayHeader readRawArrayHeader(const std::string& path);

/// Reads a complex float32 RawArray. Trailing dimensions of 1 are dropped (at least one is kept).
/// Throws Error (one line naming the file) for anything else, a truncated file, or inconsistent sizes.
/// NaN/Inf values are returned as they are (Dataset::validate refuses them in k-space).
CArray readRawArray(const std::string& path);

/// Writes `a` as complex float32 RawArray, atomically.
void writeRawArray(const std::string& path, const CArray& a);

}  // namespace larmor::io
