#pragma once
// Pieces of the CUDA NUFFT plan shared by nufft.cu (the plan, FFTs, deapodization, interpolation),
// nufft_sector.cu (Gregerson's sector spreader) and nufft_tron.cu (TRON's radial spreader).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda_backend.hpp"
#include "larmor/ops/nufft.hpp"
#include "nufft_math.hpp"

namespace larmor::cuda::nc {

/// Image and oversampled grid (FFT order) of a plan; unused dimensions have length 1.
struct GridGeometry {
  int dims = 2;
  int n[3] = {1, 1, 1};
  int g[3] = {1, 1, 1};
  int width = 4;
  i64 imageVoxels = 1, gridVoxels = 1;
};

/// Device memory owned by a plan: a Buffer of the backend, typed.
template <class T>
class DeviceVector {
 public:
  DeviceVector() = default;
  DeviceVector(CudaBackend& be, std::size_t count) { resize(be, count); }
  void resize(CudaBackend& be, std::size_t count) {
    count_ = count;
    buffer_ = be.allocate(std::max<std::size_t>(count, 1) * sizeof(T));
  }
  /// Grows (never shrinks) to at least `count` elements; the contents are not kept.
  void reserve(CudaBackend& be, std::size_t count) {
    if (!buffer_ || buffer_->bytes() < count * sizeof(T)) resize(be, count);
    count_ = count;
  }
  void upload(CudaBackend& be, const std::vector<T>& host) {
    resize(be, host.size());
    if (!host.empty()) be.upload(*buffer_, host.data(), host.size() * sizeof(T));
  }
  std::vector<T> download(CudaBackend& be, std::size_t count) const {
    std::vector<T> host(count);
    if (count) be.download(host.data(), *buffer_, count * sizeof(T));
    return host;
  }
  /// Element i (waits for the work queued before it).
  T element(CudaBackend& be, std::size_t i) const {
    T v;
    be.download(&v, *buffer_, sizeof(T), i * sizeof(T));
    return v;
  }
  T* data() { return buffer_ ? static_cast<T*>(buffer_->ptr()) : nullptr; }
  const T* data() const { return buffer_ ? static_cast<const T*>(buffer_->ptr()) : nullptr; }
  std::size_t size() const { return count_; }

 private:
  std::unique_ptr<Buffer> buffer_;
  std::size_t count_ = 0;
};

/// Launch arguments common to the spreaders: the samples of one chunk of coils, [M, coils], and the grid
/// planes they are spread onto, [gridVoxels, coils].
struct SpreadInput {
  const float4* codes = nullptr;  ///< per sample footprint (nufft_math.hpp)
  const float2* samples = nullptr;
  i64 m = 0;
  int coils = 1;
  float2* grid = nullptr;
};

// --- pieces of the spreaders' plan-time lists (sorted by key with cub) --------------------------------------------

/// Blocks of `threads` for a grid-stride pass over n items.
inline unsigned listBlocks(i64 n, int threads) {
  return static_cast<unsigned>(std::min<i64>(std::max<i64>((n + threads - 1) / threads, 1), 65535 * 4));
}
/// Bits cub's radix sort needs for the keys 0..keys.
inline int keyBitsFor(int keys) {
  int bits = 1;
  while ((1 << bits) < keys + 1) ++bits;
  return bits;
}
/// start[k] = the first position of key k in `sortedKeys` (total entries), k in [0, keys]: where each list begins
/// after a sort by key (nufft_sector.cu; queued on `stream`).
void launchKeyStarts(const int* sortedKeys, long long total, int keys, long long* start, cudaStream_t stream);

/// Gregerson's sector-based output-driven gridding (nufft_sector.cu). The grid is cut into sectors (tiles
/// of 32^2 in 2D, 16 x 16 x 8 in 3D); every sample is listed under each sector its footprint reaches (sorted on
/// the device with a key sort at plan time), and one thread block per sector accumulates its own tile in
/// shared memory and stores it: each grid point has exactly one writer, so no global atomics and no
/// separate zeroing pass. Sectors with more than kPartEntries samples (the centre of radial k-space) are
/// split into parts that write partial tiles, summed in a fixed order by a second kernel.
class SectorSpreader {
 public:
  SectorSpreader(CudaBackend& be, const GridGeometry& g, const DeviceVector<float4>& codes, i64 m);
  /// Caller holds the backend's mutex; queued on the backend's stream.
  void spread(CudaBackend& be, const KernelParams& k, const SpreadInput& in);
  /// Samples in the order of their home sector (the sector of their first footprint point): the
  /// interpolation visits them in this order so that neighbouring threads read neighbouring grid points.
  const int* localityOrder() const { return order_.data(); }
  int tile(int d) const { return tile_[d]; }
  i64 entries() const { return entries_; }

