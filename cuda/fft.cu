// Centred unitary FFTs on the GPU: cuFFT plans cached by shape. Twin: engine/src/cpu/fft.cpp (FFTW between two
// circular shifts, C = S F S with S the shift by floor(N/2) per dimension).
//  - Every transformed length even: S F S = S D F with D = diag((-1)^k), because F S = D F (shifting the input
//    by N/2 multiplies output k by e^{-+ i pi k}). So the plain DFT first, then ONE in-place pass that swaps
//    each element k with k + N/2 (along every transformed dimension at once: an involution) and multiplies
//    by (-1)^{coordinate sum of the element it takes} and N^{-1/2}: the array is read and written once
//    besides cuFFT's own passes, not twice (halfSwapKernel).
//    Where the last transformed length is a power of two from 32 to 512 (fft_last.cu), cuFFT transforms only the
//    lower dimensions and one pass does the last one's DFT together with that swap: no pass besides cuFFT's;
//    likewise fftGram's diagonal sits between the last dimension's two DFTs in one pass (fft_last.cu), and a
//    single transformed dimension of such a length (contiguous rows) is transformed and centred in one pass
//    without cuFFT.
//  - Otherwise: two in-place modulation passes around the plain DFT (device_math.hpp derives them).
#include "fft.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "check.hpp"
#include "device_math.hpp"
#include "fft_last.hpp"

namespace larmor::cuda {

namespace {

template <class U>
__global__ void modulateKernel(float2* data, index_t total, Modulation<U> m) {
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<index_t>(gridDim.x) * blockDim.x) {
    const U iu = static_cast<U>(i);
    const U pos = iu - static_cast<U>(m.plane.div(iu)) * static_cast<U>(m.plane.divisor);
    data[i] = cmul(data[i], modulationFactor<U>(pos, m));
  }
}

/// Two neighbours per thread as one 16-byte access, for an even length along dimension 0: elements 2p and
/// 2p+1 then share every coordinate but n0, whose parity differs, so their factors are exact negatives.
template <class U>
__global__ void modulatePairsKernel(float4* data, index_t pairs, Modulation<U> m) {
  for (index_t p = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < pairs;
       p += static_cast<index_t>(gridDim.x) * blockDim.x) {
    const U iu = static_cast<U>(2 * p);
    const U pos = iu - static_cast<U>(m.plane.div(iu)) * static_cast<U>(m.plane.divisor);
    const float2 f = modulationFactor<U>(pos, m);
    const float4 v = data[p];
    const float2 lo = cmul(float2{v.x, v.y}, f), hi = cmul(float2{v.z, v.w}, float2{-f.x, -f.y});
    data[p] = float4{lo.x, lo.y, hi.x, hi.y};
  }
}

/// Sets up the modulation before (post = false) or after (post = true) the plain DFT.
template <class U>
Modulation<U> makeModulation(const Shape& shape, int rank, int sign, bool post) {
  Modulation<U> m;
  m.sign = static_cast<float>(sign);
  index_t plane = 1;
  double turns = 0;  // global phase e^{-2 pi i s sum_d c_d^2 / N_d}, in turns
  for (int d = 0; d < rank; ++d) {
    const index_t n = shape[d];
    plane *= n;
    if (n == 1) continue;  // identity along this dimension
    m.dims[m.rank] = DividerFor<U>(static_cast<U>(n));
    if (n & 1) m.oddMask |= 1u << m.rank;
    ++m.rank;
    // c^2 mod N exactly in integers (c < 2^31 for any array that fits in memory), then the fraction.
    const std::uint64_t c = static_cast<std::uint64_t>(n / 2);
    turns += static_cast<double>((c * c) % static_cast<std::uint64_t>(n)) / static_cast<double>(n);
  }
  m.plane = DividerFor<U>(static_cast<U>(plane));
  if (post) {
    turns -= std::floor(turns);
    const double scale = 1.0 / std::sqrt(static_cast<double>(plane));
    // Even lengths give exactly +1 or -1 (turns 0 or 1/2): keep them exact rather than cos(pi) ~ -1 + 1e-16 i.
    double re = 1.0, im = 0.0;
    if (turns == 0.5) {
      re = -1.0;
    } else if (turns != 0.0) {
      const double angle = 2.0 * 3.14159265358979323846 * turns;
      re = std::cos(angle);
      im = -sign * std::sin(angle);
    }
    m.constant = float2{static_cast<float>(re * scale), static_cast<float>(im * scale)};
  }
  return m;
}

template <class U>
void modulate(const Launch& l, float2* data, index_t total, const Shape& shape, int rank, int sign, bool post) {
  const Modulation<U> m = makeModulation<U>(shape, rank, sign, post);
  const bool pairs = shape[0] % 2 == 0 && (reinterpret_cast<std::uintptr_t>(data) & 15u) == 0;
  if (pairs)  // total is even: a multiple of shape[0]
    modulatePairsKernel<U><<<gridFor(total / 2, l), kThreads, 0, l.stream>>>(reinterpret_cast<float4*>(data), total / 2, m);
  else
    modulateKernel<U><<<gridFor(total, l), kThreads, 0, l.stream>>>(data, total, m);
  LARMOR_CUDA_CHECK_LAUNCH();
}

/// data[i] *= scale d[i mod plane].
template <class U>
__global__ void multiplyScaledKernel(float2* data, const float2* __restrict__ d, DividerFor<U> plane, index_t total,
                                     float scale) {
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<index_t>(gridDim.x) * blockDim.x) {
    const U iu = static_cast<U>(i);
    const float2 f = d[iu - static_cast<U>(plane.div(iu)) * static_cast<U>(plane.divisor)];
    data[i] = cmul(data[i], float2{scale * f.x, scale * f.y});
  }
}

