// The CUDA NUFFT plan: Kaiser-Bessel gridding on a sigma-oversampled grid (Jackson et al., IEEE TMI
// 10:473, 1991; beta of Beatty et al., IEEE TMI 24:799, 2005), cuFFT, and TRON's analytic deapodization
// (kb::transform, Smith et al. 2019 eq. 2, shared with the CPU plan) fused with the crop / zero-pad.
//
//   adjoint: spread (2D: the gather, nufft_gather.cu, with TRON's radial lists, nufft_tron.cu, or the footprints';
//   3D: sectors, nufft_sector.cu) -> inverse cuFFT -> crop + deapodize
//   forward: zero-pad + deapodize -> forward cuFFT -> interpolate (sample-parallel)
//
// Twin: engine/src/cpu/nufft.cpp. The derivation and the conventions (grid size, footprint, kernel scale)
// are the CPU plan's, the shared ones in one header (larmor/kernels/kernel_math.hpp), so both compute the
// same sums. The grid is kept in FFT order
// (nufft_math.hpp): a plain, unnormalised cuFFT then is the CPU's centred transform times sqrt(G), with no
// fftshift passes, and the deapodization needs no sqrt(G). All work of a call runs on the backend's stream
// under its mutex; coils are transformed in chunks of up to 8 (batched cuFFT), within a 1 GiB grid budget.
// The interpolation is sample-parallel (each sample reads its footprint and writes its own outputs, for
// every coil of the chunk, reusing its weights), visiting the samples in sector order so that the threads
// of a warp read neighbouring grid points.
#include <cufft.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "check.hpp"
#include "cuda_backend.hpp"
#include "device_math.hpp"
#include "larmor/kernels/kernel_math.hpp"
#include "larmor/traj/trajectory.hpp"
#include "nufft_internal.cuh"

namespace larmor::cuda {

namespace {

using nc::GridGeometry;
using nc::i64;
using nc::KernelParams;

constexpr int kThreadsPerBlock = 256;
constexpr i64 kChunkCoils = 8;
constexpr double kGridBudgetBytes = 1024.0 * 1024 * 1024;

unsigned blocksFor(i64 n, int multiprocessors) {
  const i64 cap = static_cast<i64>(std::max(multiprocessors, 1)) * 8;
  return static_cast<unsigned>(std::clamp<i64>((n + kThreadsPerBlock - 1) / kThreadsPerBlock, 1, cap));
}

/// Per-dimension deapodization factors and the index splitting of the crop / pad kernels.
struct ResizeArgs {
  GridGeometry g;
  const float* factor[3];  ///< 1 / c(x) per image index, per dimension
  FastDivU32 n0, n1, n2;   ///< image extents
  FastDivU32 g0, g1, g2;   ///< grid extents
};

/// image[n] = grid[(n - c_N) mod G] * prod_d factor_d[n_d], for every voxel of `coils` images.
__global__ void cropDeapodizeKernel(ResizeArgs a, const float2* __restrict__ grid, float2* __restrict__ image,
                                    i64 total) {
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<i64>(gridDim.x) * blockDim.x) {
    int xyz[3];
    const i64 c = splitIndex3(static_cast<std::uint32_t>(i), a.n0, a.n1, a.n2, xyz);
    const int x = xyz[0], y = xyz[1], z = xyz[2];
    const int mx = x - a.g.n[0] / 2 + (x < a.g.n[0] / 2 ? a.g.g[0] : 0);
    const int my = y - a.g.n[1] / 2 + (y < a.g.n[1] / 2 ? a.g.g[1] : 0);
    const int mz = z - a.g.n[2] / 2 + (z < a.g.n[2] / 2 ? a.g.g[2] : 0);
    const float f = __ldg(a.factor[0] + x) * __ldg(a.factor[1] + y) * __ldg(a.factor[2] + z);
    const float2 v = grid[c * a.g.gridVoxels + (static_cast<i64>(mz) * a.g.g[1] + my) * a.g.g[0] + mx];
    image[i] = make_float2(v.x * f, v.y * f);
  }
}

/// grid[m] = image[n] * prod_d factor_d[n_d] where grid index m is image pixel n, 0 elsewhere.
__global__ void padDeapodizeKernel(ResizeArgs a, const float2* __restrict__ image, float2* __restrict__ grid,
                                   i64 total) {
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<i64>(gridDim.x) * blockDim.x) {
    int m[3];
    const i64 c = splitIndex3(static_cast<std::uint32_t>(i), a.g0, a.g1, a.g2, m);
    // Grid index m holds pixel m + c_N when m < N - c_N, pixel m - G + c_N when m >= G - c_N.
    int n[3];
    bool inside = true;
#pragma unroll
    for (int d = 0; d < 3; ++d) {
      const int cn = a.g.n[d] / 2;
      if (m[d] < a.g.n[d] - cn) n[d] = m[d] + cn;
      else if (m[d] >= a.g.g[d] - cn) n[d] = m[d] - a.g.g[d] + cn;
      else inside = false;
    }
    float2 v = make_float2(0.f, 0.f);
    if (inside) {
      const float f = __ldg(a.factor[0] + n[0]) * __ldg(a.factor[1] + n[1]) * __ldg(a.factor[2] + n[2]);
      const float2 p = image[c * a.g.imageVoxels + (static_cast<i64>(n[2]) * a.g.n[1] + n[1]) * a.g.n[0] + n[0]];
      v = make_float2(p.x * f, p.y * f);
    }
    grid[i] = v;
  }
}

