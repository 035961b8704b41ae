#pragma once
// HDF5 global heap collections, read by Larmor itself (internal to the engine's ISMRMRD reader). Variable-
// length data (each acquisition's samples and trajectory, the XML header) live in these collections; a
// record holds only a descriptor naming one object. libhdf5 1.10 trusts what it reads there (sizes,
// object indices: hdf5_global_heap.cpp lists what fuzz_ismrmrd found), so every collection it will read
// is checked first, and the acquisitions' collections are not given to it at all: the reader takes the
// objects' bytes straight from the file (ismrmrd_direct.cpp).
#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace larmor::io::detail {

/// The unsigned value of `bytes` little-endian bytes at `p` (HDF5's byte order for file structures).
std::uint64_t littleEndian(const unsigned char* p, std::size_t bytes);

/// One object of a collection: where its data lie and how many bytes it holds.
struct HeapObject {
  std::uint64_t collection = 0;  ///< the collection's address (as descriptors name it)
  std::uint64_t offset = 0;      ///< of the data, from the collection's first byte
  std::uint64_t size = 0;        ///< bytes of data
};

/// A variable-length descriptor as stored with 8-byte addresses (little-endian): the sequence length in
/// elements, the collection address, the object index.
struct VlenDescriptor {
  std::uint32_t length = 0;
  std::uint64_t address = 0;
  std::uint32_t index = 0;
};
VlenDescriptor decodeDescriptor(const unsigned char* p);

/// The collections of one file that descriptors name, each parsed once (the way libhdf5 parses it, with
/// every size checked against the collection and the file) and kept by address. Errors are one line
/// naming the file: "PATH: damaged HDF5 file (...)".
class GlobalHeaps {
 public:
  /// `path` with its HDF5 geometry: `base` the base address (the user block), `lengthBytes` the size
  /// of lengths (2, 4 or 8).
  GlobalHeaps(std::string path, std::uint64_t base, unsigned lengthBytes);
  /// The same, the geometry taken from the file that holds HDF5 object `any`; usable() is false when
  /// it cannot be read.
  GlobalHeaps(std::string path, hid_t any);
  ~GlobalHeaps();
  GlobalHeaps(const GlobalHeaps&) = delete;
  GlobalHeaps& operator=(const GlobalHeaps&) = delete;

  bool usable() const { return fd_ >= 0; }
  unsigned lengthBytes() const { return lengthBytes_; }
  std::uint64_t base() const { return base_; }
  std::uint64_t fileBytes() const { return fileBytes_; }

  /// A collection as parsed: its size and its objects by index, ascending.
  struct Collection {
    std::uint64_t size = 0;
    std::vector<std::pair<std::uint32_t, HeapObject>> objects;
  };
  /// The collection at `address` as a parse by another GlobalHeaps of the same file found it (a helper
  /// thread's: ismrmrd_direct.cpp), taken without reading it again; the checks that depend on what this
  /// one has seen (no overlap with the collections parsed before) are made here, as collection() makes
  /// them. Nothing happens when this one knows the address already.
  void adopt(std::uint64_t address, const Collection& c, const std::string& what);
  /// The parsed collection at `address` (it must be known: object() or adopt() found it).
  const Collection& known(std::uint64_t address) const { return collections_.at(address); }
  /// Forgets every collection parsed (a helper's instance between blocks of records).
  void forget();

  /// The object descriptor `d` names, which must hold exactly d.length * elementBytes bytes (`what`
  /// names the descriptor in errors). Address 0 with length 0 names none (size 0 returned).
  HeapObject object(const VlenDescriptor& d, std::size_t elementBytes, const std::string& what);

  /// The bytes of `o` (found by object()), valid until the next call of object() or bytes().
  const unsigned char* bytes(const HeapObject& o);

  /// Reads `bytes` at file offset `at` into `dst`; false when the file ends first.
  bool readAt(std::uint64_t at, void* dst, std::size_t bytes) const;

 private:
  const Collection& collection(std::uint64_t address, const std::string& what);
  void requireNoOverlap(std::uint64_t at, std::uint64_t size) const;
  void load(std::uint64_t address, std::uint64_t size);
  [[noreturn]] void damaged(const std::string& why) const;

  std::string path_;
  int fd_ = -1;
  std::uint64_t base_ = 0, fileBytes_ = 0;
  unsigned lengthBytes_ = 8;
  std::unordered_map<std::uint64_t, Collection> collections_;
  std::map<std::uint64_t, std::uint64_t> extents_;  ///< start -> end of every collection parsed
  std::vector<unsigned char> buf_;                   ///< the bytes of one collection
  std::uint64_t bufAddress_ = ~std::uint64_t{0};
};

/// Walks every global heap collection of `path` (a scan of the whole file for "GCOL") and refuses the
/// file when one would make libhdf5 loop or over-read; once per file version and thread. For data that
/// libhdf5 converts itself and whose descriptors cannot all be read first (the fallback read of
/// acquisition records, an XML header not stored raw-readable).
void checkGlobalHeaps(const std::string& path);

}  // namespace larmor::io::detail
