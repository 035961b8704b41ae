// Gregerson's sector-based, output-driven gridding (Gregerson 2008, sections 4.1 and 4.3; Figure 4's
// coarse-grained output-driven assignment) for any trajectory, on the H100. One of the two adjoint spreaders
// of nufft.cu; GPU only (the CPU twin of the whole NUFFT, engine/src/cpu/nufft.cpp, bins by tile itself).
//
// Gregerson gives each thread block a sector of the grid held in shared memory and pads it by W/2, the
// padding belonging to the neighbours, then adds the padded borders on the host. Here the halo is
// removed instead: a sector owns a disjoint tile and reads every sample whose kernel footprint reaches the
// tile (samples near a border are listed under up to 2 sectors per dimension, (1 + (W-1)/T)^d listings per
// sample on average: 1.2 in 2D at W=4, T=32; 1.7 in 3D at T=16), clipping each footprint to the tile.
// Each grid point thus has exactly one writer: no global atomics, no halo pass, no zeroing pass (empty
// sectors store zeros). Within the block the samples are spread by one thread each with shared-memory
// atomics on the tile (the block's private copy; Gregerson's per-point __syncthreads is what they replace).
//
// The tile holds 64-bit fixed-point numbers, not floats, so that the result does not depend on the order in
// which the threads' atomics land: float additions in another order round differently, and 60 CG
// iterations of a 7x under-determined 3D problem made that a 0.01 dB difference between two identical runs
// (GpuIterative.PaperReproduction, 2026-11-27). Each contribution w v is the same float product as before,
// multiplied by 2^e (exact) and rounded to an integer; integer addition is associative, so the sum is the
// same whatever the order, and it is exact: better than float accumulation. e is chosen per work item from
// the largest sample component A of its coils and its listing count n: every |w| <= 1 (the kernel is
// scaled to peak 1), so no point's sum exceeds n A and 2^e n A < 2^62 cannot overflow. What is lost is a
// contribution's part below 2^-e, i.e. below ~2^-62 n A: far below float resolution of the sums.
//
// The sort is done once per plan on the device: count the sectors each sample reaches, scan, emit
// (sector, sample) pairs, cub::DeviceRadixSort them by sector (stable, so a sector's samples keep the
// trajectory's order and neighbouring threads read neighbouring samples), and find each sector's start by
// binary search. Radial k-space piles thousands of samples into the centre sectors, which would leave one
// block running long after the others (the tail Gregerson's fixed sectors did not meet); sectors with more
// than kPartEntries samples are split into parts that store partial tiles into scratch, and a second
// kernel sums a sector's parts in a fixed order and stores the tile, still without atomics. Blocks are
// launched heaviest first.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <mutex>
#include <numeric>

#include "check.hpp"
#include "nufft_internal.cuh"

