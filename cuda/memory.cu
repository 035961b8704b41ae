// Device memory of the CUDA backend (memory.hpp): the caching allocator, the device buffers and the pinned
// staging area. Twin: engine/src/cpu/memory.cpp, where a buffer is plain host memory.
#include "memory.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "check.hpp"

namespace larmor::cuda {

namespace {
constexpr std::size_t kMiB = std::size_t{1} << 20;
std::string mib(std::size_t bytes) { return std::to_string((bytes + kMiB - 1) / kMiB); }
}  // namespace

// --- DeviceAllocator -------------------------------------------------------------------------------------

DeviceAllocator::DeviceAllocator(int device, cudaStream_t stream, std::size_t cacheCapBytes)
    : device_(device), stream_(stream), cacheCap_(cacheCapBytes) {}

DeviceAllocator::~DeviceAllocator() {
  std::lock_guard lock(mutex_);
  trimLocked();
}

std::size_t DeviceAllocator::roundUp(std::size_t bytes) {
  constexpr std::size_t kMin = 512;
  if (bytes <= kMin) return kMin;
  // Past 2^62 rounding could overflow; such a request fails in cudaMalloc anyway.
  if (bytes > (std::size_t{1} << 62)) return bytes;
  int log2 = 0;
  while ((std::size_t{2} << log2) <= bytes) ++log2;  // 2^log2 <= bytes < 2^(log2+1)
  const std::size_t granule = std::max(kMin, std::size_t{1} << (log2 >= 2 ? log2 - 2 : 0));
  return (bytes + granule - 1) / granule * granule;
}

DeviceAllocator::Block DeviceAllocator::allocate(std::size_t bytes) {
  if (bytes == 0) return {};
  const std::size_t rounded = roundUp(bytes);
  std::lock_guard lock(mutex_);
  ++changes_;
  if (auto it = cached_.find(rounded); it != cached_.end()) {
    Block b{it->second, rounded};
    cached_.erase(it);
    cachedBytes_ -= rounded;
    noteLiveLocked(rounded);
    return b;
  }
  LARMOR_CUDA_CHECK(cudaSetDevice(device_));
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, rounded);
  if (e == cudaErrorMemoryAllocation && !cached_.empty()) {
    // Blocks of other sizes may be what is in the way.
    (void)cudaGetLastError();
    trimLocked();
    e = cudaMalloc(&p, rounded);
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // an allocation failure is not sticky: the backend stays usable
    std::size_t freeBytes = 0, totalBytes = 0;
    const bool haveInfo = cudaMemGetInfo(&freeBytes, &totalBytes) == cudaSuccess;
    (void)cudaGetLastError();
    // Some runtimes answer an absurd size with "invalid argument" rather than "out of memory"; any other
    // failure (a context broken by an earlier fault) is reported as what it is.
    const bool outOfMemory = e == cudaErrorMemoryAllocation || (haveInfo && rounded > totalBytes);
    if (!outOfMemory) LARMOR_CUDA_CHECK(e);
    throw Error("GPU out of memory: asked for " + mib(bytes) + " MiB, " + std::to_string(freeBytes / kMiB) +
                " MiB free on cuda:" + std::to_string(device_));
  }
  noteLiveLocked(rounded);
  return {p, rounded};
}

void DeviceAllocator::noteLiveLocked(std::size_t rounded) noexcept {
  liveBytes_ += rounded;
  peakLive_ = std::max(peakLive_, liveBytes_);
  peakHeld_ = std::max(peakHeld_, liveBytes_ + cachedBytes_);
}

MemoryStats DeviceAllocator::stats() const {
  std::lock_guard lock(mutex_);
  MemoryStats m;
  m.liveBytes = liveBytes_;
  m.peakLiveBytes = peakLive_;
  m.reservedBytes = liveBytes_ + cachedBytes_;
  m.peakReservedBytes = peakHeld_;
  m.tracked = true;
  return m;
}

void DeviceAllocator::resetPeak() noexcept {
  std::lock_guard lock(mutex_);
  peakLive_ = liveBytes_;
  peakHeld_ = liveBytes_ + cachedBytes_;
}

void DeviceAllocator::release(Block block) noexcept {
  if (!block.ptr) return;
  std::lock_guard lock(mutex_);
  ++changes_;
  liveBytes_ -= std::min(liveBytes_, block.rounded);
  if (closed_ || block.rounded > cacheCap_) {
    freeBlockLocked(block.ptr);
    return;
  }
  // Over the cap: make room by freeing the largest cached blocks first (they are the least likely to
  // be asked for again soon and free the most).
  while (cachedBytes_ + block.rounded > cacheCap_ && !cached_.empty()) {
    auto last = std::prev(cached_.end());
    cachedBytes_ -= last->first;
    freeBlockLocked(last->second);
    cached_.erase(last);
  }
  cached_.emplace(block.rounded, block.ptr);
  cachedBytes_ += block.rounded;
}

