// CpuBackend: the Backend interface on the host, FFTW3 and OpenMP loops; the reference implementation of
// every Backend op, which the CUDA backend is tested against. Twin of cuda/cuda_backend.cu: this file has
// the device description, the vector and array ops (on the GPU their kernels are in cuda/kernels.cu), the Gram of
// the FFT (ToeplitzOps) and GRAPPA's transpose (GrappaOps); memory.cpp, fft.cpp, nufft.cpp, dft.cpp, linalg.cpp, coil_combine.cpp, prior.cpp and
// finite_difference.cpp have the rest, each named after its CUDA twin.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "cpu_backend.hpp"
#include "larmor/backend/registry.hpp"

namespace larmor {
namespace cpu {

namespace {

cfloat* cptr(Buffer& b) { return static_cast<cfloat*>(b.ptr()); }
const cfloat* cptr(const Buffer& b) { return static_cast<const cfloat*>(b.ptr()); }

void checkCount(const Buffer& b, index_t n, const char* op) {
  if (n < 0 || static_cast<std::size_t>(n) * sizeof(cfloat) > b.bytes())
    throw Error(std::string("cpu backend: ") + op + " on " + std::to_string(n) +
                " elements exceeds a buffer of " + std::to_string(b.bytes() / sizeof(cfloat)));
}

}  // namespace

DeviceInfo CpuBackend::info() const {
  DeviceInfo d;
  d.id = "cpu";
  d.gpu = false;
  d.multiprocessors = omp_get_max_threads();
  d.name = "CPU (" + std::to_string(d.multiprocessors) + " threads)";
  d.library = std::string("FFTW ") + fftwf_version;
  return d;
}

// --- complex vectors ---------------------------------------------------------------------------------------

void CpuBackend::fill(Buffer& x, cfloat v, index_t n) {
  checkCount(x, n, "fill");
  cfloat* p = cptr(x);
#pragma omp parallel for simd schedule(static)
  for (index_t i = 0; i < n; ++i) p[i] = v;
}

void CpuBackend::scale(Buffer& x, cfloat a, index_t n) {
  checkCount(x, n, "scale");
  cfloat* p = cptr(x);
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < n; ++i) p[i] *= a;
}

void CpuBackend::axpby(Buffer& y, cfloat a, const Buffer& x, cfloat b, index_t n) {
  checkCount(y, n, "axpby");
  checkCount(x, n, "axpby");
  cfloat* py = cptr(y);
  const cfloat* px = cptr(x);
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < n; ++i) py[i] = a * px[i] + b * py[i];
}

void CpuBackend::multiply(Buffer& out, const Buffer& a, index_t na, const Buffer& b, index_t nb, bool conjA) {
  require(na > 0 && nb % na == 0, "cpu backend: multiply needs na to divide nb");
  checkCount(out, nb, "multiply");
  checkCount(b, nb, "multiply");
  checkCount(a, na, "multiply");
  cfloat* po = cptr(out);
  const cfloat *pa = cptr(a), *pb = cptr(b);
  const index_t batches = nb / na;
#pragma omp parallel for collapse(2) schedule(static)
  for (index_t k = 0; k < batches; ++k)
    for (index_t i = 0; i < na; ++i) {
      const cfloat av = conjA ? std::conj(pa[i]) : pa[i];
      po[k * na + i] = av * pb[k * na + i];
    }
}

cdouble CpuBackend::dot(const Buffer& a, const Buffer& b, index_t n) {
  checkCount(a, n, "dot");
  checkCount(b, n, "dot");
  const cfloat *pa = cptr(a), *pb = cptr(b);
  double re = 0, im = 0;
#pragma omp parallel for reduction(+ : re, im) schedule(static)
  for (index_t i = 0; i < n; ++i) {
    const cdouble x(pa[i]), y(pb[i]);
    re += x.real() * y.real() + x.imag() * y.imag();
    im += x.real() * y.imag() - x.imag() * y.real();
  }
  return {re, im};
}