void multiplyScaled(const Launch& l, float2* data, const float2* d, index_t plane, index_t total, float scale) {
  if (total <= static_cast<index_t>(std::numeric_limits<std::uint32_t>::max()))
    multiplyScaledKernel<std::uint32_t><<<gridFor(total, l), kThreads, 0, l.stream>>>(
        data, d, FastDivU32(static_cast<std::uint32_t>(plane)), total, scale);
  else
    multiplyScaledKernel<std::uint64_t><<<gridFor(total, l), kThreads, 0, l.stream>>>(
        data, d, DivU64(static_cast<std::uint64_t>(plane)), total, scale);
  LARMOR_CUDA_CHECK_LAUNCH();
}

void modulateAny(const Launch& l, float2* data, index_t total, const Shape& shape, int rank, int sign, bool post) {
  if (total <= static_cast<index_t>(std::numeric_limits<std::uint32_t>::max()))
    modulate<std::uint32_t>(l, data, total, shape, rank, sign, post);
  else
    modulate<std::uint64_t>(l, data, total, shape, rank, sign, post);
}

/// Whether every transformed length is even (and one is > 1): the half-swap forms apply.
bool allEven(const Shape& shape, int rank) {
  bool any = false;
  for (int d = 0; d < rank; ++d) {
    if (shape[d] % 2 && shape[d] > 1) return false;
    any = any || shape[d] > 1;
  }
  return any;
}

/// The transformed dimensions of length > 1 (at most 3), fastest first, every one even, as the half-swap
/// kernels see them. U: the index type (32 bits where the array allows: fast division by the extents).
template <class U>
struct HalfSwap {
  int lower = 0;               ///< transformed dimensions below the slowest one, of length > 1
  DividerFor<U> n[2];          ///< their lengths
  U stride[2] = {0, 0};
  DividerFor<U> low;           ///< elements below the slowest transformed dimension (its stride)
  DividerFor<U> perPlane;      ///< pairs in one transform: low x half
  U half = 0;                  ///< half the slowest transformed length
  U plane = 1;                 ///< elements of one transform
  U pairs = 0;                 ///< pairs in the whole batch
  float scale = 1.f;           ///< N^{-1/2} (the transform), 1/N (fftGram's DFT pair)
};

/// For allEven shapes.
template <class U>
HalfSwap<U> halfSwapView(const Shape& shape, int rank) {
  HalfSwap<U> h;
  int dims[3], count = 0;
  index_t stride[3], st = 1;
  for (int d = 0; d < rank; ++d) {
    if (shape[d] > 1) {
      dims[count] = d;
      stride[count++] = st;
    }
    st *= shape[d];
  }
  h.lower = count - 1;
  for (int i = 0; i < h.lower; ++i) {
    h.n[i] = DividerFor<U>(static_cast<U>(shape[dims[i]]));
    h.stride[i] = static_cast<U>(stride[i]);
  }
  const index_t half = shape[dims[count - 1]] / 2;
  h.low = DividerFor<U>(static_cast<U>(stride[count - 1]));
  h.perPlane = DividerFor<U>(static_cast<U>(stride[count - 1] * half));
  h.half = static_cast<U>(half);
  h.plane = static_cast<U>(st);
  h.pairs = static_cast<U>(shape.size() / 2);
  h.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(st)));
  return h;
}