struct InterpArgs {
  GridGeometry g;
  const float4* codes;
  const int* order;  ///< visiting order, or null for the samples' own order
  const float2* grid;
  float2* samples;   ///< [m, coils]
  i64 m;
  int coils;
};

/// out[j + M c] = sum over the footprint of weight * grid[c][point], one thread per sample, every coil.
template <int DIM, int MAXW>
__global__ void __launch_bounds__(kThreadsPerBlock) interpolateKernel(InterpArgs a, KernelParams k) {
  const int w = a.g.width;
  const int g0 = a.g.g[0], g1 = a.g.g[1], g2 = a.g.g[2];
  for (i64 t = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; t < a.m;
       t += static_cast<i64>(gridDim.x) * blockDim.x) {
    const i64 j = a.order ? __ldg(a.order + t) : t;
    const float4 code = __ldg(a.codes + j);
    const std::uint32_t packed = __float_as_uint(code.w);
    int bx, by, bz = 0;
    if constexpr (DIM == 2) {
      bx = nc::wrapIndex(nc::storedBase2(packed, 0) - g0, g0);
      by = nc::wrapIndex(nc::storedBase2(packed, 1) - g1, g1);
    } else {
      bx = nc::base3(packed, 0);
      by = nc::base3(packed, 1);
      bz = nc::base3(packed, 2);
    }
    float wx[MAXW], wy[MAXW];
    int ix[MAXW];
    i64 iy[MAXW];
#pragma unroll
    for (int i = 0; i < MAXW; ++i) {
      const bool in = i < w;
      int m = bx + i;
      m -= m >= g0 ? g0 : 0;
      ix[i] = m;
      wx[i] = in ? nc::kernelWeight(code.x + static_cast<float>(i), k) : 0.f;
      m = by + i;
      m -= m >= g1 ? g1 : 0;
      iy[i] = static_cast<i64>(m) * g0;
      wy[i] = in ? nc::kernelWeight(code.y + static_cast<float>(i), k) : 0.f;
    }
    for (int c = 0; c < a.coils; ++c) {
      const float2* plane = a.grid + static_cast<i64>(c) * a.g.gridVoxels;
      float re = 0.f, im = 0.f;
      const int nz = DIM == 3 ? w : 1;
      for (int iz = 0; iz < nz; ++iz) {
        float wz = 1.f;
        const float2* slab = plane;
        if constexpr (DIM == 3) {
          int m = bz + iz;
          m -= m >= g2 ? g2 : 0;
          wz = nc::kernelWeight(code.z + static_cast<float>(iz), k);
          slab = plane + static_cast<i64>(m) * g1 * g0;
        }
#pragma unroll
        for (int y = 0; y < MAXW; ++y) {
          if (y < w) {
            const float2* row = slab + iy[y];
            float rr = 0.f, ri = 0.f;
#pragma unroll
            for (int x = 0; x < MAXW; ++x) {
              if (x < w) {
                const float2 v = __ldg(row + ix[x]);
                rr += wx[x] * v.x;
                ri += wx[x] * v.y;
              }
            }
            const float s = wz * wy[y];
            re += s * rr;
            im += s * ri;
          }
        }
      }
      a.samples[j + static_cast<i64>(c) * a.m] = make_float2(re, im);
    }
  }
}

