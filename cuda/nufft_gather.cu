// The output-parallel gather of the adjoint NUFFT in 2D (TRON's scheme: Smith et al., MRM 81:2064, 2019): one
// thread per oversampled grid point adds the samples whose kernel footprint holds it and writes its own value, so
// there are no atomics and no write conflicts, and the sums come in a fixed order. One of the adjoint spreaders of
// nufft.cu (the other: Gregerson's sectors, nufft_sector.cu, which also does 3D); GPU only (the CPU twin of the
// whole NUFFT is engine/src/cpu/nufft.cpp).
//
// What a tile of 8 x 4 points visits is listed once per plan (the plan is executed many times), flat, tile by
// tile (GatherLists): for radial trajectories by TRON's search over the spokes (nufft_tron.cu), for any other 2D
// trajectory from the samples' footprints here (count the tiles each footprint reaches under each periodic image,
// scan, emit (tile, sample) pairs, a stable radix sort by tile: a tile's samples keep the trajectory's order).
//
// Departures from the paper's thread-per-point loop:
//  - A warp's 32 points (one tile) take the tile's samples 32 at a time: the lanes load them (neighbouring lanes,
//    neighbouring list slots) with their 2W kernel weights into the warp's shared memory, then every lane reads
//    each staged sample by broadcast and keeps those whose footprint holds its point (the exact test on the
//    stored footprint). No lane waits on its own loads and none idles on a shorter readout range: golden radial
//    512 x 512 -> 256², 8 coils, H200: 0.39 ms (the thread-per-point loop) -> 0.165 ms.
//  - Near the k-space centre every spoke passes every point (thousands of samples per point for 512 spokes), so a
//    tile's rounds are split over the 8 warps of its block, each taking every 8th; the 8 partial sums are added in
//    a fixed order through shared memory (deterministic). Tiles are launched heaviest first.
// Periodicity: a sample whose footprint wraps is listed under the tile image it reaches (bits above its index);
// the staged corner is its unwrapped first footprint index shifted into that image, so the exact test
// (0 <= point - corner < W) holds for exactly the points the footprint covers. The exact test and the weights use
// the stored footprint, the same numbers as the sector spreader and the interpolation, so every spreader and the
// CPU compute the same sum.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <mutex>
#include <numeric>

#include "check.hpp"
#include "nufft_internal.cuh"