namespace larmor::cuda::nc {

namespace {

constexpr int kSectorThreads = 256;
/// Dynamic shared memory a spreading block takes at most (opted in at launch): 2D tiles of 4 coils (16 KiB
/// a coil), 3D tiles of 16 x 16 x 8 and one coil (32 KiB); the tile is halved along z where a device allows
/// less per block.
constexpr std::size_t kSharedLimit = 64 * 1024;
/// Static shared memory of the spreading kernel besides the tile (the block's maximum), with room to spare.
constexpr std::size_t kStaticShared = 256;
/// Bytes of one tile point of one coil: re and im as 64-bit fixed point.
constexpr std::size_t kPointBytes = 2 * sizeof(long long);

struct SectorArgs {
  GridGeometry g;
  int tile[3];
  int tileCount[3];
  int tileVoxMax;
  int coilsPerBlock;
  int slots;
  const int* entries;
  const int4* work;
  const int4* merges;
  float2* partials;
  SpreadInput in;
};

/// First footprint index per dimension, wrapped into the grid.
template <int DIM>
__device__ __forceinline__ void wrappedBase(float4 code, const GridGeometry& g, int* b) {
  const std::uint32_t p = __float_as_uint(code.w);
  if constexpr (DIM == 2) {
    b[0] = wrapIndex(storedBase2(p, 0) - g.g[0], g.g[0]);
    b[1] = wrapIndex(storedBase2(p, 1) - g.g[1], g.g[1]);
    b[2] = 0;
  } else {
    b[0] = base3(p, 0);
    b[1] = base3(p, 1);
    b[2] = base3(p, 2);
  }
}

/// Distinct tiles (at most 3: the last tile may be narrower than W and the footprint may wrap) reached
/// by the footprint base .. base + W - 1 (mod g) along one dimension.
__device__ int tilesTouched(int base, int g, int tile, int width, int* out) {
  int n = 0;
  for (int i = 0; i < width; ++i) {
    int m = base + i;
    m -= m >= g ? g : 0;
    const int t = m / tile;
    bool seen = false;
    for (int q = 0; q < n; ++q) seen |= out[q] == t;
    if (!seen && n < 3) out[n++] = t;
  }
  return n;
}

template <int DIM>
__device__ int sectorsOf(const SectorArgs& a, int j, int list[3][3], int n[3]) {
  int b[3];
  wrappedBase<DIM>(__ldg(a.in.codes + j), a.g, b);
  for (int d = 0; d < 3; ++d) {
    if (d < DIM) {
      n[d] = tilesTouched(b[d], a.g.g[d], a.tile[d], a.g.width, list[d]);
    } else {
      n[d] = 1;
      list[d][0] = 0;
    }
  }
  return n[0] * n[1] * n[2];
}

template <int DIM>
__global__ void countSectorsKernel(SectorArgs a, long long* counts) {
  for (i64 j = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; j < a.in.m;
       j += static_cast<i64>(gridDim.x) * blockDim.x) {
    int list[3][3], n[3];
    counts[j] = sectorsOf<DIM>(a, static_cast<int>(j), list, n);
  }
}

/// Writes (sector, sample) pairs at the sample's offset; `inclusive` is the inclusive scan of the counts.
template <int DIM>
__global__ void emitPairsKernel(SectorArgs a, const long long* inclusive, int* keys, int* values) {
  for (i64 j = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; j < a.in.m;
       j += static_cast<i64>(gridDim.x) * blockDim.x) {
    int list[3][3], n[3];
    sectorsOf<DIM>(a, static_cast<int>(j), list, n);
    long long at = j ? inclusive[j - 1] : 0;
    for (int z = 0; z < n[2]; ++z)
      for (int y = 0; y < n[1]; ++y)
        for (int x = 0; x < n[0]; ++x) {
          keys[at] = list[0][x] + a.tileCount[0] * (list[1][y] + a.tileCount[1] * list[2][z]);
          values[at] = static_cast<int>(j);
          ++at;
        }
  }
}

/// Home sector (that of the first footprint point) of each sample, and the identity permutation.
template <int DIM>
__global__ void homeSectorKernel(SectorArgs a, int* keys, int* values) {
  for (i64 j = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; j < a.in.m;
       j += static_cast<i64>(gridDim.x) * blockDim.x) {
    int b[3];
    wrappedBase<DIM>(__ldg(a.in.codes + j), a.g, b);
    keys[j] = b[0] / a.tile[0] + a.tileCount[0] * (b[1] / a.tile[1] + a.tileCount[1] * (b[2] / a.tile[2]));
    values[j] = static_cast<int>(j);
  }
}

/// start[k] = first position of key k in the sorted keys (lower bound), k in [0, keys].
__global__ void keyStartKernel(const int* sortedKeys, long long total, int keys, long long* start) {
  for (int s = blockIdx.x * blockDim.x + threadIdx.x; s <= keys; s += gridDim.x * blockDim.x) {
    long long lo = 0, hi = total;
    while (lo < hi) {
      const long long mid = (lo + hi) / 2;
      if (sortedKeys[mid] < s) lo = mid + 1;
      else hi = mid;
    }
    start[s] = lo;
  }
}

struct TileBox {
  int o[3], e[3], vox;
};

__device__ __forceinline__ TileBox tileBox(const SectorArgs& a, int sector) {
  TileBox t;
  int s = sector;
  const int tx = s % a.tileCount[0];
  s /= a.tileCount[0];
  const int ty = s % a.tileCount[1];
  const int tz = s / a.tileCount[1];
  const int td[3] = {tx, ty, tz};
  t.vox = 1;
  for (int d = 0; d < 3; ++d) {
    t.o[d] = td[d] * a.tile[d];
    t.e[d] = min(a.tile[d], a.g.g[d] - t.o[d]);
    t.vox *= t.e[d];
  }
  return t;
}

__device__ __forceinline__ i64 gridIndex(const SectorArgs& a, const TileBox& t, int p) {
  const int lx = p % t.e[0];
  const int r = p / t.e[0];
  const int ly = r % t.e[1];
  const int lz = r / t.e[1];
  return (static_cast<i64>(t.o[2] + lz) * a.g.g[1] + (t.o[1] + ly)) * a.g.g[0] + (t.o[0] + lx);
}

/// One block per work item (a sector, or a part of one) and coil group. MAXW >= W bounds the unrolled
/// footprint loops (register arrays need compile-time indices); points past W are masked off.
/// Long because: zeroing, scale search, unrolled footprint loops and store share the shared tile and barriers.
template <int DIM, int MAXW>
__global__ void __launch_bounds__(kSectorThreads) sectorSpreadKernel(SectorArgs a, KernelParams k) {
  extern __shared__ long long tile[];  // [coil][tile point][re, im], fixed point (see the top of the file)
  __shared__ float blockMax[kSectorThreads / 32];
  const int4 item = a.work[blockIdx.x];
  const int coil0 = blockIdx.y * a.coilsPerBlock;
  const int nc = min(a.coilsPerBlock, a.in.coils - coil0);
  const TileBox t = tileBox(a, item.x);
  for (int i = threadIdx.x; i < nc * t.vox * 2; i += blockDim.x) tile[i] = 0;

  // The scale 2^e: from the largest component of this item's samples (NaN/Inf: the tile becomes NaN).
  float amax = 0.f;
  for (int q = item.y + threadIdx.x; q < item.z; q += blockDim.x) {
    const int j = __ldg(a.entries + q);
    for (int c = 0; c < nc; ++c) {
      const float2 v = __ldg(a.in.samples + j + static_cast<i64>(coil0 + c) * a.in.m);
      amax = fmaxf(amax, fmaxf(fabsf(v.x), fabsf(v.y)));
      if (!isfinite(v.x) || !isfinite(v.y)) amax = INFINITY;
    }
  }
  for (int off = 16; off > 0; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  if ((threadIdx.x & 31) == 0) blockMax[threadIdx.x >> 5] = amax;
  __syncthreads();
  amax = 0.f;
  for (int w = 0; w < kSectorThreads / 32; ++w) amax = fmaxf(amax, blockMax[w]);
  const bool finite = isfinite(amax);
  int ex = 0;
  frexp(static_cast<double>(amax) * static_cast<double>(max(item.z - item.y, 1)), &ex);  // n A < 2^ex
  const double scale = ldexp(1.0, 62 - ex), unscale = ldexp(1.0, ex - 62);

  const int w = a.g.width;
  for (int q = item.y + threadIdx.x; q < item.z && finite && amax > 0.f; q += blockDim.x) {
    const int j = __ldg(a.entries + q);
    const float4 code = __ldg(a.in.codes + j);
    int b[3];
    wrappedBase<DIM>(code, a.g, b);
    float wx[MAXW], wy[MAXW];
    int lx[MAXW], ly[MAXW];
    unsigned mx = 0, my = 0;
#pragma unroll
    for (int i = 0; i < MAXW; ++i) {
      int m = b[0] + i;
      m -= m >= a.g.g[0] ? a.g.g[0] : 0;
      lx[i] = m - t.o[0];
      const bool inx = i < w && static_cast<unsigned>(lx[i]) < static_cast<unsigned>(t.e[0]);
      mx |= inx ? 1u << i : 0u;
      wx[i] = inx ? kernelWeight(code.x + static_cast<float>(i), k) : 0.f;
      m = b[1] + i;
      m -= m >= a.g.g[1] ? a.g.g[1] : 0;
      ly[i] = m - t.o[1];
      const bool iny = i < w && static_cast<unsigned>(ly[i]) < static_cast<unsigned>(t.e[1]);
      my |= iny ? 1u << i : 0u;
      wy[i] = iny ? kernelWeight(code.y + static_cast<float>(i), k) : 0.f;
    }
    if (!mx || !my) continue;  // listed for another sector's benefit only along z, or clipped away

    for (int c = 0; c < nc; ++c) {
      const float2 v = __ldg(a.in.samples + j + static_cast<i64>(coil0 + c) * a.in.m);
      long long* plane = tile + static_cast<std::size_t>(c) * t.vox * 2;
      const int nz = DIM == 3 ? w : 1;
      for (int iz = 0; iz < nz; ++iz) {
        float wz = 1.f;
        long long* slab = plane;
        if constexpr (DIM == 3) {
          int m = b[2] + iz;
          m -= m >= a.g.g[2] ? a.g.g[2] : 0;
          const int lz = m - t.o[2];
          if (static_cast<unsigned>(lz) >= static_cast<unsigned>(t.e[2])) continue;
          wz = kernelWeight(code.z + static_cast<float>(iz), k);
          slab = plane + static_cast<std::size_t>(lz) * t.e[1] * t.e[0] * 2;
        }
#pragma unroll
        for (int iy = 0; iy < MAXW; ++iy) {
          if (!((my >> iy) & 1u)) continue;
          const float s = wz * wy[iy];
          const float vr = s * v.x, vi = s * v.y;
          long long* row = slab + ly[iy] * t.e[0] * 2;
#pragma unroll
          for (int ix = 0; ix < MAXW; ++ix) {
            if ((mx >> ix) & 1u) {
              const long long re = __double2ll_rn(static_cast<double>(wx[ix] * vr) * scale);
              const long long im = __double2ll_rn(static_cast<double>(wx[ix] * vi) * scale);
              atomicAdd(reinterpret_cast<unsigned long long*>(row + 2 * lx[ix]), static_cast<unsigned long long>(re));
              atomicAdd(reinterpret_cast<unsigned long long*>(row + 2 * lx[ix] + 1),
                        static_cast<unsigned long long>(im));
            }
          }
        }
      }
    }
  }
  __syncthreads();

  // The owner stores its tile: straight into the grid, or as one part of a split sector.
  for (int i = threadIdx.x; i < nc * t.vox; i += blockDim.x) {
    const int c = i / t.vox, p = i - c * t.vox;
    const float2 v = finite ? make_float2(static_cast<float>(static_cast<double>(tile[2 * i]) * unscale),
                                          static_cast<float>(static_cast<double>(tile[2 * i + 1]) * unscale))
                            : make_float2(NAN, NAN);
    if (item.w < 0) {
      a.in.grid[static_cast<i64>(coil0 + c) * a.g.gridVoxels + gridIndex(a, t, p)] = v;
    } else {
      const i64 slot = static_cast<i64>(blockIdx.y) * a.slots + item.w;
      a.partials[(slot * a.coilsPerBlock + c) * a.tileVoxMax + p] = v;
    }
  }
}

/// Sums the parts of split sectors in slot order (deterministic) and stores the tiles.
__global__ void __launch_bounds__(kSectorThreads) sectorMergeKernel(SectorArgs a) {
  const int4 mg = a.merges[blockIdx.x];
  const int coil0 = blockIdx.y * a.coilsPerBlock;
  const int nc = min(a.coilsPerBlock, a.in.coils - coil0);
  const TileBox t = tileBox(a, mg.x);
  for (int i = threadIdx.x; i < nc * t.vox; i += blockDim.x) {
    const int c = i / t.vox, p = i - c * t.vox;
    float2 s = make_float2(0.f, 0.f);
    for (int q = 0; q < mg.z; ++q) {
      const i64 slot = static_cast<i64>(blockIdx.y) * a.slots + mg.y + q;
      const float2 v = a.partials[(slot * a.coilsPerBlock + c) * a.tileVoxMax + p];
      s.x += v.x;
      s.y += v.y;
    }
    a.in.grid[static_cast<i64>(coil0 + c) * a.g.gridVoxels + gridIndex(a, t, p)] = s;
  }
}

/// Launches one instantiation, opting it in to `smem` bytes of dynamic shared memory (above the default 48
/// KiB: cudaFuncSetAttribute per kernel, which is cheap and idempotent).
template <int DIM, int MAXW>
void launchOne(const SectorArgs& a, const KernelParams& k, dim3 grid, std::size_t smem, cudaStream_t s) {
  LARMOR_CUDA_CHECK(cudaFuncSetAttribute(sectorSpreadKernel<DIM, MAXW>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(smem)));
  sectorSpreadKernel<DIM, MAXW><<<grid, kSectorThreads, smem, s>>>(a, k);
}

template <int DIM>
void launchSpread(const SectorArgs& a, const KernelParams& k, dim3 grid, std::size_t smem, cudaStream_t s) {
  const int w = a.g.width;
  // W = 2 runs in the MAXW = 4 instantiation (masked): the MAXW = 2 one gave wrong adjoints on the H100
  // (2026-11-22: 0.97 relative error vs the exact DFT, all other widths ~1e-7 vs the CPU plan).
  if (w <= 4) launchOne<DIM, 4>(a, k, grid, smem, s);
  else if (w <= 6) launchOne<DIM, 6>(a, k, grid, smem, s);
  else if (w <= 8) launchOne<DIM, 8>(a, k, grid, smem, s);
  else launchOne<DIM, 16>(a, k, grid, smem, s);
  LARMOR_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launchKeyStarts(const int* sortedKeys, long long total, int keys, long long* start, cudaStream_t stream) {
  keyStartKernel<<<listBlocks(i64{keys} + 1, 256), 256, 0, stream>>>(sortedKeys, total, keys, start);
  LARMOR_CUDA_CHECK_LAUNCH();
}

namespace {

/// The sector tile (32 x 32 in 2D; 16 x 16 x 8 in 3D, halved along z until one coil's tile fits `sharedBytes`)
/// and the number of tiles along each dimension.
void chooseTiles(const GridGeometry& g, std::size_t sharedBytes, int tile[3], int tileCount[3]) {
  // 2D: 32 x 32 tiles; 3D: 16 x 16 x 8 (32 KiB of fixed point a coil: on the H100 1.92 ms for the 128^3 2 M-sample
  // adjoint against 2.29 ms with 16^3, whose 64 KiB blocks left fewer of them resident; docs/nufft.md).
  const int tileDefault[3] = {g.dims == 2 ? 32 : 16, g.dims == 2 ? 32 : 16, 8};
  for (int d = 0; d < 3; ++d) {
    tile[d] = d < g.dims ? std::min(g.g[d], std::max(tileDefault[d], g.width)) : 1;
    tileCount[d] = (g.g[d] + tile[d] - 1) / tile[d];
  }
  // Halve the tile along z until one coil's tile fits the device's shared memory.
  while (static_cast<std::size_t>(tile[0]) * tile[1] * tile[2] * kPointBytes > sharedBytes && tile[2] > 1 &&
         tile[2] / 2 >= g.width) {
    tile[2] /= 2;
    tileCount[2] = (g.g[2] + tile[2] - 1) / tile[2];
  }
  require(static_cast<std::size_t>(tile[0]) * tile[1] * tile[2] * kPointBytes <= sharedBytes,
          "NUFFT on the GPU: a sector tile of " + std::to_string(tile[0]) + "x" + std::to_string(tile[1]) + "x" +
              std::to_string(tile[2]) + " points does not fit this device's shared memory");
}

/// Pairs (sector, sample) for every sector each footprint reaches, counted per sample: `inclusive` gets the
/// counts' running sum (its last element the number of listings; queued, not waited for).
void countListings(CudaBackend& be, const SectorArgs& a, DeviceVector<long long>& inclusive,
                   DeviceVector<char>& temp) {
  const i64 m = a.in.m;
  cudaStream_t s = be.stream();
  const unsigned blocks = listBlocks(m, 256);
  DeviceVector<long long> counts(be, static_cast<std::size_t>(m));
  std::lock_guard lock(be.mutex());
  LARMOR_CUDA_CHECK(cudaSetDevice(be.device()));
  if (a.g.dims == 2) countSectorsKernel<2><<<blocks, 256, 0, s>>>(a, counts.data());
  else countSectorsKernel<3><<<blocks, 256, 0, s>>>(a, counts.data());
  LARMOR_CUDA_CHECK_LAUNCH();
  std::size_t bytes = 0;
  LARMOR_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, counts.data(), inclusive.data(), m, s));
  temp.reserve(be, bytes);
  LARMOR_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.data(), bytes, counts.data(), inclusive.data(), m, s));
}

/// The n listings sorted by sector (their samples into `entrySamples`) and, for the interpolation's locality,
/// the samples sorted by home sector (into `order`); returns where each of the `sectors` lists begins (sectors + 1).
std::vector<long long> sortListings(CudaBackend& be, const SectorArgs& a, const DeviceVector<long long>& inclusive,
                                    int n, int sectors, DeviceVector<char>& temp, DeviceVector<int>& entrySamples,
                                    DeviceVector<int>& order) {
  const i64 m = a.in.m;
  cudaStream_t s = be.stream();
  const unsigned blocks = listBlocks(m, 256);
  const int keyBits = keyBitsFor(sectors);
  std::vector<long long> start;
  DeviceVector<int> keys(be, n), values(be, n), sortedKeys(be, n);
  entrySamples.resize(be, n);
  DeviceVector<long long> startDev(be, static_cast<std::size_t>(sectors) + 1);
  std::lock_guard lock(be.mutex());
  LARMOR_CUDA_CHECK(cudaSetDevice(be.device()));
  if (a.g.dims == 2) emitPairsKernel<2><<<blocks, 256, 0, s>>>(a, inclusive.data(), keys.data(), values.data());
  else emitPairsKernel<3><<<blocks, 256, 0, s>>>(a, inclusive.data(), keys.data(), values.data());
  LARMOR_CUDA_CHECK_LAUNCH();
  std::size_t bytes = 0;
  LARMOR_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.data(), sortedKeys.data(), values.data(),
                                                    entrySamples.data(), n, 0, keyBits, s));
  temp.reserve(be, bytes);
  LARMOR_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, keys.data(), sortedKeys.data(),
                                                    values.data(), entrySamples.data(), n, 0, keyBits, s));
  launchKeyStarts(sortedKeys.data(), n, sectors, startDev.data(), s);
  // Locality order for the interpolation: samples sorted by home sector.
  DeviceVector<int>& homeKeys = keys;  // reused: the sort above has consumed them
  if (static_cast<i64>(homeKeys.size()) < m) homeKeys.resize(be, static_cast<std::size_t>(m));
  DeviceVector<int>& identity = values;
  if (static_cast<i64>(identity.size()) < m) identity.resize(be, static_cast<std::size_t>(m));
  order.resize(be, static_cast<std::size_t>(m));
  if (a.g.dims == 2) homeSectorKernel<2><<<blocks, 256, 0, s>>>(a, homeKeys.data(), identity.data());
  else homeSectorKernel<3><<<blocks, 256, 0, s>>>(a, homeKeys.data(), identity.data());
  LARMOR_CUDA_CHECK_LAUNCH();
  LARMOR_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, homeKeys.data(), sortedKeys.data(),
                                                    identity.data(), order.data(), static_cast<int>(m), 0,
                                                    keyBits, s));
  if (sortedKeys.size() < static_cast<std::size_t>(m)) sortedKeys.resize(be, static_cast<std::size_t>(m));
  temp.reserve(be, bytes);
  LARMOR_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, homeKeys.data(), sortedKeys.data(),
                                                    identity.data(), order.data(), static_cast<int>(m), 0,
                                                    keyBits, s));
  LARMOR_CUDA_CHECK(cudaStreamSynchronize(s));  // the temporaries go out of scope next
  start.resize(static_cast<std::size_t>(sectors) + 1);
  LARMOR_CUDA_CHECK(cudaMemcpy(start.data(), startDev.data(), start.size() * sizeof(long long),
                               cudaMemcpyDeviceToHost));
  return start;
}