double CpuBackend::norm2(const Buffer& x, index_t n) {
  checkCount(x, n, "norm2");
  const cfloat* p = cptr(x);
  double s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
  for (index_t i = 0; i < n; ++i) s += double(p[i].real()) * p[i].real() + double(p[i].imag()) * p[i].imag();
  return std::sqrt(s);
}

void CpuBackend::reciprocalDiagonal(Buffer& out, const Buffer& a, double alpha, const Buffer* b, double beta,
                                    index_t n) {
  require(n >= 0, "reciprocal diagonal: negative length");
  checkCount(out, n, "reciprocal diagonal");
  checkCount(a, n, "reciprocal diagonal");
  if (b) checkCount(*b, n, "reciprocal diagonal");
  cfloat* po = cptr(out);
  const cfloat* pa = cptr(a);
  const cfloat* pb = b ? cptr(*b) : nullptr;
#pragma omp parallel for schedule(static) if (n > (index_t{1} << 16))
  for (index_t i = 0; i < n; ++i) {
    const double s = alpha * pa[i].real() + (pb ? beta * pb[i].real() : beta);
    po[i] = cfloat(std::isfinite(s) && s > 0 ? static_cast<float>(1.0 / s) : 1.f, 0.f);
  }
}

// --- arrays ------------------------------------------------------------------------------------------------

void CpuBackend::fft(Buffer& data, const Shape& shape, int rank, FftDirection dir) {
  require(rank >= 1 && rank <= 3 && static_cast<std::size_t>(rank) <= std::max<std::size_t>(shape.rank(), 1),
          "cpu backend: fft rank must be 1..3 and within the array's rank, got " + std::to_string(rank));
  checkCount(data, shape.size(), "fft");
  fft_.transform(cptr(data), shape, rank, dir);
}

void CpuBackend::resizeCentred(Buffer& dst, const Shape& ds, const Buffer& src, const Shape& ss) {
  require(ds.span(4, std::max<std::size_t>(ds.rank(), 4)) == ss.span(4, std::max<std::size_t>(ss.rank(), 4)),
          "cpu backend: resizeCentred needs equal batch sizes, " + ds.str() + " vs " + ss.str());
  checkCount(dst, ds.size(), "resizeCentred");
  checkCount(src, ss.size(), "resizeCentred");
  const index_t batch = ds.size() / std::max<index_t>(ds.span(0, 4), 1);
  index_t off[4];
  for (int d = 0; d < 4; ++d) off[d] = ss[d] / 2 - ds[d] / 2;  // src index = dst index + off
  cfloat* pd = cptr(dst);
  const cfloat* ps = cptr(src);
  const index_t dPlane = ds.span(0, 4), sPlane = ss.span(0, 4);
#pragma omp parallel for collapse(3) schedule(static)
  for (index_t b = 0; b < batch; ++b)
    for (index_t w = 0; w < ds[3]; ++w)
      for (index_t z = 0; z < ds[2]; ++z)
        for (index_t y = 0; y < ds[1]; ++y) {
          cfloat* row = pd + b * dPlane + ((w * ds[2] + z) * ds[1] + y) * ds[0];
          const index_t sw = w + off[3], sz = z + off[2], sy = y + off[1];
          if (sw < 0 || sw >= ss[3] || sz < 0 || sz >= ss[2] || sy < 0 || sy >= ss[1]) {
            std::fill(row, row + ds[0], cfloat(0));
            continue;
          }
          const cfloat* srow = ps + b * sPlane + ((sw * ss[2] + sz) * ss[1] + sy) * ss[0];
          for (index_t x = 0; x < ds[0]; ++x) {
            const index_t sx = x + off[0];
            row[x] = (sx >= 0 && sx < ss[0]) ? srow[sx] : cfloat(0);
          }
        }
}

