// CudaBackend's core (twin: engine/src/cpu/cpu_backend.cpp): the device description, the stream, and the
// vector and array ops, whose kernels are in kernels.cu; with them the ops of three families that live on the
// backend's private state: ExecutionOps (queued transfers, peer copies, CUDA graphs; the CPU's at once:
// engine/src/backend/execution_ops.cpp and cpu/memory.cpp), ToeplitzOps (the Gram of the FFT) and GrappaOps's
// transpose. memory.cu, fft.cu, nufft.cu, dft.cu, linalg.cu, coil_combine.cu, prior.cu, finite_difference.cu,
// sparsity.cu and wavelet.cu have the rest, each named after its CPU twin.
#include "cuda_backend.hpp"
#include "fft_last.hpp"

#include <cufft.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <string>

#include "check.hpp"

namespace larmor::cuda {

namespace {

std::string versionString(int v, bool withPatch) {
  // CUDA: 1000 * major + 10 * minor. cuFFT: 1000 * major + 100 * minor + patch.
  if (withPatch)
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 100) + "." + std::to_string(v % 100);
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

float2 toFloat2(cfloat v) { return float2{v.real(), v.imag()}; }

std::string countMessage(const char* op, index_t n, std::size_t bytes) {
  return std::string("cuda backend: ") + op + " on " + std::to_string(n) + " elements exceeds a buffer of " +
         std::to_string(bytes / sizeof(cfloat));
}

}  // namespace

DeviceInfo describeDevice(int index) {
  cudaDeviceProp prop{};
  LARMOR_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  DeviceInfo d;
  d.id = "cuda:" + std::to_string(index);
  d.name = prop.name;
  d.gpu = true;
  d.memoryBytes = prop.totalGlobalMem;
  d.computeMajor = prop.major;
  d.computeMinor = prop.minor;
  d.multiprocessors = prop.multiProcessorCount;
  int runtime = 0, driver = 0, cufft = 0;
  (void)cudaRuntimeGetVersion(&runtime);
  (void)cudaDriverGetVersion(&driver);
  (void)cufftGetVersion(&cufft);
  (void)cudaGetLastError();
  d.library = "CUDA runtime " + versionString(runtime, false) + ", driver " + versionString(driver, false) +
              ", cuFFT " + versionString(cufft, true);
  return d;
}

CudaBackend::StreamHandle::~StreamHandle() {
  if (handle) (void)cudaStreamDestroy(handle);
  (void)cudaGetLastError();
}

CudaBackend::HostResult::~HostResult() {
  if (pinned)
    (void)cudaFreeHost(value);
  else
    delete value;
  (void)cudaGetLastError();
}

CudaBackend::CudaBackend(int device) : device_(device) {
  int count = 0;
  LARMOR_CUDA_CHECK(cudaGetDeviceCount(&count));
  require(device >= 0 && device < count,
          "cuda:" + std::to_string(device) + " does not exist (" + std::to_string(count) + " CUDA device(s))");
  activate();
  info_ = describeDevice(device);
  LARMOR_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_.handle, cudaStreamNonBlocking));
  LARMOR_CUDA_CHECK(cudaStreamCreateWithFlags(&upStream_.handle, cudaStreamNonBlocking));
  LARMOR_CUDA_CHECK(cudaStreamCreateWithFlags(&downStream_.handle, cudaStreamNonBlocking));
  launch_ = Launch{stream_.handle, info_.multiprocessors};
  if (cudaMallocHost(&hostResult_.value, sizeof(double2)) == cudaSuccess) {
    hostResult_.pinned = true;
  } else {
    (void)cudaGetLastError();
    hostResult_.value = new double2{0.0, 0.0};
  }
  // Cache up to a quarter of the device: enough for a solver's temporaries, and the cache is emptied
  // before an allocation is refused.
  allocator_ = std::make_shared<DeviceAllocator>(device, stream_.handle, info_.memoryBytes / 4);
  staging_ = std::make_unique<HostStaging>(stream_.handle);
  fft_ = std::make_unique<FftEngine>(allocator_, launch_);
  priorOps_ = std::make_unique<CudaPriorOps>(*this);
  sparsityOps_ = std::make_unique<CudaSparsityOps>(*this);
  coilCombineOps_ = std::make_unique<CudaCoilCombineOps>(*this);
  espiritOps_ = std::make_unique<CudaEspiritOps>(*this);
  solverOps_ = std::make_unique<CudaSolverOps>(*this);
  qualityOps_ = std::make_unique<CudaQualityOps>(*this);
  toeplitzOps_ = std::make_unique<CudaToeplitzOps>(*this);
  grappaOps_ = std::make_unique<CudaGrappaOps>(*this);
  executionOps_ = std::make_unique<CudaExecutionOps>(*this);
  scratch_ = allocator_->allocate((kMaxReduceBlocks + 1) * sizeof(double2));  // last: nothing throws after it
}

