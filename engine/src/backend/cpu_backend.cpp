// CpuBackend: FFTW3 (single precision, threaded) and OpenMP loops. The reference implementation of
// every Backend op; the CUDA backend is tested against it.
#include <fftw3.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "cpu_ops.hpp"
#include "larmor/backend/registry.hpp"

namespace larmor {
namespace {

class HostBuffer final : public Buffer {
 public:
  explicit HostBuffer(std::size_t bytes) : bytes_(bytes), data_(bytes ? fftwf_malloc(bytes) : nullptr) {
    if (bytes && !data_)
      throw Error("out of host memory: asked for " + std::to_string(bytes >> 20) + " MiB");
  }
  ~HostBuffer() override { fftwf_free(data_); }
  std::size_t bytes() const override { return bytes_; }
  void* ptr() override { return data_; }
  const void* ptr() const override { return data_; }

 private:
  std::size_t bytes_;
  void* data_;
};

cfloat* cptr(Buffer& b) { return static_cast<cfloat*>(b.ptr()); }
const cfloat* cptr(const Buffer& b) { return static_cast<const cfloat*>(b.ptr()); }

void checkCount(const Buffer& b, index_t n, const char* op) {
  if (n < 0 || static_cast<std::size_t>(n) * sizeof(cfloat) > b.bytes())
    throw Error(std::string("cpu backend: ") + op + " on " + std::to_string(n) +
                " elements exceeds a buffer of " + std::to_string(b.bytes() / sizeof(cfloat)));
}

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

class CpuBackend final : public Backend {
 public:
  CpuBackend() {
    static std::once_flag once;
    std::call_once(once, [] { fftwf_init_threads(); });
  }
  ~CpuBackend() override {
    std::lock_guard lock(planMutex_);
    for (auto& [key, plan] : plans_) fftwf_destroy_plan(plan);
  }

  DeviceInfo info() const override {
    DeviceInfo d;
    d.id = "cpu";
    d.gpu = false;
    d.multiprocessors = omp_get_max_threads();
    d.name = "CPU (" + std::to_string(d.multiprocessors) + " threads)";
    d.library = std::string("FFTW ") + fftwf_version;
    return d;
  }

  std::unique_ptr<Buffer> allocate(std::size_t bytes) override { return std::make_unique<HostBuffer>(bytes); }
  void upload(Buffer& dst, const void* src, std::size_t bytes, std::size_t off) override {
    require(off + bytes <= dst.bytes(), "cpu backend: upload past the end of a buffer");
    std::memcpy(static_cast<char*>(dst.ptr()) + off, src, bytes);
  }
  void download(void* dst, const Buffer& src, std::size_t bytes, std::size_t off) override {
    require(off + bytes <= src.bytes(), "cpu backend: download past the end of a buffer");
    std::memcpy(dst, static_cast<const char*>(src.ptr()) + off, bytes);
  }
  void copy(Buffer& dst, const Buffer& src, std::size_t bytes) override {
    require(bytes <= dst.bytes() && bytes <= src.bytes(), "cpu backend: copy past the end of a buffer");
    std::memcpy(dst.ptr(), src.ptr(), bytes);
  }
  void synchronize() override {}

