// Centred unitary FFTs on the CPU: FFTW (threaded, single precision) between two circular shifts. Twin of
// cuda/fft.cu, which replaces the shifts by two in-place modulation passes around cuFFT.
//
// The convention (backend.hpp): X[k] = N^{-1/2} sum_n x[n] exp(-2 pi i s (k - c)(n - c) / N), c = floor(N/2).
// Shifting the input by -c (ifftshift) puts n = c at index 0, the plain DFT then gives k - c at index k - c
// mod N, and shifting the output by +c (fftshift) puts it back at k; N^{-1/2} makes the transform unitary.
// Plans are made once per (shape, rank, batch, direction) with FFTW_ESTIMATE and kept for the backend's
// life.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

#include "cpu_backend.hpp"

namespace larmor::cpu {

namespace {

/// Circular shift of each of the first `rank` dims by `shift[d]`: out[(i + shift) mod N] = in[i].
void circularShift(cfloat* out, const cfloat* in, const Shape& shape, int rank, const index_t shift[3]) {
  const index_t n0 = shape[0], n1 = rank > 1 ? shape[1] : 1, n2 = rank > 2 ? shape[2] : 1;
  const index_t plane = n0 * n1 * n2, batch = shape.size() / std::max<index_t>(plane, 1);
#pragma omp parallel for collapse(2) schedule(static)
  for (index_t b = 0; b < batch; ++b)
    for (index_t z = 0; z < n2; ++z) {
      const index_t zo = (z + shift[2]) % n2;
      for (index_t y = 0; y < n1; ++y) {
        const index_t yo = (y + shift[1]) % n1;
        const cfloat* src = in + b * plane + (z * n1 + y) * n0;
        cfloat* dst = out + b * plane + (zo * n1 + yo) * n0;
        const index_t s0 = shift[0] % n0;
        std::memcpy(dst + s0, src, static_cast<std::size_t>(n0 - s0) * sizeof(cfloat));
        std::memcpy(dst, src + (n0 - s0), static_cast<std::size_t>(s0) * sizeof(cfloat));
      }
    }
}

}  // namespace

FftEngine::FftEngine() {
  static std::once_flag once;
  std::call_once(once, [] { fftwf_init_threads(); });
}

FftEngine::~FftEngine() {
  std::lock_guard lock(planMutex_);
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
  HostBuffer tmpBuf(static_cast<std::size_t>(total) * sizeof(cfloat));
  auto* tmp = static_cast<cfloat*>(tmpBuf.ptr());
  circularShift(tmp, data, shape, rank, pre);
  fftwf_plan plan = planFor(shape, rank, batch, dir, tmp);
  fftwf_execute_dft(plan, reinterpret_cast<fftwf_complex*>(tmp), reinterpret_cast<fftwf_complex*>(tmp));
  circularShift(data, tmp, shape, rank, post);
  const cfloat s(static_cast<float>(1.0 / std::sqrt(static_cast<double>(plane))));
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < total; ++i) data[i] *= s;
}

fftwf_plan FftEngine::planFor(const Shape& shape, int rank, index_t batch, FftDirection dir, cfloat* buffer) {
  std::vector<index_t> dims(shape.dims().begin(), shape.dims().begin() + rank);
  Key key{dims, rank, batch, dir == FftDirection::Forward ? 0 : 1};
  std::lock_guard lock(planMutex_);
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
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
