// Centred unitary FFTs on the CPU: FFTW (threaded, single precision) between two circular shifts. Twin of
// cuda/fft.cu, which replaces the shifts by modulation or half-swap passes around cuFFT (and fuses them into its
// own last-dimension pass, cuda/fft_last.cu). fftGram for even lengths needs no shift at all (gram below).
//
// The convention (backend.hpp): X[k] = N^{-1/2} sum_n x[n] exp(-2 pi i s (k - c)(n - c) / N), c = floor(N/2).
// Shifting the input by -c (ifftshift) puts n = c at index 0, the plain DFT then gives k - c at index k - c
// mod N, and shifting the output by +c (fftshift) puts it back at k; N^{-1/2} makes the transform unitary.
// Plans are made once per (shape, rank, batch, direction) with FFTW_ESTIMATE and kept for the backend's
// life. The shifts are done in place (circularShiftInPlace below), so a transform needs no memory besides its
// array; FFTW then runs the same in-place plan on the same values as with a shifted copy, so the results are
// the same bits.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

#include "cpu_backend.hpp"

namespace larmor::cpu {

namespace {

/// Swaps the len elements at a with those at b, scaling both when scale != 1.
inline void swapBlocks(cfloat* a, cfloat* b, index_t len, cfloat scale) {
  if (scale == cfloat(1.f)) {
    std::swap_ranges(a, a + len, b);
    return;
  }
  for (index_t i = 0; i < len; ++i) {
    const cfloat t = a[i];
    a[i] = b[i] * scale;
    b[i] = t * scale;
  }
}

/// Reverses the order of the blocks [first, last) of base (blocks of len elements), in place.
void reverseBlocks(cfloat* base, index_t first, index_t last, index_t len) {
  const index_t pairs = (last - first) / 2;
#pragma omp parallel for schedule(static) if (pairs * len >= (1 << 16))
  for (index_t i = 0; i < pairs; ++i)
    std::swap_ranges(base + (first + i) * len, base + (first + i + 1) * len, base + (last - 1 - i) * len);
}

/// In place, per dim d < rank: out[(i + shift[d]) mod n_d] = in[i]; every element times `scale`.
/// A shift of exactly half an even length is its own inverse: those dims (all of them for even sizes, the
/// usual case) move together in one pass of pairwise swaps, which also scales. The other dims (odd lengths)
/// are rotated one at a time by three reversals (Bentley), rows or planes as blocks. No second array: the
/// FFT's working set is its input (an out-of-place shift doubled it: the NUFFT's oversampled grid, ESPIRiT's
/// interpolated matrices).
void circularShiftInPlace(cfloat* data, const Shape& shape, int rank, const index_t shift[3], cfloat scale) {
  index_t n[3] = {1, 1, 1}, s[3] = {0, 0, 0};
  for (int d = 0; d < rank; ++d) {
    n[d] = shape[d];
    s[d] = n[d] > 0 ? shift[d] % n[d] : 0;
  }
  const index_t plane = n[0] * n[1] * n[2];
  if (plane == 0) return;
  const index_t batch = shape.size() / plane;
  bool half[3];
  int first = -1;
  for (int d = 0; d < 3; ++d) {
    half[d] = s[d] != 0 && 2 * s[d] == n[d];
    if (half[d] && first < 0) first = d;
  }
  bool scaled = false;
  if (first >= 0) {
    // Element (x, y, z) pairs with (x + n0/2, y + n1/2, z + n2/2), each term only for the half dims; the
    // pairs are visited once each from the end whose coordinate along the first half dim is below half.
    const index_t rowsEnd = first == 0 ? n[1] : first == 1 ? n[1] / 2 : 1, planesEnd = first == 2 ? n[2] / 2 : n[2];
    const index_t len = first == 0 ? n[0] / 2 : first == 1 ? n[0] : n[0] * n[1];
#pragma omp parallel for collapse(3) schedule(static) if (batch * planesEnd * rowsEnd * len >= (1 << 16))
    for (index_t b = 0; b < batch; ++b)
      for (index_t z = 0; z < planesEnd; ++z)
        for (index_t y = 0; y < rowsEnd; ++y) {
          const index_t zp = half[2] ? (z + n[2] / 2) % n[2] : z, yp = half[1] ? (y + n[1] / 2) % n[1] : y;
          cfloat* a = data + b * plane + (z * n[1] + y) * n[0];
          cfloat* p = data + b * plane + (zp * n[1] + yp) * n[0] + (first == 0 ? n[0] / 2 : 0);
          swapBlocks(a, p, len, scale);
        }
    scaled = true;
  }
  // Odd lengths: rotate right by s = reverse the first n - s blocks, the last s, then all.
  for (int d = 0; d < 3; ++d) {
    if (s[d] == 0 || half[d]) continue;
    const index_t k = n[d] - s[d];
    if (d == 0) {
#pragma omp parallel for schedule(static)
      for (index_t r = 0; r < batch * n[1] * n[2]; ++r)
        std::rotate(data + r * n[0], data + r * n[0] + k, data + (r + 1) * n[0]);
      continue;
    }
    const index_t len = d == 1 ? n[0] : n[0] * n[1], groups = d == 1 ? batch * n[2] : batch, count = n[d];
    for (index_t g = 0; g < groups; ++g) {
      cfloat* base = data + g * count * len;
      reverseBlocks(base, 0, k, len);
      reverseBlocks(base, k, count, len);
      reverseBlocks(base, 0, count, len);
    }
  }
  if (!scaled && scale != cfloat(1.f)) {
    const index_t total = batch * plane;
#pragma omp parallel for schedule(static)
    for (index_t i = 0; i < total; ++i) data[i] *= scale;
  }
}

/// FFTW's planner is process-wide state, not thread-safe: every engine plans and destroys under this one lock, so
/// that backends planning in threads of their own (the batch's workers, slices or slabs split over several CPU
/// backends) do not meet in it. (fftwf_make_planner_thread_safe, which the batch runner used to call, did not
/// stop heap corruption with Debian's libfftw3f_omp: IterativeSlices crashed within 4 repeats; with this lock
/// 20 repeats pass.)
std::mutex& fftwPlanner() {
  static std::mutex m;
  return m;
}

}  // namespace

FftEngine::FftEngine() {
  static std::once_flag once;
  std::call_once(once, [] { fftwf_init_threads(); });
}

FftEngine::~FftEngine() {
  std::lock_guard lock(planMutex_);  // the engine's lock before the global one, as planFor takes them
  std::lock_guard global(fftwPlanner());
  for (auto& [key, plan] : plans_) fftwf_destroy_plan(plan);
}

void FftEngine::transform(cfloat* data, const Shape& shape, int rank, FftDirection dir) {
  const index_t total = shape.size();
  if (total == 0) return;
  const index_t plane = shape.span(0, rank), batch = total / plane;
  // Centre at c = floor(N/2): ifftshift (shift by -c) before, fftshift (shift by +c) after.
  index_t pre[3] = {0, 0, 0}, post[3] = {0, 0, 0};
  for (int d = 0; d < rank; ++d) {
    const index_t n = shape[d], c = n / 2;
    pre[d] = (n - c) % n;
    post[d] = c % n;
  }
  circularShiftInPlace(data, shape, rank, pre, cfloat(1.f));
  fftwf_plan plan = planFor(shape, rank, batch, dir, data);
  fftwf_execute_dft(plan, reinterpret_cast<fftwf_complex*>(data), reinterpret_cast<fftwf_complex*>(data));
  const cfloat unitary(static_cast<float>(1.0 / std::sqrt(static_cast<double>(plane))));
  circularShiftInPlace(data, shape, rank, post, unitary);
}

void FftEngine::plain(cfloat* data, const Shape& shape, int rank, FftDirection dir) {
  const index_t plane = shape.span(0, rank);
  fftwf_plan plan = planFor(shape, rank, shape.size() / plane, dir, data);
  fftwf_execute_dft(plan, reinterpret_cast<fftwf_complex*>(data), reinterpret_cast<fftwf_complex*>(data));
}

bool FftEngine::gramEven(cfloat* data, const Shape& shape, int rank, const cfloat* d) {
  for (int k = 0; k < rank; ++k)
    if (shape[k] % 2 != 0 && shape[k] != 1) return false;  // the shifts do not cancel
  const index_t total = shape.size();
  if (total == 0) return true;
  const index_t plane = shape.span(0, rank), batch = total / plane;
  // Every length even (or 1): the centring shift S is by N/2 both ways, so F = S F0 S / sqrt(N) and F0 S = D F0
  // (D = diag((-1)^k)); F^H M F = S F0^H S M S F0 S / N = F0^H D (S M S) D F0 / N = F0^H (S M S) F0 / N. FFTW's
  // plain DFT pair around the diagonal read half a period away: no shift pass (cuda/fft.cu does the same).
  plain(data, shape, rank, FftDirection::Forward);
  const index_t n0 = shape[0], n1 = rank > 1 ? shape[1] : 1, n2 = rank > 2 ? shape[2] : 1;
  const index_t h0 = n0 / 2, rows = plane / n0;
  const float scale = static_cast<float>(1.0 / static_cast<double>(plane));
#pragma omp parallel for schedule(static)
  for (index_t r = 0; r < batch * rows; ++r) {
    const index_t b = r / rows, row = r % rows, y = row % n1, z = row / n1;
    const cfloat* dr = d + n0 * ((y + n1 / 2) % n1 + n1 * ((z + n2 / 2) % n2));
    cfloat* x = data + b * plane + row * n0;
    for (index_t i = 0; i < n0; ++i) x[i] *= dr[i < h0 ? i + h0 : i - h0] * scale;
  }
  plain(data, shape, rank, FftDirection::Inverse);
  return true;
}

fftwf_plan FftEngine::planFor(const Shape& shape, int rank, index_t batch, FftDirection dir, cfloat* buffer) {
  std::vector<index_t> dims(shape.dims().begin(), shape.dims().begin() + rank);
  Key key{dims, rank, batch, dir == FftDirection::Forward ? 0 : 1};
  std::lock_guard lock(planMutex_);
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  std::lock_guard global(fftwPlanner());
  int n[3];
  for (int d = 0; d < rank; ++d) n[d] = static_cast<int>(shape[rank - 1 - d]);  // FFTW: last dim fastest
  const int dist = static_cast<int>(shape.span(0, rank));
  fftwf_plan_with_nthreads(omp_get_max_threads());
  auto* p = reinterpret_cast<fftwf_complex*>(buffer);
  // FFTW_UNALIGNED: plans are reused on other buffers, whose alignment may differ.
  fftwf_plan plan = fftwf_plan_many_dft(rank, n, static_cast<int>(batch), p, nullptr, 1, dist, p, nullptr, 1, dist,
                                        dir == FftDirection::Forward ? FFTW_FORWARD : FFTW_BACKWARD,
                                        FFTW_ESTIMATE | FFTW_UNALIGNED);
  require(plan != nullptr, "cpu backend: FFTW could not plan an FFT of " + shape.str());
  plans_.emplace(key, plan);
  return plan;
}

}  // namespace larmor::cpu