/// The element half a period away from element `pos` of one transform (k -> k + N/2 mod N along every
/// transformed dimension); `parity` gets pos's coordinate sum along them, `shiftedParity` the result's.
template <class U>
__device__ __forceinline__ U halfShift(const HalfSwap<U>& h, U pos, U& parity, U& shiftedParity) {
  const U low = static_cast<U>(h.low.divisor);
  const U j = static_cast<U>(h.low.div(pos)), js = j < h.half ? j + h.half : j - h.half;
  U rest = pos - j * low, at = js * low;
  parity = j;
  shiftedParity = js;
#pragma unroll
  for (int d = 0; d < 2; ++d) {
    if (d >= h.lower) break;
    const U n = static_cast<U>(h.n[d].divisor), next = static_cast<U>(h.n[d].div(rest)), k = rest - next * n;
    const U ks = k + n / 2 < n ? k + n / 2 : k - n / 2;
    rest = next;
    at += ks * h.stride[d];
    parity += k;
    shiftedParity += ks;
  }
  return at;
}

/// out[k] = (-1)^{|k'|} N^{-1/2} z[k'] and out[k'] = (-1)^{|k|} N^{-1/2} z[k] for k' = k + N/2 (mod N, every
/// transformed dimension), |k| the sum of k's coordinates along them; one thread per pair, the pair's
/// representative k below the half along the slowest dimension. Consecutive threads take consecutive k along
/// dimension 0 and their partners form at most two consecutive runs: coalesced.
template <class U>
__global__ void halfSwapKernel(float2* data, HalfSwap<U> h) {
  for (U q = static_cast<U>(blockIdx.x * blockDim.x + threadIdx.x); q < h.pairs;
       q += static_cast<U>(gridDim.x * blockDim.x)) {
    const U b = static_cast<U>(h.perPlane.div(q)), r = q - b * static_cast<U>(h.perPlane.divisor);
    U parity, partnerParity;
    const U at = b * h.plane + r, partner = b * h.plane + halfShift(h, r, parity, partnerParity);
    const float2 z = data[at], zp = data[partner];
    const float s = (partnerParity & 1) ? -h.scale : h.scale, sp = (parity & 1) ? -h.scale : h.scale;
    data[at] = float2{s * zp.x, s * zp.y};
    data[partner] = float2{sp * z.x, sp * z.y};
  }
}

/// data[i] *= scale d[S(i mod plane)], S the shift by half of every transformed length: fftGram's diagonal
/// in uncentred frequency order.
template <class U>
__global__ void multiplyShiftedKernel(float2* data, const float2* __restrict__ d, HalfSwap<U> h, U total) {
  for (U i = static_cast<U>(blockIdx.x * blockDim.x + threadIdx.x); i < total;
       i += static_cast<U>(gridDim.x * blockDim.x)) {
    const U b = static_cast<U>(h.perPlane.div(i >> 1));  // perPlane = plane / 2
    U parity, shiftedParity;
    const float2 f = d[halfShift(h, i - b * h.plane, parity, shiftedParity)];
    data[i] = cmul(data[i], float2{h.scale * f.x, h.scale * f.y});
  }
}

// Launchers for allEven shapes; 32-bit indices where the grid-stride loops' indices (below 2 x total) fit.
template <class U>
void launchHalfSwap(const Launch& l, float2* data, const Shape& shape, int rank) {
  halfSwapKernel<U><<<gridFor(shape.size() / 2, l), kThreads, 0, l.stream>>>(data, halfSwapView<U>(shape, rank));
  LARMOR_CUDA_CHECK_LAUNCH();
}
void halfSwap(const Launch& l, float2* data, const Shape& shape, int rank) {
  if (shape.size() < (index_t{1} << 31)) launchHalfSwap<std::uint32_t>(l, data, shape, rank);
  else launchHalfSwap<std::uint64_t>(l, data, shape, rank);
}

template <class U>
void launchMultiplyShifted(const Launch& l, float2* data, const float2* d, const Shape& shape, int rank) {
  HalfSwap<U> h = halfSwapView<U>(shape, rank);
  h.scale = static_cast<float>(1.0 / static_cast<double>(h.plane));  // the unnormalised DFT pair's N
  multiplyShiftedKernel<U><<<gridFor(shape.size(), l), kThreads, 0, l.stream>>>(data, d, h, static_cast<U>(shape.size()));
  LARMOR_CUDA_CHECK_LAUNCH();
}
void multiplyShifted(const Launch& l, float2* data, const float2* d, const Shape& shape, int rank) {
  if (shape.size() < (index_t{1} << 31)) launchMultiplyShifted<std::uint32_t>(l, data, d, shape, rank);
  else launchMultiplyShifted<std::uint64_t>(l, data, d, shape, rank);
}

}  // namespace