CudaBackend::~CudaBackend() {
  std::lock_guard lock(mutex_);
  (void)cudaSetDevice(device_);
  (void)cudaStreamSynchronize(stream_.handle);
  (void)cudaStreamSynchronize(upStream_.handle);
  (void)cudaStreamSynchronize(downStream_.handle);
  fft_.reset();
  allocator_->release(scratch_);
  staging_.reset();
  // Buffers still alive keep the allocator; they free their memory directly from now on.
  allocator_->close();
  (void)cudaGetLastError();
}

PriorOps& CudaBackend::priorOps() { return *priorOps_; }
SparsityOps& CudaBackend::sparsityOps() { return *sparsityOps_; }
CoilCombineOps& CudaBackend::coilCombineOps() { return *coilCombineOps_; }
EspiritOps& CudaBackend::espiritOps() { return *espiritOps_; }
SolverOps& CudaBackend::solverOps() { return *solverOps_; }
QualityOps& CudaBackend::qualityOps() { return *qualityOps_; }
ToeplitzOps& CudaBackend::toeplitzOps() { return *toeplitzOps_; }
GrappaOps& CudaBackend::grappaOps() { return *grappaOps_; }
ExecutionOps& CudaBackend::executionOps() { return *executionOps_; }

void CudaBackend::activate() const { LARMOR_CUDA_CHECK(cudaSetDevice(device_)); }

const DeviceBuffer& CudaBackend::checked(const Buffer& b, const char* op) const {
  const auto* d = dynamic_cast<const DeviceBuffer*>(&b);
  if (!d || d->allocator() != allocator_.get())
    throw Error(std::string("cuda backend: ") + op + " got a buffer that belongs to another backend (" +
                info_.id + " expected)");
  return *d;
}

float2* CudaBackend::elements(Buffer& b, index_t n, const char* op) {
  checked(b, op);
  if (n < 0 || static_cast<std::size_t>(n) * sizeof(cfloat) > b.bytes()) throw Error(countMessage(op, n, b.bytes()));
  return static_cast<float2*>(b.ptr());
}

const float2* CudaBackend::elements(const Buffer& b, index_t n, const char* op) const {
  checked(b, op);
  if (n < 0 || static_cast<std::size_t>(n) * sizeof(cfloat) > b.bytes()) throw Error(countMessage(op, n, b.bytes()));
  return static_cast<const float2*>(b.ptr());
}

void CudaBackend::refuseWhileRecording(const char* what) const {
  if (recorder_.load() == std::this_thread::get_id())
    throw Error(std::string("cuda backend: ") + what + " cannot be recorded");
}

double2 CudaBackend::readResult() {
  refuseWhileRecording("reading a result");
  auto* result = static_cast<double2*>(scratch_.ptr) + kMaxReduceBlocks;
  LARMOR_CUDA_CHECK(cudaMemcpyAsync(hostResult_.value, result, sizeof(double2), cudaMemcpyDeviceToHost, stream_.handle));
  LARMOR_CUDA_CHECK(cudaStreamSynchronize(stream_.handle));
  return *hostResult_.value;
}

// --- memory ------------------------------------------------------------------------------------------------

