// EspiritOps on the GPU (larmor/backend/espirit_ops.hpp): ESPIRiT's pointwise dominant eigenvector,
// eigenvalue, phase and crop. Twin: engine/src/cpu/espirit.cpp. The steps and their order of operations are
// those of larmor/kernels/espirit_math.hpp (squarings of M, power steps, Rayleigh quotient, phase, crop).
// Up to 16 coils a group of 4, 8 or 16 lanes takes a voxel, M's columns in the lanes' registers
// (espiritGroupKernel); 17 to 32 coils one thread a voxel runs espirit_math.hpp's lines on per-thread arrays
// in local memory (espiritKernel). Reads of the packed matrices [voxels, C (C + 1) / 2] and writes of the maps
// [voxels, C] are coalesced across a warp. More than 32 coils: compress first (SVD coil compression). The
// Gram matrix's eigen-decomposition: CudaBackend::hermitianEigen and, on a device-resident Gram,
// CudaBackend::gramKernels (linalg.cu, cuSOLVER zheevd in double).
#include <mutex>

#include "check.hpp"
#include "cuda_backend.hpp"
#include "larmor/kernels/espirit_math.hpp"

namespace larmor::cuda {

namespace {

constexpr int kMaxCoils = 32;
constexpr int kThreads = 128;

struct EspiritArgs {
  long long voxels;
  int coils;
  float crop;
  const float2* cov;  ///< [voxels, C (C + 1) / 2]
  float2* maps;       ///< [voxels, C]
  float2* values;     ///< [voxels]
  float ref[2 * kMaxCoils];
};

template <int CMAX>
__global__ void __launch_bounds__(kThreads) espiritKernel(const EspiritArgs a) {
  const long long x = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (x >= a.voxels) return;
  float m[2 * CMAX * CMAX], t[2 * CMAX * CMAX], v[2 * CMAX], w[2 * CMAX];
  const float2* cov = a.cov;
  const long long n = a.voxels;
  const auto entry = [cov, n, x](int l, float& re, float& im) {
    const float2 e = cov[x + n * l];
    re = e.x;
    im = e.y;
  };
  const float lambda = kernels::espiritDominantEigen(a.coils, entry, m, t, v, w);
  kernels::espiritPhaseAndCrop(a.coils, v, a.ref, lambda, a.crop);
  for (int c = 0; c < a.coils; ++c) a.maps[x + n * c] = make_float2(v[2 * c], v[2 * c + 1]);
  a.values[x] = make_float2(lambda, 0.f);
}

template <int CMAX>
void launch(const EspiritArgs& a, cudaStream_t s) {
  const unsigned blocks = static_cast<unsigned>((a.voxels + kThreads - 1) / kThreads);
  espiritKernel<CMAX><<<blocks, kThreads, 0, s>>>(a);
  LARMOR_CUDA_CHECK_LAUNCH();
}

// Up to 16 coils: a group of G lanes (G = 4, 8 or 16 >= C) per voxel. Lane j holds column j of M, and of its
// powers, in registers; a product fetches column k from lane k by shuffles. The operations and their order
// are espiritDominantEigen's and espiritPhaseAndCrop's (larmor/kernels/espirit_math.hpp, which the CPU twin
// and the kernel above run): each entry of M M summed over k ascending, the trace over the diagonal in order,
// the first largest diagonal as the start column, the power steps' sums over k ascending, the Rayleigh
// quotient over i then j. What changes is where the numbers live: the one-thread kernel keeps two C x C
// matrices per thread in local memory (1.31 ms for 512 x 256 voxels x 8 coils on the H100); here every index
// into a register array is a compile-time constant (no stack frame, no spills).
// Long because: M and its powers live in register arrays with compile-time indices through every step.
template <int G>
__global__ void __launch_bounds__(kThreads) espiritGroupKernel(const EspiritArgs a) {
  static_assert(G == 4 || G == 8 || G == 16, "a voxel's lanes are a power of two within a warp");
  const long long x = (static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x) / G;
  if (x >= a.voxels) return;  // a voxel's lanes leave together: every shuffle below has all of its group
  const int lane = static_cast<int>(threadIdx.x % G), C = a.coils;
  const unsigned mask = ((1u << G) - 1u) << (threadIdx.x % 32 / G * G);
  const long long n = a.voxels;
  const float2* cov = a.cov;
  // Column `lane` of M: M_ij = packed (i, j) for i >= j, its conjugate (j, i) above the diagonal.
  float cr[G], ci[G];
#pragma unroll
  for (int i = 0; i < G; ++i) {
    cr[i] = ci[i] = 0.f;
    if (i < C && lane < C) {
      const bool lower = i >= lane;
      const float2 e = cov[x + n * (lower ? i * (i + 1) / 2 + lane : lane * (lane + 1) / 2 + i)];
      cr[i] = e.x;
      ci[i] = lower ? e.y : -e.y;
    }
  }
  const auto fromLane = [mask](float v, int k) { return __shfl_sync(mask, v, k, G); };
  // Own diagonal entry, selected without a run-time index into the registers.
  const auto diagonal = [lane](const float* re) {
    float d = 0.f;
#pragma unroll
    for (int i = 0; i < G; ++i)
      if (i == lane) d = re[i];
    return d;
  };
  // out = M x for a vector x that every lane holds (its own column of M, or the power iterate): column k of M
  // comes from lane k, sums over k ascending.
  const auto timesM = [&](const float* xr, const float* xi, float* outr, float* outi) {
#pragma unroll
    for (int i = 0; i < G; ++i) outr[i] = outi[i] = 0.f;
#pragma unroll
    for (int k = 0; k < G; ++k) {
      if (k >= C) break;
#pragma unroll
      for (int i = 0; i < G; ++i) {
        if (i >= C) break;
        const float ar = fromLane(cr[i], k), ai = fromLane(ci[i], k);  // M_ik from lane k
        outr[i] += ar * xr[k] - ai * xi[k];
        outi[i] += ar * xi[k] + ai * xr[k];
      }
    }
  };
  for (int s = 0; s < kernels::kEspiritSquarings; ++s) {
    float br[G], bi[G];
    timesM(cr, ci, br, bi);  // column `lane` of M M: M times our column
    const float own = diagonal(br);
    float trace = 0.f;
    for (int j = 0; j < C; ++j) trace += fromLane(own, j);
    const float inv = trace > 0.f ? 1.f / trace : 0.f;
#pragma unroll
    for (int i = 0; i < G; ++i) {
      cr[i] = br[i] * inv;
      ci[i] = bi[i] * inv;
    }
  }
  const float own = diagonal(cr);
  int start = 0;
  float best = fromLane(own, 0);
  for (int j = 1; j < C; ++j) {
    const float d = fromLane(own, j);
    if (d > best) best = d, start = j;
  }
  float vr[G], vi[G];
#pragma unroll
  for (int i = 0; i < G; ++i) {
    vr[i] = fromLane(cr[i], start);
    vi[i] = fromLane(ci[i], start);
  }
  for (int it = 0; it <= kernels::kEspiritIterations; ++it) {
    float n2 = 0.f;
#pragma unroll
    for (int i = 0; i < G; ++i)
      if (i < C) n2 += vr[i] * vr[i] + vi[i] * vi[i];
    const float inv = n2 > 0.f ? 1.f / sqrtf(n2) : 0.f;
#pragma unroll
    for (int i = 0; i < G; ++i) vr[i] *= inv, vi[i] *= inv;
    if (it == kernels::kEspiritIterations) break;
    float wr[G], wi[G];
    timesM(vr, vi, wr, wi);
#pragma unroll
    for (int i = 0; i < G; ++i) vr[i] = wr[i], vi[i] = wi[i];
  }
  // Rayleigh quotient with the original M: lane i forms (M v)_i from its row of the packed matrix.
  float term = 0.f;
  if (lane < C) {
    float re = 0.f, im = 0.f;
#pragma unroll
    for (int j = 0; j < G; ++j) {
      if (j >= C) break;
      const bool lower = j <= lane;
      const float2 e = cov[x + n * (lower ? lane * (lane + 1) / 2 + j : j * (j + 1) / 2 + lane)];
      const float mr = e.x, mi = lower ? e.y : -e.y;
      re += mr * vr[j] - mi * vi[j];
      im += mr * vi[j] + mi * vr[j];
    }
    term = diagonal(vr) * re + diagonal(vi) * im;
  }
  float lambda = 0.f;
  for (int i = 0; i < C; ++i) lambda += fromLane(term, i);
  // Phase against the reference, then the crop (espiritPhaseAndCrop).
  float pr = 0.f, pi = 0.f;
#pragma unroll
  for (int c = 0; c < G; ++c) {
    if (c >= C) break;
    pr += a.ref[2 * c] * vr[c] + a.ref[2 * c + 1] * vi[c];
    pi += a.ref[2 * c] * vi[c] - a.ref[2 * c + 1] * vr[c];
  }
  const float m = sqrtf(pr * pr + pi * pi);
  float qr = 1.f, qi = 0.f;
  if (m > 0.f) {
    qr = pr / m;
    qi = -pi / m;
  }
  const float keep = lambda >= a.crop ? 1.f : 0.f;
  if (lane < C) {
    const float ur = diagonal(vr), ui = diagonal(vi);
    a.maps[x + n * lane] = make_float2((ur * qr - ui * qi) * keep, (ur * qi + ui * qr) * keep);
  }
  if (lane == 0) a.values[x] = make_float2(lambda, 0.f);
}

template <int G>
void launchGroups(const EspiritArgs& a, cudaStream_t s) {
  const long long threads = a.voxels * G;
  const unsigned blocks = static_cast<unsigned>((threads + kThreads - 1) / kThreads);
  espiritGroupKernel<G><<<blocks, kThreads, 0, s>>>(a);
  LARMOR_CUDA_CHECK_LAUNCH();
}

// One thread per entry (x, l) of the small grid's packed matrices; the kernels' sum in double as on the CPU.
__global__ void smallGridKernel(float2* cov, const float* u, long long points, int C, long long kept, int packed,
                                double scale) {
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= points * packed) return;
  const long long x = t % points;
  const int l = static_cast<int>(t / points);
  int a = 0, b = 0;
  kernels::espiritPackedPair(l, a, b);
  double re = 0, im = 0;
  kernels::espiritSmallGridEntry(points, C, kept, x, a, b, scale, u, re, im);
  cov[t] = make_float2(static_cast<float>(re), static_cast<float>(im));
}

// One thread per entry of the calibration matrix, rows fastest (the writes coalesce).
__global__ void calibrationKernel(float2* a, const float2* cal, long long rows, long long total, long long b0,
                                  long long b1, long long b2, long long k0, long long k1, long long k2) {
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= total) return;
  const long long box[3] = {b0, b1, b2}, kernel[3] = {k0, k1, k2};
  a[t] = cal[kernels::espiritCalibrationSource(t % rows, t / rows, box, kernel)];
}

}  // namespace

