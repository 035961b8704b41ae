// The Daubechies-4 wavelet prior on the CPU: the orthonormal periodic DWT Psi (Daubechies, "Orthonormal
// bases of compactly supported wavelets", CPAM 41:909, 1988; Mallat's pyramid, IEEE PAMI 11:674, 1989),
// separable over the transformed dims, several levels; prox of t ||Psi u||_1 over the detail bands with
// cycle spinning (Figueiredo & Nowak, IEEE TIP 12:906, 2003):
//   prox(x) = S^-1 crop Psi^H soft_t(Psi pad S x)
// Geometry (levels, padding), shift and band layout: larmor/backend/sparsity_ops.hpp; taps, synthesis as a
// gather and the soft threshold: larmor/kernels/sparsity_math.hpp, shared with the GPU.
//
// A pass along dim d filters the current approximation block in place. Lines along dim 0 are contiguous
// and filtered one by one; lines along dims 1 and 2 are filtered 64 at a time (consecutive x), so every
// load and store runs along memory. Each job copies its lines into a per-thread buffer, which the outputs
// are then written from. Deterministic: the prox has no reductions; waveletL1 sums per row in double and
// adds the rows in order.
//
// Twin: cuda/wavelet.cu. Part of CpuSparsityOps; TV is in sparsity.cpp.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cpu_backend.hpp"
#include "larmor/kernels/sparsity_math.hpp"

