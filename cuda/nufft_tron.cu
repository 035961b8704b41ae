// TRON's radial search (Smith et al., MRM 81:2064, 2019, Algorithm G, step G2): for every tile of 8 x 4
// oversampled grid points, the samples within reach found from the known radial geometry rather than searched
// for. For each spoke the perpendicular distance decides whether it passes within reach of the tile, and the
// readout indices within reach follow from where the spoke crosses the tile's widened box. The lists feed the
// output-parallel gather of nufft_gather.cu (one thread per grid point, no atomics); GPU only (the CPU twin of
// the whole NUFFT is engine/src/cpu/nufft.cpp).
//
// Golden-angle spokes cannot be found from the angle by inversion (the paper's modulo argument), so a search
// over spokes is needed. It is done once per plan (the plan is executed many times): per tile the spokes that
// reach it, with their readout range (count kernel, scan, fill kernel with a block scan, so the order is
// deterministic), then the entries' samples written out flat, tile by tile (GatherLists). The same list serves
// linear angles, where it is what the direct formula would give.
// Periodicity: spokes reaching |k| = N/2 at sigma = 2 touch the grid's edge, and their footprints wrap. A tile
// is tested as itself and as its images shifted by -G along each axis, and an entry keeps the image it found:
// with the samples' unwrapped first footprint index (stored per sample) the gather's exact test picks exactly
// one image per (point, sample). The exact test and the weights use the stored footprint, the same numbers as
// the sector spreader and the interpolation, so every spreader and the CPU compute the same sum; the geometry
// only narrows the search.
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

constexpr int kListThreads = 256;
constexpr int kTileX = GatherSpreader::kTileX, kTileY = GatherSpreader::kTileY;
constexpr int kImageShift = GatherLists::kImageShift;

struct TronArgs {
  GridGeometry g;
  RadialParams rp;
  int tilesX;
  const SpokeDir* spokes;
};

/// Extent of tile `t` in grid index space: x in [x0, x1], y in [y0, y1].
__device__ __forceinline__ void tileExtent(const TronArgs& a, int t, int* x0, int* x1, int* y0, int* y1) {
  const int tx = t % a.tilesX, ty = t / a.tilesX;
  *x0 = tx * kTileX;
  *y0 = ty * kTileY;
  *x1 = min(*x0 + kTileX, a.g.g[0]) - 1;
  *y1 = min(*y0 + kTileY, a.g.g[1]) - 1;
}

/// Readout range of spoke p reaching tile image `shift` (bit 0: x - G0, bit 1: y - G1).
__device__ __forceinline__ bool tileReach(const TronArgs& a, int p, int shift, int x0, int x1, int y0, int y1, int* i0,
                                          int* i1) {
  const float sx = (shift & 1) ? static_cast<float>(a.g.g[0]) : 0.f;
  const float sy = (shift & 2) ? static_cast<float>(a.g.g[1]) : 0.f;
  return readoutRange(a.spokes[p], a.rp, static_cast<float>(x0) - sx, static_cast<float>(x1) - sx,
                      static_cast<float>(y0) - sy, static_cast<float>(y1) - sy, i0, i1);
}