template <int DIM>
void launchInterpolate(const InterpArgs& a, const KernelParams& k, unsigned blocks, cudaStream_t s) {
  const int w = a.g.width;
  if (w <= 2) interpolateKernel<DIM, 2><<<blocks, kThreadsPerBlock, 0, s>>>(a, k);
  else if (w <= 4) interpolateKernel<DIM, 4><<<blocks, kThreadsPerBlock, 0, s>>>(a, k);
  else if (w <= 6) interpolateKernel<DIM, 6><<<blocks, kThreadsPerBlock, 0, s>>>(a, k);
  else if (w <= 8) interpolateKernel<DIM, 8><<<blocks, kThreadsPerBlock, 0, s>>>(a, k);
  else interpolateKernel<DIM, 16><<<blocks, kThreadsPerBlock, 0, s>>>(a, k);
  LARMOR_CUDA_CHECK_LAUNCH();
}

class CudaNufftPlan final : public NufftPlan {
 public:
  CudaNufftPlan(CudaBackend& be, const NufftGeometry& geo, const NufftOptions& o) : be_(be) {
    require(geo.dims == 2 || geo.dims == 3, "NUFFT: dims must be 2 or 3, got " + std::to_string(geo.dims));
    require(o.width >= 2 && o.width <= nc::kMaxWidth,
            "NUFFT: kernel width W must be 2 to 16, got " + std::to_string(o.width));
    require(std::isfinite(o.oversampling) && o.oversampling >= 1.0 && o.oversampling <= 4.0,
            "NUFFT: grid oversampling sigma must be 1 to 4, got " + std::to_string(o.oversampling));
    g_.dims = geo.dims;
    g_.width = o.width;
    index_t image[3];
    for (int d = 0; d < 3; ++d) {
      image[d] = d < g_.dims ? geo.image[d] : 1;
      require(image[d] >= 1 && image[d] <= 65536, "NUFFT: image size must be 1 to 65536 in each dimension");
    }
    require(g_.dims == 3 || geo.image[2] <= 1, "NUFFT: a 2D plan needs image[2] = 1");
    traj::validate(geo.trajectory, g_.dims, image, "NUFFT trajectory");
    m_ = geo.samples();
    require(m_ < (index_t{1} << 31), "NUFFT: more than 2^31 samples");
    g_.imageVoxels = g_.gridVoxels = 1;
    for (int d = 0; d < 3; ++d) {
      g_.n[d] = static_cast<int>(image[d]);
      g_.g[d] = static_cast<int>(nc::gridLength(image[d], o.oversampling, d < g_.dims));
      g_.imageVoxels *= g_.n[d];
      g_.gridVoxels *= g_.g[d];
      if (d < g_.dims)
        require(o.width <= g_.g[d], "NUFFT on the GPU: the kernel width W = " + std::to_string(o.width) +
                                        " exceeds the oversampled grid (" + std::to_string(g_.g[d]) +
                                        " points along dimension " + std::to_string(d) + ")");
    }
    if (g_.dims == 2)
      require(g_.g[0] <= nc::kMax2dGrid && g_.g[1] <= nc::kMax2dGrid,
              "NUFFT on the GPU: 2D grids up to 16384 points a side (sigma * N)");
    else
      require(g_.g[0] <= nc::kMax3dGrid01 && g_.g[1] <= nc::kMax3dGrid01 && g_.g[2] <= nc::kMax3dGrid2,
              "NUFFT on the GPU: 3D grids up to 2048 x 2048 x 1024 points (sigma * N)");

    const double beta = o.beta();
    const double peak = kb::besselI0(beta);
    kernel_.width = o.width;
    kernel_.beta = static_cast<float>(beta);
    kernel_.twoOverWidth = static_cast<float>(2.0 / o.width);
    kernel_.invPeak = static_cast<float>(1.0 / peak);
    kernel_.expBetaOverPeak = static_cast<float>(std::exp(beta) / peak);
    if (o.kernel == KernelEvaluation::Table) {
      // The CPU plan's table, value for value (the same function makes both).
      const std::vector<float> table = kb::kernelTable(o.width, beta, peak);
      table_.upload(be_, table);
      kernel_.table = table_.data();
      kernel_.tableLimit = static_cast<float>(table.size() - 2);
    }
    // Deapodization 1 / c(x_n), x_n = (n - c_N) / G, with the kernel's peak scale.
    for (int d = 0; d < 3; ++d) {
      std::vector<float> f(static_cast<std::size_t>(g_.n[d]), 1.f);
      if (d < g_.dims)
        for (int n = 0; n < g_.n[d]; ++n) {
          const double x = static_cast<double>(n - g_.n[d] / 2) / g_.g[d];
          f[static_cast<std::size_t>(n)] = static_cast<float>(peak / kb::transform(x, o.width, beta));
        }
      deapod_[d].upload(be_, f);
    }
    encodeSamples(geo.trajectory);

    // The adjoint's spreader. 2D: the output-parallel gather (nufft_gather.cu) with TRON's radial lists where the
    // trajectory is radial (or TRON is asked for), with lists from the footprints otherwise; 3D, or asked for: the
    // sector spreader, which works for any trajectory.
    if (o.spreader == Spreader::Tron) {
      double margin = 0;
      const std::string why = nc::tronUnsuitable(g_, geo, &margin);
      require(why.empty(), "NUFFT: " + why);
      gather_ = std::make_unique<nc::GatherSpreader>(be_, g_, geo, margin);
    } else if (o.spreader == Spreader::Auto && g_.dims == 2 && nc::gatherUnsuitable(g_, m_).empty()) {
      double margin = 0;
      if (nc::tronUnsuitable(g_, geo, &margin).empty())
        gather_ = std::make_unique<nc::GatherSpreader>(be_, g_, geo, margin);
      else
        gather_ = std::make_unique<nc::GatherSpreader>(be_, g_, codes_, m_);
    } else {
      sector_ = std::make_unique<nc::SectorSpreader>(be_, g_, codes_, m_);
    }
  }

