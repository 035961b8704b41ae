// TRON's output-parallel radial gridding (Smith et al., MRM 81:2064, 2019, Algorithm G): one thread per
// oversampled grid point; the samples within W/2 of it are found from the known radial geometry rather
// than searched for, and only that thread writes its point, so there are no atomics and no write
// conflicts. For each spoke the perpendicular distance decides whether it passes within reach, and the
// readout indices within reach follow from where the spoke crosses the point's kernel box (step G2). One of
// the two adjoint spreaders of nufft.cu; GPU only (the CPU twin of the whole NUFFT is
// engine/src/cpu/nufft.cpp).
//
// Two additions to the paper's scheme, both from the plan's geometry being fixed:
//  - Golden-angle spokes cannot be found from the angle by inversion (the paper's modulo argument), so a
//    search over spokes is needed. It is done once per plan (the plan is executed many times): for every
//    tile of 8 x 4 grid points, the spokes whose samples reach the tile, with their readout range, are
//    listed (count kernel, scan, fill kernel with a block scan, so the order is deterministic). At run time
//    a thread visits only its tile's spokes and narrows each one's readout range to its own point. The
//    same list serves linear angles, where it is what the direct formula would give.
//  - Near the k-space centre every spoke passes every point (thousands of samples per point for 512
//    spokes), so a point's work is split over the 8 warps of its block, each taking every 8th spoke of the
//    list; the 8 partial sums are added in a fixed order through shared memory (deterministic, no atomics).
// Periodicity: spokes reaching |k| = N/2 at sigma = 2 touch the grid's edge, and their footprints wrap.
// A tile is tested as itself and as its images shifted by -G along each axis; the samples' unwrapped first
// footprint index (stored per sample) makes the exact test pick exactly one image per (point, sample).
// The exact test and the weights use the stored footprint, the same numbers as the sector spreader and the
// interpolation, so both spreaders and the CPU compute the same sum; the geometry only narrows the search.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "check.hpp"
#include "nufft_internal.cuh"