namespace larmor::cpu {

namespace {

using kernels::WaveletGeometry;

constexpr index_t kLanes = 64;


struct Taps {
  float h[4], g[4];
  Taps() {
    for (int j = 0; j < 4; ++j) {
      h[j] = static_cast<float>(kernels::d4Low(j));
      g[j] = static_cast<float>(kernels::d4High(j));
    }
  }
};

/// One level along one dim of `lanes` neighbouring lines (row r of the lines at base + r * rowStride + l),
/// each of length m (even), through tmp (m * lanes).
void filterLines(cfloat* base, index_t rowStride, index_t m, index_t lanes, cfloat* tmp, bool inverse,
                 const Taps& f) {
  const index_t half = m / 2;
  if (!inverse) {
    for (index_t k = 0; k < half; ++k)
      for (index_t l = 0; l < lanes; ++l) {
        cfloat a(0.f, 0.f), d(0.f, 0.f);
        for (int j = 0; j < 4; ++j) {
          const cfloat v = base[((2 * k + j) % m) * rowStride + l];
          a += f.h[j] * v;
          d += f.g[j] * v;
        }
        tmp[k * lanes + l] = a;
        tmp[(half + k) * lanes + l] = d;
      }
  } else {
    for (index_t n = 0; n < m; ++n)
      for (index_t l = 0; l < lanes; ++l) {
        cfloat s(0.f, 0.f);
        for (int j = static_cast<int>(n & 1); j < 4; j += 2) {
          const index_t k = ((n - j + m) / 2) % half;
          s += f.h[j] * base[k * rowStride + l];
          s += f.g[j] * base[(half + k) * rowStride + l];
        }
        tmp[n * lanes + l] = s;
      }
  }
  for (index_t r = 0; r < m; ++r)
    for (index_t l = 0; l < lanes; ++l) base[r * rowStride + l] = tmp[r * lanes + l];
}

/// One level along dim d over the block [ext] of the padded array w.
void transformAxis(cfloat* w, const WaveletGeometry& geo, const index_t ext[3], int d, bool inverse) {
  const index_t s1 = geo.padded[0], s2 = geo.padded[0] * geo.padded[1];
  const index_t m = ext[d];
  const index_t chunks = (ext[0] + kLanes - 1) / kLanes;  // groups of lines along dim 0 (d > 0)
  const index_t other = d == 2 ? ext[1] : ext[2];         // the dim that is neither 0 nor d
  const index_t jobs = d == 0 ? ext[1] * ext[2] : chunks * other;
  const Taps f;
#pragma omp parallel if (jobs * m > (index_t{1} << 14))
  {
    std::vector<cfloat> tmp(static_cast<std::size_t>(m * (d == 0 ? 1 : kLanes)));
#pragma omp for schedule(static)
    for (index_t job = 0; job < jobs; ++job) {
      if (d == 0) {
        const index_t c1 = job % ext[1], c2 = job / ext[1];
        filterLines(w + c1 * s1 + c2 * s2, 1, m, 1, tmp.data(), inverse, f);
      } else {
        const index_t x0 = (job % chunks) * kLanes, o = job / chunks;
        const index_t lanes = std::min(kLanes, ext[0] - x0);
        cfloat* base = w + x0 + (d == 1 ? o * s2 : o * s1);
        filterLines(base, d == 1 ? s1 : s2, m, lanes, tmp.data(), inverse, f);
      }
    }
  }
}

void transform(cfloat* w, const WaveletGeometry& geo, bool inverse) {
  for (int step = 0; step < geo.levels; ++step) {
    const int level = inverse ? geo.levels - 1 - step : step;
    const index_t ext[3] = {geo.block(0, level), geo.block(1, level), geo.block(2, level)};
    for (int k = 0; k < 3; ++k) {
      const int d = inverse ? 2 - k : k;
      if (geo.transformed[d]) transformAxis(w, geo, ext, d, inverse);
    }
  }
}

/// f(padded row index, c1, c2) for every x-row of the padded array, rows in parallel.
template <class F>
void forPaddedRows(const WaveletGeometry& geo, F&& f) {
  const index_t rows = geo.padded[1] * geo.padded[2];
#pragma omp parallel for schedule(static) if (geo.paddedVoxels() > (index_t{1} << 15))
  for (index_t r = 0; r < rows; ++r) f(r, r % geo.padded[1], r / geo.padded[1]);
}

/// (c - s) mod n for c, s in [0, n).
inline index_t wrapBack(index_t c, index_t s, index_t n) { return c >= s ? c - s : c - s + n; }

/// w = pad(S x): w[c] = x[(c - s) mod N] inside the image, 0 in the padding.
void padShifted(cfloat* w, const cfloat* x, const WaveletGeometry& geo, const index_t s[3]) {
  const index_t n0 = geo.dims[0], n1 = geo.dims[1], n2 = geo.dims[2];
  forPaddedRows(geo, [&](index_t r, index_t c1, index_t c2) {
    cfloat* row = w + r * geo.padded[0];
    if (c1 >= n1 || c2 >= n2) {
      std::fill(row, row + geo.padded[0], cfloat(0.f, 0.f));
      return;
    }
    const cfloat* src = x + (wrapBack(c1, s[1], n1) + n1 * wrapBack(c2, s[2], n2)) * n0;
    for (index_t c0 = 0; c0 < n0; ++c0) row[c0] = src[wrapBack(c0, s[0], n0)];
    std::fill(row + n0, row + geo.padded[0], cfloat(0.f, 0.f));
  });
}

/// x = S^-1 crop(w): x[v] = w[(v + s) mod N].
void cropUnshifted(cfloat* x, const cfloat* w, const WaveletGeometry& geo, const index_t s[3]) {
  const index_t n0 = geo.dims[0], n1 = geo.dims[1], n2 = geo.dims[2];
  const index_t rows = n1 * n2;
#pragma omp parallel for schedule(static) if (geo.voxels() > (index_t{1} << 15))
  for (index_t r = 0; r < rows; ++r) {
    const index_t c1 = r % n1, c2 = r / n1;
    const index_t y = (c1 + s[1]) % n1, z = (c2 + s[2]) % n2;
    const cfloat* src = w + (y + geo.padded[1] * z) * geo.padded[0];
    cfloat* dst = x + r * n0;
    for (index_t c0 = 0; c0 < n0; ++c0) dst[c0] = src[(c0 + s[0]) % n0];
  }
}

}  // namespace

void CpuSparsityOps::waveletTransform(Buffer& data, const Shape& image, bool inverse) {
  const WaveletGeometry geo = waveletGeometry(image);
  cfloat* w = elements(data, geo.paddedVoxels(), "wavelet transform");
  transform(w, geo, inverse);
}

void CpuSparsityOps::waveletProx(Buffer& x, const Shape& image, double t, const std::array<index_t, 3>& shift) {
  const WaveletGeometry geo = waveletGeometry(image);
  require(t >= 0 && std::isfinite(t), "wavelet prox: t must be finite and >= 0");
  index_t s[3];
  for (int d = 0; d < 3; ++d) {
    require(shift[static_cast<std::size_t>(d)] >= 0 && shift[static_cast<std::size_t>(d)] < geo.dims[d],
            "wavelet prox: shift " + std::to_string(shift[static_cast<std::size_t>(d)]) + " along dim " +
                std::to_string(d) + " is outside [0, " + std::to_string(geo.dims[d]) + ")");
    s[d] = geo.transformed[d] ? shift[static_cast<std::size_t>(d)] : 0;
  }
  cfloat* px = elements(x, geo.voxels(), "wavelet prox");
  if (t == 0 || geo.levels == 0) return;
  std::lock_guard lock(mutex_);
  cfloat* w = workspace(2, geo.paddedVoxels());
  padShifted(w, px, geo, s);
  transform(w, geo, false);
  const auto ts = static_cast<float>(t);
  forPaddedRows(geo, [&](index_t r, index_t c1, index_t c2) {
    cfloat* row = w + r * geo.padded[0];
    // Inside the coarse band's rows, its first block(0, L) entries are not thresholded.
    const index_t from = kernels::inCoarseBand(geo, 0, c1, c2) ? geo.block(0, geo.levels) : 0;
    for (index_t c0 = from; c0 < geo.padded[0]; ++c0)
      row[c0] *= kernels::softFactor(row[c0].real(), row[c0].imag(), ts);
  });
  transform(w, geo, true);
  cropUnshifted(px, w, geo, s);
}

double CpuSparsityOps::waveletL1(const Buffer& x, const Shape& image) {
  const WaveletGeometry geo = waveletGeometry(image);
  const cfloat* px = elements(x, geo.voxels(), "wavelet l1");
  if (geo.levels == 0) return 0.0;
  std::lock_guard lock(mutex_);
  cfloat* w = workspace(2, geo.paddedVoxels());
  const index_t zero[3] = {0, 0, 0};
  padShifted(w, px, geo, zero);
  transform(w, geo, false);
  std::vector<double> rows(static_cast<std::size_t>(geo.padded[1] * geo.padded[2]), 0.0);
  forPaddedRows(geo, [&](index_t r, index_t c1, index_t c2) {
    const cfloat* row = w + r * geo.padded[0];
    const index_t from = kernels::inCoarseBand(geo, 0, c1, c2) ? geo.block(0, geo.levels) : 0;
    double sum = 0;
    for (index_t c0 = from; c0 < geo.padded[0]; ++c0)
      sum += std::sqrt(double(row[c0].real()) * row[c0].real() + double(row[c0].imag()) * row[c0].imag());
    rows[static_cast<std::size_t>(r)] = sum;
  });
  double total = 0;
  for (double v : rows) total += v;
  return total;
}

}  // namespace larmor::cpu
