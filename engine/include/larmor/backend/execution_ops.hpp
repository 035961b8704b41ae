#pragma once
// ExecutionOps: how a backend's work is queued beyond the core's calls, one interface that each backend provides
// (Backend::executionOps()): transfers that overlap the computation (streamBatch, backend/streamed_batch.cpp),
// copies from another backend's memory (GPU.Multi's slabs, recon/iterative_slabs.cpp) and work recorded once and
// replayed (the solvers' operator application, solve/cg.hpp's RecordedApplication), and what the backend's memory
// holds (the planner's provenance, recon/recon.cpp; bench/). ImmediateExecutionOps below
// does each at once and records nothing (engine/src/backend/execution_ops.cpp): the CPU backend's (whose peer
// copies reach every CPU backend, engine/src/cpu/memory.cpp) and a test double's. The CUDA twin (cuda/cuda_backend.cu)
// queues transfers on a copy stream per direction, copies between devices and records CUDA graphs.
#include <cstddef>
#include <functional>
#include <memory>

#include "larmor/backend/buffer.hpp"

namespace larmor {

class Backend;

/// Bytes in a backend's buffers (allocate()), for benchmarks and diagnostics. live: in buffers now; peakLive: the
/// most live since resetPeakMemory(); reserved / peakReserved: live plus what an allocator keeps cached for
/// reuse (the CUDA backend's caching allocator; = live on the CPU). Library workspaces taken outside
/// allocate() (cuBLAS/cuSOLVER handles, the CUDA context) are not counted. tracked = false: no figures.
struct MemoryStats {
  std::size_t liveBytes = 0, peakLiveBytes = 0, reservedBytes = 0, peakReservedBytes = 0;
  bool tracked = false;
};

class ExecutionOps {
 public:
  virtual ~ExecutionOps() = default;

  // --- queued transfers (backend/streamed_batch.cpp's streamBatch) -----------------------------------------
  /// A transfer queued by uploadQueued() or downloadQueued(). Its destructor waits for it (so that neither
  /// memory is released under a copy); it dies before the backend.
  class Transfer {
   public:
    virtual ~Transfer() = default;
    /// The backend's work queued after this call starts after the transfer (an upload's buffer is ready).
    virtual void join() = 0;
    /// Returns when the transfer has finished (a download's host memory holds the data, an upload's may
    /// change).
    virtual void wait() = 0;
  };
  /// Transfers that overlap the backend's computation and each other (the CUDA backend: a copy stream for
  /// each direction, from host memory pinned on first use, array.hpp). Each starts once the work queued
  /// before the call has finished, so that it never overwrites or reads a buffer that work still uses; work
  /// queued later does not wait for it until join(). The host memory stays valid (and an upload's unchanged)
  /// until the transfer has finished. Backend::synchronize() waits for them too.
  virtual std::unique_ptr<Transfer> uploadQueued(Buffer& dst, const void* src, std::size_t bytes,
                                                 std::size_t dstOffset = 0) = 0;
  virtual std::unique_ptr<Transfer> downloadQueued(void* dst, const Buffer& src, std::size_t bytes,
                                                   std::size_t srcOffset = 0) = 0;

  // --- another backend's memory (recon/iterative_slabs.cpp) -------------------------------------------------
  /// bytes from `src`, a buffer of another backend `source`, + srcOffset to dst (this backend's) + dstOffset,
  /// without a stop on the host: ordered after the work queued on both backends before the call and before the
  /// work queued on either after it (the CUDA backend: a peer copy over NVLink or PCIe between two devices; CPU
  /// backends: memcpy; `source` this backend itself: Backend::copy). False, with nothing done, where this
  /// backend cannot reach the other's memory (another kind of backend): the caller then goes through the host.
  virtual bool copyFromPeer(Buffer& dst, std::size_t dstOffset, Backend& source, const Buffer& src,
                            std::size_t srcOffset, std::size_t bytes) = 0;

  // --- recorded work (solve/cg.hpp's RecordedApplication) ----------------------------------------------------
  /// Device work recorded once and queued again by replay() on the same buffers with the same arguments, for
  /// one launch where the work makes many (the CUDA backend: a CUDA graph). Dies before the backend and the
  /// buffers the work uses.
  class Recording {
   public:
    virtual ~Recording() = default;
    virtual void replay() = 0;
  };
  /// Records `work` without running it: calls of the backend's queued operations only (no transfer,
  /// synchronisation, host read, allocation or release: each makes recording fail), whose arguments stay
  /// valid for the recording's life. Null where the backend does not record (the CPU, whose calls cost
  /// nothing to make) or `work` could not be recorded: the caller then runs `work` itself.
  virtual std::unique_ptr<Recording> record(const std::function<void()>& work) = 0;

  // --- memory figures (recon/recon.cpp's provenance, recon/run_frames.cpp, bench/) ------------------------------
  /// What the backend's buffers hold (MemoryStats above); the peaks restart from the live figures at
  /// resetPeakMemory(). Defaults: not tracked.
  virtual MemoryStats memoryStats() const { return {}; }
  virtual void resetPeakMemory() {}
};

/// Each op at once on `backend`: the queued transfers are Backend::upload / download (nothing left to join or
/// wait for), a peer copy reaches `backend`'s own buffers alone (Backend::copy; false for any other backend's),
/// record() returns null, no memory figures. What a backend with nothing to overlap provides; the CUDA backend's
/// transfers from host memory that cannot be pinned take this path too. Keeps a reference to `backend`.
class ImmediateExecutionOps : public ExecutionOps {
 public:
  explicit ImmediateExecutionOps(Backend& backend) : be_(backend) {}
  std::unique_ptr<Transfer> uploadQueued(Buffer& dst, const void* src, std::size_t bytes,
                                         std::size_t dstOffset = 0) override;
  std::unique_ptr<Transfer> downloadQueued(void* dst, const Buffer& src, std::size_t bytes,
                                           std::size_t srcOffset = 0) override;
  bool copyFromPeer(Buffer& dst, std::size_t dstOffset, Backend& source, const Buffer& src, std::size_t srcOffset,
                    std::size_t bytes) override;
  std::unique_ptr<Recording> record(const std::function<void()>&) override { return nullptr; }

 protected:
  Backend& be_;
};

}  // namespace larmor
