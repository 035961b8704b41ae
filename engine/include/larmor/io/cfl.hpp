#pragma once
// BART's .cfl/.hdr pair: FILE.hdr is text ("# Dimensions" then one line of dimensions, dimension 0
// fastest, 16 of them as BART writes), FILE.cfl holds the complex floats raw (interleaved re/im,
// little-endian float32) in the same order as larmor's arrays, so the data need no reordering.
#include <string>

#include "larmor/array/array.hpp"

namespace larmor::io {

/// BART's DIMS: the number of dimensions BART writes and expects in a .hdr.
inline constexpr std::size_t kBartDims = 16;
/// BART's dimension indices that Larmor reads (see BART's misc/mri.h).
inline constexpr std::size_t kBartReadDim = 0, kBartPhs1Dim = 1, kBartPhs2Dim = 2, kBartCoilDim = 3,
                             kBartSliceDim = 13;
/// Frames (io/series.hpp) in BART's dims: contrast (echo) at TE_DIM 5, repetition at TIME_DIM 10, cardiac
/// phase at TIME2_DIM 11, set at BATCH_DIM 15 (docs/conventions.md).
inline constexpr std::size_t kBartTeDim = 5, kBartTimeDim = 10, kBartTime2Dim = 11, kBartBatchDim = 15;

/// `path` with or without .cfl/.hdr -> the base both files share.
std::string cflBasePath(const std::string& path);

/// Reads FILE.hdr and FILE.cfl. Trailing dimensions of 1 are dropped (at least one is kept).
/// Throws Error (one line naming the file) for a missing or unparsable .hdr, non-positive or huge
/// dimensions, and a .cfl whose size does not match the .hdr. NaN/Inf values are returned as they are.
CArray readCfl(const std::string& path);

/// Reads only the dimensions from FILE.hdr (no trailing-ones trimming beyond the rule above).
Shape readCflShape(const std::string& path);

/// Writes FILE.hdr and FILE.cfl atomically (both appear complete or neither changes).
void writeCfl(const std::string& path, const CArray& a);

/// Throws Error("WHAT: sample N is NaN") for the first non-finite element.
void requireFinite(const CArray& a, const std::string& what);

}  // namespace larmor::io