FftEngine::FftEngine(std::shared_ptr<DeviceAllocator> allocator, const Launch& launch)
    : allocator_(std::move(allocator)), launch_(launch) {}

FftEngine::~FftEngine() {
  // Plans and the work area may be in use by queued transforms.
  (void)cudaStreamSynchronize(launch_.stream);
  for (auto& p : plans_) (void)cufftDestroy(p.handle);
  allocator_->release(work_);
  holds_ = 0;
  release();
  (void)cudaGetLastError();
}

void FftEngine::release() {
  if (holds_ > 0 && --holds_ > 0) return;
  if (retiredPlans_.empty() && retiredWork_.empty()) return;
  // A replay still queued may use them (an in-flight graph finishes first).
  (void)cudaStreamSynchronize(launch_.stream);
  for (cufftHandle h : retiredPlans_) (void)cufftDestroy(h);
  for (const auto& b : retiredWork_) allocator_->release(b);
  retiredPlans_.clear();
  retiredWork_.clear();
}

void FftEngine::ensureWorkArea(std::size_t bytes) {
  if (bytes <= workBytes_) return;
  // The old area goes back to the allocator (kept while a recording may replay on it); transforms queued on it
  // finish first in stream order.
  if (holds_ > 0) retiredWork_.push_back(work_);
  else allocator_->release(work_);
  work_ = {};
  workBytes_ = 0;
  work_ = allocator_->allocate(bytes);
  workBytes_ = bytes;
}

FftEngine::Plan& FftEngine::planFor(const Key& key) {
  for (auto it = plans_.begin(); it != plans_.end(); ++it) {
    if (it->key == key) {
      plans_.splice(plans_.begin(), plans_, it);
      return plans_.front();
    }
  }
  if (plans_.size() >= kMaxPlans) {
    if (holds_ > 0) {
      retiredPlans_.push_back(plans_.back().handle);  // a recording may replay its kernels (their tables)
    } else {
      LARMOR_CUDA_CHECK(cudaStreamSynchronize(launch_.stream));
      (void)cufftDestroy(plans_.back().handle);
    }
    plans_.pop_back();
  }
  Plan plan;
  plan.key = key;
  LARMOR_CUFFT_CHECK(cufftCreate(&plan.handle));
  try {
    // Our allocator provides the work area (see the class comment).
    LARMOR_CUFFT_CHECK(cufftSetAutoAllocation(plan.handle, 0));
    std::vector<long long> n = key.lengths;
    const int rank = static_cast<int>(n.size());
    std::size_t work = 0;
    cufftResult r = cufftMakePlanMany64(plan.handle, rank, n.data(), nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C,
                                        key.batch, &work);
    if (r == CUFFT_ALLOC_FAILED) {
      // cuFFT's own tables did not fit; our cached blocks may be what is in the way.
      allocator_->trim();
      (void)cufftDestroy(plan.handle);
      plan.handle = 0;
      LARMOR_CUFFT_CHECK(cufftCreate(&plan.handle));
      LARMOR_CUFFT_CHECK(cufftSetAutoAllocation(plan.handle, 0));
      r = cufftMakePlanMany64(plan.handle, rank, n.data(), nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, key.batch,
                              &work);
    }
    if (r != CUFFT_SUCCESS) {
      std::string dims;
      for (auto v : key.lengths) {
        if (!dims.empty()) dims += 'x';
        dims += std::to_string(v);
      }
      throw Error(std::string("cuFFT could not plan a ") + dims + " transform batched " + std::to_string(key.batch) +
                  " times: " + cufftResultString(r));
    }
    LARMOR_CUFFT_CHECK(cufftSetStream(plan.handle, launch_.stream));
    plan.workBytes = work;
  } catch (...) {
    if (plan.handle) (void)cufftDestroy(plan.handle);
    throw;
  }
  plans_.push_front(std::move(plan));
  return plans_.front();
}