  ~CudaNufftPlan() override {
    std::lock_guard lock(be_.mutex());
    (void)cudaSetDevice(be_.device());
    (void)cudaStreamSynchronize(be_.stream());  // queued work may still use the plans
    for (auto& p : ffts_) (void)cufftDestroy(p.second);
    (void)cudaGetLastError();
  }

  index_t samples() const override { return m_; }
  Shape imageShape() const override { return Shape{g_.n[0], g_.n[1], g_.n[2]}; }

  void adjoint(const Buffer& samples, Buffer& image, index_t batch) override {
    require(batch >= 1, "NUFFT adjoint: batch must be at least 1");
    const float2* in = elements(samples, m_ * batch, "sample");
    float2* out = elements(image, g_.imageVoxels * batch, "image");
    std::lock_guard lock(be_.mutex());
    LARMOR_CUDA_CHECK(cudaSetDevice(be_.device()));
    const index_t chunk = chunkSize(batch);
    float2* grid = gridFor(chunk);
    for (index_t c0 = 0; c0 < batch; c0 += chunk) {
      const int cb = static_cast<int>(std::min(chunk, batch - c0));
      spread(in + m_ * c0, cb, grid);
      LARMOR_CUFFT_CHECK(cufftExecC2C(fftFor(cb), reinterpret_cast<cufftComplex*>(grid),
                                      reinterpret_cast<cufftComplex*>(grid), CUFFT_INVERSE));
      const i64 total = g_.imageVoxels * cb;
      cropDeapodizeKernel<<<blocksFor(total, be_.info().multiprocessors), kThreadsPerBlock, 0, be_.stream()>>>(
          resizeArgs(), grid, out + g_.imageVoxels * c0, total);
      LARMOR_CUDA_CHECK_LAUNCH();
    }
  }

