// TRON's output-parallel radial gridding (Smith et al., MRM 81:2064, 2019, Algorithm G): one thread per
// oversampled grid point; the samples within W/2 of it are found from the known radial geometry rather
// than searched for, and only that thread writes its point, so there are no atomics and no write
// conflicts. For each spoke the perpendicular distance decides whether it passes within reach, and the
// readout indices within reach follow from where the spoke crosses the point's kernel box (step G2). One of
// the two adjoint spreaders of nufft.cu; GPU only (the CPU twin of the whole NUFFT is
// engine/src/cpu/nufft.cpp).
//
// Three departures from the paper's scheme, all from the plan's geometry being fixed:
//  - Golden-angle spokes cannot be found from the angle by inversion (the paper's modulo argument), so a
//    search over spokes is needed. It is done once per plan (the plan is executed many times): for every
//    tile of 8 x 4 grid points, the spokes whose samples reach the tile, with their readout range, are
//    listed (count kernel, scan, fill kernel with a block scan, so the order is deterministic), and the
//    entries' samples written out flat, tile by tile (index and periodic image in 32 bits). The same list
//    serves linear angles, where it is what the direct formula would give.
//  - The paper's thread walks its own samples one by one. Here a warp's 32 points (one tile) take the tile's
//    samples 32 at a time: the lanes load them (neighbouring lanes, neighbouring samples) with their 2W kernel
//    weights into the warp's shared memory, then every lane reads each staged sample by broadcast and keeps
//    those whose footprint holds its point (the exact test on the stored footprint). No lane waits on its own
//    loads, none idles on a shorter readout range, and every lane loads a sample in every round (session 19:
//    0.39 -> 0.23 ms for 8 coils at 512^2 with one list entry a round, 0.165 ms with the samples flat).
//  - Near the k-space centre every spoke passes every point (thousands of samples per point for 512
//    spokes), so a tile's rounds are split over the 8 warps of its block, each taking every 8th; the 8 partial
//    sums are added in a fixed order through shared memory (deterministic, no atomics). Tiles are launched
//    heaviest first.
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
  const std::uint32_t* samples;  ///< per tile, the samples to visit: index | periodic image bits << 30
  const i64* sampleStart;        ///< tiles + 1
};

constexpr int kImageShift = 30;  ///< a staged sample's periodic image bits sit above its 30-bit index

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

/// Samples per list entry (its readout range), the last slot 0 so that the scan's last value is the total.
__global__ void entryLengthKernel(const int4* list, int entries, i64* lengths) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e < entries) lengths[e] = list[e].z - list[e].y + 1;
  else if (e == entries) lengths[e] = 0;
}

/// The entries' samples in list order: entry e's readout range from offset[e] on.
__global__ void fillSamplesKernel(const int4* list, int entries, const i64* offset, int readout, std::uint32_t* out) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= entries) return;
  const int4 entry = list[e];
  const std::uint32_t image = static_cast<std::uint32_t>(entry.w) << kImageShift;
  const std::uint32_t first = static_cast<std::uint32_t>(entry.x) * static_cast<std::uint32_t>(readout);
  std::uint32_t* to = out + offset[e];
  for (int i = entry.y; i <= entry.z; ++i) to[i - entry.y] = image | (first + static_cast<std::uint32_t>(i));
}

/// A tile's first sample: the offset of its first entry (tiles + 1 values).
__global__ void tileSampleStartKernel(const int* listStart, const i64* offset, int tiles, i64* sampleStart) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t <= tiles) sampleStart[t] = offset[listStart[t]];
}

/// Per warp, in dynamic shared memory: one round's 32 samples, staged by the lanes that loaded them. `corner` is
/// the sample's first footprint point in the coordinates of the periodic image its list entry found it in (the
/// image shift moved from the point to the sample, so one test serves every point); `values` the CB coils' values
/// in pairs (one 16-byte broadcast read per two coils); `weights` the W kernel weights along x, then the W along y.
template <int CB>
struct TronStage {
  static constexpr int kPairs = (CB + 1) / 2;
  __host__ __device__ static std::size_t bytes(int width) { return 32 * (sizeof(int2) + kPairs * sizeof(float4) + 2 * width * sizeof(float)); }
};

