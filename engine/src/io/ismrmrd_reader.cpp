#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <hdf5.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/version.h>
#include <ismrmrd/xml.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "larmor/io/ismrmrd.hpp"

extern char** environ;

namespace fs = std::filesystem;

namespace {
/// A byte or element count held in a double, as text: exact below 2^63, else in scientific notation (a
/// damaged file's claim can exceed any integer type; converting it would be undefined).
std::string countText(double v) {
  if (v >= 0 && v < 9.2e18) return std::to_string(static_cast<unsigned long long>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}
}  // namespace

namespace larmor::io {

namespace {

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

// HDF5 prints its error stacks to stderr by default; failures become one-line Errors instead.
void quietLibraries() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

// The innermost HDF5 error of the failed call (e.g. "truncated file: eof = 20000, ...").
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

// Deflate, the only filter ISMRMRD writers use, cannot shrink data more than about 1032:1; a dataset
// whose dimensions need more bytes than that times what it stores is corrupt (or an allocation bomb:
// HDF5 happily reports huge dimensions for a chunked dataset whose chunks were never written).
constexpr double kMaxCompression = 1032;

// Bytes a dataset actually stores, bounded by the file's size (a corrupt chunk index can claim more).
double storedBytes(hid_t dset, const std::string& path) {
  std::error_code ec;
  const auto fileBytes = static_cast<double>(fs::file_size(path, ec));
  const auto storage = static_cast<double>(H5Dget_storage_size(dset));
  return ec ? storage : std::min(storage, fileBytes);
}

// Owns an HDF5 id (file, dataset, dataspace, datatype) and closes it with the matching function.
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

// libhdf5 1.10 (Debian 12's) loops forever on a global heap collection whose free-space object has
// size 0, and reads past a collection whose objects claim more bytes than it holds
// (H5HG__cache_heap_deserialize trusts the sizes). ISMRMRD files keep every variable-length field (the
// XML header, each acquisition's samples) in such collections, so a damaged file could hang the program
// (fuzz_ismrmrd found it). Before HDF5 sees the file we walk each collection ("GCOL", version 1) the way
// HDF5 will and refuse the file when an object does not fit. A sequential scan of the file: it is read
// again by HDF5 right after, from the page cache.
//
// The walk also lists every collection's objects (address relative to the superblock -> index -> size):
// HDF5 1.10 reads a variable-length datum from the heap object its descriptor names without checking that
// the object exists (H5HG_read only asserts it: a damaged index read past the collection's table,
// fuzz_ismrmrd) and copies the object's whole size into a buffer sized from the descriptor's length. The
// readers below look every descriptor up here before HDF5 converts it (requireHeapObject).
struct HeapIndex {
  bool complete = false;  ///< the walk ran (a file HDF5 can open at all)
  std::string path;
  std::uintmax_t size = 0;
  std::int64_t mtime = 0;
  std::unordered_map<std::uint64_t, std::unordered_map<std::uint32_t, std::uint64_t>> objects;
};

HeapIndex& lastHeapIndex() {
  thread_local HeapIndex index;
  return index;
}

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
  heaps.mtime = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  const auto size = static_cast<std::size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return;
  struct Unmap {
    void* p;
    std::size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{map, size};
  const auto* b = static_cast<const unsigned char*>(map);
  const unsigned char* end = b + size;
  // The superblock (at 0 or after a user block of 512 * 2^k bytes) says how wide a length field is.
  std::size_t lengthBytes = 0, base = 0;
  for (std::size_t off = 0; off + 16 <= size; off = off == 0 ? 512 : 2 * off) {
    if (std::memcmp(b + off, "\x89HDF\r\n\x1a\n", 8) == 0) {
      lengthBytes = b[off + 8] <= 1 ? b[off + 14] : b[off + 10];
      base = off;
      break;
    }
  }
  if (lengthBytes != 2 && lengthBytes != 4 && lengthBytes != 8) return;  // HDF5 refuses the file itself
  auto decode = [&](const unsigned char* p) {
    std::uint64_t v = 0;
    for (std::size_t i = lengthBytes; i-- > 0;) v = (v << 8) | p[i];
    return v;
  };
  const std::size_t headerBytes = 8 + lengthBytes, objectHeaderBytes = 8 + lengthBytes;
  for (const unsigned char* g = b; g + headerBytes <= end;) {
    g = static_cast<const unsigned char*>(::memmem(g, static_cast<std::size_t>(end - g), "GCOL", 4));
    if (!g || g + headerBytes > end) break;
    const unsigned char* start = g;
    g += 4;
    // HDF5 checks the version but not the reserved bytes, so neither may we (fuzz_ismrmrd evaded an
    // earlier check of them). The same letters inside sample data are taken for a collection only when
    // followed by version 1 and a size that fits in the file, and then fail the walk: for float data
    // about 1 in 10^5 gigabyte-sized files, which are then refused as damaged. A hang is worse.
    if (start[4] != 1) continue;
    const std::uint64_t collection = decode(start + 8);
    if (collection < headerBytes || collection > static_cast<std::uint64_t>(end - start)) continue;  // HDF5 fails the read
    const unsigned char* q = start + headerBytes;
    const unsigned char* stop = start + collection;
    auto& objects = heaps.objects[static_cast<std::uint64_t>(start - b) - base];
    while (q < stop && q + objectHeaderBytes <= stop) {
      const unsigned index = static_cast<unsigned>(q[0]) | static_cast<unsigned>(q[1]) << 8;
      const std::uint64_t objectSize = decode(q + 8);
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

/// The heap index of `path` (the walk of openChecked, or a new one when that was another file).
const HeapIndex& heapIndexOf(const std::string& path) {
  HeapIndex& heaps = lastHeapIndex();
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && heaps.complete && heaps.path == path &&
      heaps.size == static_cast<std::uintmax_t>(st.st_size) &&
      heaps.mtime == static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec)
    return heaps;
  checkGlobalHeaps(path);
  return lastHeapIndex();
}

/// A variable-length descriptor (little-endian: 4-byte length, 8-byte collection address, 4-byte object
/// index, as files with 8-byte addresses store it) must name an existing heap object of exactly
/// length * elementBytes bytes (see HeapIndex).
void requireHeapObject(const HeapIndex& heaps, const unsigned char* descriptor, std::size_t elementBytes,
                       const std::string& path, const std::string& what) {
  if (!heaps.complete) return;
  auto le = [&](std::size_t at, std::size_t n) {
    std::uint64_t v = 0;
    for (std::size_t i = n; i-- > 0;) v = (v << 8) | descriptor[at + i];
    return v;
  };
  const std::uint64_t length = le(0, 4), address = le(4, 8);
  const auto index = static_cast<std::uint32_t>(le(12, 4));
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

// Opens `path` read-only with HDF5 after checking that it is an HDF5 file holding /group/xml. Larmor
// reads ISMRMRD files with HDF5 directly rather than through libismrmrd's Dataset, which opens files
// read-write (creating a missing group in the user's file), trusts the sizes the file states, and
// leaves HDF5 objects open when a read fails (the file then stays open for the rest of the session).
H5Id openChecked(const std::string& path, const std::string& group) {
  quietLibraries();
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(path + ": no such file");
  if (fs::is_directory(path, ec)) throw Error(path + ": is a directory, not an ISMRMRD file");
  checkGlobalHeaps(path);
  const htri_t isHdf5 = H5Fis_hdf5(path.c_str());
  if (isHdf5 == 0) throw Error(path + ": not an HDF5 file, so not ISMRMRD");
  if (isHdf5 < 0) throw Error(path + ": cannot read the file (" + hdf5Reason() + ")");
  H5Id f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (f.id < 0) throw Error(path + ": damaged or truncated HDF5 file (" + hdf5Reason() + ")");
  const std::string g = "/" + group;
  if (H5Lexists(f.id, g.c_str(), H5P_DEFAULT) <= 0) {
    std::string have;
    H5G_info_t info;
    if (H5Gget_info(f.id, &info) >= 0) {
      for (hsize_t i = 0; i < info.nlinks && i < 8; ++i) {
        char name[256] = {0};
        if (H5Lget_name_by_idx(f.id, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof(name), H5P_DEFAULT) > 0)
          have += std::string(have.empty() ? "" : ", ") + "/" + name;
      }
    }
    H5Eclear2(H5E_DEFAULT);
    throw Error(path + ": no ISMRMRD group " + g + (have.empty() ? " (the file is empty)" : " (it has " + have + ")"));
  }
  const std::string xml = g + "/xml";
  if (H5Lexists(f.id, xml.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw Error(path + ": no ISMRMRD XML header (" + xml + ")");
  }
  return f;
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
    throw Error(path + ": damaged HDF5 file (dataset " + name + " stores " +
                countText(have) + " bytes, its " +
                std::to_string(std::max<hssize_t>(points, 0)) + " elements need " +
                countText(need) + ")");
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

// libhdf5 1.10 reads an unfiltered chunk into a buffer of its stored size but copies the nominal chunk
// size (the chunk dimensions times the element size) out of it: a damaged chunk-dimensions message makes
// that a heap over-read (found by fuzz_ismrmrd). ChunkCheck looks up chunks a read will touch and
// refuses the file when one stores less than the nominal size. A lookup costs about as much as reading
// a small chunk, so along dimension 0 only the first chunk of each read is checked (that catches a
// damaged chunk-dimensions message, shared by all chunks; not a single damaged index entry).
// Compressed chunks (their stored size differs by design) and element types whose size on disk may
// differ from memory (variable-length members with other than 8-byte file addresses) are not checked.
class ChunkCheck {
 public:
  ChunkCheck(hid_t dset, const std::string& path, const std::string& name) : dset_(dset), path_(path), name_(name) {
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
      H5Id file(H5Iget_file_id(dset), H5Fclose);
      H5Id fcpl(file.id >= 0 ? H5Fget_create_plist(file.id) : -1, H5Pclose);
      std::size_t addr = 0, len = 0;
      if (fcpl.id < 0 || H5Pget_sizes(fcpl.id, &addr, &len) < 0 || addr != 8 || H5Tdetect_class(type.id, H5T_STRING) > 0) {
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

  /// Checks the chunk holding row `first` of dimension 0, across all of the other dimensions.
  void check(hsize_t first, hsize_t rows) const {
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

 private:
  hid_t dset_;
  std::string path_, name_;
  bool active_ = false;
  int rank_ = 0;
  hsize_t dims_[H5S_MAX_RANK] = {0}, chunk_[H5S_MAX_RANK] = {0};
  double nominal_ = 0;
};

// A transfer property list whose variable-length buffers come from an allocator that refuses more than
// the file holds: a damaged sequence length in a record would otherwise make HDF5 allocate (and fill)
// gigabytes for a few-kilobyte file (fuzz_ismrmrd found it). Buffers read with it must be reclaimed
// with it too.
class VlenTransfer {
 public:
  explicit VlenTransfer(const std::string& path) {
    std::error_code ec;
    limit_ = static_cast<std::size_t>(fs::file_size(path, ec)) + 4096;
    if (ec) limit_ = std::size_t{1} << 32;
    plist_ = H5Id(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
    if (plist_.id >= 0) H5Pset_vlen_mem_manager(plist_.id, &allocate, &limit_, &release, nullptr);
  }
  hid_t id() const { return plist_.id >= 0 ? plist_.id : H5P_DEFAULT; }

 private:
  static void* allocate(std::size_t bytes, void* info) {
    return bytes > *static_cast<const std::size_t*>(info) ? nullptr : std::malloc(bytes);
  }
  static void release(void* p, void*) { std::free(p); }
  std::size_t limit_ = 0;  // not moved after construction: HDF5 holds a pointer to it
  H5Id plist_;
};

// The header string's length, read raw from its descriptor (4-byte length, heap address, index) where the
// layout allows (contiguous, or an unfiltered chunk), must fit in the file: HDF5 zeroes a buffer of that
// length before reading the string (see RawRecordCheck).
void requireStringLengthFits(hid_t dset, const std::string& path, const std::string& name) {
  std::error_code ec;
  const std::uintmax_t fileBytes = fs::file_size(path, ec);
  if (ec) return;
  H5Id dcpl(H5Dget_create_plist(dset), H5Pclose);
  const H5D_layout_t layout = dcpl.id >= 0 ? H5Pget_layout(dcpl.id) : H5D_LAYOUT_ERROR;
  unsigned char raw[4096] = {0};
  bool have = false;
  std::size_t descriptorBytes = 0;
  if (layout == H5D_CONTIGUOUS) {
    const haddr_t at = H5Dget_offset(dset);
    std::ifstream in(path, std::ios::binary);
    // The descriptor: 4-byte length, then (8-byte addresses) the collection address and object index.
    const std::uintmax_t want = at != HADDR_UNDEF && at + 16 <= fileBytes ? 16 : 4;
    if (at != HADDR_UNDEF && at + want <= fileBytes && in.seekg(static_cast<std::streamoff>(at)) &&
        in.read(reinterpret_cast<char*>(raw), static_cast<std::streamsize>(want))) {
      have = true;
      descriptorBytes = static_cast<std::size_t>(want);
    }
  } else if (layout == H5D_CHUNKED && H5Pget_nfilters(dcpl.id) == 0) {
    hsize_t offset[H5S_MAX_RANK] = {0}, stored = 0;
    std::uint32_t filters = 0;
    if (H5Dget_chunk_storage_size(dset, offset, &stored) >= 0 && stored >= 4 && stored <= sizeof raw &&
        H5Dread_chunk(dset, H5P_DEFAULT, offset, &filters, raw) >= 0) {
      have = true;
      descriptorBytes = static_cast<std::size_t>(stored);
    }
  }
  H5Eclear2(H5E_DEFAULT);
  if (!have) return;
  const std::uint64_t length = raw[0] | static_cast<std::uint64_t>(raw[1]) << 8 |
                               static_cast<std::uint64_t>(raw[2]) << 16 | static_cast<std::uint64_t>(raw[3]) << 24;
  if (length > fileBytes)
    throw Error(path + ": damaged HDF5 file (" + name + " claims a " + std::to_string(length) + "-byte string in a " +
                std::to_string(fileBytes) + "-byte file)");
  H5Id file(H5Iget_file_id(dset), H5Fclose);
  H5Id fcpl(file.id >= 0 ? H5Fget_create_plist(file.id) : -1, H5Pclose);
  std::size_t addr = 0, len = 0;
  const bool eightByteAddresses = fcpl.id >= 0 && H5Pget_sizes(fcpl.id, &addr, &len) >= 0 && addr == 8;
  H5Eclear2(H5E_DEFAULT);
  if (eightByteAddresses && descriptorBytes >= 16) requireHeapObject(heapIndexOf(path), raw, 1, path, name);
}

// /group/xml: one string, variable-length as libismrmrd writes it, or fixed-length.
std::string readXmlText(hid_t file, const std::string& path, const std::string& group) {
  const std::string name = "/" + group + "/xml";
  auto fail = [&](const std::string& why) -> void {
    throw Error(path + ": cannot read the ISMRMRD XML header " + name + " (" + why + ")");
  };
  H5Id dset(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (dset.id < 0) fail(hdf5Reason());
  requireCompactStorageFits(dset.id, path, name);
  ChunkCheck(dset.id, path, name).check(0, 1);
  H5Id type(H5Dget_type(dset.id), H5Tclose);
  H5Id space(H5Dget_space(dset.id), H5Sclose);
  if (type.id < 0 || space.id < 0) fail(hdf5Reason());
  if (H5Tget_class(type.id) != H5T_STRING) fail("not a string");
  if (H5Sget_simple_extent_npoints(space.id) != 1) fail("not one string");
  const htri_t variable = H5Tis_variable_str(type.id);
  if (variable < 0) fail(hdf5Reason());
  H5Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
  if (variable > 0) {
    requireStringLengthFits(dset.id, path, name);
    H5Tset_size(mem.id, H5T_VARIABLE);
    const VlenTransfer xfer(path);
    char* text = nullptr;
    if (H5Dread(dset.id, mem.id, H5S_ALL, H5S_ALL, xfer.id(), &text) < 0) fail(hdf5Reason());
    std::string out = text ? text : "";
    H5Dvlen_reclaim(mem.id, space.id, xfer.id(), &text);
    return out;
  }
  const std::size_t size = H5Tget_size(type.id);
  std::error_code ec;
  if (size == 0 || size > std::max<std::uintmax_t>(fs::file_size(path, ec), 1 << 20)) fail("implausible size");
  H5Tset_size(mem.id, size);
  std::vector<char> buf(size + 1, '\0');
  if (H5Dread(dset.id, mem.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0) fail(hdf5Reason());
  return std::string(buf.data());
}

ISMRMRD::IsmrmrdHeader parseHeader(hid_t file, const std::string& path, const std::string& group) {
  const std::string xml = readXmlText(file, path, group);
  ISMRMRD::IsmrmrdHeader hdr;
  try {
    ISMRMRD::deserialize(xml.c_str(), hdr);
  } catch (const std::exception& e) {
    throw Error(path + ": invalid ISMRMRD XML header (" + oneLine(e.what()) + ")");
  }
  return hdr;
}

const std::string* findStringParameter(const ISMRMRD::IsmrmrdHeader& h, const std::string& name) {
  if (!h.userParameters) return nullptr;
  for (const auto& p : h.userParameters->userParameterString)
    if (p.name == name) return &p.value;
  return nullptr;
}

bool isFlag(std::uint64_t flags, ISMRMRD::ISMRMRD_AcquisitionFlags f) {
  return (flags >> (static_cast<int>(f) - 1)) & 1u;
}

// Scans that carry no imaging k-space for this reconstruction.
bool isAuxiliaryScan(std::uint64_t flags) {
  using namespace ISMRMRD;
  for (auto f : {ISMRMRD_ACQ_IS_NAVIGATION_DATA, ISMRMRD_ACQ_IS_PHASECORR_DATA, ISMRMRD_ACQ_IS_HPFEEDBACK_DATA,
                 ISMRMRD_ACQ_IS_DUMMYSCAN_DATA, ISMRMRD_ACQ_IS_RTFEEDBACK_DATA,
                 ISMRMRD_ACQ_IS_SURFACECOILCORRECTIONSCAN_DATA, ISMRMRD_ACQ_IS_PHASE_STABILIZATION_REFERENCE,
                 ISMRMRD_ACQ_IS_PHASE_STABILIZATION})
    if (isFlag(flags, f)) return true;
  return false;
}

TrajectoryKind kindFromHeader(const ISMRMRD::Encoding& e) {
  switch (e.trajectory) {
    case ISMRMRD::TrajectoryType::CARTESIAN:
    case ISMRMRD::TrajectoryType::EPI: return TrajectoryKind::Cartesian;
    case ISMRMRD::TrajectoryType::RADIAL: return TrajectoryKind::Radial;
    case ISMRMRD::TrajectoryType::GOLDENANGLE: return TrajectoryKind::GoldenAngle;
    case ISMRMRD::TrajectoryType::SPIRAL:
      return e.encodedSpace.matrixSize.z > 1 ? TrajectoryKind::StackOfSpirals : TrajectoryKind::Spiral;
    case ISMRMRD::TrajectoryType::OTHER: return TrajectoryKind::Other;
  }
  return TrajectoryKind::Other;
}

std::string byteSize(double bytes) {
  char buf[64];
  const double kib = 1024, mib = kib * 1024, gib = mib * 1024;
  if (bytes >= gib) std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / gib);
  else if (bytes >= mib) std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / mib);
  else if (bytes >= kib) std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / kib);
  else std::snprintf(buf, sizeof buf, "%.0f bytes", bytes);
  return buf;
}

// An NDArray of complex floats as stored (dims and data), or nothing when the file has none.
struct NdArray {
  Shape shape;
  bool complexFloat = false;
  CArray data;
};

// The first NDArray of /group/var, as libismrmrd stores them: an HDF5 dataset [count, d_{n-1}, ..., d_0]
// (C order, so the ISMRMRD dims are the rest reversed) of compound {real, imag}. The dimensions are
// checked against what the dataset stores before anything is allocated.
std::optional<NdArray> readNdArray(hid_t file, const std::string& path, const std::string& group,
                                   const std::string& var) {
  const std::string name = "/" + group + "/" + var;
  if (H5Lexists(file, name.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  auto fail = [&](const std::string& why) -> void {
    throw Error(path + ": cannot read NDArray '" + var + "' (" + why + ")");
  };
  H5Id dset(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (dset.id < 0) fail(hdf5Reason());
  requireCompactStorageFits(dset.id, path, name);
  H5Id space(H5Dget_space(dset.id), H5Sclose);
  hsize_t dims[H5S_MAX_RANK] = {0};
  const int rank = space.id >= 0 ? H5Sget_simple_extent_dims(space.id, dims, nullptr) : -1;
  if (rank < 2 || rank > ISMRMRD::ISMRMRD_NDARRAY_MAXDIM + 1)
    throw Error(path + ": NDArray " + name + " has " + std::to_string(std::max(rank, 0)) +
                " dimensions, not an ISMRMRD array");
  if (dims[0] == 0) return std::nullopt;
  const double stored = storedBytes(dset.id, path);
  double bytes = sizeof(cfloat);
  for (int i = 1; i < rank; ++i) bytes *= static_cast<double>(dims[i]);
  if (bytes > kMaxCompression * stored + 65536)
    throw Error(path + ": NDArray " + name + " claims " + countText(bytes / 8) +
                " elements but stores only " + countText(stored) + " bytes");
  NdArray out;
  std::vector<index_t> shape;
  for (int i = rank - 1; i >= 1; --i) shape.push_back(static_cast<index_t>(dims[i]));
  out.shape = Shape(shape);

  // Complex: a compound of two floating-point members "real" and "imag" (HDF5 converts by name).
  H5Id type(H5Dget_type(dset.id), H5Tclose);
  bool complex = type.id >= 0 && H5Tget_class(type.id) == H5T_COMPOUND && H5Tget_nmembers(type.id) == 2;
  for (const char* member : {"real", "imag"}) {
    if (!complex) break;
    const int idx = H5Tget_member_index(type.id, member);
    complex = idx >= 0 && H5Tget_member_class(type.id, static_cast<unsigned>(idx)) == H5T_FLOAT;
  }
  H5Eclear2(H5E_DEFAULT);
  out.complexFloat = complex;
  if (!complex) return out;
  H5Id mem(H5Tcreate(H5T_COMPOUND, sizeof(cfloat)), H5Tclose);
  H5Tinsert(mem.id, "real", 0, H5T_NATIVE_FLOAT);
  H5Tinsert(mem.id, "imag", sizeof(float), H5T_NATIVE_FLOAT);
  hsize_t start[H5S_MAX_RANK] = {0}, count[H5S_MAX_RANK];
  count[0] = 1;
  for (int i = 1; i < rank; ++i) count[i] = dims[i];
  const hsize_t elements[1] = {static_cast<hsize_t>(out.shape.size())};
  H5Id memSpace(H5Screate_simple(1, elements, nullptr), H5Sclose);
  try {
    out.data = CArray(out.shape);
  } catch (const std::bad_alloc&) {
    fail("not enough memory for " + out.shape.str());
  }
  ChunkCheck(dset.id, path, name).check(0, 1);
  if (H5Sselect_hyperslab(space.id, H5S_SELECT_SET, start, nullptr, count, nullptr) < 0 ||
      H5Dread(dset.id, mem.id, memSpace.id, space.id, H5P_DEFAULT, out.data.data()) < 0)
    fail(hdf5Reason());
  return out;
}

// `raw` reshaped to `want`. Larmor's own arrays ("reference", "coil_maps") must fit or the file is
// rejected; the generator's ("phantom", "csm") are taken only when they fit.
std::optional<CArray> fitArray(std::optional<NdArray> raw, const Shape& want, const std::string& path,
                               const std::string& var, bool required) {
  if (!raw) return std::nullopt;
  if (!raw->complexFloat || raw->shape.size() != want.size()) {
    if (!required) return std::nullopt;
    throw Error(path + ": NDArray '" + var + "' " + raw->shape.str() + " does not fit " + want.str() +
                " (complex float expected)");
  }
  raw->data.reshape(want);
  return std::move(raw->data);
}

// The part of ISMRMRD's acquisition header Larmor uses. HDF5 converts compound members by name, so
// this subset can be read straight from the file's full record.
struct AcqHead {
  std::uint16_t version;
  std::uint64_t flags;
  std::uint32_t scan_counter;
  std::uint16_t number_of_samples, active_channels, discard_pre, discard_post, center_sample, trajectory_dimensions;
  float position[3], read_dir[3], phase_dir[3], slice_dir[3];
  struct {
    std::uint16_t kspace_encode_step_1, kspace_encode_step_2, average, slice, repetition;
  } idx;
};
struct AcqRecord {
  AcqHead head;
  hvl_t traj;  // floats, trajectory_dimensions per sample
  hvl_t data;  // floats, re/im interleaved, [channels][samples]
};

// Before HDF5 converts a record's variable-length fields it allocates and zeroes a buffer as long as
// the sequence length stored in the record's descriptor, whatever the data hold: one damaged length made
// libhdf5 1.10 zero 7 GB for a 12 KB file (fuzz_ismrmrd). So the records are first read raw (a chunk
// with H5Dread_chunk, or contiguous data from the file) and every descriptor's length compared with the
// record's own header: data must hold 2 * samples * channels floats, traj samples * trajectory_dimensions.
// The disk layout of a record equals the memory one with 8-byte file addresses (libismrmrd's files);
// files with other address sizes, and compressed chunks (not readable raw), go without the check.
// Chunked data also get every chunk's stored size checked against the chunk dimensions (see ChunkCheck).
// The members the reader needs must exist in every file (HDF5 would leave missing ones 0).
class RawRecordCheck {
 public:
  RawRecordCheck(hid_t dset, const std::string& path, const std::string& name) : dset_(dset), path_(path), name_(name) {
    inspect();
    H5Eclear2(H5E_DEFAULT);
  }
  bool usable() const { return mode_ != Mode::None; }

  /// Checks records [first, first + n) of the `count` in the dataset.
  void check(hsize_t first, hsize_t n, hsize_t count) const {
    if (mode_ == Mode::None || n == 0) return;
    if (mode_ == Mode::Contiguous) {
      std::vector<unsigned char> raw(static_cast<std::size_t>(n * record_));
      std::ifstream in(path_, std::ios::binary);
      if (!in.seekg(static_cast<std::streamoff>(address_ + first * record_)) ||
          !in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size())))
        return;  // beyond the end of the file: HDF5's read fails on its own
      checkRecords(raw.data(), first, first, first + n);
      return;
    }
    std::vector<unsigned char> raw(static_cast<std::size_t>(nominal_));
    for (hsize_t chunk = first / chunk_; chunk <= (first + n - 1) / chunk_; ++chunk) {
      hsize_t offset[1] = {chunk * chunk_};
      hsize_t stored = 0;
      if (H5Dget_chunk_storage_size(dset_, offset, &stored) < 0 || stored == 0) {
        H5Eclear2(H5E_DEFAULT);  // unallocated: fill values, which hold empty sequences
        continue;
      }
      if (stored != nominal_)
        throw Error(path_ + ": damaged HDF5 file (dataset " + name_ + ": a chunk stores " + std::to_string(stored) +
                    " bytes, its dimensions need " + std::to_string(nominal_) + ")");
      std::uint32_t filters = 0;
      if (H5Dread_chunk(dset_, H5P_DEFAULT, offset, &filters, raw.data()) < 0) {
        H5Eclear2(H5E_DEFAULT);
        continue;  // HDF5's own read reports it
      }
      checkRecords(raw.data(), offset[0], std::max(first, offset[0]), std::min({first + n, offset[0] + chunk_, count}));
    }
  }

 private:
  enum class Mode { None, Chunked, Contiguous };
  struct Field {
    std::size_t at = 0, size = 0;
    bool bigEndian = false;
  };

  static std::uint64_t read(const unsigned char* r, const Field& f) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < f.size; ++i) v |= static_cast<std::uint64_t>(r[f.at + i]) << (8 * (f.bigEndian ? f.size - 1 - i : i));
    return v;
  }

  // Records [lo, hi) from `raw`, which starts with record `base`.
  void checkRecords(const unsigned char* raw, hsize_t base, hsize_t lo, hsize_t hi) const {
    const HeapIndex& heaps = heapIndexOf(path_);
    for (hsize_t i = lo; i < hi; ++i) {
      const unsigned char* r = raw + (i - base) * record_;
      if (headerIntegers_) {
        const std::uint64_t ns = read(r, samples_), nc = read(r, channels_), td = read(r, trajDims_);
        const std::uint64_t dataLen = read(r, data_), trajLen = read(r, traj_);
        if (dataLen != 2 * ns * nc)
          throw Error(path_ + ": acquisition " + std::to_string(i) + " is corrupt (its header says " + std::to_string(ns) +
                      " samples x " + std::to_string(nc) + " channels, it stores " + std::to_string(dataLen) + " floats)");
        if (trajLen != ns * td)
          throw Error(path_ + ": acquisition " + std::to_string(i) + " is corrupt (its header says " + std::to_string(ns) +
                      " samples x " + std::to_string(td) + " trajectory dimensions, it stores " + std::to_string(trajLen) +
                      " values)");
      }
      // Every descriptor must name a heap object of its length (whatever the header's member types).
      requireHeapObject(heaps, r + traj_.at, trajElement_, path_, "acquisition " + std::to_string(i) + "'s trajectory");
      requireHeapObject(heaps, r + data_.at, dataElement_, path_, "acquisition " + std::to_string(i) + "'s samples");
    }
  }

  // An unsigned or signed integer member of compound `type` (at `base`), as it lies on disk.
  bool integerMember(hid_t type, const char* member, std::size_t base, Field& f) const {
    const int idx = H5Tget_member_index(type, member);
    if (idx < 0) throw Error(path_ + ": " + name_ + " is not an ISMRMRD acquisition list (no member head." + member + ")");
    H5Id t(H5Tget_member_type(type, static_cast<unsigned>(idx)), H5Tclose);
    if (t.id < 0 || H5Tget_class(t.id) != H5T_INTEGER || H5Tget_size(t.id) > 8) return false;
    f.at = base + H5Tget_member_offset(type, static_cast<unsigned>(idx));
    f.size = H5Tget_size(t.id);
    f.bigEndian = H5Tget_order(t.id) == H5T_ORDER_BE;
    return f.at + f.size <= record_;
  }

  // Every member of a compound type (nested compounds and arrays too) must lie inside it: libhdf5 1.10
  // converts members by their offsets and sizes without checking them against the element, so a damaged
  // type reads past its conversion buffer (fuzz_ismrmrd, through the sandbox's sanitizer).
  void requireMembersInside(hid_t type, const std::string& what, int depth = 0) const {
    if (depth > 8) throw Error(path_ + ": " + name_ + " has a record type nested too deeply (" + what + ")");
    const H5T_class_t cls = H5Tget_class(type);
    if (cls == H5T_ARRAY) {
      H5Id base(H5Tget_super(type), H5Tclose);
      if (base.id >= 0) requireMembersInside(base.id, what, depth + 1);
      return;
    }
    if (cls != H5T_COMPOUND) return;
    const std::size_t size = H5Tget_size(type);
    const int n = H5Tget_nmembers(type);
    for (int i = 0; i < n; ++i) {
      H5Id member(H5Tget_member_type(type, static_cast<unsigned>(i)), H5Tclose);
      const std::size_t at = H5Tget_member_offset(type, static_cast<unsigned>(i));
      const std::size_t bytes = member.id >= 0 ? H5Tget_size(member.id) : 0;
      char* raw = H5Tget_member_name(type, static_cast<unsigned>(i));
      const std::string name = raw ? raw : "?";
      H5free_memory(raw);
      if (member.id < 0 || bytes == 0 || at > size || bytes > size - at)
        throw Error(path_ + ": damaged HDF5 file (" + name_ + ": member " + what + name + " at byte " + std::to_string(at) +
                    " with " + std::to_string(bytes) + " bytes does not fit in its " + std::to_string(size) +
                    "-byte record)");
      requireMembersInside(member.id, what + name + ".", depth + 1);
    }
  }

  void inspect() {
    // The members the reader needs must exist whatever the layout: HDF5 would quietly leave missing ones 0.
    H5Id type(H5Dget_type(dset_), H5Tclose);
    if (type.id < 0 || H5Tget_class(type.id) != H5T_COMPOUND)
      throw Error(path_ + ": " + name_ + " is not an ISMRMRD acquisition list (not a compound type)");
    requireMembersInside(type.id, "");
    H5Eclear2(H5E_DEFAULT);
    record_ = H5Tget_size(type.id);
    const int head = H5Tget_member_index(type.id, "head");
    H5Id headType(head >= 0 ? H5Tget_member_type(type.id, static_cast<unsigned>(head)) : -1, H5Tclose);
    if (headType.id < 0 || H5Tget_class(headType.id) != H5T_COMPOUND)
      throw Error(path_ + ": " + name_ + " is not an ISMRMRD acquisition list (no acquisition header)");
    const std::size_t headAt = H5Tget_member_offset(type.id, static_cast<unsigned>(head));
    // The header members give the consistency check; the descriptors (and the heap objects they name)
    // are checked even when a damaged type makes the members something else than integers.
    bool descriptorsOk = true;
    bool fieldsOk = integerMember(headType.id, "number_of_samples", headAt, samples_);
    fieldsOk = integerMember(headType.id, "active_channels", headAt, channels_) && fieldsOk;
    fieldsOk = integerMember(headType.id, "trajectory_dimensions", headAt, trajDims_) && fieldsOk;
    for (auto [member, field] : {std::pair<const char*, Field*>{"traj", &traj_}, {"data", &data_}}) {
      const int idx = H5Tget_member_index(type.id, member);
      if (idx < 0 || H5Tget_member_class(type.id, static_cast<unsigned>(idx)) != H5T_VLEN)
        throw Error(path_ + ": " + name_ + " is not an ISMRMRD acquisition list (no variable-length member " +
                    member + ")");
      // On disk a sequence is a 4-byte little-endian length, the heap address and an index.
      field->at = H5Tget_member_offset(type.id, static_cast<unsigned>(idx));
      field->size = 4;
      descriptorsOk = descriptorsOk && field->at + 16 <= record_;
      H5Id vlen(H5Tget_member_type(type.id, static_cast<unsigned>(idx)), H5Tclose);
      H5Id super(vlen.id >= 0 ? H5Tget_super(vlen.id) : -1, H5Tclose);
      const std::size_t element = super.id >= 0 ? H5Tget_size(super.id) : 0;
      if (element == 0) descriptorsOk = false;
      (field == &traj_ ? trajElement_ : dataElement_) = element;
    }
    headerIntegers_ = fieldsOk;
    // The disk layout equals the memory one only with 8-byte file addresses (a sequence: 4 + 8 + 4 bytes,
    // like hvl_t); other files, and fields HDF5 must convert, go unchecked.
    H5Id file(H5Iget_file_id(dset_), H5Fclose);
    H5Id fcpl(file.id >= 0 ? H5Fget_create_plist(file.id) : -1, H5Pclose);
    std::size_t addr = 0, len = 0;
    if (!descriptorsOk || fcpl.id < 0 || H5Pget_sizes(fcpl.id, &addr, &len) < 0 || addr != 8 || record_ == 0) return;
    H5Id dcpl(H5Dget_create_plist(dset_), H5Pclose);
    const H5D_layout_t layout = dcpl.id >= 0 ? H5Pget_layout(dcpl.id) : H5D_LAYOUT_ERROR;
    if (layout == H5D_COMPACT)
      throw Error(path_ + ": " + name_ + " uses HDF5's compact layout, which Larmor does not read (ISMRMRD writes it chunked)");
    if (layout == H5D_CONTIGUOUS) {
      address_ = H5Dget_offset(dset_);
      if (address_ != HADDR_UNDEF) mode_ = Mode::Contiguous;
      return;
    }
    hsize_t chunk[1] = {0};
    if (layout != H5D_CHUNKED || H5Pget_nfilters(dcpl.id) != 0 || H5Pget_chunk(dcpl.id, 1, chunk) != 1 ||
        chunk[0] == 0 || chunk[0] > (1u << 20))
      return;  // compressed chunks cannot be read raw
    chunk_ = chunk[0];
    nominal_ = chunk_ * record_;
    mode_ = Mode::Chunked;
    requireChunkTotalFits(dset_, static_cast<double>(nominal_), path_, name_);
  }

  hid_t dset_;
  std::string path_, name_;
  Mode mode_ = Mode::None;
  hsize_t chunk_ = 1, nominal_ = 0;
  haddr_t address_ = HADDR_UNDEF;
  std::size_t record_ = 0;
  Field samples_, channels_, trajDims_, traj_, data_;
  bool headerIntegers_ = false;                   ///< the header's size members are integers (checkable)
  std::size_t trajElement_ = 4, dataElement_ = 4;  ///< bytes of one element of each sequence
};

// Reads /group/data with HDF5 directly rather than ISMRMRD::Dataset::readAcquisition: libismrmrd
// trusts each record's header sizes and copies the variable-length data into buffers sized from them,
// so one corrupt byte in a header corrupts the heap. Here every record's sizes are checked against
// the data actually stored before anything is used.
class AcquisitionReader {
 public:
  AcquisitionReader(const std::string& path, const std::string& group) : path_(path) {
    file_ = H5Id(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (file_.id < 0) throw Error(path + ": damaged or truncated HDF5 file (" + hdf5Reason() + ")");
    const std::string data = "/" + group + "/data";
    if (H5Lexists(file_.id, data.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return;  // a header without acquisitions
    }
    dset_ = H5Id(H5Dopen2(file_.id, data.c_str(), H5P_DEFAULT), H5Dclose);
    if (dset_.id < 0) throw Error(path + ": cannot open " + data + " (" + hdf5Reason() + ")");
    requireCompactStorageFits(dset_.id, path, data);
    records_ = std::make_unique<RawRecordCheck>(dset_.id, path, data);
    if (!records_->usable()) chunks_ = std::make_unique<ChunkCheck>(dset_.id, path, data);
    xfer_ = std::make_unique<VlenTransfer>(path);
    fileSpace_ = H5Id(H5Dget_space(dset_.id), H5Sclose);
    hsize_t dims[1] = {0};
    if (fileSpace_.id < 0 || H5Sget_simple_extent_ndims(fileSpace_.id) != 1 ||
        H5Sget_simple_extent_dims(fileSpace_.id, dims, nullptr) < 0)
      throw Error(path + ": " + data + " is not a list of acquisitions");
    count_ = dims[0];
    // The count comes from the dataspace; records must be stored to exist (see kMaxCompression).
    H5Id fileType(H5Dget_type(dset_.id), H5Tclose);
    const double recordBytes = fileType.id >= 0 ? std::max<double>(1, static_cast<double>(H5Tget_size(fileType.id))) : 1;
    const double stored = storedBytes(dset_.id, path);
    H5Eclear2(H5E_DEFAULT);
    if (static_cast<double>(count_) * recordBytes > kMaxCompression * stored + recordBytes)
      throw Error(path + ": " + data + " claims " + std::to_string(count_) + " acquisitions but stores only " +
                  countText(stored) + " bytes");
    buildMemType();
  }
  ~AcquisitionReader() { releaseBlock(); }

  std::uint64_t count() const { return count_; }

  /// Record i, valid until the next call. Reads blocks of records to keep HDF5 calls few.
  const AcqRecord& get(std::uint64_t i) {
    if (block_.empty() || i < blockStart_ || i >= blockStart_ + block_.size()) readBlock(i);
    const AcqRecord& r = block_[i - blockStart_];
    const std::size_t ns = r.head.number_of_samples, nc = r.head.active_channels, td = r.head.trajectory_dimensions;
    if (r.data.len != 2 * ns * nc)
      throw Error(path_ + ": acquisition " + std::to_string(i) + " is corrupt (its header says " + std::to_string(ns) +
                  " samples x " + std::to_string(nc) + " channels, it holds " + std::to_string(r.data.len / 2) +
                  " complex values)");
    if (r.traj.len != ns * td)
      throw Error(path_ + ": acquisition " + std::to_string(i) + " is corrupt (its header says " + std::to_string(ns) +
                  " samples x " + std::to_string(td) + " trajectory dimensions, it holds " +
                  std::to_string(r.traj.len) + " values)");
    return r;
  }

 private:
  void buildMemType() {
    const hsize_t three[1] = {3};
    H5Id f3(H5Tarray_create2(H5T_NATIVE_FLOAT, 1, three), H5Tclose);
    H5Id idx(H5Tcreate(H5T_COMPOUND, sizeof(AcqHead::idx)), H5Tclose);
    H5Tinsert(idx.id, "kspace_encode_step_1", offsetof(decltype(AcqHead::idx), kspace_encode_step_1), H5T_NATIVE_UINT16);
    H5Tinsert(idx.id, "kspace_encode_step_2", offsetof(decltype(AcqHead::idx), kspace_encode_step_2), H5T_NATIVE_UINT16);
    H5Tinsert(idx.id, "average", offsetof(decltype(AcqHead::idx), average), H5T_NATIVE_UINT16);
    H5Tinsert(idx.id, "slice", offsetof(decltype(AcqHead::idx), slice), H5T_NATIVE_UINT16);
    H5Tinsert(idx.id, "repetition", offsetof(decltype(AcqHead::idx), repetition), H5T_NATIVE_UINT16);
    H5Id head(H5Tcreate(H5T_COMPOUND, sizeof(AcqHead)), H5Tclose);
    H5Tinsert(head.id, "version", offsetof(AcqHead, version), H5T_NATIVE_UINT16);
    H5Tinsert(head.id, "flags", offsetof(AcqHead, flags), H5T_NATIVE_UINT64);
    H5Tinsert(head.id, "scan_counter", offsetof(AcqHead, scan_counter), H5T_NATIVE_UINT32);
    H5Tinsert(head.id, "number_of_samples", offsetof(AcqHead, number_of_samples), H5T_NATIVE_UINT16);
    H5Tinsert(head.id, "active_channels", offsetof(AcqHead, active_channels), H5T_NATIVE_UINT16);
    H5Tinsert(head.id, "discard_pre", offsetof(AcqHead, discard_pre), H5T_NATIVE_UINT16);
    H5Tinsert(head.id, "discard_post", offsetof(AcqHead, discard_post), H5T_NATIVE_UINT16);
    H5Tinsert(head.id, "center_sample", offsetof(AcqHead, center_sample), H5T_NATIVE_UINT16);
    H5Tinsert(head.id, "trajectory_dimensions", offsetof(AcqHead, trajectory_dimensions), H5T_NATIVE_UINT16);
    H5Tinsert(head.id, "position", offsetof(AcqHead, position), f3.id);
    H5Tinsert(head.id, "read_dir", offsetof(AcqHead, read_dir), f3.id);
    H5Tinsert(head.id, "phase_dir", offsetof(AcqHead, phase_dir), f3.id);
    H5Tinsert(head.id, "slice_dir", offsetof(AcqHead, slice_dir), f3.id);
    H5Tinsert(head.id, "idx", offsetof(AcqHead, idx), idx.id);
    H5Id vfloat(H5Tvlen_create(H5T_NATIVE_FLOAT), H5Tclose);
    memType_ = H5Id(H5Tcreate(H5T_COMPOUND, sizeof(AcqRecord)), H5Tclose);
    H5Tinsert(memType_.id, "head", offsetof(AcqRecord, head), head.id);
    H5Tinsert(memType_.id, "traj", offsetof(AcqRecord, traj), vfloat.id);
    H5Tinsert(memType_.id, "data", offsetof(AcqRecord, data), vfloat.id);
  }

  void releaseBlock() {
    if (block_.empty()) return;
    const hsize_t n[1] = {block_.size()};
    H5Id space(H5Screate_simple(1, n, nullptr), H5Sclose);
    H5Dvlen_reclaim(memType_.id, space.id, xfer_->id(), block_.data());
    block_.clear();
  }

  void readBlock(std::uint64_t first) {
    releaseBlock();
    const hsize_t start[1] = {first};
    const hsize_t n[1] = {std::min<hsize_t>(kBlock, count_ - first)};
    if (chunks_) chunks_->check(first, n[0]);
    records_->check(first, n[0], count_);
    H5Id memSpace(H5Screate_simple(1, n, nullptr), H5Sclose);
    std::vector<AcqRecord> buf(n[0]);
    std::memset(static_cast<void*>(buf.data()), 0, buf.size() * sizeof(AcqRecord));
    if (H5Sselect_hyperslab(fileSpace_.id, H5S_SELECT_SET, start, nullptr, n, nullptr) < 0 ||
        H5Dread(dset_.id, memType_.id, memSpace.id, fileSpace_.id, xfer_->id(), buf.data()) < 0) {
      const std::string why = hdf5Reason();
      // A failed read may leave some variable-length buffers allocated.
      H5Dvlen_reclaim(memType_.id, memSpace.id, xfer_->id(), buf.data());
      throw Error(path_ + ": cannot read acquisitions " + std::to_string(first) + " to " +
                  std::to_string(first + n[0] - 1) + " (" + why + ")");
    }
    block_ = std::move(buf);
    blockStart_ = first;
  }

  static constexpr hsize_t kBlock = 256;
  std::string path_;
  H5Id file_, dset_, fileSpace_, memType_;
  std::unique_ptr<RawRecordCheck> records_;
  std::unique_ptr<ChunkCheck> chunks_;
  std::unique_ptr<VlenTransfer> xfer_;
  std::uint64_t count_ = 0;
  std::vector<AcqRecord> block_;
  std::uint64_t blockStart_ = 0;
};

// --- the crash sandbox -------------------------------------------------------------------------------------
// libhdf5 1.10 (Debian 12's) trusts sizes and indices it reads from the file in more places than the checks
// above can cover without reimplementing HDF5 (fuzz_ismrmrd keeps finding them: a local heap whose size
// makes an allocation fail unchecked, heap object indices, ...). So before a file is read in-process it is
// read by larmor-h5check (engine/tools/h5check_main.cpp) in a process of its own: a crash there is a
// damaged file, reported as one Error; only a file that reads there is read here. Costs one more read of
// the file (page-cached). LARMOR_H5CHECK names the helper; without one (LARMOR_NO_SANDBOX=1, or a build
// that has none) files are read in-process only.

/// larmor-h5check: $LARMOR_H5CHECK, else next to this library: lib/larmor/ (installed) or ../bin/ (build tree).
std::string h5checkPath() {
  if (const char* e = std::getenv("LARMOR_H5CHECK"); e && *e) return e;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&checkGlobalHeaps), &info) == 0 || !info.dli_fname) return {};
  const fs::path lib = fs::path(info.dli_fname).parent_path();
  for (const fs::path& p : {lib / "larmor" / "larmor-h5check", lib / ".." / "bin" / "larmor-h5check"})
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  return {};
}

void sandboxedCheck(const std::string& path, const std::string& group, int repetition, const Progress& progress) {
  if (std::getenv("LARMOR_H5CHECK_CHILD")) return;  // this is the helper itself
  if (const char* no = std::getenv("LARMOR_NO_SANDBOX"); no && *no && std::string(no) != "0") return;
  const std::string helper = h5checkPath();
  if (helper.empty()) return;
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return;  // no pipe: read in-process as before
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
  const std::string rep = std::to_string(repetition);
  std::vector<char*> argv{const_cast<char*>(helper.c_str()), const_cast<char*>(path.c_str()),
                          const_cast<char*>(group.c_str()), const_cast<char*>(rep.c_str()), nullptr};
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  env.emplace_back("LARMOR_H5CHECK_CHILD=1");
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, helper.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (spawned != 0) {
    ::close(out[0]);
    return;  // the helper cannot run: read in-process as before
  }
  // Its output (an error message) while it runs; cancel kills it. No time limit: a large file reads slowly.
  std::string text;
  char buf[4096];
  bool open = true;
  int status = 0;
  for (;;) {
    if (open) {
      pollfd p{out[0], POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) {
        const ssize_t n = ::read(out[0], buf, sizeof buf);
        if (n > 0 && text.size() < 65536) text.append(buf, static_cast<std::size_t>(n));
        if (n == 0) open = false;
      }
    } else {
      ::usleep(20000);
    }
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    try {
      progress.checkCancelled();
    } catch (...) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ::close(out[0]);
      throw;
    }
  }
  while (open) {  // what is left in the pipe
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    if (text.size() < 65536) text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(out[0]);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (WIFSIGNALED(status))
    throw Error(path + ": damaged HDF5 file (libhdf5 crashed reading it: " + strsignal(WTERMSIG(status)) + ")");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    const std::size_t at = text.rfind(kH5CheckErrorMarker);
    if (at != std::string::npos) throw Error(text.substr(at + std::strlen(kH5CheckErrorMarker)));
  }
  throw Error(path + ": cannot be read (" + (text.empty() ? "the reader stopped" : text) + ")");
}

}  // namespace

std::string readIsmrmrdSimulatorSettings(const std::string& path, const std::string& group) {
  const H5Id file = openChecked(path, group);
  const ISMRMRD::IsmrmrdHeader hdr = parseHeader(file.id, path, group);
  const std::string* s = findStringParameter(hdr, kSimulatorParameter);
  return s ? *s : std::string();
}

Dataset readIsmrmrd(const std::string& path, const std::string& group, const Progress& progress, int repetition) {
  auto fail = [&](const std::string& what) -> void { throw Error(path + ": " + what); };
  sandboxedCheck(path, group, repetition, progress);

  ISMRMRD::IsmrmrdHeader xml;
  std::optional<NdArray> rawReference, rawPhantom, rawCoilMaps, rawCsm;
  {
    const H5Id file = openChecked(path, group);
    xml = parseHeader(file.id, path, group);
    rawReference = readNdArray(file.id, path, group, "reference");
    if (!rawReference) rawPhantom = readNdArray(file.id, path, group, "phantom");
    rawCoilMaps = readNdArray(file.id, path, group, "coil_maps");
    if (!rawCoilMaps) rawCsm = readNdArray(file.id, path, group, "csm");
  }

  Dataset d;
  d.source = path;
  Header& h = d.header;
  if (xml.encoding.empty()) fail("the ISMRMRD XML header has no <encoding> section");
  const ISMRMRD::Encoding& enc = xml.encoding[0];
  const auto& em = enc.encodedSpace.matrixSize;
  const auto& rm = enc.reconSpace.matrixSize;
  h.encoded[0] = em.x, h.encoded[1] = em.y, h.encoded[2] = em.z;
  h.recon[0] = rm.x, h.recon[1] = rm.y, h.recon[2] = rm.z;
  for (int i = 0; i < 3; ++i)
    if (h.encoded[i] <= 0 || h.recon[i] <= 0)
      fail("the XML header's matrix size is zero (encoded " + Shape{h.encoded[0], h.encoded[1], h.encoded[2]}.str() +
           ", recon " + Shape{h.recon[0], h.recon[1], h.recon[2]}.str() + ")");
  h.encodedFovMm[0] = enc.encodedSpace.fieldOfView_mm.x;
  h.encodedFovMm[1] = enc.encodedSpace.fieldOfView_mm.y;
  h.encodedFovMm[2] = enc.encodedSpace.fieldOfView_mm.z;
  h.reconFovMm[0] = enc.reconSpace.fieldOfView_mm.x;
  h.reconFovMm[1] = enc.reconSpace.fieldOfView_mm.y;
  h.reconFovMm[2] = enc.reconSpace.fieldOfView_mm.z;
  const auto& lim = enc.encodingLimits;
  const index_t center1 = lim.kspace_encoding_step_1 ? lim.kspace_encoding_step_1->center : h.encoded[1] / 2;
  const index_t center2 = lim.kspace_encoding_step_2 ? lim.kspace_encoding_step_2->center : h.encoded[2] / 2;
  index_t slices = lim.slice ? index_t{lim.slice->maximum} + 1 : 1;
  h.trajectory = kindFromHeader(enc);
  if (const std::string* k = findStringParameter(xml, kTrajectoryKindParameter)) {
    try {
      h.trajectory = trajectoryKindFromString(*k);
    } catch (const Error&) {
      fail("unknown " + std::string(kTrajectoryKindParameter) + " '" + *k + "'");
    }
  }
  if (enc.parallelImaging) {
    h.accelerationPe1 = std::max<int>(1, enc.parallelImaging->accelerationFactor.kspace_encoding_step_1);
    h.accelerationPe2 = std::max<int>(1, enc.parallelImaging->accelerationFactor.kspace_encoding_step_2);
  }
  if (xml.acquisitionSystemInformation) {
    const auto& sys = *xml.acquisitionSystemInformation;
    if (sys.systemFieldStrength_T) h.systemFieldT = *sys.systemFieldStrength_T;
    std::string dev;
    if (sys.systemVendor) dev = *sys.systemVendor;
    if (sys.systemModel) dev += (dev.empty() ? "" : " ") + *sys.systemModel;
    h.deviceDescription = dev;
  }
  if (xml.subjectInformation) {
    if (xml.subjectInformation->patientName) h.patientName = *xml.subjectInformation->patientName;
    if (xml.subjectInformation->patientID) h.patientId = *xml.subjectInformation->patientID;
  }
  if (xml.studyInformation && xml.studyInformation->studyDescription)
    h.studyDescription = *xml.studyInformation->studyDescription;
  if (xml.measurementInformation && xml.measurementInformation->protocolName)
    h.protocolName = *xml.measurementInformation->protocolName;

  const bool cartesian = h.trajectory == TrajectoryKind::Cartesian;
  const index_t enc0 = h.encoded[0], enc1 = h.encoded[1], enc2 = h.encoded[2];

  AcquisitionReader reader(path, group);
  const std::uint64_t count = reader.count();

  // Cartesian accumulation: sums and hit counts per line, divided at the end (averaging repeats).
  std::vector<cfloat> ksum;
  std::vector<std::uint32_t> hits;
  std::vector<std::uint8_t> calib;
  // Non-Cartesian: per slice, profiles appended as [coils][readout] and trajectories as [readout][3].
  std::vector<std::vector<cfloat>> sliceData;
  std::vector<std::vector<float>> sliceTraj;
  index_t readout = -1;
  int trajDims = 0;

  index_t coils = 0, imaging = 0;
  bool haveGeometry = false;
  std::vector<int> sliceSeen;
  std::vector<float> slicePos;
  std::error_code sizeError;
  const auto fileBytes = static_cast<double>(fs::file_size(path, sizeError));

  auto allocateSlices = [&](index_t want, std::uint64_t acqIndex, index_t bytesPerAcq) {
    if (want <= static_cast<index_t>(hits.size() / static_cast<std::size_t>(enc1 * enc2)) && !hits.empty()) return;
    const double bytes = static_cast<double>(enc0) * enc1 * enc2 * coils * want * sizeof(cfloat);
    const double present = std::min(fileBytes, static_cast<double>(count - acqIndex) * bytesPerAcq);
    const double limit = 64.0 * 1024 * 1024 * 1024;
    if (bytes > limit || bytes > 64.0 * std::max(present, 1.0))
      fail("the header's matrix " + Shape{enc0, enc1, enc2}.str() + " x " + std::to_string(coils) + " coils x " +
           std::to_string(want) + " slices needs " + byteSize(bytes) + " of k-space but the file holds only " +
           byteSize(present) + " of samples");
    try {
      ksum.resize(static_cast<std::size_t>(enc0 * enc1 * enc2 * coils * want));
      hits.resize(static_cast<std::size_t>(enc1 * enc2 * want));
      calib.resize(hits.size());
    } catch (const std::bad_alloc&) {
      fail("not enough memory for k-space " + Shape{enc0, enc1, enc2, coils, want}.str());
    }
  };

  const std::uint64_t step = std::max<std::uint64_t>(1, count / 100);
  d.acquisitions.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(count, 1u << 20)));
  for (std::uint64_t i = 0; i < count; ++i) {
    if (i % step == 0) progress.report(static_cast<double>(i) / static_cast<double>(count), "reading acquisitions");
    const AcqRecord& record = reader.get(i);
    const AcqHead& ah = record.head;
    AcquisitionInfo info;
    info.scanCounter = ah.scan_counter;
    info.flags = ah.flags;
    info.samples = ah.number_of_samples;
    info.channels = ah.active_channels;
    info.trajectoryDims = ah.trajectory_dimensions;
    info.pe1 = ah.idx.kspace_encode_step_1;
    info.pe2 = ah.idx.kspace_encode_step_2;
    info.slice = ah.idx.slice;
    info.repetition = ah.idx.repetition;
    d.acquisitions.push_back(info);

    // The acquisition header's binary layout is versioned; HDF5 converts members by name, which copes
    // with the 1.x layouts, but a later major version may mean something else by the same names.
    if (ah.version > ISMRMRD_VERSION_MAJOR)
      fail("acquisition " + std::to_string(i) + " has format version " + std::to_string(ah.version) +
           "; this reader knows ISMRMRD version " + std::to_string(ISMRMRD_VERSION_MAJOR));

    if (isFlag(ah.flags, ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT)) {
      ++d.noiseScans;
      continue;
    }
    if (isAuxiliaryScan(ah.flags)) continue;
    if (repetition >= 0 && ah.idx.repetition != repetition) continue;

    const std::string acqName = "acquisition " + std::to_string(i);
    const index_t channels = ah.active_channels;
    if (channels == 0) fail(acqName + " has no channels");
    if (coils == 0) coils = channels;
    else if (channels != coils)
      fail(acqName + " has " + std::to_string(channels) + " channels, expected " + std::to_string(coils));
    const index_t samples = ah.number_of_samples;
    const index_t pre = ah.discard_pre, post = ah.discard_post;
    if (samples == 0) fail(acqName + " has no samples");
    if (pre + post >= samples)
      fail(acqName + " discards " + std::to_string(pre + post) + " of its " + std::to_string(samples) + " samples");
    const index_t n = samples - pre - post;
    const cfloat* data = static_cast<const cfloat*>(record.data.p);
    for (index_t c = 0; c < channels; ++c)
      for (index_t s = pre; s < pre + n; ++s) {
        const cfloat v = data[c * samples + s];
        if (!std::isfinite(v.real()) || !std::isfinite(v.imag()))
          fail(acqName + ": sample " + std::to_string(s) + " of coil " + std::to_string(c) + " is " +
               (std::isnan(v.real()) || std::isnan(v.imag()) ? "NaN" : "Inf"));
      }

    const index_t slice = ah.idx.slice;
    if (static_cast<index_t>(sliceSeen.size()) <= slice) {
      sliceSeen.resize(static_cast<std::size_t>(slice) + 1, 0);
      slicePos.resize(sliceSeen.size(), 0.f);
    }
    const float* sd = ah.slice_dir;
    if (!sliceSeen[static_cast<std::size_t>(slice)]) {
      sliceSeen[static_cast<std::size_t>(slice)] = 1;
      slicePos[static_cast<std::size_t>(slice)] =
          ah.position[0] * sd[0] + ah.position[1] * sd[1] + ah.position[2] * sd[2];
    }
    if (!haveGeometry) {
      haveGeometry = true;
      Geometry& g = h.geometry;
      bool any = false;
      for (int k = 0; k < 3; ++k) {
        g.position[k] = ah.position[k];
        any = any || ah.position[k] != 0 || ah.read_dir[k] != 0 || ah.phase_dir[k] != 0 || ah.slice_dir[k] != 0;
      }
      if (any) {
        for (int k = 0; k < 3; ++k) {
          g.readDir[k] = ah.read_dir[k];
          g.phaseDir[k] = ah.phase_dir[k];
          g.sliceDir[k] = ah.slice_dir[k];
        }
      }
      g.present = any;
    }
    ++imaging;

    if (cartesian) {
      // A shorter readout (asymmetric echo) is placed so that center_sample lands on enc0/2.
      index_t offset = 0;
      if (n != enc0) {
        const index_t center = static_cast<index_t>(ah.center_sample) - pre;
        offset = enc0 / 2 - center;
        if (n > enc0 || center < 0 || offset < 0 || offset + n > enc0)
          fail(acqName + " has " + std::to_string(n) + " samples, expected " + std::to_string(enc0) +
               " (the encoded matrix)");
      }
      const index_t pe1 = static_cast<index_t>(ah.idx.kspace_encode_step_1) + (enc1 / 2 - center1);
      const index_t pe2 = static_cast<index_t>(ah.idx.kspace_encode_step_2) + (enc2 / 2 - center2);
      if (pe1 < 0 || pe1 >= enc1 || pe2 < 0 || pe2 >= enc2)
        fail(acqName + " lies at k-space line (" + std::to_string(pe1) + ", " + std::to_string(pe2) +
             ") outside the encoded matrix " + Shape{enc0, enc1, enc2}.str());
      allocateSlices(std::max(slices, slice + 1), i, samples * channels * static_cast<index_t>(sizeof(cfloat)));
      slices = std::max(slices, slice + 1);
      const bool reverse = isFlag(ah.flags, ISMRMRD::ISMRMRD_ACQ_IS_REVERSE);
      for (index_t c = 0; c < coils; ++c) {
        cfloat* dst = ksum.data() + enc0 * (pe1 + enc1 * (pe2 + enc2 * (c + coils * slice))) + offset;
        const cfloat* src = data + c * samples + pre;
        if (reverse)
          for (index_t s = 0; s < n; ++s) dst[n - 1 - s] += src[s];
        else
          for (index_t s = 0; s < n; ++s) dst[s] += src[s];
      }
      const std::size_t line = static_cast<std::size_t>(pe1 + enc1 * (pe2 + enc2 * slice));
      ++hits[line];
      if (isFlag(ah.flags, ISMRMRD::ISMRMRD_ACQ_IS_PARALLEL_CALIBRATION) ||
          isFlag(ah.flags, ISMRMRD::ISMRMRD_ACQ_IS_PARALLEL_CALIBRATION_AND_IMAGING))
        calib[line] = 1;
    } else {
      const int td = ah.trajectory_dimensions;
      if (td < 2)
        fail("the header says the trajectory is " + toString(h.trajectory) + " but " + acqName +
             " stores no k-space coordinates");
      if (readout < 0) readout = n, trajDims = td;
      if (n != readout)
        fail(acqName + " has " + std::to_string(n) + " samples, expected " + std::to_string(readout));
      if (td != trajDims)
        fail(acqName + " has " + std::to_string(td) + "-D coordinates, expected " + std::to_string(trajDims));
      if (static_cast<index_t>(sliceData.size()) <= slice) {
        sliceData.resize(static_cast<std::size_t>(slice) + 1);
        sliceTraj.resize(static_cast<std::size_t>(slice) + 1);
      }
      auto& dst = sliceData[static_cast<std::size_t>(slice)];
      auto& tdst = sliceTraj[static_cast<std::size_t>(slice)];
      try {
        for (index_t c = 0; c < coils; ++c)
          dst.insert(dst.end(), data + c * samples + pre, data + c * samples + pre + n);
        const float* t = static_cast<const float*>(record.traj.p);
        for (index_t s = pre; s < pre + n; ++s) {
          for (int k = 0; k < 3; ++k) {
            const float v = k < td ? t[s * td + k] : 0.f;
            if (!std::isfinite(v)) fail(acqName + ": trajectory coordinate " + std::to_string(k) + " of sample " +
                                        std::to_string(s) + " is not finite");
            tdst.push_back(v);
          }
        }
      } catch (const std::bad_alloc&) {
        fail("not enough memory for the k-space samples");
      }
    }
  }
  progress.report(1.0, "reading acquisitions");
  if (imaging == 0)
    fail(count == 0 ? std::string("has no acquisitions")
                    : "has no imaging acquisitions" +
                          (repetition >= 0 ? " in repetition " + std::to_string(repetition) : std::string()) +
                          " (of " + std::to_string(count) + ", " + std::to_string(d.noiseScans) + " noise scans)");
  h.coils = coils;

  if (cartesian) {
    // The encoding limits may announce more slices than were acquired: keep up to the last one seen.
    slices = static_cast<index_t>(sliceSeen.size());
    h.slices = slices;
    ksum.resize(static_cast<std::size_t>(enc0 * enc1 * enc2 * coils * slices));
    hits.resize(static_cast<std::size_t>(enc1 * enc2 * slices));
    d.kspace = CArray(Shape{enc0, enc1, enc2, coils, slices});
    d.sampled = Array<std::uint8_t>(Shape{enc1, enc2, slices}, 0);
    d.calibration = Array<std::uint8_t>(Shape{enc1, enc2, slices}, 0);
    const index_t lineCount = enc1 * enc2 * slices;
    for (index_t line = 0; line < lineCount; ++line) {
      const std::uint32_t nHits = hits[static_cast<std::size_t>(line)];
      if (nHits == 0) continue;
      d.sampled[line] = 1;
      d.calibration[line] = calib[static_cast<std::size_t>(line)];
      const index_t pe = line % (enc1 * enc2), slice = line / (enc1 * enc2);
      const float scale = 1.f / static_cast<float>(nHits);
      for (index_t c = 0; c < coils; ++c) {
        const index_t off = enc0 * (pe + enc1 * enc2 * (c + coils * slice));
        for (index_t s = 0; s < enc0; ++s) d.kspace[off + s] = ksum[static_cast<std::size_t>(off + s)] * scale;
      }
    }
    std::vector<char> calibPe1(static_cast<std::size_t>(enc1), 0);
    for (index_t line = 0; line < lineCount; ++line)
      if (d.calibration[line]) calibPe1[static_cast<std::size_t>(line % enc1)] = 1;
    h.calibrationLines = static_cast<int>(std::count(calibPe1.begin(), calibPe1.end(), 1));
  } else {
    // Profiles of every slice form one [readout, profiles] set; a single trajectory serves all slices.
    index_t first = -1;
    for (std::size_t s = 0; s < sliceData.size(); ++s)
      if (!sliceData[s].empty()) {
        first = static_cast<index_t>(s);
        break;
      }
    const std::size_t perProfile = static_cast<std::size_t>(readout * coils);
    const index_t profiles = static_cast<index_t>(sliceData[static_cast<std::size_t>(first)].size() / perProfile);
    slices = static_cast<index_t>(sliceData.size());
    for (index_t s = 0; s < slices; ++s) {
      const std::size_t got = s < static_cast<index_t>(sliceData.size())
                                  ? sliceData[static_cast<std::size_t>(s)].size() / perProfile : 0;
      if (static_cast<index_t>(got) != profiles)
        fail("slice " + std::to_string(s) + " has " + std::to_string(got) + " profiles, slice " +
             std::to_string(first) + " has " + std::to_string(profiles));
      const auto& t0 = sliceTraj[static_cast<std::size_t>(first)];
      const auto& ts = sliceTraj[static_cast<std::size_t>(s)];
      for (std::size_t k = 0; k < ts.size(); ++k)
        if (std::abs(ts[k] - t0[k]) > 1e-4f * (1.f + std::abs(t0[k])))
          fail("slice " + std::to_string(s) + " has a different trajectory from slice " + std::to_string(first) +
               " (not supported)");
    }
    h.slices = slices;
    d.kspace = CArray(Shape{readout, profiles, 1, coils, slices});
    for (index_t s = 0; s < slices; ++s) {
      const auto& src = sliceData[static_cast<std::size_t>(s)];
      for (index_t p = 0; p < profiles; ++p)
        for (index_t c = 0; c < coils; ++c)
          std::memcpy(d.kspace.data() + readout * (p + profiles * (c + coils * s)),
                      src.data() + (p * coils + c) * readout, static_cast<std::size_t>(readout) * sizeof(cfloat));
    }
    std::vector<cfloat>().swap(sliceData[0]);
    d.trajectory = RArray(Shape{3, readout, profiles});
    std::memcpy(d.trajectory.data(), sliceTraj[static_cast<std::size_t>(first)].data(),
                static_cast<std::size_t>(d.trajectory.size()) * sizeof(float));
    // Units: Larmor's files say cycles/FOV; otherwise |k| <= 0.5 means the normalised convention
    // (Gadgetron's, k in [-0.5, 0.5) of the recon matrix), anything larger is already cycles/FOV.
    const std::string* units = findStringParameter(xml, kTrajectoryUnitsParameter);
    float maxAbs = 0;
    for (index_t i = 0; i < d.trajectory.size(); ++i) maxAbs = std::max(maxAbs, std::abs(d.trajectory[i]));
    if (!(units && *units == "cycles_per_fov") && maxAbs <= 0.5f * (1.f + 1e-3f))
      for (index_t i = 0; i < d.trajectory.size(); ++i) d.trajectory[i] *= static_cast<float>(h.recon[i % 3]);
    if (h.trajectory == TrajectoryKind::Radial && trajDims >= 3 && enc2 > 1) h.trajectory = TrajectoryKind::Radial3D;
  }

  Geometry& g = h.geometry;
  g.slicePositions.assign(static_cast<std::size_t>(h.slices), 0.f);
  for (index_t s = 0; s < h.slices; ++s) {
    if (g.present && s < static_cast<index_t>(sliceSeen.size()) && sliceSeen[static_cast<std::size_t>(s)])
      g.slicePositions[static_cast<std::size_t>(s)] = slicePos[static_cast<std::size_t>(s)];
    else if (!g.present)  // evenly spaced, centred, one slab thickness apart
      g.slicePositions[static_cast<std::size_t>(s)] =
          (static_cast<float>(s) - 0.5f * static_cast<float>(h.slices - 1)) * h.reconFovMm[2];
  }

  const Shape imageShape{h.recon[0], h.recon[1], h.recon[2], 1, h.slices};
  d.reference = rawReference ? fitArray(std::move(rawReference), imageShape, path, "reference", true)
                             : fitArray(std::move(rawPhantom), imageShape, path, "phantom", false);
  const Shape mapShape{h.recon[0], h.recon[1], h.recon[2], h.coils, h.slices};
  d.coilMaps = rawCoilMaps ? fitArray(std::move(rawCoilMaps), mapShape, path, "coil_maps", true)
                           : fitArray(std::move(rawCsm), mapShape, path, "csm", false);

  d.validate();
  return d;
}

}  // namespace larmor::io
