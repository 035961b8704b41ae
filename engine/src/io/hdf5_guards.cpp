// Structural checks on HDF5 files (hdf5_guards.hpp), each against a libhdf5 1.10 weakness found by
// fuzz_ismrmrd. Format facts relied on (HDF5 File Format Specification version 2/3):
// - the superblock signature "\x89HDF\r\n\x1a\n" lies at 0 or after a user block of 512 * 2^k bytes; byte
//   8 is its version, and the size of lengths sits at byte 14 (versions 0, 1) or 10 (2, 3);
// - a global heap collection is "GCOL", version 1, three reserved bytes, the collection size (a length);
//   then objects: 2-byte index, 2-byte reference count, 4 reserved bytes, the object size (a length), the
//   data padded to 8 bytes; object 0 is the free space and counts its header in its size;
// - a variable-length datum on disk is a 4-byte sequence length, the collection address and a 4-byte
//   object index.
#include "hdf5_guards.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace fs = std::filesystem;

namespace larmor::io::detail {

namespace {

std::uint64_t littleEndian(const unsigned char* p, std::size_t bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = bytes; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

std::int64_t mtimeNs(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

HeapIndex& lastHeapIndex() {
  thread_local HeapIndex index;
  return index;
}

// The walk of the collections in a mapped file of `size` bytes (see checkGlobalHeaps).
void walkCollections(const unsigned char* b, std::size_t size, const std::string& path, HeapIndex& heaps) {
  const unsigned char* end = b + size;
  // The superblock says how wide a length field is.
  std::size_t lengthBytes = 0, base = 0;
  for (std::size_t off = 0; off + 16 <= size; off = off == 0 ? 512 : 2 * off) {
    if (std::memcmp(b + off, "\x89HDF\r\n\x1a\n", 8) == 0) {
      lengthBytes = b[off + 8] <= 1 ? b[off + 14] : b[off + 10];
      base = off;
      break;
    }
  }
  if (lengthBytes != 2 && lengthBytes != 4 && lengthBytes != 8) return;  // HDF5 refuses the file itself
  const std::size_t headerBytes = 8 + lengthBytes, objectHeaderBytes = 8 + lengthBytes;
  // The scan only moves forward: pages behind the current collection are given back as it goes, so a
  // multi-gigabyte file does not count as resident memory (they stay in the page cache).
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  constexpr std::ptrdiff_t kWindow = std::ptrdiff_t{64} << 20;
  const unsigned char* released = b;
  const auto release = [&](const unsigned char* before) {
    if (before - released < kWindow) return;
    const std::size_t upto = static_cast<std::size_t>(before - b) / page * page;
    ::madvise(const_cast<unsigned char*>(released), upto - static_cast<std::size_t>(released - b), MADV_DONTNEED);
    released = b + upto;
  };
  // memmem over windows of kWindow bytes (overlapping by 3), releasing behind each.
  const auto find = [&](const unsigned char* from) -> const unsigned char* {
    while (from < end) {
      const std::size_t span = static_cast<std::size_t>(std::min<std::ptrdiff_t>(end - from, kWindow + 3));
      if (const void* hit = ::memmem(from, span, "GCOL", 4)) return static_cast<const unsigned char*>(hit);
      if (static_cast<std::ptrdiff_t>(span) < kWindow + 3) return nullptr;
      from += kWindow;
      release(from);
    }
    return nullptr;
  };
  for (const unsigned char* g = b; g + headerBytes <= end;) {
    g = find(g);
    if (!g || g + headerBytes > end) break;
    const unsigned char* start = g;
    release(start);
    g += 4;
    // HDF5 checks the version but not the reserved bytes, so neither may we (fuzz_ismrmrd evaded an
    // earlier check of them). The same letters inside sample data are taken for a collection only when
    // followed by version 1 and a size that fits in the file, and then fail the walk: for float data
    // about 1 in 10^5 gigabyte-sized files, which are then refused as damaged. A hang is worse.
    if (start[4] != 1) continue;
    const std::uint64_t collection = littleEndian(start + 8, lengthBytes);
    if (collection < headerBytes || collection > static_cast<std::uint64_t>(end - start)) continue;  // HDF5 fails the read
    const unsigned char* q = start + headerBytes;
    const unsigned char* stop = start + collection;
    auto& objects = heaps.objects[static_cast<std::uint64_t>(start - b) - base];
    while (q < stop && q + objectHeaderBytes <= stop) {
      const unsigned index = static_cast<unsigned>(q[0]) | static_cast<unsigned>(q[1]) << 8;
      const std::uint64_t objectSize = littleEndian(q + 8, lengthBytes);
      const auto left = static_cast<std::uint64_t>(stop - q);
      // HDF5's step: the object with its header, 8-byte aligned; the free-space object (index 0) counts
      // its header in its size.
      const std::uint64_t need =
          index > 0 ? (objectSize > left ? left + 1 : objectHeaderBytes + ((objectSize + 7) & ~std::uint64_t{7}))
                    : objectSize;
      if (need == 0 || need > left)
        throw Error(path + ": damaged HDF5 file (global heap at byte " + std::to_string(start - b) + ": object " +
                    std::to_string(index) + " claims " + std::to_string(objectSize) + " bytes, " +
                    std::to_string(left) + " are left)");
      if (index > 0) objects[index] = objectSize;
      q += need;
    }
  }
  heaps.complete = true;
}

// The first bytes of a dataset's raw data where the layout allows reading them (contiguous, or an
// unfiltered first chunk): up to `want` bytes into `raw`; the count read, 0 when none.
std::size_t readRawStart(hid_t dset, const std::string& path, std::uintmax_t fileBytes, unsigned char* raw,
                         std::size_t capacity) {
  H5Id dcpl(H5Dget_create_plist(dset), H5Pclose);
  const H5D_layout_t layout = dcpl.id >= 0 ? H5Pget_layout(dcpl.id) : H5D_LAYOUT_ERROR;
  std::size_t got = 0;
  if (layout == H5D_CONTIGUOUS) {
    const haddr_t at = H5Dget_offset(dset);
    std::ifstream in(path, std::ios::binary);
    // The descriptor: 4-byte length, then (8-byte addresses) the collection address and object index.
    const std::uintmax_t want = at != HADDR_UNDEF && at + 16 <= fileBytes ? 16 : 4;
    if (at != HADDR_UNDEF && at + want <= fileBytes && in.seekg(static_cast<std::streamoff>(at)) &&
        in.read(reinterpret_cast<char*>(raw), static_cast<std::streamsize>(want)))
      got = static_cast<std::size_t>(want);
  } else if (layout == H5D_CHUNKED && H5Pget_nfilters(dcpl.id) == 0) {
    hsize_t offset[H5S_MAX_RANK] = {0}, stored = 0;
    std::uint32_t filters = 0;
    if (H5Dget_chunk_storage_size(dset, offset, &stored) >= 0 && stored >= 4 && stored <= capacity &&
        H5Dread_chunk(dset, H5P_DEFAULT, offset, &filters, raw) >= 0)
      got = static_cast<std::size_t>(stored);
  }
  H5Eclear2(H5E_DEFAULT);
  return got;
}

}  // namespace

std::string countText(double v) {
  if (v >= 0 && v < 9.2e18) return std::to_string(static_cast<unsigned long long>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string oneLine(std::string s) {
  for (auto& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  std::string out;
  for (char c : s)
    if (!(c == ' ' && !out.empty() && out.back() == ' ')) out += c;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  while (!out.empty() && out.front() == ' ') out.erase(out.begin());
  if (out.size() > 240) out = out.substr(0, 240) + "...";
  return out;
}

void quietLibraries() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

std::string hdf5Reason() {
  std::string reason;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* err, void* data) -> herr_t {
        if (n == 0 && err && err->desc) *static_cast<std::string*>(data) = err->desc;
        return 0;
      },
      &reason);
  H5Eclear2(H5E_DEFAULT);
  return oneLine(reason);
}

double storedBytes(hid_t dset, const std::string& path) {
  std::error_code ec;
  const auto fileBytes = static_cast<double>(fs::file_size(path, ec));
  const auto storage = static_cast<double>(H5Dget_storage_size(dset));
  return ec ? storage : std::min(storage, fileBytes);
}

bool hasEightByteAddresses(hid_t dset) {
  H5Id file(H5Iget_file_id(dset), H5Fclose);
  H5Id fcpl(file.id >= 0 ? H5Fget_create_plist(file.id) : -1, H5Pclose);
  std::size_t addr = 0, len = 0;
  const bool eight = fcpl.id >= 0 && H5Pget_sizes(fcpl.id, &addr, &len) >= 0 && addr == 8;
  H5Eclear2(H5E_DEFAULT);
  return eight;
}

// libhdf5 1.10 (Debian 12's) loops forever on a global heap collection whose free-space object has
// size 0, and reads past a collection whose objects claim more bytes than it holds
// (H5HG__cache_heap_deserialize trusts the sizes). ISMRMRD files keep every variable-length field (the
// XML header, each acquisition's samples) in such collections, so a damaged file could hang the program
// (fuzz_ismrmrd found it). Before HDF5 sees the file we walk each collection the way HDF5 will and refuse
// the file when an object does not fit. A sequential scan of the file: it is read again by HDF5 right
// after, from the page cache.
//
// The walk also lists every collection's objects: HDF5 1.10 reads a variable-length datum from the heap
// object its descriptor names without checking that the object exists (H5HG_read only asserts it: a
// damaged index read past the collection's table, fuzz_ismrmrd) and copies the object's whole size into a
// buffer sized from the descriptor's length. The readers look every descriptor up in the index before
// HDF5 converts it (requireHeapObject).
void checkGlobalHeaps(const std::string& path) {
  HeapIndex& heaps = lastHeapIndex();
  heaps = HeapIndex{};
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;  // HDF5 reports the reason
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < 64 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return;
  }
  heaps.path = path;
  heaps.size = static_cast<std::uintmax_t>(st.st_size);
  heaps.mtime = mtimeNs(st);
  const auto size = static_cast<std::size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return;
  struct Unmap {
    void* p;
    std::size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{map, size};
  walkCollections(static_cast<const unsigned char*>(map), size, path, heaps);
}

const HeapIndex& heapIndexOf(const std::string& path) {
  HeapIndex& heaps = lastHeapIndex();
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && heaps.complete && heaps.path == path &&
      heaps.size == static_cast<std::uintmax_t>(st.st_size) && heaps.mtime == mtimeNs(st))
    return heaps;
  checkGlobalHeaps(path);
  return lastHeapIndex();
}

void requireHeapObject(const HeapIndex& heaps, const unsigned char* descriptor, std::size_t elementBytes,
                       const std::string& path, const std::string& what) {
  if (!heaps.complete) return;
  const std::uint64_t length = littleEndian(descriptor, 4), address = littleEndian(descriptor + 4, 8);
  const auto index = static_cast<std::uint32_t>(littleEndian(descriptor + 12, 4));
  if (length == 0) return;  // HDF5 reads nothing
  const auto c = heaps.objects.find(address);
  if (c == heaps.objects.end() || c->second.find(index) == c->second.end())
    throw Error(path + ": damaged HDF5 file (" + what + " names heap object " + std::to_string(index) +
                " of a collection at " + std::to_string(address) + ", which does not exist)");
  const std::uint64_t size = c->second.find(index)->second;
  if (size != length * elementBytes)
    throw Error(path + ": damaged HDF5 file (" + what + " holds " + std::to_string(length) + " values, its heap object " +
                std::to_string(size) + " bytes)");
}

// libhdf5 1.10 copies a compact dataset's elements out of its layout message without checking that the
// message holds them all (a heap over-read on a damaged file, found by fuzz_ismrmrd). The element count
// times the in-memory element size is at most what a valid message holds (variable-length strings are
// smaller in memory than on disk), so this never refuses a valid file.
void requireCompactStorageFits(hid_t dset, const std::string& path, const std::string& name) {
  H5Id dcpl(H5Dget_create_plist(dset), H5Pclose);
  if (dcpl.id < 0 || H5Pget_layout(dcpl.id) != H5D_COMPACT) {
    H5Eclear2(H5E_DEFAULT);
    return;
  }
  H5Id type(H5Dget_type(dset), H5Tclose);
  H5Id space(H5Dget_space(dset), H5Sclose);
  const hssize_t points = space.id >= 0 ? H5Sget_simple_extent_npoints(space.id) : -1;
  const std::size_t element = type.id >= 0 ? H5Tget_size(type.id) : 0;
  const double need = static_cast<double>(points) * static_cast<double>(element);
  const auto have = static_cast<double>(H5Dget_storage_size(dset));
  H5Eclear2(H5E_DEFAULT);
  if (points < 0 || element == 0 || need > have)
    throw Error(path + ": damaged HDF5 file (dataset " + name + " stores " + countText(have) + " bytes, its " +
                std::to_string(std::max<hssize_t>(points, 0)) + " elements need " + countText(need) + ")");
}

// Unfiltered chunks all store exactly the chunk dimensions times the element size, so the sizes the
// chunk index records must add up to that times the number of chunks. libhdf5 1.10 sizes a chunk's
// buffer from one description and copies by another (chunk dimensions, the layout's element size, the
// datatype's size), a heap over-read when a damaged file makes them disagree (fuzz_ismrmrd found two:
// a chunk dimension and an array member of the record type).
void requireChunkTotalFits(hid_t dset, double nominal, const std::string& path, const std::string& name) {
  hsize_t chunks = 0;
  H5Id space(H5Dget_space(dset), H5Sclose);  // libhdf5 1.10 does not take H5S_ALL here
  if (space.id < 0 || H5Dget_num_chunks(dset, space.id, &chunks) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return;  // HDF5's own read reports a broken index
  }
  const auto stored = static_cast<double>(H5Dget_storage_size(dset));
  H5Eclear2(H5E_DEFAULT);
  if (stored != static_cast<double>(chunks) * nominal)
    throw Error(path + ": damaged HDF5 file (dataset " + name + ": " + std::to_string(chunks) + " chunks store " +
                countText(stored) + " bytes, their dimensions and type need " +
                countText(static_cast<double>(chunks) * nominal) + ")");
}

// The header string's length, read raw from its descriptor where the layout allows, must fit in the file:
// HDF5 zeroes a buffer of that length before reading the string (as for acquisition records,
// ismrmrd_records.cpp).
void requireStringLengthFits(hid_t dset, const std::string& path, const std::string& name) {
  std::error_code ec;
  const std::uintmax_t fileBytes = fs::file_size(path, ec);
  if (ec) return;
  unsigned char raw[4096] = {0};
  const std::size_t descriptorBytes = readRawStart(dset, path, fileBytes, raw, sizeof raw);
  if (descriptorBytes == 0) return;
  const std::uint64_t length = littleEndian(raw, 4);
  if (length > fileBytes)
    throw Error(path + ": damaged HDF5 file (" + name + " claims a " + std::to_string(length) + "-byte string in a " +
                std::to_string(fileBytes) + "-byte file)");
  if (hasEightByteAddresses(dset) && descriptorBytes >= 16) requireHeapObject(heapIndexOf(path), raw, 1, path, name);
}

// libhdf5 1.10 reads an unfiltered chunk into a buffer of its stored size but copies the nominal chunk
// size (the chunk dimensions times the element size) out of it: a damaged chunk-dimensions message makes
// that a heap over-read (found by fuzz_ismrmrd). A lookup costs about as much as reading a small chunk,
// so along dimension 0 only the first chunk of each read is checked (that catches a damaged
// chunk-dimensions message, shared by all chunks; not a single damaged index entry). Compressed chunks
// (their stored size differs by design) and element types whose size on disk may differ from memory
// (variable-length members with other than 8-byte file addresses; strings) are not checked.
ChunkCheck::ChunkCheck(hid_t dset, const std::string& path, const std::string& name)
    : dset_(dset), path_(path), name_(name) {
  H5Id dcpl(H5Dget_create_plist(dset), H5Pclose);
  if (dcpl.id < 0 || H5Pget_layout(dcpl.id) != H5D_CHUNKED || H5Pget_nfilters(dcpl.id) != 0) {
    H5Eclear2(H5E_DEFAULT);
    return;
  }
  H5Id type(H5Dget_type(dset), H5Tclose);
  H5Id space(H5Dget_space(dset), H5Sclose);
  if (type.id < 0 || space.id < 0) return;
  if (H5Tdetect_class(type.id, H5T_VLEN) > 0 || H5Tdetect_class(type.id, H5T_STRING) > 0) {
    // hvl_t (16 bytes) matches the file's 4 + address + 4 only with 8-byte addresses; strings never do.
    if (!hasEightByteAddresses(dset) || H5Tdetect_class(type.id, H5T_STRING) > 0) {
      H5Eclear2(H5E_DEFAULT);
      return;
    }
  }
  rank_ = H5Sget_simple_extent_dims(space.id, dims_, nullptr);
  if (rank_ <= 0 || H5Pget_chunk(dcpl.id, rank_, chunk_) != rank_) {
    H5Eclear2(H5E_DEFAULT);
    return;
  }
  double nominal = static_cast<double>(H5Tget_size(type.id));
  for (int i = 0; i < rank_; ++i) {
    if (chunk_[i] == 0) throw Error(path + ": damaged HDF5 file (dataset " + name + " has a chunk dimension of 0)");
    nominal *= static_cast<double>(chunk_[i]);
  }
  nominal_ = nominal;
  active_ = true;
  requireChunkTotalFits(dset, nominal_, path, name);
}

void ChunkCheck::check(hsize_t first, hsize_t rows) const {
  if (!active_ || rows == 0) return;
  // The chunk origins to visit: along dimension 0 the first row's, along the others all of them.
  hsize_t lo[H5S_MAX_RANK], count[H5S_MAX_RANK];
  double total = 1;
  for (int i = 0; i < rank_; ++i) {
    const hsize_t a = i == 0 ? first : 0, b = i == 0 ? first + rows : dims_[i];
    lo[i] = a / chunk_[i];
    count[i] = b == 0 ? 0 : i == 0 ? 1 : (b - 1) / chunk_[i] - lo[i] + 1;
    total *= static_cast<double>(count[i]);
  }
  if (total == 0 || total > (1 << 20)) return;  // too many lookups to afford; HDF5 is on its own
  hsize_t idx[H5S_MAX_RANK] = {0}, offset[H5S_MAX_RANK];
  for (;;) {
    for (int i = 0; i < rank_; ++i) offset[i] = (lo[i] + idx[i]) * chunk_[i];
    unsigned mask = 0;
    haddr_t addr = HADDR_UNDEF;
    hsize_t size = 0;
    if (H5Dget_chunk_info_by_coord(dset_, offset, &mask, &addr, &size) < 0) {
      H5Eclear2(H5E_DEFAULT);  // HDF5's own read reports a broken index
      return;
    }
    if (addr != HADDR_UNDEF && static_cast<double>(size) < nominal_)
      throw Error(path_ + ": damaged HDF5 file (dataset " + name_ + ": a chunk stores " + std::to_string(size) +
                  " bytes, its dimensions need " + std::to_string(static_cast<unsigned long long>(nominal_)) + ")");
    int d = rank_ - 1;
    while (d >= 0 && ++idx[d] == count[d]) idx[d--] = 0;
    if (d < 0) break;
  }
}

namespace {
void* vlenAllocate(std::size_t bytes, void* info) {
  return bytes > *static_cast<const std::size_t*>(info) ? nullptr : std::malloc(bytes);
}
void vlenRelease(void* p, void*) { std::free(p); }
}  // namespace

VlenTransfer::VlenTransfer(const std::string& path) {
  std::error_code ec;
  limit_ = static_cast<std::size_t>(fs::file_size(path, ec)) + 4096;
  if (ec) limit_ = std::size_t{1} << 32;
  plist_ = H5Id(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  if (plist_.id >= 0) H5Pset_vlen_mem_manager(plist_.id, &vlenAllocate, &limit_, &vlenRelease, nullptr);
}

}  // namespace larmor::io::detail