bool FftEngine::prepare(const Shape& shape, int rank, Plan*& plan) {
  const index_t total = shape.size();
  if (total == 0) return false;
  const index_t plane = shape.span(0, static_cast<std::size_t>(rank));
  Key key;
  for (int d = rank - 1; d >= 0; --d)  // cuFFT lists lengths slowest first; ours are fastest first
    if (shape[d] > 1) key.lengths.push_back(shape[d]);
  if (key.lengths.empty()) return false;  // every length 1: the transform is the identity
  key.batch = total / plane;
  // Dropping the length-1 dimensions leaves the memory layout unchanged: the remaining ones are still
  // contiguous, fastest first, and each transform still occupies `plane` consecutive elements.
  plan = &prepared(key);
  return true;
}

FftEngine::Plan& FftEngine::prepared(const Key& key) {
  Plan& plan = planFor(key);
  // Never a null area, even for plans that report needing none: with auto-allocation off, cuFFT may
  // refuse to execute without one.
  ensureWorkArea(std::max<std::size_t>(plan.workBytes, 1));
  LARMOR_CUFFT_CHECK(cufftSetWorkArea(plan.handle, work_.ptr));  // every time: the area may have moved
  return plan;
}

void FftEngine::transform(float2* data, const Shape& shape, int rank, FftDirection dir) {
  auto* z = reinterpret_cast<cufftComplex*>(data);
  const int cufftDir = dir == FftDirection::Forward ? CUFFT_FORWARD : CUFFT_INVERSE;
  if (shape.size() == 0) return;
  if (const auto rows = rowPass(shape, rank)) {  // one contiguous dimension: the whole transform in one pass
    runRowPass(launch_, data, shape, *rows, dir);
    return;
  }
  if (const auto pass = lastDimPass(shape, rank, LastDimUse::Centre)) {  // cuFFT over the lower dimensions, then one pass
    const Plan& lower = prepared(Key{pass->lowerLengths, pass->lowerBatch});
    LARMOR_CUFFT_CHECK(cufftExecC2C(lower.handle, z, z, cufftDir));
    runLastDimPass(launch_, data, *pass, dir);
    return;
  }
  Plan* plan = nullptr;
  if (!prepare(shape, rank, plan)) return;
  if (allEven(shape, rank)) {  // S D F: one pass after cuFFT
    LARMOR_CUFFT_CHECK(cufftExecC2C(plan->handle, z, z, cufftDir));
    halfSwap(launch_, data, shape, rank);
    return;
  }
  const int sign = dir == FftDirection::Forward ? 1 : -1;
  modulateAny(launch_, data, shape.size(), shape, rank, sign, false);
  LARMOR_CUFFT_CHECK(cufftExecC2C(plan->handle, z, z, cufftDir));
  modulateAny(launch_, data, shape.size(), shape, rank, sign, true);
}

bool FftEngine::gramPadded(float2* out, const float2* image, const Shape& imageShape, float2* grid,
                           const Shape& gridShape, int rank, const float2* diagonal) {
  // F^H D F = F0^H (S D S) F0 / N for even lengths (gram below), F0 separable: x's (and in 3D y's) plain DFTs of the
  // padded image by the padded passes (the padding in the first, the cropping in the last), the last dimension's
  // with d in the Gram pass. Only the rows and planes the image spans are read or written: no zeroing.
  if ((rank != 2 && rank != 3) || imageShape.rank() < static_cast<std::size_t>(rank) ||
      gridShape.rank() < static_cast<std::size_t>(rank))
    return false;
  const auto pass = lastDimPass(gridShape, rank, LastDimUse::Gram);
  const auto r = static_cast<std::size_t>(rank);
  if (!pass || imageShape.span(r, imageShape.rank()) != gridShape.span(r, gridShape.rank())) return false;
  const PaddedBox box{static_cast<int>(imageShape[0]), static_cast<int>(imageShape[1]),
                      rank == 3 ? static_cast<int>(imageShape[2]) : 1};
  if (!paddedPassesFit(*pass, box)) return false;
  const int last = rank == 3 ? box.n2 : box.n1, begin = pass->n / 2 - last / 2;
  runPaddedRows(launch_, grid, image, nullptr, *pass, box, FftDirection::Forward);
  if (rank == 3) runPaddedColumns(launch_, grid, *pass, box, FftDirection::Forward);
  runLastDimGram(launch_, grid, *pass, diagonal, begin, begin + last);
  if (rank == 3) runPaddedColumns(launch_, grid, *pass, box, FftDirection::Inverse);
  runPaddedRows(launch_, grid, nullptr, out, *pass, box, FftDirection::Inverse);
  return true;
}