  static constexpr int kPartEntries = 2048;

 private:
  GridGeometry g_;
  int tile_[3] = {1, 1, 1}, tileCount_[3] = {1, 1, 1}, sectors_ = 1;
  std::size_t sharedBytes_ = 0;  ///< dynamic shared memory a spreading block may take on this device
  i64 entries_ = 0;
  DeviceVector<int> entrySamples_;  ///< sample indices, sector by sector
  DeviceVector<int4> work_;         ///< {sector, begin, end, slot}: one block each, heaviest first
  DeviceVector<int4> merges_;       ///< {sector, first slot, parts, 0} of the sectors split into parts
  DeviceVector<int> order_;
  DeviceVector<float2> partials_;
  int workItems_ = 0, mergeItems_ = 0, slots_ = 0;
};

/// Per tile of GatherSpreader::kTileX x kTileY grid points, the samples its points gather, flat, tile by tile:
/// each as its index | periodic image bits << kImageShift (bit 0: the tile stands for its points' x - G0, bit 1:
/// y - G1; a sample whose footprint wraps is listed under each image it reaches, and the exact test on the stored
/// footprint takes it for exactly the points it holds).
struct GatherLists {
  static constexpr int kImageShift = 30;
  DeviceVector<std::uint32_t> samples;
  DeviceVector<long long> start;  ///< tiles + 1
};

/// The output-parallel gather (nufft_gather.cu; TRON's scheme, Smith et al. 2019): one thread per oversampled grid
/// point adds the samples whose footprint holds it and writes its own value, so there are no atomics. 2D only. Its
/// lists come from TRON's radial search (nufft_tron.cu) or, for any 2D trajectory, from the samples' footprints.
class GatherSpreader {
 public:
  static constexpr int kTileX = 8, kTileY = 4;  ///< grid points per block: one warp's worth
  static constexpr int kSlices = 8;             ///< warps per block, each taking every 8th round of 32 listed samples

  /// TRON: a geometry tronUnsuitable accepted, `margin` its samples' distance from their spokes (the caller
  /// checks once; the check is a pass over every sample).
  GatherSpreader(CudaBackend& be, const GridGeometry& g, const NufftGeometry& geometry, double margin);
  /// Any 2D trajectory gatherUnsuitable accepts: the lists from the samples' footprints (`codes`, m samples).
  GatherSpreader(CudaBackend& be, const GridGeometry& g, const DeviceVector<float4>& codes, i64 m);
  /// Caller holds the backend's mutex; queued on the backend's stream.
  void spread(CudaBackend& be, const KernelParams& k, const SpreadInput& in);
  /// The samples by home tile, for the interpolation (footprint lists); null for TRON's (spokes are local).
  const int* localityOrder() const { return locality_.size() ? locality_.data() : nullptr; }

 private:
  void orderTiles(CudaBackend& be);
  GridGeometry g_;
  int tilesX_ = 1, tilesY_ = 1;
  GatherLists lists_;
  DeviceVector<int> tileOrder_;  ///< tiles by list length, longest first: the launch order
  DeviceVector<int> locality_;
};

/// TRON's search (nufft_tron.cu): the lists of a radial geometry tronUnsuitable accepted.
void tronLists(CudaBackend& be, const GridGeometry& g, const NufftGeometry& geometry, double margin, GatherLists& lists);

/// Why a geometry is not one TRON can grid (empty when it is); `margin` returns the largest distance of a
/// sample from its ideal radial position, in grid units.
std::string tronUnsuitable(const GridGeometry& g, const NufftGeometry& geometry, double* margin);

/// Why the gather cannot take a plan of m samples on grid g (empty when it can): 2D, W <= G/2, 30-bit indices.
std::string gatherUnsuitable(const GridGeometry& g, i64 m);

}  // namespace larmor::cuda::nc
