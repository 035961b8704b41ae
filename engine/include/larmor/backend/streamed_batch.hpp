#pragma once
// A batch streamed through a backend in chunks, so that the link and the device work at the same time: chunk
// c + 1's input is uploaded while chunk c is computed and chunk c - 1's output is downloaded
// (ExecutionOps::uploadQueued / downloadQueued; two device buffers each way, "double buffering"). The time of a
// batch approaches max(upload, compute, download) per chunk instead of their sum, which matters for host-to-host
// batches.
#include <cstddef>
#include <functional>

#include "larmor/backend/backend.hpp"

namespace larmor {

/// Host memory of one chunk: its address and size in bytes.
struct HostSpan {
  const void* data = nullptr;
  std::size_t bytes = 0;
};
struct MutableHostSpan {
  void* data = nullptr;
  std::size_t bytes = 0;
};

struct StreamedBatch {
  index_t chunks = 0;
  /// The largest chunk's input and output in bytes (the device buffers' sizes; output 0: nothing downloaded,
  /// compute keeps its results on the device).
  std::size_t inBytes = 0, outBytes = 0;
  /// Chunk c's input on the host (at most inBytes).
  std::function<HostSpan(index_t c)> input;
  /// Queues chunk c's work on the backend: `in` holds its input; `out` (null without outputs) receives what
  /// output(c) takes. Must not wait for the device (no download or synchronisation), or the overlap is lost.
  std::function<void(index_t c, Buffer& in, Buffer* out)> compute;
  /// Where chunk c's output goes on the host (at most outBytes), when outBytes > 0.
  std::function<MutableHostSpan(index_t c)> output;
};

/// Slices per chunk when `slices` slices of `sliceBytes` each stream through `be`: enough for at least 4 MiB a
/// chunk (each chunk's calls cost microseconds); all of them on a CPU, which has nothing to overlap (its
/// upload is a copy within the same memory): one chunk there.
index_t slicesPerStreamedChunk(const Backend& be, index_t slices, std::size_t sliceBytes);

/// Slices of host data streamed in chunks of `perChunk` slices (the last chunk may hold fewer) into `out` on the
/// device: chunk c + 1 uploaded while chunk c is computed. `work(in, slices, chunkOut)` queues a chunk's
/// computation from its `slices` x `inPerSlice` elements in `in` to `slices` x `outPerSlice` elements in
/// `chunkOut`, which then go to their place in `out`. The multi-slice reconstructions' use of streamBatch.
void streamSlices(Backend& be, const cfloat* host, index_t slices, index_t inPerSlice, index_t perChunk, Buffer& out,
                  index_t outPerSlice, const std::function<void(Buffer& in, index_t slices, Buffer& chunkOut)>& work);

/// Runs the batch; returns when every output is on the host (the computation of the last chunk may still be
/// queued when there are no outputs). Throws what compute throws, after the transfers in flight finished.
void streamBatch(Backend& be, const StreamedBatch& batch);

}  // namespace larmor