void CpuBackend::sumOfSquares(Buffer& out, const Buffer& in, index_t voxels, index_t coils, index_t batch) {
  checkCount(out, voxels * batch, "sumOfSquares");
  checkCount(in, voxels * coils * batch, "sumOfSquares");
  cfloat* po = cptr(out);
  const cfloat* pi = cptr(in);
#pragma omp parallel for collapse(2) schedule(static)
  for (index_t b = 0; b < batch; ++b)
    for (index_t v = 0; v < voxels; ++v) {
      double s = 0;
      for (index_t c = 0; c < coils; ++c) s += std::norm(cdouble(pi[(b * coils + c) * voxels + v]));
      po[b * voxels + v] = cfloat(static_cast<float>(std::sqrt(s)), 0.f);
    }
}

// --- ToeplitzOps: the Gram of the FFT; padded as its three steps (the box changes nothing on the host) ---------

void CpuToeplitzOps::fftGram(Buffer& data, const Shape& shape, int rank, const Buffer& diagonal) {
  require(rank >= 1 && rank <= 3 && static_cast<std::size_t>(rank) <= std::max<std::size_t>(shape.rank(), 1),
          "cpu backend: fft rank must be 1..3 and within the array's rank, got " + std::to_string(rank));
  checkCount(data, shape.size(), "fftGram");
  const index_t plane = shape.span(0, static_cast<std::size_t>(rank));
  checkCount(diagonal, plane, "fftGram");
  if (fft_.gramEven(cptr(data), shape, rank, cptr(diagonal))) return;
  // Odd lengths: the shifts are copies, not modulations, and do not cancel: the composition itself.
  be_.fft(data, shape, rank, FftDirection::Forward);
  be_.multiply(data, diagonal, plane, data, shape.size(), false);
  be_.fft(data, shape, rank, FftDirection::Inverse);
}

void CpuToeplitzOps::fftGramPadded(Buffer& out, const Buffer& image, const Shape& imageShape, Buffer& grid,
                                   const Shape& gridShape, int rank, const Buffer& diagonal) {
  be_.resizeCentred(grid, gridShape, image, imageShape);
  fftGramInBox(grid, gridShape, rank, diagonal, imageShape);
  be_.resizeCentred(out, imageShape, grid, gridShape);
}

void CpuToeplitzOps::fftGramInBox(Buffer& data, const Shape& shape, int rank, const Buffer& diagonal, const Shape&) {
  fftGram(data, shape, rank, diagonal);
}

// --- GrappaOps::transpose: the planes' transpose ------------------------------------------------------------

void CpuGrappaOps::transpose(Buffer& dst, const Buffer& src, index_t n0, index_t n1, index_t batch) {
  require(n0 >= 0 && n1 >= 0 && batch >= 0, "cpu backend: transpose needs non-negative sizes");
  checkCount(dst, n0 * n1 * batch, "transpose");
  checkCount(src, n0 * n1 * batch, "transpose");
  require(dst.ptr() != src.ptr() || n0 * n1 * batch == 0, "cpu backend: transpose cannot work in place");
  cfloat* pd = cptr(dst);
  const cfloat* ps = cptr(src);
  // Tiles of 32 x 32 elements: one tile's rows and columns stay in the cache while it is copied.
  constexpr index_t kTile = 32;
  const index_t ti = (n0 + kTile - 1) / kTile, tj = (n1 + kTile - 1) / kTile;
#pragma omp parallel for collapse(3) schedule(static)
  for (index_t b = 0; b < batch; ++b)
    for (index_t bj = 0; bj < tj; ++bj)
      for (index_t bi = 0; bi < ti; ++bi) {
        const cfloat* s = ps + n0 * n1 * b;
        cfloat* d = pd + n0 * n1 * b;
        for (index_t j = bj * kTile; j < std::min(n1, (bj + 1) * kTile); ++j)
          for (index_t i = bi * kTile; i < std::min(n0, (bi + 1) * kTile); ++i) d[j + n1 * i] = s[i + n0 * j];
      }
}

}  // namespace cpu

std::shared_ptr<Backend> makeCpuBackend() { return std::make_shared<cpu::CpuBackend>(); }

}  // namespace larmor