/// One block per tile of 8 x 4 points (heaviest tiles first) and group of CB coils; lane = point, warp `slice`
/// takes the tile's rounds of 32 listed samples slice, slice + 8, ... (file comment). The samples listed are the
/// entries' whole readout ranges, a superset of each point's own, so the exact test decides alone; each warp adds
/// its terms in list order and the 8 partial sums are added in a fixed order (the same bits every run).
template <int CB>
__global__ void __launch_bounds__(kTronThreads, 3) tronSpreadKernel(TronArgs a, KernelParams k, SpreadInput in,
                                                                    const int* order) {
  using Stage = TronStage<CB>;
  constexpr int P = Stage::kPairs;
  extern __shared__ __align__(16) unsigned char tronShared[];
  __shared__ float2 partial[TronSpreader::kSlices][CB][32];
  const int lane = threadIdx.x & 31, slice = threadIdx.x >> 5;
  const int tile = __ldg(order + blockIdx.x);
  const int tx = tile % a.tilesX, ty = tile / a.tilesX;
  const int mx = tx * TronSpreader::kTileX + (lane % TronSpreader::kTileX);
  const int my = ty * TronSpreader::kTileY + (lane / TronSpreader::kTileX);
  const bool active = mx < a.g.g[0] && my < a.g.g[1];
  const int coil0 = blockIdx.y * CB;
  const int nc = min(CB, in.coils - coil0);
  const int w = a.g.width, g0 = a.g.g[0], g1 = a.g.g[1];
  const float2* samples = in.samples + static_cast<i64>(coil0) * in.m;

  // This warp's stage.
  unsigned char* mine = tronShared + static_cast<std::size_t>(slice) * Stage::bytes(w);
  int2* corner = reinterpret_cast<int2*>(mine);
  float4* values = reinterpret_cast<float4*>(mine + 32 * sizeof(int2));
  float* weights = reinterpret_cast<float*>(mine + 32 * (sizeof(int2) + P * sizeof(float4)));

  float2 acc[CB];
#pragma unroll
  for (int c = 0; c < CB; ++c) acc[c] = make_float2(0.f, 0.f);

  // The tile's samples, 32 a round: warp `slice` takes rounds slice, slice + 8, ... Per point the samples come in
  // list order (entries in list order, readout ascending), whichever warp adds them.
  const i64 begin = __ldg(a.sampleStart + tile), end = __ldg(a.sampleStart + tile + 1);
  for (i64 r = begin + slice * 32; r < end; r += TronSpreader::kSlices * 32) {
    const int count = static_cast<int>(min(i64{32}, end - r));
    if (lane < count) {
      const std::uint32_t d = __ldg(a.samples + r + lane);
      const i64 j = d & ((1u << kImageShift) - 1u);
      const int image = static_cast<int>(d >> kImageShift);
      const float4 code = __ldg(in.codes + j);
      const std::uint32_t packed = __float_as_uint(code.w);
      // Point (mx, my) is footprint point (mx - corner.x, my - corner.y) of this sample (in the periodic image of
      // the grid the list found it in).
      corner[lane] = make_int2(storedBase2(packed, 0) - g0 + ((image & 1) ? g0 : 0),
                               storedBase2(packed, 1) - g1 + ((image & 2) ? g1 : 0));
#pragma unroll
      for (int q = 0; q < P; ++q) {
        const float2 lo = 2 * q < nc ? __ldg(samples + static_cast<i64>(2 * q) * in.m + j) : make_float2(0.f, 0.f);
        const float2 hi = 2 * q + 1 < nc ? __ldg(samples + static_cast<i64>(2 * q + 1) * in.m + j) : make_float2(0.f, 0.f);
        values[q * 32 + lane] = make_float4(lo.x, lo.y, hi.x, hi.y);
      }
      float* wt = weights + lane * 2 * w;
      for (int i = 0; i < w; ++i) {
        wt[i] = kernelWeight(code.x + static_cast<float>(i), k);
        wt[w + i] = kernelWeight(code.y + static_cast<float>(i), k);
      }
    }
    __syncwarp();
    for (int q0 = 0; q0 < count; ++q0) {
      const int2 c0 = corner[q0];
      const int dx = mx - c0.x, dy = my - c0.y;
      if (active && static_cast<unsigned>(dx) < static_cast<unsigned>(w) && static_cast<unsigned>(dy) < static_cast<unsigned>(w)) {
        const float* wt = weights + q0 * 2 * w;
        const float weight = wt[dx] * wt[w + dy];
#pragma unroll
        for (int q = 0; q < P; ++q) {
          const float4 v = values[q * 32 + q0];
          acc[2 * q].x += weight * v.x;
          acc[2 * q].y += weight * v.y;
          if (2 * q + 1 < CB) {
            acc[2 * q + 1].x += weight * v.z;
            acc[2 * q + 1].y += weight * v.w;
          }
        }
      }
    }
    __syncwarp();  // the stage is refilled next
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
void launchTron(const TronArgs& a, const KernelParams& k, const SpreadInput& in, const int* order, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(a.tilesX * ((a.g.g[1] + TronSpreader::kTileY - 1) / TronSpreader::kTileY)),
                  static_cast<unsigned>((in.coils + CB - 1) / CB));
  const std::size_t shared = TronSpreader::kSlices * TronStage<CB>::bytes(a.g.width);
  // Wide kernels with 8 coils need more than the 48 KB a block gets unasked, the partial sums' static 8 KB per
  // 4 coils included (W 12: 43 + 16 KB; W 16: 50 + 16 KB); the attribute is per device, cheap and idempotent.
  constexpr std::size_t staticBytes = sizeof(float2) * TronSpreader::kSlices * CB * 32;
  if (shared + staticBytes > 48 * 1024)
    LARMOR_CUDA_CHECK(cudaFuncSetAttribute(tronSpreadKernel<CB>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
  tronSpreadKernel<CB><<<grid, kTronThreads, shared, s>>>(a, k, in, order);
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
  if (geometry.samples() > (index_t{1} << kImageShift))
    return "TRON: more than 2^30 samples (its tile lists keep 30-bit sample indices)";
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
  DeviceVector<int> listStart(be, static_cast<std::size_t>(tiles) + 1);
  DeviceVector<char> temp;
  cudaStream_t s = be.stream();
  {
    std::lock_guard lock(be.mutex());
    LARMOR_CUDA_CHECK(cudaSetDevice(be.device()));
    LARMOR_CUDA_CHECK(cudaMemsetAsync(counts.data(), 0, (static_cast<std::size_t>(tiles) + 1) * sizeof(int), s));
    countListKernel<<<tiles, kTronThreads, 0, s>>>(a, counts.data());
    LARMOR_CUDA_CHECK_LAUNCH();
    std::size_t bytes = 0;
    LARMOR_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, counts.data(), listStart.data(), tiles + 1, s));
    temp.reserve(be, bytes);
    LARMOR_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.data(), bytes, counts.data(), listStart.data(), tiles + 1, s));
    int total = 0;
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(&total, listStart.data() + tiles, sizeof(int), cudaMemcpyDeviceToHost, s));
    LARMOR_CUDA_CHECK(cudaStreamSynchronize(s));
    listEntries_ = total;
    // Heaviest tiles first (the k-space centre's: every spoke passes), so that they do not start last.
    std::vector<int> perTile(static_cast<std::size_t>(tiles));
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(perTile.data(), counts.data(), perTile.size() * sizeof(int), cudaMemcpyDeviceToHost, s));
    LARMOR_CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<int> byWork(perTile.size());
    for (std::size_t t = 0; t < byWork.size(); ++t) byWork[t] = static_cast<int>(t);
    std::stable_sort(byWork.begin(), byWork.end(), [&](int x, int y) { return perTile[static_cast<std::size_t>(x)] > perTile[static_cast<std::size_t>(y)]; });
    order_.resize(be, byWork.size());
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(order_.data(), byWork.data(), byWork.size() * sizeof(int), cudaMemcpyHostToDevice, s));
    DeviceVector<int4> list(be, static_cast<std::size_t>(std::max(total, 1)));
    a.listStart = listStart.data();
    fillListKernel<<<tiles, kTronThreads, 0, s>>>(a, listStart.data(), list.data());
    LARMOR_CUDA_CHECK_LAUNCH();
    // The entries' samples, flat per tile (what the spreading kernel reads, 32 a round).
    DeviceVector<i64> lengths(be, static_cast<std::size_t>(total) + 1), offset(be, static_cast<std::size_t>(total) + 1);
    const unsigned perEntry = static_cast<unsigned>((total + 1 + kTronThreads - 1) / kTronThreads);
    entryLengthKernel<<<perEntry, kTronThreads, 0, s>>>(list.data(), total, lengths.data());
    LARMOR_CUDA_CHECK_LAUNCH();
    LARMOR_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, lengths.data(), offset.data(), total + 1, s));
    temp.reserve(be, bytes);
    LARMOR_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.data(), bytes, lengths.data(), offset.data(), total + 1, s));
    i64 samples = 0;
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(&samples, offset.data() + total, sizeof(i64), cudaMemcpyDeviceToHost, s));
    LARMOR_CUDA_CHECK(cudaStreamSynchronize(s));
    listSamples_ = samples;
    samples_.resize(be, static_cast<std::size_t>(std::max<i64>(samples, 1)));
    sampleStart_.resize(be, static_cast<std::size_t>(tiles) + 1);
    fillSamplesKernel<<<perEntry, kTronThreads, 0, s>>>(list.data(), total, offset.data(), rp_.readout, samples_.data());
    LARMOR_CUDA_CHECK_LAUNCH();
    tileSampleStartKernel<<<static_cast<unsigned>((tiles + 1 + kTronThreads - 1) / kTronThreads), kTronThreads, 0, s>>>(
        listStart.data(), offset.data(), tiles, sampleStart_.data());
    LARMOR_CUDA_CHECK_LAUNCH();
    LARMOR_CUDA_CHECK(cudaStreamSynchronize(s));  // the plan-time lists go out of scope next
  }
}

void TronSpreader::spread(CudaBackend& be, const KernelParams& k, const SpreadInput& in) {
  TronArgs a{};
  a.g = g_;
  a.rp = rp_;
  a.tilesX = tilesX_;
  a.spokes = spokes_.data();
  a.samples = samples_.data();
  a.sampleStart = sampleStart_.data();
  cudaStream_t s = be.stream();
  // Coils per block: the accumulators live in registers, so CB is a compile-time count.
  if (in.coils >= 8) launchTron<8>(a, k, in, order_.data(), s);
  else if (in.coils >= 3) launchTron<4>(a, k, in, order_.data(), s);
  else if (in.coils == 2) launchTron<2>(a, k, in, order_.data(), s);
  else launchTron<1>(a, k, in, order_.data(), s);
}

}  // namespace larmor::cuda::nc