namespace larmor::cuda::nc {

namespace {

constexpr int kTronThreads = 256;
static_assert(TronSpreader::kTileX * TronSpreader::kTileY == 32, "a tile is one warp of points");
static_assert(TronSpreader::kSlices * 32 == kTronThreads, "one warp per slice");

struct TronArgs {
  GridGeometry g;
  RadialParams rp;
  int tilesX;
  const SpokeDir* spokes;
  const int4* list;
  const int* listStart;
};

/// Extent of tile `t` in grid index space: x in [x0, x1], y in [y0, y1].
__device__ __forceinline__ void tileExtent(const TronArgs& a, int t, int* x0, int* x1, int* y0, int* y1) {
  const int tx = t % a.tilesX, ty = t / a.tilesX;
  *x0 = tx * TronSpreader::kTileX;
  *y0 = ty * TronSpreader::kTileY;
  *x1 = min(*x0 + TronSpreader::kTileX, a.g.g[0]) - 1;
  *y1 = min(*y0 + TronSpreader::kTileY, a.g.g[1]) - 1;
}

/// Readout range of spoke p reaching tile image `shift` (bit 0: x - G0, bit 1: y - G1).
__device__ __forceinline__ bool tileReach(const TronArgs& a, int p, int shift, int x0, int x1, int y0, int y1, int* i0,
                                          int* i1) {
  const float sx = (shift & 1) ? static_cast<float>(a.g.g[0]) : 0.f;
  const float sy = (shift & 2) ? static_cast<float>(a.g.g[1]) : 0.f;
  return readoutRange(a.spokes[p], a.rp, static_cast<float>(x0) - sx, static_cast<float>(x1) - sx,
                      static_cast<float>(y0) - sy, static_cast<float>(y1) - sy, i0, i1);
}

__global__ void __launch_bounds__(kTronThreads) countListKernel(TronArgs a, int* counts) {
  using Reduce = cub::BlockReduce<int, kTronThreads>;
  __shared__ typename Reduce::TempStorage temp;
  int x0, x1, y0, y1;
  tileExtent(a, blockIdx.x, &x0, &x1, &y0, &y1);
  int n = 0;
  for (int p = threadIdx.x; p < a.rp.spokes; p += blockDim.x)
    for (int shift = 0; shift < 4; ++shift) {
      int i0, i1;
      n += tileReach(a, p, shift, x0, x1, y0, y1, &i0, &i1) ? 1 : 0;
    }
  const int total = Reduce(temp).Sum(n);
  if (threadIdx.x == 0) counts[blockIdx.x] = total;
}

__global__ void __launch_bounds__(kTronThreads) fillListKernel(TronArgs a, const int* start, int4* list) {
  using Scan = cub::BlockScan<int, kTronThreads>;
  __shared__ typename Scan::TempStorage temp;
  int x0, x1, y0, y1;
  tileExtent(a, blockIdx.x, &x0, &x1, &y0, &y1);
  int at = start[blockIdx.x];
  // Every thread runs the same number of rounds (the block scan needs all of them).
  for (int base = 0; base < a.rp.spokes; base += blockDim.x) {
    const int p = base + threadIdx.x;
    int4 mine[4];
    int n = 0;
    if (p < a.rp.spokes)
      for (int shift = 0; shift < 4; ++shift) {
        int i0, i1;
        if (tileReach(a, p, shift, x0, x1, y0, y1, &i0, &i1)) mine[n++] = int4{p, i0, i1, shift};
      }
    int offset, aggregate;
    Scan(temp).ExclusiveSum(n, offset, aggregate);
    for (int q = 0; q < n; ++q) list[at + offset + q] = mine[q];
    at += aggregate;
    __syncthreads();  // the scan's storage is reused next round
  }
}

/// One block per tile of 8 x 4 points and group of CB coils; warp `slice` takes list entries slice,
/// slice + 8, ...; lane = point. Three blocks per multiprocessor (at most 85 registers; 8 coils take 80): the
/// loop waits on memory, and with 84 registers (two blocks) the 8-coil spreader ran 0.389 -> 0.437 ms (session 11).
template <int CB>
__global__ void __launch_bounds__(kTronThreads, 3) tronSpreadKernel(TronArgs a, KernelParams k, SpreadInput in) {
  __shared__ float2 partial[TronSpreader::kSlices][CB][32];
  const int lane = threadIdx.x & 31, slice = threadIdx.x >> 5;
  const int tile = blockIdx.x;
  const int tx = tile % a.tilesX, ty = tile / a.tilesX;
  const int mx = tx * TronSpreader::kTileX + (lane % TronSpreader::kTileX);
  const int my = ty * TronSpreader::kTileY + (lane / TronSpreader::kTileX);
  const bool active = mx < a.g.g[0] && my < a.g.g[1];
  const int coil0 = blockIdx.y * CB;
  const int nc = min(CB, in.coils - coil0);
  const int w = a.g.width, g0 = a.g.g[0], g1 = a.g.g[1];
  const float2* samples = in.samples + static_cast<i64>(coil0) * in.m;

  float2 acc[CB];
#pragma unroll
  for (int c = 0; c < CB; ++c) acc[c] = make_float2(0.f, 0.f);

  const int begin = __ldg(a.listStart + tile), end = __ldg(a.listStart + tile + 1);
  if (active) {
    for (int e = begin + slice; e < end; e += TronSpreader::kSlices) {
      const int4 entry = __ldg(a.list + e);
      // This point's coordinates in the image of the grid the entry refers to.
      const int vx = mx - ((entry.w & 1) ? g0 : 0), vy = my - ((entry.w & 2) ? g1 : 0);
      int i0, i1;
      if (!readoutRange(a.spokes[entry.x], a.rp, static_cast<float>(vx), static_cast<float>(vx),
                        static_cast<float>(vy), static_cast<float>(vy), &i0, &i1))
        continue;
      i0 = max(i0, entry.y);
      i1 = min(i1, entry.z);
      const i64 first = static_cast<i64>(entry.x) * a.rp.readout;
      for (int i = i0; i <= i1; ++i) {
        const i64 j = first + i;
        // The sample's values are loaded with its footprint code, before the test that decides whether they
        // are used: one memory round trip per sample instead of two (ncu: 44 % of the stall cycles were on
        // these loads, 14.6 cycles between issues).
        const float4 code = __ldg(in.codes + j);
        float2 d[CB];
#pragma unroll
        for (int c = 0; c < CB; ++c) d[c] = c < nc ? __ldg(samples + static_cast<i64>(c) * in.m + j) : make_float2(0.f, 0.f);
        const std::uint32_t packed = __float_as_uint(code.w);
        // Exact test on the stored footprint: the point is footprint point (dx, dy) of the sample.
        const int dx = vx - (storedBase2(packed, 0) - g0);
        const int dy = vy - (storedBase2(packed, 1) - g1);
        if (static_cast<unsigned>(dx) >= static_cast<unsigned>(w) || static_cast<unsigned>(dy) >= static_cast<unsigned>(w))
          continue;
        const float weight = kernelWeight(code.x + static_cast<float>(dx), k) * kernelWeight(code.y + static_cast<float>(dy), k);
#pragma unroll
        for (int c = 0; c < CB; ++c) {
          acc[c].x += weight * d[c].x;
          acc[c].y += weight * d[c].y;
        }
      }
    }
  }
#pragma unroll
  for (int c = 0; c < CB; ++c) partial[slice][c][lane] = acc[c];
  __syncthreads();
  for (int q = threadIdx.x; q < nc * 32; q += blockDim.x) {
    const int c = q / 32, pt = q % 32;
    const int px = tx * TronSpreader::kTileX + (pt % TronSpreader::kTileX);
    const int py = ty * TronSpreader::kTileY + (pt / TronSpreader::kTileX);
    if (px >= g0 || py >= g1) continue;
    float2 s = partial[0][c][pt];
#pragma unroll
    for (int sl = 1; sl < TronSpreader::kSlices; ++sl) {
      s.x += partial[sl][c][pt].x;
      s.y += partial[sl][c][pt].y;
    }
    in.grid[static_cast<i64>(coil0 + c) * a.g.gridVoxels + static_cast<i64>(py) * g0 + px] = s;
  }
}

template <int CB>
void launchTron(const TronArgs& a, const KernelParams& k, const SpreadInput& in, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(a.tilesX * ((a.g.g[1] + TronSpreader::kTileY - 1) / TronSpreader::kTileY)),
                  static_cast<unsigned>((in.coils + CB - 1) / CB));
  tronSpreadKernel<CB><<<grid, kTronThreads, 0, s>>>(a, k, in);
  LARMOR_CUDA_CHECK_LAUNCH();
}

}  // namespace

