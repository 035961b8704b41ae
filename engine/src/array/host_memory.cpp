// Host memory of large arrays (larmor/array/array.hpp, hostAllocate): 4 MiB and more mapped on their own,
// 2 MiB-aligned, advised as transparent huge pages so that their first touch faults once per 2 MiB instead of
// once per 4 KiB (the GPU machine: 1.3 GB/s first touch with 4 KiB pages, 3.7 GB/s with huge pages; where the
// kernel's THP mode is "never" the advice is ignored and nothing is lost). Smaller blocks: operator new.
#include <sys/mman.h>

#include <cstdint>
#include <new>

#include "larmor/array/array.hpp"

namespace larmor {

namespace {
constexpr std::size_t kLarge = std::size_t{4} << 20;
constexpr std::size_t kHuge = std::size_t{2} << 20;
std::size_t roundUp(std::size_t bytes) { return (bytes + kHuge - 1) / kHuge * kHuge; }
}  // namespace

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
  ::munmap(p, roundUp(bytes));
}

}  // namespace larmor