__global__ void __launch_bounds__(kListThreads) countListKernel(TronArgs a, int* counts) {
  using Reduce = cub::BlockReduce<int, kListThreads>;
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

__global__ void __launch_bounds__(kListThreads) fillListKernel(TronArgs a, const int* start, int4* list) {
  using Scan = cub::BlockScan<int, kListThreads>;
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
__global__ void tileSampleStartKernel(const int* listStart, const i64* offset, int tiles, long long* sampleStart) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t <= tiles) sampleStart[t] = offset[listStart[t]];
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

void tronLists(CudaBackend& be, const GridGeometry& g, const NufftGeometry& geometry, double margin, GatherLists& lists) {
  require(geometry.radial.has_value(), "TRON: the geometry has no radial description");
  const RadialInfo& radial = *geometry.radial;
  RadialParams rp;
  rp.readout = static_cast<int>(radial.readout);
  rp.spokes = static_cast<int>(radial.spokes);
  rp.kStart = radial.kStart;
  rp.kStep = radial.kStep;
  rp.invStep = 1.f / radial.kStep;
  // Half the kernel, the samples' distance from their ideal place, and a little for float rounding.
  rp.reach = static_cast<float>(0.5 * g.width + margin + 0.05);
  std::vector<SpokeDir> dirs(static_cast<std::size_t>(radial.spokes));
  for (std::size_t p = 0; p < dirs.size(); ++p)
    dirs[p] = makeSpokeDir(radial.anglesRad[p], static_cast<double>(g.g[0]) / g.n[0], static_cast<double>(g.g[1]) / g.n[1]);
  DeviceVector<SpokeDir> spokes;
  spokes.upload(be, dirs);
  const int tilesX = (g.g[0] + kTileX - 1) / kTileX, tilesY = (g.g[1] + kTileY - 1) / kTileY;
  const int tiles = tilesX * tilesY;

  TronArgs a{};
  a.g = g;
  a.rp = rp;
  a.tilesX = tilesX;
  a.spokes = spokes.data();
  DeviceVector<int> counts(be, static_cast<std::size_t>(tiles) + 1);
  DeviceVector<int> listStart(be, static_cast<std::size_t>(tiles) + 1);
  DeviceVector<char> temp;
  cudaStream_t s = be.stream();
  {
    std::lock_guard lock(be.mutex());
    LARMOR_CUDA_CHECK(cudaSetDevice(be.device()));
    LARMOR_CUDA_CHECK(cudaMemsetAsync(counts.data(), 0, (static_cast<std::size_t>(tiles) + 1) * sizeof(int), s));
    countListKernel<<<tiles, kListThreads, 0, s>>>(a, counts.data());
    LARMOR_CUDA_CHECK_LAUNCH();
    std::size_t bytes = 0;
    LARMOR_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, counts.data(), listStart.data(), tiles + 1, s));
    temp.reserve(be, bytes);
    LARMOR_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.data(), bytes, counts.data(), listStart.data(), tiles + 1, s));
    int total = 0;
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(&total, listStart.data() + tiles, sizeof(int), cudaMemcpyDeviceToHost, s));
    LARMOR_CUDA_CHECK(cudaStreamSynchronize(s));
    DeviceVector<int4> list(be, static_cast<std::size_t>(std::max(total, 1)));
    fillListKernel<<<tiles, kListThreads, 0, s>>>(a, listStart.data(), list.data());
    LARMOR_CUDA_CHECK_LAUNCH();
    // The entries' samples, flat per tile (what the gather reads, 32 a round).
    DeviceVector<i64> lengths(be, static_cast<std::size_t>(total) + 1), offset(be, static_cast<std::size_t>(total) + 1);
    const unsigned perEntry = static_cast<unsigned>((total + 1 + kListThreads - 1) / kListThreads);
    entryLengthKernel<<<perEntry, kListThreads, 0, s>>>(list.data(), total, lengths.data());
    LARMOR_CUDA_CHECK_LAUNCH();
    LARMOR_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, lengths.data(), offset.data(), total + 1, s));
    temp.reserve(be, bytes);
    LARMOR_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.data(), bytes, lengths.data(), offset.data(), total + 1, s));
    i64 samples = 0;
    LARMOR_CUDA_CHECK(cudaMemcpyAsync(&samples, offset.data() + total, sizeof(i64), cudaMemcpyDeviceToHost, s));
    LARMOR_CUDA_CHECK(cudaStreamSynchronize(s));
    lists.samples.resize(be, static_cast<std::size_t>(std::max<i64>(samples, 1)));
    lists.start.resize(be, static_cast<std::size_t>(tiles) + 1);
    fillSamplesKernel<<<perEntry, kListThreads, 0, s>>>(list.data(), total, offset.data(), rp.readout, lists.samples.data());
    LARMOR_CUDA_CHECK_LAUNCH();
    tileSampleStartKernel<<<static_cast<unsigned>((tiles + 1 + kListThreads - 1) / kListThreads), kListThreads, 0, s>>>(
        listStart.data(), offset.data(), tiles, lists.start.data());
    LARMOR_CUDA_CHECK_LAUNCH();
    LARMOR_CUDA_CHECK(cudaStreamSynchronize(s));  // the plan-time lists go out of scope next
  }
}

}  // namespace larmor::cuda::nc