  void forward(const Buffer& image, Buffer& samples, index_t batch) override {
    require(batch >= 1, "NUFFT forward: batch must be at least 1");
    const float2* in = elements(image, g_.imageVoxels * batch, "image");
    float2* out = elements(samples, m_ * batch, "sample");
    std::lock_guard lock(be_.mutex());
    LARMOR_CUDA_CHECK(cudaSetDevice(be_.device()));
    const index_t chunk = chunkSize(batch);
    float2* grid = gridFor(chunk);
    for (index_t c0 = 0; c0 < batch; c0 += chunk) {
      const int cb = static_cast<int>(std::min(chunk, batch - c0));
      const i64 total = g_.gridVoxels * cb;
      padDeapodizeKernel<<<blocksFor(total, be_.info().multiprocessors), kThreadsPerBlock, 0, be_.stream()>>>(
          resizeArgs(), in + g_.imageVoxels * c0, grid, total);
      LARMOR_CUDA_CHECK_LAUNCH();
      LARMOR_CUFFT_CHECK(cufftExecC2C(fftFor(cb), reinterpret_cast<cufftComplex*>(grid),
                                      reinterpret_cast<cufftComplex*>(grid), CUFFT_FORWARD));
      interpolate(grid, out + m_ * c0, cb);
    }
  }

  void spreadInterpolate(const Buffer& weights, Buffer& out) override {
    const float2* in = elements(weights, m_, "weight");
    float2* o = elements(out, m_, "output");
    std::lock_guard lock(be_.mutex());
    LARMOR_CUDA_CHECK(cudaSetDevice(be_.device()));
    float2* grid = gridFor(1);
    spread(in, 1, grid);
    interpolate(grid, o, 1);
  }

 private:
  /// Device pointer of a buffer of this backend holding at least `n` complex values.
  const float2* elements(const Buffer& b, index_t n, const char* what) const {
    const auto* d = dynamic_cast<const DeviceBuffer*>(&b);
    require(d && d->allocator() == &be_.allocator(), std::string("NUFFT: the ") + what +
                                                          " buffer belongs to another backend (" + be_.info().id +
                                                          " expected)");
    if (n < 0 || static_cast<std::size_t>(n) * sizeof(float2) > b.bytes())
      throw Error(std::string("NUFFT: the ") + what + " buffer holds " +
                  std::to_string(b.bytes() / sizeof(float2)) + " complex values, " + std::to_string(n) + " are needed");
    return static_cast<const float2*>(b.ptr());
  }
  float2* elements(Buffer& b, index_t n, const char* what) {
    return const_cast<float2*>(elements(static_cast<const Buffer&>(b), n, what));
  }

  /// Per sample: kernel offsets and first footprint index (nufft_math.hpp), computed in double as the
  /// CPU plan does.
  void encodeSamples(const RArray& k) {
    std::vector<float4> codes(static_cast<std::size_t>(m_));
    // Each sample on its own; on every core from 128k samples (a 2D radial plan of 206k spent 7 ms here on one
    // thread; at 51k the threads' wake-up cost more than they saved).
#pragma omp parallel for schedule(static) if (m_ > (index_t{1} << 17))
    for (index_t j = 0; j < m_; ++j) {
      i64 b[3] = {0, 0, 0};
      float off[3] = {0.f, 0.f, 0.f};
      for (int d = 0; d < g_.dims; ++d) nc::footprint(k[3 * j + d], g_.n[d], g_.g[d], g_.width, &b[d], &off[d]);
      std::uint32_t packed;
      if (g_.dims == 2) {
        packed = nc::packBase2(static_cast<int>(b[0] + g_.g[0]), static_cast<int>(b[1] + g_.g[1]));
      } else {
        int w[3];
        for (int d = 0; d < 3; ++d) w[d] = nc::wrapIndex(static_cast<int>(b[d]), g_.g[d]);
        packed = nc::packBase3(w[0], w[1], w[2]);
      }
      codes[static_cast<std::size_t>(j)] = make_float4(off[0], off[1], off[2], nc::bitsAsFloat(packed));
    }
    codes_.upload(be_, codes);
  }

  index_t chunkSize(index_t batch) const {
    const double perCoil = static_cast<double>(g_.gridVoxels) * sizeof(float2);
    const auto fit = static_cast<index_t>(std::max(1.0, std::floor(kGridBudgetBytes / perCoil)));
    return std::max<index_t>(1, std::min({batch, kChunkCoils, fit}));
  }