std::unique_ptr<Buffer> CudaBackend::allocate(std::size_t bytes) {
  refuseWhileRecording("an allocation");
  activate();
  return std::make_unique<DeviceBuffer>(allocator_, bytes);
}

std::unique_ptr<Buffer> CudaBackend::view(Buffer& parent, std::size_t offset, std::size_t bytes) {
  return std::make_unique<DeviceBuffer>(checked(parent, "view"), offset, bytes);
}

std::unique_ptr<Buffer> CudaBackend::borrow(void* ptr, std::size_t bytes) {
  activate();
  cudaPointerAttributes a{};
  const bool known = ptr && cudaPointerGetAttributes(&a, ptr) == cudaSuccess;
  (void)cudaGetLastError();
  require(known && (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) && a.device == device_,
          "cuda backend: the borrowed memory is not device memory of " + info_.id);
  LARMOR_CUDA_CHECK(cudaDeviceSynchronize());
  return std::make_unique<DeviceBuffer>(allocator_, ptr, bytes, DeviceBuffer::Borrowed{});
}

void CudaBackend::upload(Buffer& dst, const void* src, std::size_t bytes, std::size_t dstOffset) {
  checked(dst, "upload");
  require(bytes <= dst.bytes() && dstOffset <= dst.bytes() - bytes, "cuda backend: upload past the end of a buffer");
  if (bytes == 0) return;
  std::lock_guard lock(mutex_);
  refuseWhileRecording("an upload");
  activate();
  staging_->upload(static_cast<char*>(dst.ptr()) + dstOffset, src, bytes);
}

void CudaBackend::download(void* dst, const Buffer& src, std::size_t bytes, std::size_t srcOffset) {
  checked(src, "download");
  require(bytes <= src.bytes() && srcOffset <= src.bytes() - bytes,
          "cuda backend: download past the end of a buffer");
  std::lock_guard lock(mutex_);
  refuseWhileRecording("a download");
  activate();
  staging_->download(dst, static_cast<const char*>(src.ptr()) + srcOffset, bytes);
}

void CudaBackend::copy(Buffer& dst, const Buffer& src, std::size_t bytes, std::size_t dstOffset, std::size_t srcOffset) {
  checked(dst, "copy");
  checked(src, "copy");
  require(dstOffset <= dst.bytes() && bytes <= dst.bytes() - dstOffset && srcOffset <= src.bytes() &&
              bytes <= src.bytes() - srcOffset,
          "cuda backend: copy past the end of a buffer");
  char* to = static_cast<char*>(dst.ptr()) + dstOffset;
  const char* from = static_cast<const char*>(src.ptr()) + srcOffset;
  if (bytes == 0 || to == from) return;
  std::lock_guard lock(mutex_);
  activate();
  LARMOR_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream_.handle));
}

bool CudaBackend::copyFromPeer(Buffer& dst, std::size_t dstOffset, Backend& source, const Buffer& src,
                               std::size_t srcOffset, std::size_t bytes) {
  auto* peer = dynamic_cast<CudaBackend*>(&source);
  if (!peer) return false;
  if (peer == this) {
    copy(dst, src, bytes, dstOffset, srcOffset);
    return true;
  }
  checked(dst, "peer copy");
  peer->checked(src, "peer copy");
  require(dstOffset <= dst.bytes() && bytes <= dst.bytes() - dstOffset && srcOffset <= src.bytes() &&
              bytes <= src.bytes() - srcOffset,
          "cuda backend: peer copy past the end of a buffer");
  if (bytes == 0) return true;
  refuseWhileRecording("a peer copy");
  peer->refuseWhileRecording("a peer copy");
  char* to = static_cast<char*>(dst.ptr()) + dstOffset;
  const char* from = static_cast<const char*>(src.ptr()) + srcOffset;
  std::scoped_lock lock(mutex_, peer->mutex_);  // both streams; std::lock's order: no deadlock either way round
  orderedPeerCopy(*peer, [&](cudaStream_t s) {
    LARMOR_CUDA_CHECK(cudaMemcpyPeerAsync(to, device_, from, peer->device_, bytes, s));
  });
  return true;
}

