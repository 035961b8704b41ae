// Host memory of the CPU backend: buffers from fftwf_malloc (aligned for FFTW's SIMD loads), and upload,
// download and copy (and ExecutionOps's peer copies between CPU backends) as memcpy with bounds checks. Twin of
// cuda/memory.cu (the device allocator and the pinned staging area), which the GPU needs and the host does not:
// here a Buffer is plain host memory. Large buffers are freed on the releasing thread (util/background_release.hpp).
#include <atomic>
#include <cstring>
#include <string>

#include "cpu_backend.hpp"
#include "larmor/util/background_release.hpp"

namespace larmor::cpu {

namespace {
// Bytes in HostBuffers now and at most since the last reset (ExecutionOps::memoryStats), process-wide.
std::atomic<std::size_t> gLive{0}, gPeak{0};

void addLive(std::size_t bytes) {
  const std::size_t now = gLive.fetch_add(bytes) + bytes;
  std::size_t peak = gPeak.load();
  while (now > peak && !gPeak.compare_exchange_weak(peak, now)) {
  }
}
}  // namespace

namespace {
/// fftwf_malloc, after the large frees pending (util/background_release.hpp) when it is large itself.
void* allocateHost(std::size_t bytes) {
  if (bytes >= kBackgroundRelease) waitForReleases();
  return bytes ? fftwf_malloc(bytes) : nullptr;
}
}  // namespace

HostBuffer::HostBuffer(std::size_t bytes) : bytes_(bytes), data_(allocateHost(bytes)) {
  if (bytes && !data_) throw Error("out of host memory: asked for " + std::to_string(bytes >> 20) + " MiB");
  addLive(bytes);
}

HostBuffer::~HostBuffer() {
  if (!owned_) return;  // a view: the parent's memory
  releaseLater(data_, bytes_, fftwf_free);  // GBs of a cancelled 3D plan: not on the unwinding thread
  gLive.fetch_sub(bytes_);
}

MemoryStats CpuExecutionOps::memoryStats() const {
  MemoryStats m;
  m.liveBytes = m.reservedBytes = gLive.load();
  m.peakLiveBytes = m.peakReservedBytes = gPeak.load();
  m.tracked = true;
  return m;
}

void CpuExecutionOps::resetPeakMemory() { gPeak.store(gLive.load()); }

std::unique_ptr<Buffer> CpuBackend::allocate(std::size_t bytes) { return std::make_unique<HostBuffer>(bytes); }

HostBuffer::HostBuffer(Buffer& parent, std::size_t offset, std::size_t bytes)
    : bytes_(bytes), data_(static_cast<char*>(parent.ptr()) + offset), owned_(false) {
  require(offset <= parent.bytes() && bytes <= parent.bytes() - offset, "cpu backend: a view past the end of a buffer");
}

std::unique_ptr<Buffer> CpuBackend::view(Buffer& parent, std::size_t offset, std::size_t bytes) {
  return std::make_unique<HostBuffer>(parent, offset, bytes);
}

void CpuBackend::upload(Buffer& dst, const void* src, std::size_t bytes, std::size_t off) {
  require(off + bytes <= dst.bytes(), "cpu backend: upload past the end of a buffer");
  std::memcpy(static_cast<char*>(dst.ptr()) + off, src, bytes);
}

void CpuBackend::download(void* dst, const Buffer& src, std::size_t bytes, std::size_t off) {
  require(off + bytes <= src.bytes(), "cpu backend: download past the end of a buffer");
  std::memcpy(dst, static_cast<const char*>(src.ptr()) + off, bytes);
}

void CpuBackend::copy(Buffer& dst, const Buffer& src, std::size_t bytes, std::size_t dstOffset, std::size_t srcOffset) {
  require(dstOffset <= dst.bytes() && bytes <= dst.bytes() - dstOffset && srcOffset <= src.bytes() &&
              bytes <= src.bytes() - srcOffset,
          "cpu backend: copy past the end of a buffer");
  if (bytes == 0) return;
  std::memcpy(static_cast<char*>(dst.ptr()) + dstOffset, static_cast<const char*>(src.ptr()) + srcOffset, bytes);
}

bool CpuExecutionOps::copyFromPeer(Buffer& dst, std::size_t dstOffset, Backend& source, const Buffer& src,
                                   std::size_t srcOffset, std::size_t bytes) {
  // Every CPU backend's buffers are host memory, and their work is done when its call returns.
  if (!dynamic_cast<CpuBackend*>(&source)) return false;
  be_.copy(dst, src, bytes, dstOffset, srcOffset);
  return true;
}

}  // namespace larmor::cpu
