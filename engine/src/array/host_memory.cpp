// Host memory of large arrays (larmor/array/array.hpp, hostAllocate): 4 MiB and more mapped on their own,
// 2 MiB-aligned, advised as transparent huge pages so that their first touch faults once per 2 MiB instead of
// once per 4 KiB (the GPU machine: 1.3 GB/s first touch with 4 KiB pages, 3.7 GB/s with huge pages; where the
// kernel's THP mode is "never" the advice is ignored and nothing is lost). Smaller blocks: operator new.
// Large blocks are recorded so that a GPU backend can pin one for DMA on its first upload (pinHostBlock):
// the staging copy into pinned memory is a pass over the data at host memory speed (11 GB/s read + write on
// the GPU machine's VM), slower than the PCIe link it feeds (docs/perf.md, session 13).
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <new>

#include "larmor/array/array.hpp"

namespace larmor {

namespace {
constexpr std::size_t kLarge = std::size_t{4} << 20;
constexpr std::size_t kHuge = std::size_t{2} << 20;
std::size_t roundUp(std::size_t bytes) { return (bytes + kHuge - 1) / kHuge * kHuge; }

struct Block {
  std::size_t size;
  enum { Unpinned, Pinned, Refused } state;
};
/// The large blocks by base address, the pinned total and the installed pinning.
struct Registry {
  std::mutex mutex;
  std::map<std::uintptr_t, Block> blocks;
  std::size_t pinnedBytes = 0;
  std::atomic<const HostPinning*> pinning{nullptr};
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: arrays freed during static destruction still find it
  return *r;
}
std::size_t pinCap() {
  static const std::size_t cap = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) / 4 : 0;
  }();
  return cap;
}
}  // namespace

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
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    if (auto it = r.blocks.find(reinterpret_cast<std::uintptr_t>(p)); it != r.blocks.end()) {
      if (it->second.state == Block::Pinned) {
        if (const HostPinning* pinning = r.pinning.load()) pinning->unpin(p);
        r.pinnedBytes -= it->second.size;
      }
      r.blocks.erase(it);
    }
  }
  ::munmap(p, roundUp(bytes));
}

}  // namespace larmor