/// Work items {sector, begin, end, slot}: a block per sector, or per part of a crowded one (parts get slots
/// from `slots` on, and the sector a merge item {sector, first slot, parts, 0}); heaviest first so that the
/// long blocks start early (longest-processing-time order).
void splitWork(const std::vector<long long>& start, int sectors, int& slots, std::vector<int4>& work,
               std::vector<int4>& merges) {
  for (int sec = 0; sec < sectors; ++sec) {
    const long long b = start[static_cast<std::size_t>(sec)], e = start[static_cast<std::size_t>(sec) + 1];
    const long long parts = std::max<long long>(1, (e - b + SectorSpreader::kPartEntries - 1) /
                                                       SectorSpreader::kPartEntries);
    if (parts == 1) {
      work.push_back(int4{sec, static_cast<int>(b), static_cast<int>(e), -1});
      continue;
    }
    merges.push_back(int4{sec, slots, static_cast<int>(parts), 0});
    for (long long q = 0; q < parts; ++q) {
      const long long pb = b + (e - b) * q / parts, pe = b + (e - b) * (q + 1) / parts;
      work.push_back(int4{sec, static_cast<int>(pb), static_cast<int>(pe), slots++});
    }
  }
  std::stable_sort(work.begin(), work.end(), [](const int4& x, const int4& y) { return x.z - x.y > y.z - y.y; });
}

}  // namespace

