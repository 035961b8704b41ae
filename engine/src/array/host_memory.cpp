// Host memory of large arrays (larmor/array/array.hpp, hostAllocate): 4 MiB and more mapped on their own,
// 2 MiB-aligned, advised as transparent huge pages so that their first touch faults once per 2 MiB instead of
// once per 4 KiB (the GPU machine: 1.3 GB/s first touch with 4 KiB pages, 3.7 GB/s with huge pages; where the
// kernel's THP mode is "never" the advice is ignored and nothing is lost). Smaller blocks: operator new.
// Large blocks are recorded so that a GPU backend can pin one for DMA on its first upload (pinHostBlock):
// the staging copy into pinned memory is a pass over the data at host memory speed (11 GB/s read + write on
// the GPU machine's VM), slower than the PCIe link it feeds.
// Freed large blocks are kept for reuse by an allocation of the same rounded size (a few, up to an eighth of the
// physical memory): a repeated call's arrays of the same shapes (the GUI's live updates, a batch's slices, the
// benchmark's repetitions) then find their pages present and, once pinned, stay pinned, instead of paying
// ~4 ms of page faults per 16 MB. A miss releases every kept block before mapping
// a new one, so that the process's peak is what it was without them.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/util/background_release.hpp"

namespace larmor {

namespace {
constexpr std::size_t kLarge = std::size_t{4} << 20;
constexpr std::size_t kHuge = std::size_t{2} << 20;
std::size_t roundUp(std::size_t bytes) { return (bytes + kHuge - 1) / kHuge * kHuge; }

struct Block {
  std::size_t size;
  enum { Unpinned, Pinned, Refused } state;
};
/// The large blocks by base address (those kept for reuse too), the pinned total and the installed pinning.
struct Registry {
  std::mutex mutex;
  std::map<std::uintptr_t, Block> blocks;
  std::vector<std::uintptr_t> kept;  ///< freed blocks kept for reuse, oldest first
  std::size_t keptBytes = 0, pinnedBytes = 0;
  std::atomic<const HostPinning*> pinning{nullptr};
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: arrays freed during static destruction still find it
  return *r;
}
std::size_t physicalBytes() {
  static const std::size_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) : 0;
  }();
  return bytes;
}
std::size_t pinCap() { return physicalBytes() / 4; }
constexpr std::size_t kKeptBlocks = 8;
std::size_t keepCap() { return physicalBytes() / 8; }

/// Unpins (when pinned) and unmaps a block that is no longer registered; r.mutex held.
void release(Registry& r, std::uintptr_t base, const Block& b) noexcept {
  if (b.state == Block::Pinned) {
    if (const HostPinning* pinning = r.pinning.load()) pinning->unpin(reinterpret_cast<void*>(base));
    r.pinnedBytes -= b.size;
  }
  ::munmap(reinterpret_cast<void*>(base), b.size);
}

/// Releases every kept block; r.mutex held.
void releaseKept(Registry& r) noexcept {
  for (std::uintptr_t base : r.kept) {
    auto it = r.blocks.find(base);
    release(r, base, it->second);
    r.blocks.erase(it);
  }
  r.kept.clear();
  r.keptBytes = 0;
}
}  // namespace

void releaseKeptHostBlocks() noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  releaseKept(r);
}

std::size_t keptHostBytes() noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.keptBytes;
}

const HostPinning* setHostPinning(const HostPinning* pinning) noexcept { return registry().pinning.exchange(pinning); }

bool pinHostBlock(const void* p, std::size_t bytes) noexcept {
  Registry& r = registry();
  const HostPinning* pinning = r.pinning.load();
  if (!pinning || !p) return false;
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard lock(r.mutex);
  auto it = r.blocks.upper_bound(at);
  if (it == r.blocks.begin()) return false;
  --it;
  Block& b = it->second;
  if (at + bytes > it->first + b.size) return false;
  if (b.state == Block::Pinned) return true;
  if (b.state == Block::Refused || r.pinnedBytes + b.size > pinCap()) return false;
  if (!pinning->pin(reinterpret_cast<void*>(it->first), b.size)) {
    b.state = Block::Refused;
    return false;
  }
  b.state = Block::Pinned;
  r.pinnedBytes += b.size;
  return true;
}

void* hostAllocate(std::size_t bytes) {
  if (bytes < kLarge) return ::operator new(bytes);
  const std::size_t size = roundUp(bytes);
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    for (auto it = r.kept.begin(); it != r.kept.end(); ++it) {
      if (r.blocks.at(*it).size != size) continue;
      const std::uintptr_t base = *it;
      r.kept.erase(it);
      r.keptBytes -= size;
      return reinterpret_cast<void*>(base);
    }
    releaseKept(r);  // a miss: what was kept goes before a new block is mapped (the peak as without keeping)
  }
  waitForReleases();  // large blocks being freed elsewhere go first (util/background_release.hpp): the same peak
  // Map one huge page more than needed and trim both ends to a 2 MiB boundary.
  void* raw = ::mmap(nullptr, size + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (base + kHuge - 1) / kHuge * kHuge;
  if (aligned > base) ::munmap(raw, aligned - base);
  const std::uintptr_t end = base + size + kHuge, used = aligned + size;
  if (end > used) ::munmap(reinterpret_cast<void*>(used), end - used);
  void* p = reinterpret_cast<void*>(aligned);
  (void)::madvise(p, size, MADV_HUGEPAGE);
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    r.blocks[aligned] = Block{size, Block::Unpinned};
  }
  // Blocks of 32 MiB and more: their pages faulted in by all threads, one write per huge page (the kernel
  // zeroes each page on its fault; one thread zeroes at ~2.3 GB/s on the GPU machine). The caller's own
  // writes (std::vector's value-initialisation) then find the pages present.
  if (size >= (std::size_t{32} << 20)) {
    auto* bytesP = static_cast<volatile char*>(p);
    const auto pages = static_cast<long>(size / kHuge);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < pages; ++i) bytesP[static_cast<std::size_t>(i) * kHuge] = 0;
  }
  return p;
}

void hostFree(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  if (bytes < kLarge) {
    ::operator delete(p);
    return;
  }
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const auto base = reinterpret_cast<std::uintptr_t>(p);
  auto it = r.blocks.find(base);
  if (it == r.blocks.end()) {  // not ours (cannot happen through HostAllocator): unmapped as it was mapped
    ::munmap(p, roundUp(bytes));
    return;
  }
  const std::size_t size = it->second.size;
  if (size <= keepCap()) {
    // Kept for the next allocation of this size; the oldest kept blocks go first when over the caps.
    r.kept.push_back(base);
    r.keptBytes += size;
    while (r.kept.size() > kKeptBlocks || r.keptBytes > keepCap()) {
      const std::uintptr_t old = r.kept.front();
      r.kept.erase(r.kept.begin());
      auto o = r.blocks.find(old);
      r.keptBytes -= o->second.size;
      release(r, old, o->second);
      r.blocks.erase(o);
    }
    return;
  }
  release(r, base, it->second);
  r.blocks.erase(it);
}

}  // namespace larmor
