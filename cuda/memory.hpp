#pragma once
// Device memory for the CUDA backend: a caching allocator (cudaMalloc and cudaFree synchronise the device
// and cost tens of microseconds; solvers allocate temporaries every iteration), the RAII buffer handed to
// the engine, and a pinned host staging area for uploads and downloads.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "larmor/backend/backend.hpp"

namespace larmor::cuda {

/// Blocks are cached by their rounded size. All work of one backend runs on one stream, so a block freed
/// by a buffer may be handed to the next allocation at once: any later use is queued behind the earlier
/// ones on that stream.
class DeviceAllocator {
 public:
  struct Block {
    void* ptr = nullptr;
    std::size_t rounded = 0;
  };

  DeviceAllocator(int device, cudaStream_t stream, std::size_t cacheCapBytes);
  ~DeviceAllocator();
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  /// Throws Error "GPU out of memory: asked for X MiB, Y MiB free on cuda:N" when it cannot be had even
  /// after the cache is emptied.
  Block allocate(std::size_t bytes);
  void release(Block block) noexcept;
  /// Frees every cached block (the live ones stay).
  void trim() noexcept;
  /// The backend is going away (its stream with it): empty the cache; blocks released later are freed.
  void close() noexcept;
  int device() const { return device_; }
  /// Bytes handed out (live, rounded sizes) and held from cudaMalloc (live + cached), with their peaks since
  /// resetPeak() (ExecutionOps::memoryStats).
  MemoryStats stats() const;
  void resetPeak() noexcept;
  /// How many blocks have been handed out or given back so far (CudaBackend::record: work that allocates or
  /// releases cannot be replayed, the block's next owner would be written by it).
  std::uint64_t changes() const {
    std::lock_guard lock(mutex_);
    return changes_;
  }

  /// The size class of a request: four classes per power of two, so at most 25% is wasted.
  static std::size_t roundUp(std::size_t bytes);

 private:
  void freeBlockLocked(void* p) noexcept;
  void noteLiveLocked(std::size_t rounded) noexcept;
  void trimLocked() noexcept;

  const int device_;
  cudaStream_t stream_;
  const std::size_t cacheCap_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> cached_;
  std::size_t cachedBytes_ = 0;  ///< held in cached_, at most cacheCap_
  std::size_t liveBytes_ = 0, peakLive_ = 0, peakHeld_ = 0;  ///< stats(); rounded sizes
  std::uint64_t changes_ = 0;                                ///< changes()
  bool closed_ = false;
};

/// A buffer of device memory; returns its block to the allocator when destroyed. It keeps the allocator
/// alive, so a buffer may outlive its backend.
class DeviceBuffer final : public Buffer {
 public:
  DeviceBuffer(std::shared_ptr<DeviceAllocator> allocator, std::size_t bytes);
  /// A view of bytes of `parent` from `offset`: owns nothing, releases nothing (Backend::view).
  DeviceBuffer(const DeviceBuffer& parent, std::size_t offset, std::size_t bytes);
  /// Device memory that another library allocated and keeps alive (CudaBackend::borrow): owns nothing, releases
  /// nothing.
  struct Borrowed {};
  DeviceBuffer(std::shared_ptr<DeviceAllocator> allocator, void* foreign, std::size_t bytes, Borrowed);
  ~DeviceBuffer() override;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  std::size_t bytes() const override { return bytes_; }
  void* ptr() override { return block_.ptr; }
  const void* ptr() const override { return block_.ptr; }
  const DeviceAllocator* allocator() const { return allocator_.get(); }

 private:
  std::shared_ptr<DeviceAllocator> allocator_;
  DeviceAllocator::Block block_;
  std::size_t bytes_;
  bool owned_ = true;
};

/// Two pinned chunks used in turn: the host copies chunk k into (or out of) pinned memory while the DMA
/// engine moves chunk k-1, so a transfer runs at pinned speed without pinning the caller's memory. Where
/// pinned memory cannot be had, transfers go straight from pageable memory (slower, same results).
/// Host arrays of hostAllocate's large path are pinned themselves on first use (pinHostBlock, array.hpp):
/// a download into one, and an upload from one while nothing is queued ahead of it on the stream, is one
/// DMA at the link's rate with no staging copy (an upload waits for its DMA to have read the source: with
/// work queued ahead that would hold the host back, so such an upload is staged as before).
class HostStaging {
 public:
  explicit HostStaging(cudaStream_t stream) : stream_(stream) {}
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  /// Returns when `src` has been read (the copy to the device may still be in flight, in stream order).
  void upload(void* deviceDst, const void* src, std::size_t bytes);
  /// Returns when `dst` holds the data, i.e. after all work queued before it has finished.
  void download(void* dst, const void* deviceSrc, std::size_t bytes);
  bool pinned() const { return pinnedOk_; }

  /// Smaller chunks (8 or 4 MiB: more of a slice's upload overlapped) measured slower on the H100: each
  /// chunk's wait and fork of the copying threads cost more than the overlap gains.
  static constexpr std::size_t kChunkBytes = std::size_t{32} << 20;
  /// The chunks start this small and grow (powers of two up to kChunkBytes) when a larger transfer is staged:
  /// two 32 MiB pinned chunks take 27 ms to allocate on the H200 machine (two of 4 MiB: 5 ms), and the first
  /// reconstruction of a process waited for them on its first small upload.
  static constexpr std::size_t kFirstChunkBytes = std::size_t{4} << 20;

 private:
  /// Pinned chunks of at least min(kChunkBytes, bytes) rounded up to a power of two (>= kFirstChunkBytes);
  /// false when none can be had (transfers then go from pageable memory).
  bool ensurePinned(std::size_t bytes);
  /// Uploads from a pinned block of at least this size go direct (smaller ones: staging is as fast).
  static constexpr std::size_t kDirectBytes = std::size_t{1} << 20;
  cudaStream_t stream_;
  cudaEvent_t direct_ = nullptr;
  void* chunk_[2] = {nullptr, nullptr};
  cudaEvent_t done_[2] = {nullptr, nullptr};
  bool used_[2] = {false, false};
  std::size_t chunkBytes_ = 0;  ///< the chunks' size now (0: none yet)
  bool refused_ = false, pinnedOk_ = false;
};

}  // namespace larmor::cuda