bool CudaBackend::enablePeer(CudaBackend& peer) {
  if (peer.device_ == device_) return true;
  static std::mutex enabling;
  std::lock_guard e(enabling);
  if (peersEnabled_.insert(peer.device_).second) {
    int can = 0;
    LARMOR_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, device_, peer.device_));
    activate();
    if (can) {
      const cudaError_t err = cudaDeviceEnablePeerAccess(peer.device_, 0);
      if (err != cudaSuccess && err != cudaErrorPeerAccessAlreadyEnabled) LARMOR_CUDA_CHECK(err);
      (void)cudaGetLastError();  // "already enabled" is not an error here
      peersReachable_.insert(peer.device_);
    }
  }
  return peersReachable_.count(peer.device_) > 0;
}

void CudaBackend::orderedPeerCopy(CudaBackend& peer, const std::function<void(cudaStream_t)>& copy) {
  // Direct access to the peer's memory where the devices have it (NVLink, PCIe P2P); without it the peer copies
  // still work, staged by the driver.
  (void)enablePeer(peer);
  waitForPeer(peer);         // the copy on this stream after the peer's queued work
  copy(stream_.handle);
  peer.waitForPeer(*this);   // and the peer's later work after the copy
  activate();
}

void CudaBackend::synchronize() {
  std::lock_guard lock(mutex_);
  refuseWhileRecording("a synchronisation");
  activate();
  LARMOR_CUDA_CHECK(cudaStreamSynchronize(stream_.handle));
  LARMOR_CUDA_CHECK(cudaStreamSynchronize(upStream_.handle));
  LARMOR_CUDA_CHECK(cudaStreamSynchronize(downStream_.handle));
}

// --- queued transfers (ExecutionOps::uploadQueued / downloadQueued) ----------------------------------------

namespace {

/// A copy on a copy stream and the event after it.
class QueuedTransfer final : public ExecutionOps::Transfer {
 public:
  QueuedTransfer(CudaBackend& backend, cudaEvent_t done) : backend_(backend), done_(done) {}
  ~QueuedTransfer() override {
    (void)cudaEventSynchronize(done_);
    (void)cudaEventDestroy(done_);
    (void)cudaGetLastError();
  }
  QueuedTransfer(const QueuedTransfer&) = delete;
  QueuedTransfer& operator=(const QueuedTransfer&) = delete;
  void join() override { backend_.waitFor(done_); }
  void wait() override { LARMOR_CUDA_CHECK(cudaEventSynchronize(done_)); }

 private:
  CudaBackend& backend_;
  cudaEvent_t done_;
};

}  // namespace

void CudaBackend::waitFor(cudaEvent_t event) {
  std::lock_guard lock(mutex_);
  activate();
  LARMOR_CUDA_CHECK(cudaStreamWaitEvent(stream_.handle, event, 0));
}

std::unique_ptr<ExecutionOps::Transfer> CudaBackend::queueCopy(cudaStream_t copyStream, void* to, const void* from,
                                                               std::size_t bytes, cudaMemcpyKind kind) {
  cudaEvent_t queued = nullptr, done = nullptr;
  LARMOR_CUDA_CHECK(cudaEventCreateWithFlags(&queued, cudaEventDisableTiming));
  if (cudaEventCreateWithFlags(&done, cudaEventDisableTiming) != cudaSuccess) {
    (void)cudaEventDestroy(queued);
    LARMOR_CUDA_CHECK(cudaGetLastError());
  }
  auto transfer = std::make_unique<QueuedTransfer>(*this, done);  // owns `done` from here
  // The copy after everything queued so far (the work that last used the buffer), nothing later after it.
  const cudaError_t e1 = cudaEventRecord(queued, stream_.handle);
  const cudaError_t e2 = e1 == cudaSuccess ? cudaStreamWaitEvent(copyStream, queued, 0) : e1;
  (void)cudaEventDestroy(queued);  // released once the wait is done
  LARMOR_CUDA_CHECK(e2);
  LARMOR_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, kind, copyStream));
  LARMOR_CUDA_CHECK(cudaEventRecord(done, copyStream));
  return transfer;
}