SectorSpreader::SectorSpreader(CudaBackend& be, const GridGeometry& g, const DeviceVector<float4>& codes, i64 m)
    : g_(g) {
  int optin = 0;
  LARMOR_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, be.device()));
  sharedBytes_ = std::min(kSharedLimit, static_cast<std::size_t>(std::max(optin, 0)) - kStaticShared);
  chooseTiles(g, sharedBytes_, tile_, tileCount_);
  sectors_ = tileCount_[0] * tileCount_[1] * tileCount_[2];

  SectorArgs a{};
  a.g = g;
  for (int d = 0; d < 3; ++d) {
    a.tile[d] = tile_[d];
    a.tileCount[d] = tileCount_[d];
  }
  a.in.codes = codes.data();
  a.in.m = m;

  DeviceVector<long long> inclusive(be, static_cast<std::size_t>(m));
  DeviceVector<char> temp;
  countListings(be, a, inclusive, temp);
  const long long total = inclusive.element(be, static_cast<std::size_t>(m) - 1);  // waits for the scan
  require(total < (1LL << 31), "NUFFT on the GPU: too many sector listings (" + std::to_string(total) +
                                            "); use fewer samples per plan");
  entries_ = total;
  const std::vector<long long> start =
      sortListings(be, a, inclusive, static_cast<int>(total), sectors_, temp, entrySamples_, order_);

  std::vector<int4> work, merges;
  splitWork(start, sectors_, slots_, work, merges);
  workItems_ = static_cast<int>(work.size());
  mergeItems_ = static_cast<int>(merges.size());
  work_.upload(be, work);
  merges_.upload(be, merges);
}

