// HDF5 global heap collections (hdf5_global_heap.hpp). Format facts relied on (HDF5 File Format
// Specification version 2/3, "Global Heap"):
// - a collection is "GCOL", version 1, three reserved bytes, the collection size (a length: "size of
//   lengths" bytes, from the superblock), padded to a multiple of 8 bytes; then objects: 2-byte index,
//   2-byte reference count, 4 reserved bytes, the object size (a length), padded to 8 bytes, then the
//   data padded to a multiple of 8 bytes (so both headers are 16 bytes with lengths of 2, 4 or 8 bytes;
//   libhdf5's H5HG_SIZEOF_HDR and H5HG_SIZEOF_OBJHDR). Object 0 is the free space and counts its own
//   header in its size; a tail too short for an object header is free space too;
// - a variable-length datum on disk is a 4-byte sequence length (in elements), the collection address
//   (relative to the base address: the end of a user block) and a 4-byte object index; address 0 is an
//   empty sequence (libhdf5 1.10 writes even an empty one as an object of size 0);
// - all little-endian.
//
// What libhdf5 1.10 (Debian 12's) does with them, found by fuzz_ismrmrd: it parses a collection by
// stepping from object to object by the sizes it reads, so a free-space object of size 0 loops forever
// and an object larger than what is left reads past the collection (H5HG__cache_heap_deserialize); it
// reads the object a descriptor names without checking that it exists (H5HG_read only asserts it) and
// copies the object's whole size into a buffer sized from the descriptor's length. So here each
// collection is parsed the same way with every step checked: it must lie inside the file, carry the
// signature and version 1, hold its objects (each index once), and not overlap another collection; a
// descriptor must name an existing object (not the free space) of exactly its length. Collections are
// kept by address: one is read once however many descriptors name it.
#include "hdf5_global_heap.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <utility>

#include "hdf5_guards.hpp"