std::string tronUnsuitable(const GridGeometry& g, const NufftGeometry& geometry, double* margin) {
  *margin = 0;
  if (g.dims != 2) return "TRON grids 2D radial trajectories only (this plan is " + std::to_string(g.dims) + "D)";
  if (!geometry.radial) return "TRON needs a radial trajectory (the geometry has no radial description)";
  const RadialInfo& r = *geometry.radial;
  if (r.readout < 1 || r.spokes < 1 || r.readout * r.spokes != geometry.samples())
    return "TRON: the radial description (" + std::to_string(r.readout) + " x " + std::to_string(r.spokes) +
           ") does not match the " + std::to_string(geometry.samples()) + " samples";
  if (static_cast<index_t>(r.anglesRad.size()) != r.spokes) return "TRON: the radial description lacks spoke angles";
  if (!(std::isfinite(r.kStep) && r.kStep != 0.f && std::isfinite(r.kStart))) return "TRON: invalid readout spacing";
  if (r.readout > (index_t{1} << 24) || r.spokes > (index_t{1} << 24)) return "TRON: too many samples per spoke";
  for (int d = 0; d < 2; ++d)
    if (2 * g.width > g.g[d])
      return "TRON needs the kernel width W <= G/2 (W = " + std::to_string(g.width) + ", G = " + std::to_string(g.g[d]) + ")";
  // Every sample must sit on its spoke, in [readout, spokes] order, within a grid unit.
  const double sx = static_cast<double>(g.g[0]) / g.n[0], sy = static_cast<double>(g.g[1]) / g.n[1];
  const float* k = geometry.trajectory.data();
  double worst = 0;
#pragma omp parallel for reduction(max : worst) schedule(static) if (r.spokes * r.readout > (index_t{1} << 17))
  for (index_t p = 0; p < r.spokes; ++p) {
    const double cx = std::cos(r.anglesRad[static_cast<std::size_t>(p)]), cy = std::sin(r.anglesRad[static_cast<std::size_t>(p)]);
    for (index_t i = 0; i < r.readout; ++i) {
      const index_t j = i + r.readout * p;
      const double t = static_cast<double>(r.kStart) + static_cast<double>(i) * r.kStep;
      worst = std::max({worst, std::fabs(sx * (k[3 * j] - t * cx)), std::fabs(sy * (k[3 * j + 1] - t * cy))});
    }
  }
  *margin = worst;
  if (!(worst <= 1.0))
    return "TRON: the samples lie up to " + std::to_string(worst) +
           " grid points off the spokes their radial description gives";
  return {};
}

