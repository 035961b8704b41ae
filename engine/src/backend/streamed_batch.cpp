// Backend's serial and streamBatch (larmor/backend/streamed_batch.hpp), built on the backend's queued transfers
// (ExecutionOps, larmor/backend/execution_ops.hpp).
//
// streamBatch's order of calls, with buffers in[c % 2] and out[c % 2]:
//   up(0)
//   for c: up(c + 1)          starts after compute(c - 1), the last user of in[(c + 1) % 2]
//          join up(c); join down(c - 2) (the last reader of out[c % 2]); compute(c); down(c)
//   wait for the downloads
// Each transfer starts once the work queued before it has finished (ExecutionOps::uploadQueued), so up(c + 1),
// queued before compute(c), runs beside it; down(c), queued after compute(c), runs beside compute(c + 1).
#include "larmor/backend/streamed_batch.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <string>

namespace larmor {

std::uint64_t Backend::nextSerial() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1);
}

index_t slicesPerStreamedChunk(const Backend& be, index_t slices, std::size_t sliceBytes) {
  constexpr std::size_t kMinChunkBytes = std::size_t{4} << 20;
  if (!be.isGpu() || slices <= 1 || sliceBytes == 0) return std::max<index_t>(slices, 1);
  const auto need = static_cast<index_t>((kMinChunkBytes + sliceBytes - 1) / sliceBytes);
  return std::clamp<index_t>(need, 1, slices);
}

void streamBatch(Backend& be, const StreamedBatch& b) {
  require(b.chunks >= 0, "streamBatch: a negative number of chunks");
  if (b.chunks == 0) return;
  require(b.input && b.compute && (b.outBytes == 0 || b.output), "streamBatch: input, compute and output are needed");
  // Buffers first: the transfers below die (waiting for themselves) before the memory they use.
  std::array<std::unique_ptr<Buffer>, 2> in, out;
  for (int i = 0; i < 2 && i < b.chunks; ++i) {
    in[static_cast<std::size_t>(i)] = be.allocate(b.inBytes);
    if (b.outBytes > 0) out[static_cast<std::size_t>(i)] = be.allocate(b.outBytes);
  }
  ExecutionOps& exec = be.executionOps();
  std::array<std::unique_ptr<ExecutionOps::Transfer>, 2> up, down;
  auto upload = [&](index_t c) {
    const HostSpan h = b.input(c);
    require(h.bytes <= b.inBytes, "streamBatch: chunk " + std::to_string(c) + "'s input exceeds the buffers");
    up[static_cast<std::size_t>(c % 2)] = exec.uploadQueued(*in[static_cast<std::size_t>(c % 2)], h.data, h.bytes);
  };
  upload(0);
  for (index_t c = 0; c < b.chunks; ++c) {
    const auto k = static_cast<std::size_t>(c % 2);
    if (c + 1 < b.chunks) upload(c + 1);
    up[k]->join();
    if (down[k]) down[k]->join();
    b.compute(c, *in[k], out[k].get());
    if (b.outBytes > 0) {
      const MutableHostSpan h = b.output(c);
      require(h.bytes <= b.outBytes, "streamBatch: chunk " + std::to_string(c) + "'s output exceeds the buffers");
      down[k] = exec.downloadQueued(h.data, *out[k], h.bytes);
    }
  }
  for (auto& d : down)
    if (d) d->wait();
}

void streamSlices(Backend& be, const cfloat* host, index_t slices, index_t inPerSlice, index_t perChunk, Buffer& out,
                  index_t outPerSlice, const std::function<void(Buffer& in, index_t slices, Buffer& chunkOut)>& work) {
  require(perChunk >= 1 && slices >= 0 && inPerSlice >= 0 && outPerSlice >= 0, "streamSlices: bad sizes");
  const auto bytes = [](index_t n) { return static_cast<std::size_t>(n) * sizeof(cfloat); };
  auto chunkOut = be.allocate(bytes(outPerSlice * perChunk));
  const auto slicesOf = [&](index_t c) { return std::min(perChunk, slices - c * perChunk); };
  StreamedBatch b;
  b.chunks = (slices + perChunk - 1) / perChunk;
  b.inBytes = bytes(inPerSlice * perChunk);
  b.input = [&](index_t c) { return HostSpan{host + c * perChunk * inPerSlice, bytes(inPerSlice * slicesOf(c))}; };
  b.compute = [&](index_t c, Buffer& in, Buffer*) {
    work(in, slicesOf(c), *chunkOut);
    be.copy(out, *chunkOut, bytes(outPerSlice * slicesOf(c)), bytes(outPerSlice * perChunk * c));
  };
  streamBatch(be, b);
}

}  // namespace larmor