std::unique_ptr<ExecutionOps::Transfer> CudaBackend::uploadQueued(Buffer& dst, const void* src, std::size_t bytes,
                                                                  std::size_t dstOffset) {
  checked(dst, "upload");
  require(bytes <= dst.bytes() && dstOffset <= dst.bytes() - bytes, "cuda backend: upload past the end of a buffer");
  // From memory that cannot be pinned the copy is staged, at once (pageable memory would make the host wait
  // for the copy stream anyway).
  if (bytes == 0 || !pinHostBlock(src, bytes))
    return ImmediateExecutionOps(*this).uploadQueued(dst, src, bytes, dstOffset);
  std::lock_guard lock(mutex_);
  refuseWhileRecording("an upload");
  activate();
  return queueCopy(upStream_.handle, static_cast<char*>(dst.ptr()) + dstOffset, src, bytes, cudaMemcpyHostToDevice);
}

std::unique_ptr<ExecutionOps::Transfer> CudaBackend::downloadQueued(void* dst, const Buffer& src, std::size_t bytes,
                                                                    std::size_t srcOffset) {
  checked(src, "download");
  require(bytes <= src.bytes() && srcOffset <= src.bytes() - bytes,
          "cuda backend: download past the end of a buffer");
  if (bytes == 0 || !pinHostBlock(dst, bytes))
    return ImmediateExecutionOps(*this).downloadQueued(dst, src, bytes, srcOffset);
  std::lock_guard lock(mutex_);
  refuseWhileRecording("a download");
  activate();
  return queueCopy(downStream_.handle, dst, static_cast<const char*>(src.ptr()) + srcOffset, bytes,
                   cudaMemcpyDeviceToHost);
}

// --- recorded work (ExecutionOps::record): a CUDA graph of the stream's work --------------------------------

namespace {
class GraphRecording final : public ExecutionOps::Recording {
 public:
  /// Holds `fft` (its plans and work area stay while the graph may replay their kernels).
  GraphRecording(std::recursive_mutex& mutex, int device, cudaStream_t stream, cudaGraphExec_t exec, FftEngine& fft)
      : mutex_(mutex), device_(device), stream_(stream), exec_(exec), fft_(fft) {
    fft_.hold();
  }
  ~GraphRecording() override {
    std::lock_guard lock(mutex_);
    (void)cudaSetDevice(device_);
    (void)cudaGraphExecDestroy(exec_);  // a launch still queued finishes first
    fft_.release();
    (void)cudaGetLastError();
  }
  void replay() override {
    std::lock_guard lock(mutex_);
    LARMOR_CUDA_CHECK(cudaSetDevice(device_));
    LARMOR_CUDA_CHECK(cudaGraphLaunch(exec_, stream_));
  }

 private:
  std::recursive_mutex& mutex_;
  const int device_;
  const cudaStream_t stream_;
  const cudaGraphExec_t exec_;
  FftEngine& fft_;
};
}  // namespace

std::unique_ptr<ExecutionOps::Recording> CudaBackend::record(const std::function<void()>& work) {
  // The lock is held throughout: another thread's work would otherwise be captured into the graph (and not
  // run). Work that transfers, synchronises or reads a result fails here (the runtime refuses a capturing
  // stream's synchronisation; transfers refuse themselves), as does work that allocates or releases: its
  // blocks' next owners would be written by the replays. Then nothing was run and the caller runs the work.
  std::lock_guard lock(mutex_);
  activate();
  const std::uint64_t changes = allocator_->changes();
  LARMOR_CUDA_CHECK(cudaStreamBeginCapture(stream_.handle, cudaStreamCaptureModeThreadLocal));
  recorder_ = std::this_thread::get_id();
  bool ok = true;
  std::exception_ptr other;
  try {
    work();
  } catch (const Error&) {
    ok = false;
  } catch (...) {
    other = std::current_exception();
  }
  recorder_ = std::thread::id{};
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream_.handle, &graph);
  (void)cudaGetLastError();  // an invalidated capture leaves its error here
  if (other) {
    if (graph) (void)cudaGraphDestroy(graph);
    std::rethrow_exception(other);
  }
  cudaGraphExec_t exec = nullptr;
  ok = ok && ended == cudaSuccess && graph && allocator_->changes() == changes &&
       cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
  (void)cudaGetLastError();
  if (graph) (void)cudaGraphDestroy(graph);
  if (!ok) {
    if (exec) (void)cudaGraphExecDestroy(exec);
    return nullptr;
  }
  return std::make_unique<GraphRecording>(mutex_, device_, stream_.handle, exec, *fft_);
}