namespace larmor::io::detail {

std::uint64_t littleEndian(const unsigned char* p, std::size_t bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = bytes; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

namespace {

// The collection header and an object header: their fields, padded to 8 bytes (16 for every size of
// lengths HDF5 allows; a walk that took 8 + 4 bytes misread every valid file with 4-byte lengths).
constexpr std::uint64_t headerBytesFor(unsigned lengthBytes) { return (8 + lengthBytes + 7) / 8 * 8; }

// The objects of the collection `c` of `size` bytes (its header included), as libhdf5 steps through
// them: onObject(index, offset of the data in the collection, data bytes) for each index > 0. `at` (the
// collection's file offset) is for errors.
template <class F>
void walkObjects(const unsigned char* c, std::uint64_t size, unsigned lengthBytes, std::uint64_t at,
                 const std::string& path, F&& onObject) {
  const std::uint64_t objectHeaderBytes = headerBytesFor(lengthBytes);
  std::uint64_t q = headerBytesFor(lengthBytes);
  while (q < size && size - q >= objectHeaderBytes) {
    const unsigned index = static_cast<unsigned>(c[q]) | static_cast<unsigned>(c[q + 1]) << 8;
    const std::uint64_t objectSize = littleEndian(c + q + 8, lengthBytes);
    const std::uint64_t left = size - q;
    // libhdf5's step: the object with its header, 8-byte aligned; the free-space object (index 0) counts
    // its header in its size.
    const std::uint64_t need =
        index > 0 ? (objectSize > left ? left + 1 : objectHeaderBytes + ((objectSize + 7) & ~std::uint64_t{7}))
                  : objectSize;
    if (need == 0 || need > left)
      throw Error(path + ": damaged HDF5 file (global heap at byte " + std::to_string(at) + ": object " +
                  std::to_string(index) + " claims " + std::to_string(objectSize) + " bytes, " +
                  std::to_string(left) + " are left)");
    if (index > 0) onObject(index, q + objectHeaderBytes, objectSize);
    q += need;
  }
}

struct WalkedFile {
  std::string path;
  std::uintmax_t size = 0;
  std::int64_t mtime = -1;
};

std::int64_t mtimeNs(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// The scan of a mapped file of `size` bytes for collections (see checkGlobalHeaps).
void walkCollections(const unsigned char* b, std::size_t size, const std::string& path) {
  const unsigned char* end = b + size;
  // The superblock says how wide a length field is.
  std::size_t lengthBytes = 0;
  for (std::size_t off = 0; off + 16 <= size; off = off == 0 ? 512 : 2 * off) {
    if (std::memcmp(b + off, "\x89HDF\r\n\x1a\n", 8) == 0) {
      lengthBytes = b[off + 8] <= 1 ? b[off + 14] : b[off + 10];
      break;
    }
  }
  if (lengthBytes != 2 && lengthBytes != 4 && lengthBytes != 8) return;  // HDF5 refuses the file itself
  const std::size_t headerBytes = headerBytesFor(static_cast<unsigned>(lengthBytes));
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
    if (collection < headerBytes || collection > static_cast<std::uint64_t>(end - start))
      continue;  // HDF5 fails the read
    walkObjects(start, collection, static_cast<unsigned>(lengthBytes), static_cast<std::uint64_t>(start - b), path,
                [](unsigned, std::uint64_t, std::uint64_t) {});
  }
}

}  // namespace

VlenDescriptor decodeDescriptor(const unsigned char* p) {
  return VlenDescriptor{static_cast<std::uint32_t>(littleEndian(p, 4)), littleEndian(p + 4, 8),
                        static_cast<std::uint32_t>(littleEndian(p + 12, 4))};
}

GlobalHeaps::GlobalHeaps(std::string path, std::uint64_t base, unsigned lengthBytes)
    : path_(std::move(path)), base_(base), lengthBytes_(lengthBytes) {
  if (lengthBytes != 2 && lengthBytes != 4 && lengthBytes != 8) return;
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd_ >= 0 && (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode))) {
    ::close(fd_);
    fd_ = -1;
  }
  fileBytes_ = fd_ >= 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

namespace {
// The size of lengths and the base address of the file holding `any`; lengthBytes 0 when the file's
// addresses are not 8 bytes (descriptors are then laid out otherwise) or it cannot be asked.
std::pair<unsigned, std::uint64_t> heapGeometry(hid_t any) {
  H5Id file(H5Iget_file_id(any), H5Fclose);
  H5Id fcpl(file.id >= 0 ? H5Fget_create_plist(file.id) : -1, H5Pclose);
  std::size_t addr = 0, len = 0;
  hsize_t userblock = 0;
  const bool ok = fcpl.id >= 0 && H5Pget_sizes(fcpl.id, &addr, &len) >= 0 && H5Pget_userblock(fcpl.id, &userblock) >= 0;
  H5Eclear2(H5E_DEFAULT);
  return ok && addr == 8 ? std::pair<unsigned, std::uint64_t>{static_cast<unsigned>(len), userblock}
                         : std::pair<unsigned, std::uint64_t>{0, 0};
}
}  // namespace

GlobalHeaps::GlobalHeaps(std::string path, hid_t any)
    : GlobalHeaps(std::move(path), heapGeometry(any).second, heapGeometry(any).first) {}

GlobalHeaps::~GlobalHeaps() {
  if (fd_ >= 0) ::close(fd_);
}

void GlobalHeaps::damaged(const std::string& why) const { throw Error(path_ + ": damaged HDF5 file (" + why + ")"); }

bool GlobalHeaps::readAt(std::uint64_t at, void* dst, std::size_t bytes) const {
  auto* p = static_cast<unsigned char*>(dst);
  while (bytes > 0) {
    const ssize_t got = ::pread(fd_, p, bytes, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got, at += static_cast<std::uint64_t>(got), bytes -= static_cast<std::size_t>(got);
  }
  return true;
}

void GlobalHeaps::load(std::uint64_t address, std::uint64_t size) {
  if (buf_.size() < size) buf_.resize(static_cast<std::size_t>(size));
  bufAddress_ = ~std::uint64_t{0};
  if (!readAt(base_ + address, buf_.data(), static_cast<std::size_t>(size)))
    damaged("global heap at byte " + std::to_string(base_ + address) + " is cut short by the end of the file");
  bufAddress_ = address;
}

const GlobalHeaps::Collection& GlobalHeaps::collection(std::uint64_t address, const std::string& what) {
  if (auto it = collections_.find(address); it != collections_.end()) return it->second;
  const std::uint64_t headerBytes = headerBytesFor(lengthBytes_);
  const std::uint64_t at = base_ + address;
  const std::string where = "global heap at byte " + std::to_string(at);
  if (address > fileBytes_ || at > fileBytes_ || fileBytes_ - at < headerBytes)
    damaged(what + " names a global heap at byte " + std::to_string(at) + ", beyond the end of the " +
            std::to_string(fileBytes_) + "-byte file");
  unsigned char header[16] = {0};
  if (!readAt(at, header, static_cast<std::size_t>(headerBytes))) damaged(where + " cannot be read");
  if (std::memcmp(header, "GCOL", 4) != 0)
    damaged(what + " names a global heap at byte " + std::to_string(at) + ", where there is none");
  if (header[4] != 1) damaged(where + " has version " + std::to_string(header[4]) + ", not 1");
  const std::uint64_t size = littleEndian(header + 8, lengthBytes_);
  if (size < headerBytes)
    damaged(where + " claims " + std::to_string(size) + " bytes, less than its " + std::to_string(headerBytes) +
            "-byte header");
  if (size > fileBytes_ - at)
    damaged(where + " claims " + std::to_string(size) + " bytes, " + std::to_string(fileBytes_ - at) +
            " are left in the file");
  requireNoOverlap(at, size);
  load(address, size);
  Collection c;
  c.size = size;
  walkObjects(buf_.data(), size, lengthBytes_, at, path_,
              [&](unsigned index, std::uint64_t offset, std::uint64_t bytes) {
                c.objects.push_back({index, HeapObject{address, offset, bytes}});
              });
  std::sort(c.objects.begin(), c.objects.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 1; i < c.objects.size(); ++i)
    if (c.objects[i].first == c.objects[i - 1].first)
      damaged(where + " holds object " + std::to_string(c.objects[i].first) + " twice");
  extents_.emplace(at, at + size);
  return collections_.emplace(address, std::move(c)).first->second;
}

// Collections never share bytes; one that overlaps another is a damaged address or size.
void GlobalHeaps::requireNoOverlap(std::uint64_t at, std::uint64_t size) const {
  const std::string where = "global heap at byte " + std::to_string(at);
  auto next = extents_.lower_bound(at);
  if (next != extents_.end() && next->first < at + size)
    damaged(where + " overlaps the one at byte " + std::to_string(next->first));
  if (next != extents_.begin() && std::prev(next)->second > at)
    damaged(where + " overlaps the one at byte " + std::to_string(std::prev(next)->first));
}

void GlobalHeaps::adopt(std::uint64_t address, const Collection& c, const std::string& what) {
  if (collections_.count(address) > 0) return;
  const std::uint64_t at = base_ + address;
  // The other parse checked the header against the same file; these bounds are cheap to check again.
  if (address > fileBytes_ || at > fileBytes_ || c.size > fileBytes_ - at)
    damaged(what + " names a global heap at byte " + std::to_string(at) + ", beyond the end of the " +
            std::to_string(fileBytes_) + "-byte file");
  requireNoOverlap(at, c.size);
  extents_.emplace(at, at + c.size);
  collections_.emplace(address, c);
}

void GlobalHeaps::forget() {
  collections_.clear();
  extents_.clear();
  bufAddress_ = ~std::uint64_t{0};
}

HeapObject GlobalHeaps::object(const VlenDescriptor& d, std::size_t elementBytes, const std::string& what) {
  // Address 0 is libhdf5's empty sequence (nothing is read). An empty sequence elsewhere is still read
  // by libhdf5 1.10 (H5T__conv_vlen: an object of size 0, which is what it writes), so it must exist.
  if (d.length == 0 && d.address == 0) return HeapObject{};
  const Collection& c = collection(d.address, what);
  const auto it = std::lower_bound(c.objects.begin(), c.objects.end(), d.index,
                                   [](const auto& o, std::uint32_t index) { return o.first < index; });
  if (it == c.objects.end() || it->first != d.index)
    damaged(what + " names heap object " + std::to_string(d.index) + " of a collection at " +
            std::to_string(d.address) + ", which does not exist");
  const std::uint64_t want = static_cast<std::uint64_t>(d.length) * elementBytes;
  if (it->second.size != want)
    damaged(what + " holds " + std::to_string(d.length) + " values, its heap object " +
            std::to_string(it->second.size) + " bytes");
  return it->second;
}

const unsigned char* GlobalHeaps::bytes(const HeapObject& o) {
  if (o.size == 0) return buf_.data();
  if (bufAddress_ != o.collection) load(o.collection, collections_.at(o.collection).size);
  return buf_.data() + o.offset;
}

// libhdf5 1.10 loops forever on a global heap collection whose free-space object has size 0, and reads
// past a collection whose objects claim more bytes than it holds (see the top of this file). Where the
// descriptors of data that libhdf5 converts itself cannot all be read first, every collection of the
// file is walked the way HDF5 will walk it and the file refused when an object does not fit. A
// sequential scan of the file (mapped, its pages released behind the scan).
void checkGlobalHeaps(const std::string& path) {
  thread_local WalkedFile walked;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;  // HDF5 reports the reason
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < 64 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return;
  }
  if (walked.path == path && walked.size == static_cast<std::uintmax_t>(st.st_size) && walked.mtime == mtimeNs(st)) {
    ::close(fd);
    return;
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return;
  struct Unmap {
    void* p;
    std::size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{map, size};
  walked = WalkedFile{};
  walkCollections(static_cast<const unsigned char*>(map), size, path);
  walked = WalkedFile{path, static_cast<std::uintmax_t>(st.st_size), mtimeNs(st)};
}

}  // namespace larmor::io::detail