void SectorSpreader::spread(CudaBackend& be, const KernelParams& k, const SpreadInput& in) {
  SectorArgs a{};
  a.g = g_;
  for (int d = 0; d < 3; ++d) {
    a.tile[d] = tile_[d];
    a.tileCount[d] = tileCount_[d];
  }
  a.tileVoxMax = tile_[0] * tile_[1] * tile_[2];
  const std::size_t tileBytes = static_cast<std::size_t>(a.tileVoxMax) * kPointBytes;
  // 2D: up to 4 coils a block (64 KiB; measured as fast as the float tiles' 4 x 8 KiB); 3D: one (32 KiB blocks,
  // as many resident as the float 16^3 tiles had).
  a.coilsPerBlock = g_.dims == 3 ? 1 : static_cast<int>(std::clamp<std::size_t>(sharedBytes_ / tileBytes, 1, 4));
  a.coilsPerBlock = std::min(a.coilsPerBlock, in.coils);
  const int groups = (in.coils + a.coilsPerBlock - 1) / a.coilsPerBlock;
  a.slots = slots_;
  if (slots_ > 0) {
    partials_.reserve(be, static_cast<std::size_t>(groups) * slots_ * a.coilsPerBlock * a.tileVoxMax);
    a.partials = partials_.data();
  }
  a.entries = entrySamples_.data();
  a.work = work_.data();
  a.merges = merges_.data();
  a.in = in;
  const std::size_t smem = static_cast<std::size_t>(a.coilsPerBlock) * tileBytes;
  const dim3 grid(static_cast<unsigned>(workItems_), static_cast<unsigned>(groups));
  if (g_.dims == 2) launchSpread<2>(a, k, grid, smem, be.stream());
  else launchSpread<3>(a, k, grid, smem, be.stream());
  if (mergeItems_ > 0) {
    sectorMergeKernel<<<dim3(static_cast<unsigned>(mergeItems_), static_cast<unsigned>(groups)), kSectorThreads, 0,
                        be.stream()>>>(a);
    LARMOR_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace larmor::cuda::nc