// --- complex vectors ---------------------------------------------------------------------------------------

void CudaBackend::fill(Buffer& x, cfloat value, index_t n) {
  float2* p = elements(x, n, "fill");
  std::lock_guard lock(mutex_);
  activate();
  cuda::fill(launch_, p, toFloat2(value), n);
}

void CudaBackend::scale(Buffer& x, cfloat a, index_t n) {
  float2* p = elements(x, n, "scale");
  std::lock_guard lock(mutex_);
  activate();
  cuda::scale(launch_, p, toFloat2(a), n);
}

void CudaBackend::axpby(Buffer& y, cfloat a, const Buffer& x, cfloat b, index_t n) {
  float2* py = elements(y, n, "axpby");
  const float2* px = elements(x, n, "axpby");
  std::lock_guard lock(mutex_);
  activate();
  cuda::axpby(launch_, py, toFloat2(a), px, toFloat2(b), n);
}

void CudaBackend::multiply(Buffer& out, const Buffer& a, index_t na, const Buffer& b, index_t nb, bool conjA) {
  require(na > 0 && nb % na == 0, "cuda backend: multiply needs na to divide nb");
  float2* po = elements(out, nb, "multiply");
  const float2* pb = elements(b, nb, "multiply");
  const float2* pa = elements(a, na, "multiply");
  // Writing into `a` while other threads still read it for later batches would race (the CPU loop would
  // quietly use half-updated values); only `b` may be overwritten.
  require(static_cast<const void*>(po) != static_cast<const void*>(pa) || na == nb || nb == 0,
          "cuda backend: multiply cannot write into the broadcast operand a");
  std::lock_guard lock(mutex_);
  activate();
  cuda::multiply(launch_, po, pa, na, pb, nb, conjA);
}

cdouble CudaBackend::dot(const Buffer& a, const Buffer& b, index_t n) {
  const float2* pa = elements(a, n, "dot");
  const float2* pb = elements(b, n, "dot");
  if (n == 0) return {0.0, 0.0};
  std::lock_guard lock(mutex_);
  activate();
  auto* partials = static_cast<double2*>(scratch_.ptr);
  cuda::dot(launch_, pa, pb, n, partials, partials + kMaxReduceBlocks);
  const double2 r = readResult();
  return {r.x, r.y};
}

double CudaBackend::norm2(const Buffer& x, index_t n) {
  const float2* p = elements(x, n, "norm2");
  if (n == 0) return 0.0;
  std::lock_guard lock(mutex_);
  activate();
  auto* partials = static_cast<double2*>(scratch_.ptr);
  cuda::sumSquares(launch_, p, n, partials, partials + kMaxReduceBlocks);
  return std::sqrt(readResult().x);
}

void CudaBackend::reciprocalDiagonal(Buffer& out, const Buffer& a, double alpha, const Buffer* b, double beta,
                                     index_t n) {
  require(n >= 0, "reciprocal diagonal: negative length");
  float2* po = elements(out, n, "reciprocal diagonal");
  const float2* pa = elements(a, n, "reciprocal diagonal");
  const float2* pb = b ? elements(*b, n, "reciprocal diagonal") : nullptr;
  if (n == 0) return;
  std::lock_guard lock(mutex_);
  activate();
  cuda::reciprocalDiagonal(launch_, po, pa, alpha, pb, beta, n);
}