void CudaEspiritOps::calibrationMatrix(Buffer& a, const Buffer& cal, const index_t box[4], const index_t kernel[3]) {
  const index_t rows = (box[0] - kernel[0] + 1) * (box[1] - kernel[1] + 1) * (box[2] - kernel[2] + 1);
  const index_t cols = kernel[0] * kernel[1] * kernel[2] * box[3];
  require(rows >= 1 && cols >= 1, "ESPIRiT: the kernel does not fit the calibration region");
  const float2* src = be_.elements(cal, box[0] * box[1] * box[2] * box[3], "ESPIRiT calibration");
  float2* out = be_.elements(a, rows * cols, "ESPIRiT calibration matrix");
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  const long long total = rows * cols;
  constexpr int threads = 256;
  calibrationKernel<<<static_cast<unsigned>((total + threads - 1) / threads), threads, 0, be_.stream_.handle>>>(
      out, src, rows, total, box[0], box[1], box[2], kernel[0], kernel[1], kernel[2]);
  LARMOR_CUDA_CHECK_LAUNCH();
}

void CudaEspiritOps::smallGridMatrices(Buffer& cov, const Buffer& u, index_t points, index_t channels, index_t kept,
                                       double scale) {
  require(channels >= 1 && kept >= 0 && points >= 0, "ESPIRiT: small-grid matrices of " + std::to_string(channels) +
                                                          " channels and " + std::to_string(kept) + " kernels");
  const index_t packed = channels * (channels + 1) / 2;
  const auto* pu = reinterpret_cast<const float*>(be_.elements(u, points * channels * kept, "ESPIRiT small grid"));
  float2* out = be_.elements(cov, points * packed, "ESPIRiT small grid");
  if (points == 0) return;
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  const long long total = points * packed;
  constexpr int threads = 128;
  smallGridKernel<<<static_cast<unsigned>((total + threads - 1) / threads), threads, 0, be_.stream_.handle>>>(
      out, pu, points, static_cast<int>(channels), kept, static_cast<int>(packed), scale);
  LARMOR_CUDA_CHECK_LAUNCH();
}