namespace larmor::cuda::nc {

namespace {

constexpr int kGatherThreads = 256;
constexpr int kImageShift = GatherLists::kImageShift;
static_assert(GatherSpreader::kTileX * GatherSpreader::kTileY == 32, "a tile is one warp of points");
static_assert(GatherSpreader::kSlices * 32 == kGatherThreads, "one warp per slice");

struct GatherArgs {
  GridGeometry g;
  int tilesX;
  const std::uint32_t* samples;  ///< GatherLists::samples
  const long long* start;        ///< tiles + 1
};

/// Per warp, in dynamic shared memory: one round's 32 samples, staged by the lanes that loaded them. `corner` is
/// the sample's first footprint point in the coordinates of the periodic image it was listed under (the
/// image shift moved from the point to the sample, so one test serves every point); `values` the CB coils' values
/// in pairs (one 16-byte broadcast read per two coils); `weights` the W kernel weights along x, then the W along y.
template <int CB>
struct GatherStage {
  static constexpr int kPairs = (CB + 1) / 2;
  __host__ __device__ static std::size_t bytes(int width) { return 32 * (sizeof(int2) + kPairs * sizeof(float4) + 2 * width * sizeof(float)); }
};

/// One block per tile of 8 x 4 points (heaviest tiles first) and group of CB coils; lane = point, warp `slice`
/// takes the tile's rounds of 32 listed samples slice, slice + 8, ... (file comment). A tile's list holds every
/// sample whose footprint reaches it (TRON's: its spokes' readout ranges within reach, a superset), so the exact
/// test decides alone; each warp adds its terms in list order and the 8 partial sums are added in a fixed order
/// (the same bits every run).
/// Long because: staging, footprint test, accumulation and the warps' fixed-order sum share one stage and barriers.
template <int CB>
__global__ void __launch_bounds__(kGatherThreads, 3) gatherKernel(GatherArgs a, KernelParams k, SpreadInput in,
                                                                    const int* order) {
  using Stage = GatherStage<CB>;
  constexpr int P = Stage::kPairs;
  extern __shared__ __align__(16) unsigned char gatherShared[];
  __shared__ float2 partial[GatherSpreader::kSlices][CB][32];
  const int lane = threadIdx.x & 31, slice = threadIdx.x >> 5;
  const int tile = __ldg(order + blockIdx.x);
  const int tx = tile % a.tilesX, ty = tile / a.tilesX;
  const int mx = tx * GatherSpreader::kTileX + (lane % GatherSpreader::kTileX);
  const int my = ty * GatherSpreader::kTileY + (lane / GatherSpreader::kTileX);
  const bool active = mx < a.g.g[0] && my < a.g.g[1];
  const int coil0 = blockIdx.y * CB;
  const int nc = min(CB, in.coils - coil0);
  const int w = a.g.width, g0 = a.g.g[0], g1 = a.g.g[1];
  const float2* samples = in.samples + static_cast<i64>(coil0) * in.m;

  // This warp's stage.
  unsigned char* mine = gatherShared + static_cast<std::size_t>(slice) * Stage::bytes(w);
  int2* corner = reinterpret_cast<int2*>(mine);
  float4* values = reinterpret_cast<float4*>(mine + 32 * sizeof(int2));
  float* weights = reinterpret_cast<float*>(mine + 32 * (sizeof(int2) + P * sizeof(float4)));

  float2 acc[CB];
#pragma unroll
  for (int c = 0; c < CB; ++c) acc[c] = make_float2(0.f, 0.f);

  // The tile's samples, 32 a round: warp `slice` takes rounds slice, slice + 8, ...
  const i64 begin = __ldg(a.start + tile), end = __ldg(a.start + tile + 1);
  for (i64 r = begin + slice * 32; r < end; r += GatherSpreader::kSlices * 32) {
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
    const int px = tx * GatherSpreader::kTileX + (pt % GatherSpreader::kTileX);
    const int py = ty * GatherSpreader::kTileY + (pt / GatherSpreader::kTileX);
    if (px >= g0 || py >= g1) continue;
    float2 s = partial[0][c][pt];
#pragma unroll
    for (int sl = 1; sl < GatherSpreader::kSlices; ++sl) {
      s.x += partial[sl][c][pt].x;
      s.y += partial[sl][c][pt].y;
    }
    in.grid[static_cast<i64>(coil0 + c) * a.g.gridVoxels + static_cast<i64>(py) * g0 + px] = s;
  }
}

template <int CB>
void launchGather(const GatherArgs& a, const KernelParams& k, const SpreadInput& in, const int* order, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(a.tilesX * ((a.g.g[1] + GatherSpreader::kTileY - 1) / GatherSpreader::kTileY)),
                  static_cast<unsigned>((in.coils + CB - 1) / CB));
  const std::size_t shared = GatherSpreader::kSlices * GatherStage<CB>::bytes(a.g.width);
  // Wide kernels with 8 coils need more than the 48 KB a block gets unasked, the partial sums' static 8 KB per
  // 4 coils included (W 12: 43 + 16 KB; W 16: 50 + 16 KB); the attribute is per device, cheap and idempotent.
  constexpr std::size_t staticBytes = sizeof(float2) * GatherSpreader::kSlices * CB * 32;
  if (shared + staticBytes > 48 * 1024)
    LARMOR_CUDA_CHECK(cudaFuncSetAttribute(gatherKernel<CB>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
  gatherKernel<CB><<<grid, kGatherThreads, shared, s>>>(a, k, in, order);
  LARMOR_CUDA_CHECK_LAUNCH();
}

// --- lists from the samples' footprints (any 2D trajectory) -------------------------------------------------

struct FootprintArgs {
  GridGeometry g;
  int tilesX;
  const float4* codes;
  i64 m;
};

/// The tiles along one dimension that footprint points [b, b + W) reach, per image: image 0 the points >= 0 as they
/// are, image 1 the points < 0 shifted by +G (W <= G/2 keeps every point below G); an empty range is (1, 0).
__device__ __forceinline__ void tileRanges(int b, int w, int grid, int tile, int2 range[2]) {
  const int last = b + w - 1;
  range[0] = make_int2(1, 0);
  range[1] = make_int2(1, 0);
  if (last >= 0) range[0] = make_int2(max(b, 0) / tile, min(last, grid - 1) / tile);
  if (b < 0) range[1] = make_int2((b + grid) / tile, (min(last, -1) + grid) / tile);
}

/// The (tile, image) listings of sample j; `emit` gets (tile, image) for each, images in the order 0..3.
template <class Emit>
__device__ __forceinline__ void listingsOf(const FootprintArgs& a, i64 j, Emit emit) {
  const std::uint32_t packed = __float_as_uint(__ldg(a.codes + j).w);
  const int bx = storedBase2(packed, 0) - a.g.g[0], by = storedBase2(packed, 1) - a.g.g[1];
  int2 rx[2], ry[2];
  tileRanges(bx, a.g.width, a.g.g[0], GatherSpreader::kTileX, rx);
  tileRanges(by, a.g.width, a.g.g[1], GatherSpreader::kTileY, ry);
  for (int image = 0; image < 4; ++image) {
    const int2 x = rx[image & 1], y = ry[image >> 1];
    for (int ty = y.x; ty <= y.y; ++ty)
      for (int tx = x.x; tx <= x.y; ++tx) emit(tx + a.tilesX * ty, image);
  }
}

__global__ void countListingsKernel(FootprintArgs a, i64* counts) {
  for (i64 j = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; j < a.m; j += static_cast<i64>(gridDim.x) * blockDim.x) {
    i64 n = 0;
    listingsOf(a, j, [&](int, int) { ++n; });
    counts[j] = n;
  }
}

/// (tile, sample | image << 30) pairs at the sample's offset; `inclusive` is the inclusive scan of the counts.
__global__ void emitListingsKernel(FootprintArgs a, const i64* inclusive, int* keys, std::uint32_t* values) {
  for (i64 j = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; j < a.m; j += static_cast<i64>(gridDim.x) * blockDim.x) {
    i64 at = j ? inclusive[j - 1] : 0;
    listingsOf(a, j, [&](int tile, int image) {
      keys[at] = tile;
      values[at] = static_cast<std::uint32_t>(j) | (static_cast<std::uint32_t>(image) << kImageShift);
      ++at;
    });
  }
}

/// Home tile (that of the wrapped first footprint point) of each sample, and the identity permutation.
__global__ void homeTileKernel(FootprintArgs a, int* keys, int* values) {
  for (i64 j = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; j < a.m; j += static_cast<i64>(gridDim.x) * blockDim.x) {
    const std::uint32_t packed = __float_as_uint(__ldg(a.codes + j).w);
    const int bx = wrapIndex(storedBase2(packed, 0) - a.g.g[0], a.g.g[0]);
    const int by = wrapIndex(storedBase2(packed, 1) - a.g.g[1], a.g.g[1]);
    keys[j] = bx / GatherSpreader::kTileX + a.tilesX * (by / GatherSpreader::kTileY);
    values[j] = static_cast<int>(j);
  }
}

}  // namespace

std::string gatherUnsuitable(const GridGeometry& g, i64 m) {
  if (g.dims != 2) return "the gather spreader is 2D only (this plan is " + std::to_string(g.dims) + "D)";
  for (int d = 0; d < 2; ++d)
    if (2 * g.width > g.g[d])
      return "the gather spreader needs the kernel width W <= G/2 (W = " + std::to_string(g.width) +
             ", G = " + std::to_string(g.g[d]) + ")";
  if (m > (i64{1} << kImageShift)) return "the gather spreader lists at most 2^30 samples";
  // Each footprint reaches at most (W/8 + 2) x (W/4 + 2) tiles; the pairs are sorted with 32-bit counts.
  const double perSample = (g.width / GatherSpreader::kTileX + 2.0) * (g.width / GatherSpreader::kTileY + 2.0);
  if (static_cast<double>(m) * perSample >= 2147483647.0) return "the gather spreader's tile lists would exceed 2^31";
  return {};
}

GatherSpreader::GatherSpreader(CudaBackend& be, const GridGeometry& g, const NufftGeometry& geometry, double margin)
    : g_(g) {
  tilesX_ = (g.g[0] + kTileX - 1) / kTileX;
  tilesY_ = (g.g[1] + kTileY - 1) / kTileY;
  tronLists(be, g, geometry, margin, lists_);
  orderTiles(be);
}

GatherSpreader::GatherSpreader(CudaBackend& be, const GridGeometry& g, const DeviceVector<float4>& codes, i64 m) : g_(g) {
  const std::string why = gatherUnsuitable(g, m);
  require(why.empty(), "NUFFT: " + why);
  tilesX_ = (g.g[0] + kTileX - 1) / kTileX;
  tilesY_ = (g.g[1] + kTileY - 1) / kTileY;
  const int tiles = tilesX_ * tilesY_;
  FootprintArgs a{g, tilesX_, codes.data(), m};
  cudaStream_t s = be.stream();
  const unsigned blocks = listBlocks(m, 256);
  const int keyBits = keyBitsFor(tiles);
  DeviceVector<i64> inclusive(be, static_cast<std::size_t>(m));
  DeviceVector<char> temp;
  {
    DeviceVector<i64> counts(be, static_cast<std::size_t>(m));
    std::lock_guard lock(be.mutex());
    LARMOR_CUDA_CHECK(cudaSetDevice(be.device()));
    countListingsKernel<<<blocks, 256, 0, s>>>(a, counts.data());
    LARMOR_CUDA_CHECK_LAUNCH();
    std::size_t bytes = 0;
    LARMOR_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, counts.data(), inclusive.data(), m, s));
    temp.reserve(be, bytes);
    LARMOR_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.data(), bytes, counts.data(), inclusive.data(), m, s));
  }
  const i64 total = inclusive.element(be, static_cast<std::size_t>(m) - 1);  // waits for the scan
  require(total < (i64{1} << 31), "NUFFT on the GPU: too many tile listings (" + std::to_string(total) + ")");
  const int n = static_cast<int>(total);
  {
    DeviceVector<int> keys(be, static_cast<std::size_t>(n)), sortedKeys(be, static_cast<std::size_t>(n));
    DeviceVector<std::uint32_t> values(be, static_cast<std::size_t>(n));
    lists_.samples.resize(be, static_cast<std::size_t>(std::max(n, 1)));
    lists_.start.resize(be, static_cast<std::size_t>(tiles) + 1);
    std::lock_guard lock(be.mutex());
    LARMOR_CUDA_CHECK(cudaSetDevice(be.device()));
    emitListingsKernel<<<blocks, 256, 0, s>>>(a, inclusive.data(), keys.data(), values.data());
    LARMOR_CUDA_CHECK_LAUNCH();
    // Stable: a tile's samples keep the trajectory's order (and a sample's images theirs).
    std::size_t bytes = 0;
    LARMOR_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.data(), sortedKeys.data(), values.data(),
                                                      lists_.samples.data(), n, 0, keyBits, s));
    temp.reserve(be, bytes);
    LARMOR_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, keys.data(), sortedKeys.data(), values.data(),
                                                      lists_.samples.data(), n, 0, keyBits, s));
    launchKeyStarts(sortedKeys.data(), total, tiles, lists_.start.data(), s);
    // Locality order for the interpolation: samples sorted by home tile.
    DeviceVector<int> homeKeys(be, static_cast<std::size_t>(m)), identity(be, static_cast<std::size_t>(m)),
        sortedHome(be, static_cast<std::size_t>(m));
    locality_.resize(be, static_cast<std::size_t>(m));
    homeTileKernel<<<blocks, 256, 0, s>>>(a, homeKeys.data(), identity.data());
    LARMOR_CUDA_CHECK_LAUNCH();
    LARMOR_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, homeKeys.data(), sortedHome.data(), identity.data(),
                                                      locality_.data(), static_cast<int>(m), 0, keyBits, s));
    temp.reserve(be, bytes);
    LARMOR_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, homeKeys.data(), sortedHome.data(),
                                                      identity.data(), locality_.data(), static_cast<int>(m), 0, keyBits, s));
    LARMOR_CUDA_CHECK(cudaStreamSynchronize(s));  // the temporaries go out of scope next
  }
  orderTiles(be);
}

