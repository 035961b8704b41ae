#pragma once
// Structural checks on an HDF5 file before libhdf5 trusts it (internal to the engine's ISMRMRD reader).
// libhdf5 1.10 (Debian 12's) takes sizes, lengths and indices from the file and allocates, copies or
// loops by them; fuzz_ismrmrd found hangs, heap over-reads and allocation bombs that one damaged byte
// causes (docs/dicom.md lists them). Each check here compares what a structure claims with what the file
// actually stores and throws one Error line naming the file. What cannot be checked without
// reimplementing HDF5 is left to the crash sandbox (larmor/util/subprocess_sandbox.hpp).
#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "larmor/util/error.hpp"

namespace larmor::io::detail {

/// `s` on one line: whitespace runs become one space, at most 240 characters.
std::string oneLine(std::string s);

/// A byte or element count held in a double, as text: exact below 2^63, else in scientific notation (a
/// damaged file's claim can exceed any integer type; converting it would be undefined).
std::string countText(double v);

/// HDF5 prints its error stacks to stderr by default; failures become one-line Errors instead.
void quietLibraries();

/// The innermost HDF5 error of the failed call (e.g. "truncated file: eof = 20000, ..."), and clears it.
std::string hdf5Reason();

/// Deflate, the only filter ISMRMRD writers use, cannot shrink data more than about 1032:1; a dataset
/// whose dimensions need more bytes than that times what it stores is corrupt (or an allocation bomb:
/// HDF5 happily reports huge dimensions for a chunked dataset whose chunks were never written).
inline constexpr double kMaxCompression = 1032;

/// Bytes a dataset actually stores, bounded by the file's size (a corrupt chunk index can claim more).
double storedBytes(hid_t dset, const std::string& path);

/// Owns an HDF5 id (file, dataset, dataspace, datatype, property list) and closes it with the matching
/// function.
struct H5Id {
  hid_t id = -1;
  herr_t (*close)(hid_t) = nullptr;
  H5Id() = default;
  H5Id(hid_t i, herr_t (*c)(hid_t)) : id(i), close(c) {}
  H5Id(const H5Id&) = delete;
  H5Id& operator=(const H5Id&) = delete;
  H5Id(H5Id&& o) noexcept : id(o.id), close(o.close) { o.id = -1; }
  H5Id& operator=(H5Id&& o) noexcept {
    reset();
    id = o.id, close = o.close;
    o.id = -1;
    return *this;
  }
  ~H5Id() { reset(); }
  void reset() {
    if (id >= 0 && close) close(id);
    id = -1;
  }
};

/// The file holding `dset` uses 8-byte addresses, so that a variable-length descriptor on disk (4-byte
/// length, address, 4-byte index) has the layout of hvl_t in memory.
bool hasEightByteAddresses(hid_t dset);

/// A compact dataset's layout message must hold all of its elements.
void requireCompactStorageFits(hid_t dset, const std::string& path, const std::string& name);

/// An unfiltered chunked dataset's chunks must store `nominal` bytes each, in total.
void requireChunkTotalFits(hid_t dset, double nominal, const std::string& path, const std::string& name);

/// A variable-length string dataset's stored length must fit in the file, and its descriptor name a heap
/// object of that length in a sound collection (GlobalHeaps); where the descriptor cannot be read raw,
/// every collection of the file is walked instead (checkGlobalHeaps).
void requireStringLengthFits(hid_t dset, const std::string& path, const std::string& name);

/// Looks up the chunks a read will touch and refuses the file when one stores less than the chunk
/// dimensions need (see hdf5_guards.cpp).
class ChunkCheck {
 public:
  ChunkCheck(hid_t dset, const std::string& path, const std::string& name);
  /// Checks the chunk holding row `first` of dimension 0, across all of the other dimensions.
  void check(hsize_t first, hsize_t rows) const;

 private:
  hid_t dset_;
  std::string path_, name_;
  bool active_ = false;
  int rank_ = 0;
  hsize_t dims_[H5S_MAX_RANK] = {0}, chunk_[H5S_MAX_RANK] = {0};
  double nominal_ = 0;
};

/// A transfer property list whose variable-length buffers come from an allocator that refuses more than
/// the file holds: a damaged sequence length in a record would otherwise make HDF5 allocate (and fill)
/// gigabytes for a few-kilobyte file (fuzz_ismrmrd found it). Buffers read with it must be reclaimed
/// with it too.
class VlenTransfer {
 public:
  explicit VlenTransfer(const std::string& path);
  VlenTransfer(const VlenTransfer&) = delete;
  VlenTransfer& operator=(const VlenTransfer&) = delete;
  hid_t id() const { return plist_.id >= 0 ? plist_.id : H5P_DEFAULT; }

 private:
  std::size_t limit_ = 0;  // not moved after construction: HDF5 holds a pointer to it
  H5Id plist_;
};

}  // namespace larmor::io::detail