// --- arrays ------------------------------------------------------------------------------------------------

void CudaBackend::fft(Buffer& data, const Shape& shape, int rank, FftDirection dir) {
  require(rank >= 1 && rank <= 3 && static_cast<std::size_t>(rank) <= std::max<std::size_t>(shape.rank(), 1),
          "cuda backend: fft rank must be 1..3 and within the array's rank, got " + std::to_string(rank));
  float2* p = elements(data, shape.size(), "fft");
  std::lock_guard lock(mutex_);
  activate();
  fft_->transform(p, shape, rank, dir);
}

void CudaBackend::fftGram(Buffer& data, const Shape& shape, int rank, const Buffer& diagonal) {
  require(rank >= 1 && rank <= 3 && static_cast<std::size_t>(rank) <= std::max<std::size_t>(shape.rank(), 1),
          "cuda backend: fft rank must be 1..3 and within the array's rank, got " + std::to_string(rank));
  float2* p = elements(data, shape.size(), "fftGram");
  const float2* d = elements(diagonal, shape.span(0, static_cast<std::size_t>(rank)), "fftGram");
  std::lock_guard lock(mutex_);
  activate();
  fft_->gram(p, shape, rank, d);
}

void CudaBackend::fftGramInBox(Buffer& data, const Shape& shape, int rank, const Buffer& diagonal, const Shape& box) {
  require(rank >= 1 && rank <= 3 && static_cast<std::size_t>(rank) <= std::max<std::size_t>(shape.rank(), 1),
          "cuda backend: fft rank must be 1..3 and within the array's rank, got " + std::to_string(rank));
  for (int d = 0; d < rank; ++d)
    require(box[static_cast<std::size_t>(d)] >= 1 && box[static_cast<std::size_t>(d)] <= shape[static_cast<std::size_t>(d)],
            "cuda backend: fftGramInBox's box " + box.str() + " does not fit in " + shape.str());
  float2* p = elements(data, shape.size(), "fftGram");
  const float2* d = elements(diagonal, shape.span(0, static_cast<std::size_t>(rank)), "fftGram");
  std::lock_guard lock(mutex_);
  activate();
  fft_->gram(p, shape, rank, d, &box);
}

void CudaBackend::waitForPeer(CudaBackend& other) {
  if (&other == this) return;
  refuseWhileRecording("a wait for another backend");
  std::scoped_lock lock(mutex_, other.mutex_);
  cudaEvent_t done = nullptr;
  other.activate();
  LARMOR_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  LARMOR_CUDA_CHECK(cudaEventRecord(done, other.stream_.handle));
  activate();
  LARMOR_CUDA_CHECK(cudaStreamWaitEvent(stream_.handle, done, 0));
  LARMOR_CUDA_CHECK(cudaEventDestroy(done));  // released by the driver once the wait is done
}

void CudaBackend::resizeCentred(Buffer& dst, const Shape& ds, const Buffer& src, const Shape& ss) {
  require(ds.span(4, std::max<std::size_t>(ds.rank(), 4)) == ss.span(4, std::max<std::size_t>(ss.rank(), 4)),
          "cuda backend: resizeCentred needs equal batch sizes, " + ds.str() + " vs " + ss.str());
  float2* pd = elements(dst, ds.size(), "resizeCentred");
  const float2* ps = elements(src, ss.size(), "resizeCentred");
  if (ds.size() == 0) return;
  if (static_cast<const void*>(pd) == static_cast<const void*>(ps)) {
    // In place only when nothing moves; otherwise elements would be overwritten before they are read.
    require(ds == ss, "cuda backend: resizeCentred cannot resize in place, " + ds.str() + " from " + ss.str());
    return;
  }
  const index_t dd[4] = {ds[0], ds[1], ds[2], ds[3]}, sd[4] = {ss[0], ss[1], ss[2], ss[3]};
  const index_t batch = ds.size() / std::max<index_t>(ds.span(0, 4), 1);
  std::lock_guard lock(mutex_);
  activate();
  cuda::resizeCentred(launch_, pd, dd, ps, sd, batch);
}