void GatherSpreader::orderTiles(CudaBackend& be) {
  // Heaviest tiles first (the k-space centre's: every spoke passes), so that they do not start last.
  const std::size_t tiles = static_cast<std::size_t>(tilesX_) * static_cast<std::size_t>(tilesY_);
  const std::vector<long long> start = lists_.start.download(be, tiles + 1);
  std::vector<int> byWork(tiles);
  std::iota(byWork.begin(), byWork.end(), 0);
  std::stable_sort(byWork.begin(), byWork.end(), [&](int x, int y) {
    const auto ux = static_cast<std::size_t>(x), uy = static_cast<std::size_t>(y);
    return start[ux + 1] - start[ux] > start[uy + 1] - start[uy];
  });
  tileOrder_.upload(be, byWork);
}

void GatherSpreader::spread(CudaBackend& be, const KernelParams& k, const SpreadInput& in) {
  GatherArgs a{};
  a.g = g_;
  a.tilesX = tilesX_;
  a.samples = lists_.samples.data();
  a.start = lists_.start.data();
  cudaStream_t s = be.stream();
  // Coils per block: the accumulators live in registers, so CB is a compile-time count.
  if (in.coils >= 8) launchGather<8>(a, k, in, tileOrder_.data(), s);
  else if (in.coils >= 3) launchGather<4>(a, k, in, tileOrder_.data(), s);
  else if (in.coils == 2) launchGather<2>(a, k, in, tileOrder_.data(), s);
  else launchGather<1>(a, k, in, tileOrder_.data(), s);
}

}  // namespace larmor::cuda::nc