void DeviceAllocator::freeBlockLocked(void* p) noexcept {
  // Errors are ignored on purpose: this runs in destructors, possibly after the CUDA runtime has begun to
  // shut down at process exit, when cudaFree reports cudaErrorCudartUnloading.
  (void)cudaSetDevice(device_);
  // Work queued on the stream may still read the block; cudaFree waits for the device, but say so.
  if (!closed_ && stream_) (void)cudaStreamSynchronize(stream_);
  (void)cudaFree(p);
  (void)cudaGetLastError();
}

void DeviceAllocator::trimLocked() noexcept {
  for (auto& [size, p] : cached_) freeBlockLocked(p);
  cached_.clear();
  cachedBytes_ = 0;
}

void DeviceAllocator::trim() noexcept {
  std::lock_guard lock(mutex_);
  trimLocked();
}

void DeviceAllocator::close() noexcept {
  std::lock_guard lock(mutex_);
  trimLocked();
  closed_ = true;
  stream_ = nullptr;
}

// --- DeviceBuffer ----------------------------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(std::shared_ptr<DeviceAllocator> allocator, std::size_t bytes)
    : allocator_(std::move(allocator)), block_(allocator_->allocate(bytes)), bytes_(bytes) {}

DeviceBuffer::DeviceBuffer(const DeviceBuffer& parent, std::size_t offset, std::size_t bytes)
    : allocator_(parent.allocator_), bytes_(bytes), owned_(false) {
  require(offset <= parent.bytes_ && bytes <= parent.bytes_ - offset, "cuda backend: a view past the end of a buffer");
  block_.ptr = static_cast<char*>(parent.block_.ptr) + offset;
}

DeviceBuffer::DeviceBuffer(std::shared_ptr<DeviceAllocator> allocator, void* foreign, std::size_t bytes, Borrowed)
    : allocator_(std::move(allocator)), bytes_(bytes), owned_(false) {
  block_.ptr = foreign;
}

DeviceBuffer::~DeviceBuffer() {
  if (owned_) allocator_->release(block_);
}

// --- HostStaging -----------------------------------------------------------------------------------------