  void fill(Buffer& x, cfloat v, index_t n) override {
    checkCount(x, n, "fill");
    cfloat* p = cptr(x);
#pragma omp parallel for simd schedule(static)
    for (index_t i = 0; i < n; ++i) p[i] = v;
  }
  void scale(Buffer& x, cfloat a, index_t n) override {
    checkCount(x, n, "scale");
    cfloat* p = cptr(x);
#pragma omp parallel for schedule(static)
    for (index_t i = 0; i < n; ++i) p[i] *= a;
  }
  void axpby(Buffer& y, cfloat a, const Buffer& x, cfloat b, index_t n) override {
    checkCount(y, n, "axpby");
    checkCount(x, n, "axpby");
    cfloat* py = cptr(y);
    const cfloat* px = cptr(x);
#pragma omp parallel for schedule(static)
    for (index_t i = 0; i < n; ++i) py[i] = a * px[i] + b * py[i];
  }
  void multiply(Buffer& out, const Buffer& a, index_t na, const Buffer& b, index_t nb, bool conjA) override {
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
  cdouble dot(const Buffer& a, const Buffer& b, index_t n) override {
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
  double norm2(const Buffer& x, index_t n) override {
    checkCount(x, n, "norm2");
    const cfloat* p = cptr(x);
    double s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
    for (index_t i = 0; i < n; ++i) s += double(p[i].real()) * p[i].real() + double(p[i].imag()) * p[i].imag();
    return std::sqrt(s);
  }

  void fft(Buffer& data, const Shape& shape, int rank, FftDirection dir) override {
    require(rank >= 1 && rank <= 3 && static_cast<std::size_t>(rank) <= std::max<std::size_t>(shape.rank(), 1),
            "cpu backend: fft rank must be 1..3 and within the array's rank, got " + std::to_string(rank));
    const index_t total = shape.size();
    checkCount(data, total, "fft");
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
    cfloat* tmp = cptr(tmpBuf);
    circularShift(tmp, cptr(data), shape, rank, pre);
    fftwf_plan plan = planFor(shape, rank, batch, dir, tmp);
    fftwf_execute_dft(plan, reinterpret_cast<fftwf_complex*>(tmp), reinterpret_cast<fftwf_complex*>(tmp));
    circularShift(cptr(data), tmp, shape, rank, post);
    scale(data, cfloat(static_cast<float>(1.0 / std::sqrt(static_cast<double>(plane)))), total);
  }

  void resizeCentred(Buffer& dst, const Shape& ds, const Buffer& src, const Shape& ss) override {
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

  void sumOfSquares(Buffer& out, const Buffer& in, index_t voxels, index_t coils, index_t batch) override {
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

  void adaptiveCombine(Buffer& out, const Buffer& in, const index_t dims[3], index_t coils, index_t batch,
                       int window) override {
    cpu::adaptiveCombine(out, in, dims, coils, batch, window);
  }
  void finiteDifference(Buffer& out, const Buffer& in, const index_t dims[3], index_t batch, int axis,
                        bool adjoint) override {
    cpu::finiteDifference(out, in, dims, batch, axis, adjoint);
  }
  NeighbourDifferences neighbourDifferences(const Buffer& image, const index_t dims[3], std::uint64_t k) override {
    return cpu::neighbourDifferences(image, dims, k);
  }
  void edgeWeights(Buffer& out, const Buffer& image, const index_t dims[3], int axis, double delta) override {
    cpu::edgeWeights(out, image, dims, axis, delta);
  }
  void addDifferenceDiagonal(Buffer& out, const Buffer* w, const index_t dims[3], int axis) override {
    cpu::addDifferenceDiagonal(out, w, dims, axis);
  }
  void reciprocalDiagonal(Buffer& out, const Buffer& a, double alpha, const Buffer* b, double beta,
                          index_t n) override {
    cpu::reciprocalDiagonal(out, a, alpha, b, beta, n);
  }
  std::unique_ptr<NufftPlan> makeNufftPlan(const NufftGeometry& g, const NufftOptions& o) override {
    return cpu::makeNufftPlan(*this, g, o);
  }
  std::unique_ptr<NufftPlan> makeDftPlan(const NufftGeometry& g, const DftOptions& o) override {
    return cpu::makeDftPlan(*this, g, o);
  }
  void gemmBatched(MatOp opA, MatOp opB, index_t m, index_t n, index_t k, cfloat alpha, const Buffer& A,
                   const MatrixBatch& a, const Buffer& B, const MatrixBatch& b, cfloat beta, Buffer& C,
                   const MatrixBatch& c, index_t batch) override {
    cpu::gemmBatched(opA, opB, m, n, k, alpha, A, a, B, b, beta, C, c, batch);
  }
  void choleskySolveBatched(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b, index_t batch) override {
    cpu::choleskySolveBatched(A, a, B, b, batch);
  }
  void gather(Buffer& out, const Buffer& src, const Buffer& index, index_t n) override { cpu::gather(out, src, index, n); }
  void scatter(Buffer& out, const Buffer& src, const Buffer& index, index_t n) override {
    cpu::scatter(out, src, index, n);
  }

 private:
  fftwf_plan planFor(const Shape& shape, int rank, index_t batch, FftDirection dir, cfloat* buffer) {
    using Key = std::tuple<std::vector<index_t>, int, index_t, int>;
    std::vector<index_t> dims(shape.dims().begin(), shape.dims().begin() + rank);
    Key key{dims, rank, batch, dir == FftDirection::Forward ? 0 : 1};
    std::lock_guard lock(planMutex_);  // FFTW's planner is not thread-safe
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

  std::mutex planMutex_;
  std::map<std::tuple<std::vector<index_t>, int, index_t, int>, fftwf_plan> plans_;
};

}  // namespace

std::shared_ptr<Backend> makeCpuBackend() { return std::make_shared<CpuBackend>(); }

}  // namespace larmor