TronSpreader::TronSpreader(CudaBackend& be, const GridGeometry& g, const NufftGeometry& geometry, double margin)
    : g_(g) {
  require(geometry.radial.has_value(), "TRON: the geometry has no radial description");
  const RadialInfo& radial = *geometry.radial;
  rp_.readout = static_cast<int>(radial.readout);
  rp_.spokes = static_cast<int>(radial.spokes);
  rp_.kStart = radial.kStart;
  rp_.kStep = radial.kStep;
  rp_.invStep = 1.f / radial.kStep;
  // Half the kernel, the samples' distance from their ideal place, and a little for float rounding.
  rp_.reach = static_cast<float>(0.5 * g.width + margin + 0.05);
  std::vector<SpokeDir> dirs(static_cast<std::size_t>(radial.spokes));
  for (std::size_t p = 0; p < dirs.size(); ++p)
    dirs[p] = makeSpokeDir(radial.anglesRad[p], static_cast<double>(g.g[0]) / g.n[0], static_cast<double>(g.g[1]) / g.n[1]);
  spokes_.upload(be, dirs);
  tilesX_ = (g.g[0] + kTileX - 1) / kTileX;
  tilesY_ = (g.g[1] + kTileY - 1) / kTileY;
  const int tiles = tilesX_ * tilesY_;

  TronArgs a{};
  a.g = g;
  a.rp = rp_;
  a.tilesX = tilesX_;
  a.spokes = spokes_.data();
  DeviceVector<int> counts(be, static_cast<std::size_t>(tiles) + 1);
  listStart_.resize(be, static_cast<std::size_t>(tiles) + 1);
  DeviceVector<char> temp;
  cudaStream_t s = be.stream();
  {
    std::lock_guard lock(be.mutex());
    LARMOR_CUDA_CHECK(cudaSetDevice(be.device()));
    LARMOR_CUDA_CHECK(cudaMemsetAsync(counts.data(), 0, (static_cast<std::size_t>(tiles) + 1) * sizeof(int), s));
    countListKernel<<<tiles, kTronThreads, 0, s>>>(a, counts.data());
    LARMOR_CUDA_CHECK_LAUNCH();
    std::size_t bytes = 0;
    LARMOR_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, counts.data(), listStart_.data(), tiles + 1, s));
    temp.reserve(be, bytes);
    LARMOR_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.data(), bytes, counts.data(), listStart_.data(), tiles + 1, s));
    int total = 0;
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(&total, listStart_.data() + tiles, sizeof(int), cudaMemcpyDeviceToHost, s));
    LARMOR_CUDA_CHECK(cudaStreamSynchronize(s));
    listEntries_ = total;
    list_.resize(be, static_cast<std::size_t>(std::max(total, 1)));
    a.listStart = listStart_.data();
    fillListKernel<<<tiles, kTronThreads, 0, s>>>(a, listStart_.data(), list_.data());
    LARMOR_CUDA_CHECK_LAUNCH();
    LARMOR_CUDA_CHECK(cudaStreamSynchronize(s));  // `counts` and `temp` go out of scope next
  }
}

void TronSpreader::spread(CudaBackend& be, const KernelParams& k, const SpreadInput& in) {
  TronArgs a{};
  a.g = g_;
  a.rp = rp_;
  a.tilesX = tilesX_;
  a.spokes = spokes_.data();
  a.list = list_.data();
  a.listStart = listStart_.data();
  cudaStream_t s = be.stream();
  // Coils per block: the accumulators live in registers, so CB is a compile-time count.
  if (in.coils >= 8) launchTron<8>(a, k, in, s);
  else if (in.coils >= 3) launchTron<4>(a, k, in, s);
  else if (in.coils == 2) launchTron<2>(a, k, in, s);
  else launchTron<1>(a, k, in, s);
}

}  // namespace larmor::cuda::nc