void CudaBackend::fftGramPadded(Buffer& out, const Buffer& image, const Shape& is, Buffer& grid, const Shape& gs,
                                int rank, const Buffer& diagonal) {
  require(rank >= 1 && rank <= 3 && static_cast<std::size_t>(rank) <= std::max<std::size_t>(gs.rank(), 1),
          "cuda backend: fft rank must be 1..3 and within the array's rank, got " + std::to_string(rank));
  require(is.size() <= gs.size(), "cuda backend: fftGramPadded's image " + is.str() + " is larger than its grid " + gs.str());
  float2* po = elements(out, is.size(), "fftGramPadded");
  const float2* pi = elements(image, is.size(), "fftGramPadded");
  float2* pg = elements(grid, gs.size(), "fftGramPadded");
  const float2* d = elements(diagonal, gs.span(0, static_cast<std::size_t>(rank)), "fftGramPadded");
  std::lock_guard lock(mutex_);
  activate();
  if (fft_->gramPadded(po, pi, is, pg, gs, rank, d)) return;  // 3D and 2D grids: no padding or cropping pass
  // Elsewhere the image into the grid, the Gram in the box, the box out. Where fftGramInBox takes the last-dimension
  // pass (fft.cu: FftEngine::gram), which reads the box's planes alone, only those planes are written ([G0, G1, N2]
  // from [N0, N1, N2]); its other routes transform the whole grid, padded by resizeCentred.
  const auto pass = rank == 3 ? lastDimPass(gs, rank, LastDimUse::Gram) : std::nullopt;
  const bool planes = pass && pass->lastDim == 2 && gs.rank() >= 3 && is.rank() >= 3 &&
                      gs.span(3, gs.rank()) == is.span(3, is.rank()) && gs[2] > is[2] && gs[0] >= is[0] && gs[1] >= is[1];
  if (planes) {
    const index_t gridSize = gs.span(0, 3), imageSize = is.span(0, 3), batch = is.size() / std::max<index_t>(imageSize, 1);
    const index_t begin = gs[2] / 2 - is[2] / 2;
    const index_t dd[4] = {gs[0], gs[1], is[2], 1}, sd[4] = {is[0], is[1], is[2], 1};
    for (index_t b = 0; b < batch; ++b)
      cuda::resizeCentred(launch_, pg + b * gridSize + begin * gs[0] * gs[1], dd, pi + b * imageSize, sd, 1);
  } else {
    resizeCentred(grid, gs, image, is);
  }
  fftGramInBox(grid, gs, rank, diagonal, is);
  resizeCentred(out, is, grid, gs);
}

void CudaBackend::transpose(Buffer& dst, const Buffer& src, index_t n0, index_t n1, index_t batch) {
  require(n0 >= 0 && n1 >= 0 && batch >= 0, "cuda backend: transpose needs non-negative sizes");
  float2* pd = elements(dst, n0 * n1 * batch, "transpose");
  const float2* ps = elements(src, n0 * n1 * batch, "transpose");
  require(static_cast<const void*>(pd) != static_cast<const void*>(ps) || n0 * n1 * batch == 0,
          "cuda backend: transpose cannot work in place");
  std::lock_guard lock(mutex_);
  activate();
  cuda::transpose(launch_, pd, ps, n0, n1, batch);
}

void CudaBackend::sumOfSquares(Buffer& out, const Buffer& coilImages, index_t voxels, index_t coils, index_t batch) {
  float2* po = elements(out, voxels * batch, "sumOfSquares");
  const float2* pi = elements(coilImages, voxels * coils * batch, "sumOfSquares");
  require(static_cast<const void*>(po) != static_cast<const void*>(pi) || coils == 1 || voxels * batch == 0,
          "cuda backend: sumOfSquares cannot write over the coil images");
  std::lock_guard lock(mutex_);
  activate();
  cuda::sumOfSquares(launch_, po, pi, voxels, coils, batch);
}

}  // namespace larmor::cuda