namespace {
/// Host memcpy split over threads: one core's copy into pinned staging (about 10 GB/s) is slower than
/// the PCIe link (25-50 GB/s), so the staging copy is spread over the host's cores, one piece of at least
/// kMinPiece per thread (a 32 MiB chunk over 16 threads: 2 MiB each).
void parallelMemcpy(void* dst, const void* src, std::size_t bytes) {
  constexpr std::size_t kMinPiece = std::size_t{1} << 18;
  const auto threads = static_cast<std::size_t>(std::max(1, omp_get_max_threads()));
  const std::size_t piece = std::max(kMinPiece, (bytes + threads - 1) / threads + 63) / 64 * 64;
  const auto pieces = static_cast<long>((bytes + piece - 1) / piece);
  if (pieces <= 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(static_cast<int>(std::min<std::size_t>(threads, pieces)))
  for (long p = 0; p < pieces; ++p) {
    const std::size_t off = static_cast<std::size_t>(p) * piece;
    std::memcpy(static_cast<char*>(dst) + off, static_cast<const char*>(src) + off, std::min(piece, bytes - off));
  }
}
}  // namespace

HostStaging::~HostStaging() {
  if (direct_) (void)cudaEventDestroy(direct_);
  for (int i = 0; i < 2; ++i) {
    if (done_[i]) {
      (void)cudaEventSynchronize(done_[i]);
      (void)cudaEventDestroy(done_[i]);
    }
    if (chunk_[i]) (void)cudaFreeHost(chunk_[i]);
  }
  (void)cudaGetLastError();
}

bool HostStaging::ensurePinned(std::size_t bytes) {
  std::size_t want = kFirstChunkBytes;
  while (want < std::min(bytes, kChunkBytes)) want *= 2;
  if (chunkBytes_ >= want || refused_) return pinnedOk_;
  // Larger chunks: the old ones go once their last copies are done.
  for (int i = 0; i < 2; ++i) {
    if (used_[i]) LARMOR_CUDA_CHECK(cudaEventSynchronize(done_[i]));
    used_[i] = false;
  }
  void* fresh[2] = {nullptr, nullptr};
  bool ok = true;
  for (int i = 0; i < 2 && ok; ++i) ok = cudaMallocHost(&fresh[i], want) == cudaSuccess;
  for (int i = 0; i < 2 && ok; ++i)
    ok = done_[i] || cudaEventCreateWithFlags(&done_[i], cudaEventDisableTiming) == cudaSuccess;
  if (!ok) {
    // Pinned memory is a limited resource (containers, locked-memory limits): keep what there is (smaller
    // chunks) or fall back to pageable transfers; do not fail, and do not ask again.
    (void)cudaGetLastError();
    for (void* f : fresh)
      if (f) (void)cudaFreeHost(f);
    (void)cudaGetLastError();
    refused_ = true;
    return pinnedOk_ = chunkBytes_ > 0 && done_[0] && done_[1];
  }
  for (int i = 0; i < 2; ++i) {
    if (chunk_[i]) (void)cudaFreeHost(chunk_[i]);
    chunk_[i] = fresh[i];
  }
  chunkBytes_ = want;
  return pinnedOk_ = true;
}

void HostStaging::upload(void* deviceDst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  // Direct only onto an idle stream: cudaErrorNotReady (work queued) is an answer, not an error.
  // Small uploads never ask (always staged); only a query's answer can leave an error to clear.
  const bool asked = bytes >= kDirectBytes;
  const cudaError_t idle = asked ? cudaStreamQuery(stream_) : cudaErrorNotReady;
  // The runtime may record NotReady as its last error; launches are checked at launch.
  if (asked && idle == cudaErrorNotReady) (void)cudaGetLastError();
  else if (asked) LARMOR_CUDA_CHECK(idle);
  if (idle == cudaSuccess && pinHostBlock(src, bytes)) {
    if (!direct_) LARMOR_CUDA_CHECK(cudaEventCreateWithFlags(&direct_, cudaEventDisableTiming));
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(deviceDst, src, bytes, cudaMemcpyHostToDevice, stream_));
    LARMOR_CUDA_CHECK(cudaEventRecord(direct_, stream_));
    LARMOR_CUDA_CHECK(cudaEventSynchronize(direct_));  // the source has been read
    return;
  }
  if (!ensurePinned(bytes)) {
    // From pageable memory the call returns once `src` has been staged by the driver.
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(deviceDst, src, bytes, cudaMemcpyHostToDevice, stream_));
    return;
  }
  auto* dst = static_cast<char*>(deviceDst);
  const auto* from = static_cast<const char*>(src);
  const std::size_t chunk = chunkBytes_;
  for (std::size_t off = 0, k = 0; off < bytes; off += chunk, ++k) {
    const int slot = static_cast<int>(k & 1);
    const std::size_t len = std::min(chunk, bytes - off);
    if (used_[slot]) LARMOR_CUDA_CHECK(cudaEventSynchronize(done_[slot]));  // its last DMA has finished
    parallelMemcpy(chunk_[slot], from + off, len);
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(dst + off, chunk_[slot], len, cudaMemcpyHostToDevice, stream_));
    LARMOR_CUDA_CHECK(cudaEventRecord(done_[slot], stream_));
    used_[slot] = true;
  }
}

void HostStaging::download(void* dst, const void* deviceSrc, std::size_t bytes) {
  if (bytes == 0) {
    LARMOR_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return;
  }
  if ((bytes >= kDirectBytes && pinHostBlock(dst, bytes)) || !ensurePinned(bytes)) {
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(dst, deviceSrc, bytes, cudaMemcpyDeviceToHost, stream_));
    LARMOR_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return;
  }
  const auto* from = static_cast<const char*>(deviceSrc);
  auto* to = static_cast<char*>(dst);
  const std::size_t chunk = chunkBytes_, chunks = (bytes + chunk - 1) / chunk;
  // A device-to-host copy into a chunk is queued behind any earlier copy out of it on the same stream,
  // so no host wait is needed before queuing; the host waits only before reading a chunk.
  auto enqueue = [&](std::size_t k) {
    const int slot = static_cast<int>(k & 1);
    const std::size_t off = k * chunk, len = std::min(chunk, bytes - off);
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(chunk_[slot], from + off, len, cudaMemcpyDeviceToHost, stream_));
    LARMOR_CUDA_CHECK(cudaEventRecord(done_[slot], stream_));
    used_[slot] = true;
  };
  enqueue(0);
  if (chunks > 1) enqueue(1);
  for (std::size_t k = 0; k < chunks; ++k) {
    const int slot = static_cast<int>(k & 1);
    const std::size_t off = k * chunk, len = std::min(chunk, bytes - off);
    LARMOR_CUDA_CHECK(cudaEventSynchronize(done_[slot]));
    parallelMemcpy(to + off, chunk_[slot], len);
    if (k + 2 < chunks) enqueue(k + 2);
  }
}

}  // namespace larmor::cuda
