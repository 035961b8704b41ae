// EspiritOps on the GPU (larmor/backend/espirit_ops.hpp): ESPIRiT's pointwise dominant eigenvector,
// eigenvalue, phase and crop. Twin: engine/src/cpu/espirit.cpp. One thread per voxel runs the lines of
// larmor/kernels/espirit_math.hpp (squarings of M, power steps, Rayleigh quotient, phase, crop) on
// per-thread arrays sized for CMAX coils (4, 8, 16 or 32; local memory); reads of the packed matrices
// [voxels, C (C + 1) / 2] and writes of the maps [voxels, C] are coalesced across the threads of a warp.
// Up to 32 coils (compress more first: SVD coil compression). The Gram matrix's eigen-decomposition:
// CudaBackend::hermitianEigen and, on a device-resident Gram, CudaBackend::gramKernels (linalg.cu, cuSOLVER
// zheevd in double).
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

}  // namespace

void CudaEspiritOps::hermitianEigen(std::vector<cdouble>& a, std::vector<double>& values, index_t n) {
  be_.hermitianEigen(a, values, n);
}

void CudaEspiritOps::gramKernels(const Buffer& gram, index_t n, std::vector<double>& values, Buffer& kernels) {
  const float2* g = be_.elements(gram, n * n, "ESPIRiT gram");
  float2* k = be_.elements(kernels, n * n, "ESPIRiT kernels");
  be_.gramKernels(g, n, values, k);
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
  if (channels <= 4) launch<4>(a, s);
  else if (channels <= 8) launch<8>(a, s);
  else if (channels <= 16) launch<16>(a, s);
  else launch<32>(a, s);
}

}  // namespace larmor::cuda