  float2* gridFor(index_t coils) {
    grid_.reserve(be_, static_cast<std::size_t>(g_.gridVoxels * coils));
    return grid_.data();
  }

  /// cuFFT plan for `coils` grids back to back (cached; its work area is cuFFT's own).
  cufftHandle fftFor(int coils) {
    for (auto& p : ffts_)
      if (p.first == coils) return p.second;
    cufftHandle h = 0;
    LARMOR_CUFFT_CHECK(cufftCreate(&h));
    long long n[3];
    int rank = 0;
    for (int d = g_.dims - 1; d >= 0; --d) n[rank++] = g_.g[d];  // slowest first
    std::size_t work = 0;
    const cufftResult r = cufftMakePlanMany64(h, rank, n, nullptr, 1, g_.gridVoxels, nullptr, 1, g_.gridVoxels,
                                              CUFFT_C2C, coils, &work);
    if (r != CUFFT_SUCCESS) {
      (void)cufftDestroy(h);
      throw Error("NUFFT: cuFFT could not plan the oversampled grid (" + std::to_string(g_.g[0]) + " x " +
                  std::to_string(g_.g[1]) + " x " + std::to_string(g_.g[2]) + ", " + std::to_string(coils) +
                  " coils): " + cufftResultString(r));
    }
    LARMOR_CUFFT_CHECK(cufftSetStream(h, be_.stream()));
    ffts_.emplace_back(coils, h);
    return h;
  }

  ResizeArgs resizeArgs() const {
    ResizeArgs a;
    a.g = g_;
    for (int d = 0; d < 3; ++d) a.factor[d] = deapod_[d].data();
    a.n0 = FastDivU32(static_cast<std::uint32_t>(g_.n[0]));
    a.n1 = FastDivU32(static_cast<std::uint32_t>(g_.n[1]));
    a.n2 = FastDivU32(static_cast<std::uint32_t>(g_.n[2]));
    a.g0 = FastDivU32(static_cast<std::uint32_t>(g_.g[0]));
    a.g1 = FastDivU32(static_cast<std::uint32_t>(g_.g[1]));
    a.g2 = FastDivU32(static_cast<std::uint32_t>(g_.g[2]));
    return a;
  }

  void spread(const float2* samples, int coils, float2* grid) {
    nc::SpreadInput in;
    in.codes = codes_.data();
    in.samples = samples;
    in.m = m_;
    in.coils = coils;
    in.grid = grid;
    if (gather_) gather_->spread(be_, kernel_, in);
    else sector_->spread(be_, kernel_, in);
  }

  void interpolate(const float2* grid, float2* samples, int coils) {
    InterpArgs a;
    a.g = g_;
    a.codes = codes_.data();
    // Samples by home tile; TRON's plans keep the trajectory's order (radial samples are neighbours along their spokes).
    a.order = sector_ ? sector_->localityOrder() : gather_->localityOrder();
    a.grid = grid;
    a.samples = samples;
    a.m = m_;
    a.coils = coils;
    const unsigned blocks = blocksFor(m_, be_.info().multiprocessors * 2);
    if (g_.dims == 2) launchInterpolate<2>(a, kernel_, blocks, be_.stream());
    else launchInterpolate<3>(a, kernel_, blocks, be_.stream());
  }

  CudaBackend& be_;
  GridGeometry g_;
  index_t m_ = 0;
  KernelParams kernel_;
  nc::DeviceVector<float> table_;
  nc::DeviceVector<float> deapod_[3];
  nc::DeviceVector<float4> codes_;
  nc::DeviceVector<float2> grid_;
  std::unique_ptr<nc::SectorSpreader> sector_;
  std::unique_ptr<nc::GatherSpreader> gather_;
  std::vector<std::pair<int, cufftHandle>> ffts_;
};

}  // namespace

std::unique_ptr<NufftPlan> CudaBackend::makeNufftPlan(const NufftGeometry& geometry, const NufftOptions& options) {
  activate();
  return std::make_unique<CudaNufftPlan>(*this, geometry, options);
}

}  // namespace larmor::cuda