void CudaEspiritOps::hermitianEigen(std::vector<cdouble>& a, std::vector<double>& values, index_t n) {
  be_.hermitianEigen(a, values, n);
}

void CudaEspiritOps::gramKernels(const Buffer& gram, index_t n, std::vector<double>& values, Buffer& kernels) {
  const float2* g = be_.elements(gram, n * n, "ESPIRiT gram");
  float2* k = be_.elements(kernels, n * n, "ESPIRiT kernels");
  be_.gramKernels(g, n, values, k);
}

index_t CudaEspiritOps::gramKernelsBatched(const std::vector<const Buffer*>& grams, index_t n,
                                           std::vector<std::vector<double>>& values,
                                           const std::vector<Buffer*>& kernels) {
  require(grams.size() == kernels.size(), "ESPIRiT: as many kernel buffers as Grams");
  std::vector<const float2*> g;
  std::vector<float2*> k;
  for (std::size_t b = 0; b < grams.size(); ++b) {
    g.push_back(be_.elements(*grams[b], n * n, "ESPIRiT gram"));
    k.push_back(be_.elements(*kernels[b], n * n, "ESPIRiT kernels"));
  }
  return be_.gramKernelsBatched(g, n, values, k);
}

void CudaEspiritOps::dominantEigenvectors(Buffer& maps, Buffer& values, const Buffer& cov, index_t voxels,
                                          index_t channels, const std::vector<cfloat>& reference, float crop) {
  require(channels >= 1 && channels <= kMaxCoils,
          "ESPIRiT on the GPU: 1 to 32 coils, got " + std::to_string(channels) + " (compress the coils first)");
  require(static_cast<index_t>(reference.size()) == channels, "ESPIRiT: the phase reference needs one entry per channel");
  if (voxels == 0) return;
  const index_t packed = channels * (channels + 1) / 2;
  EspiritArgs a{};
  a.voxels = voxels;
  a.coils = static_cast<int>(channels);
  a.crop = crop;
  a.cov = be_.elements(cov, voxels * packed, "espirit");
  a.maps = be_.elements(maps, voxels * channels, "espirit");
  a.values = be_.elements(values, voxels, "espirit");
  for (index_t c = 0; c < channels; ++c) {
    a.ref[2 * c] = reference[static_cast<std::size_t>(c)].real();
    a.ref[2 * c + 1] = reference[static_cast<std::size_t>(c)].imag();
  }
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  cudaStream_t s = be_.stream_.handle;
  if (channels <= 4) launchGroups<4>(a, s);
  else if (channels <= 8) launchGroups<8>(a, s);
  else if (channels <= 16) launchGroups<16>(a, s);
  else launch<32>(a, s);
}

}  // namespace larmor::cuda