void FftEngine::gram(float2* data, const Shape& shape, int rank, const float2* diagonal, const Shape* box) {
  // F = P2 DFT P1 with P1 = the pre-modulation e^{2 pi i c n / N} (device_math.hpp) and |P2| = N^{-1/2}, so
  // F^H D F = P1^H IDFT (D / N) DFT P1: of the four modulation passes of fft + fft only the outer two remain,
  // and P1^H is the pre-modulation of the opposite sign.
  const index_t total = shape.size(), plane = shape.span(0, static_cast<std::size_t>(rank));
  auto* z = reinterpret_cast<cufftComplex*>(data);
  if (const auto pass = lastDimPass(shape, rank, LastDimUse::Gram)) {  // the lower dimensions by cuFFT, one pass
    // With a box, the planes of the last dimension outside it are zero going in and unused coming out: only
    // those it spans are transformed (2D: by the row kernel, every batch in one launch; 3D: by cuFFT, one call a
    // batch, for few batches: more calls would cost more in launches than the half of the planes saves), and
    // the pass reads and writes only them.
    const int boxed = box ? static_cast<int>((*box)[static_cast<std::size_t>(pass->lastDim)]) : pass->n;
    const int begin = pass->n / 2 - boxed / 2;
    if (boxed < pass->n && boxRowsFit(*pass, boxed)) {  // 2D: x's DFT of the box's rows by the row kernel
      runBoxRows(launch_, data, *pass, begin, boxed, FftDirection::Forward);
      runLastDimGram(launch_, data, *pass, diagonal, begin, begin + boxed);
      runBoxRows(launch_, data, *pass, begin, boxed, FftDirection::Inverse);
      return;
    }
    if (boxed < pass->n && pass->batch <= kMaxBoxBatches) {
      const Plan& lower = prepared(Key{pass->lowerLengths, boxed});
      for (long long b = 0; b < pass->batch; ++b) {
        cufftComplex* slab = z + b * pass->plane + begin * pass->low;
        LARMOR_CUFFT_CHECK(cufftExecC2C(lower.handle, slab, slab, CUFFT_FORWARD));
      }
      runLastDimGram(launch_, data, *pass, diagonal, begin, begin + boxed);
      for (long long b = 0; b < pass->batch; ++b) {
        cufftComplex* slab = z + b * pass->plane + begin * pass->low;
        LARMOR_CUFFT_CHECK(cufftExecC2C(lower.handle, slab, slab, CUFFT_INVERSE));
      }
      return;
    }
    const Plan& lower = prepared(Key{pass->lowerLengths, pass->lowerBatch});
    LARMOR_CUFFT_CHECK(cufftExecC2C(lower.handle, z, z, CUFFT_FORWARD));
    runLastDimGram(launch_, data, *pass, diagonal, box ? begin : 0, box ? begin + boxed : pass->n);
    LARMOR_CUFFT_CHECK(cufftExecC2C(lower.handle, z, z, CUFFT_INVERSE));
    return;
  }
  Plan* plan = nullptr;
  if (!prepare(shape, rank, plan)) {  // every transformed length is 1: F is the identity
    multiplyScaled(launch_, data, diagonal, plane, total, 1.f);
    return;
  }
  if (allEven(shape, rank)) {
    // F = S D F0 / sqrt(N) (the file comment; F0 the plain DFT), S and D symmetric involutions, so
    // F^H M F = F0^H D (S M S) D F0 / N = F0^H (S M S) F0 / N: the diagonal read half a period away, and no
    // pass besides the two cuFFTs and the multiply.
    LARMOR_CUFFT_CHECK(cufftExecC2C(plan->handle, z, z, CUFFT_FORWARD));
    multiplyShifted(launch_, data, diagonal, shape, rank);
    LARMOR_CUFFT_CHECK(cufftExecC2C(plan->handle, z, z, CUFFT_INVERSE));
    return;
  }
  modulateAny(launch_, data, total, shape, rank, 1, false);
  LARMOR_CUFFT_CHECK(cufftExecC2C(plan->handle, z, z, CUFFT_FORWARD));
  multiplyScaled(launch_, data, diagonal, plane, total, static_cast<float>(1.0 / static_cast<double>(plane)));
  LARMOR_CUFFT_CHECK(cufftExecC2C(plan->handle, z, z, CUFFT_INVERSE));
  modulateAny(launch_, data, total, shape, rank, -1, false);
}

}  // namespace larmor::cuda
