// CPU NUFFT plan: Kaiser-Bessel gridding on a sigma-oversampled grid (Jackson et al., IEEE TMI 10:473,
// 1991; Beatty et al., IEEE TMI 24:799, 2005), FFTs through the Backend, TRON's analytic deapodization
// (kb::transform, shared with the CUDA plan so both divide by the same function).
//
// Derivation of the raw sums of ops/nufft.hpp. The image of N pixels (r_n = (n - c_N)/N) is
// zero-padded to G >= sigma N points, so the grid's k spacing is 1/s cycles/FOV with s = G/N (the
// effective oversampling), and a sample k sits at grid coordinate u = s k (grid index c_G + u, periodic
// in G). With C the kernel in grid units and c(x) = int C(u) exp(-2 pi i u x) du its transform:
//   forward  sum_q C(u_j - q) sum_n (rho_n / c(x_n)) e^{-2 pi i q x_n} ~= sum_n rho_n e^{-2 pi i k_j r_n}
//   adjoint  (sum_q e^{+2 pi i q x_n} sum_j d_j C(u_j - q)) / c(x_n)   ~= sum_j d_j e^{+2 pi i k_j r_n}
// with x_n = (n - c_N)/G cycles per grid point (u x_n = k r_n). The sums over q are the centred DFTs of
// length G; the Backend's fft is unitary (G^{-1/2} per transform), so the deapodization also carries
// sqrt(G0 G1 G2). The error is the kernel's aliasing outside |x| <= 1/(2s) and its truncation at
// |u| = W/2, set by W, sigma and beta (docs/nufft.md has the measured curve).
//
// Spreading without data races (the adjoint): the grid is cut into tiles (32x32 in 2D, 16^3 in 3D); each
// tile is owned by one thread, which accumulates into a private, cache-resident copy every sample whose
// kernel footprint reaches the tile, clipped to the tile, and then stores the tile (Gregerson's
// output-driven, sector-based assignment, done on the CPU). Samples near a tile border are visited by each
// tile they reach, which costs (1 + W/T)^d visits per sample instead of atomics or a reduction, and keeps
// the result deterministic (fixed order within a tile, independent of the thread count). Samples are
// presorted by tile once per plan, so a tile's samples are mostly contiguous in memory. Interpolation
// (forward) is sample-parallel: every sample reads its footprint and writes its own output.
// Cancellation: the caller's CancelScope is polled per chunk of coils and per tile of the spread.
//
// Twin: cuda/nufft.cu (with its spreaders cuda/nufft_sector.cu and cuda/nufft_tron.cu); the grid size,
// footprint and kernel rules both use are in larmor/kernels/kernel_math.hpp.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu_backend.hpp"
#include "larmor/kernels/kernel_math.hpp"
#include "larmor/traj/trajectory.hpp"
#include "larmor/util/cancel_scope.hpp"

namespace larmor::cpu {

namespace {

index_t wrap(index_t i, index_t g) {
  i %= g;
  return i < 0 ? i + g : i;
}

/// wrap() for footprint indices, which lie within one period of [0, g) when g >= W (a branch, not a
/// division, in the inner loops).
inline index_t wrapNear(index_t i, index_t g) {
  if (i < 0) i += g;
  else if (i >= g) i -= g;
  return i < 0 || i >= g ? wrap(i, g) : i;
}

void checkBuffer(const Buffer& b, index_t elements, const char* what) {
  if (elements < 0 || static_cast<std::size_t>(elements) * sizeof(cfloat) > b.bytes())
    throw Error(std::string("NUFFT: the ") + what + " buffer holds " + std::to_string(b.bytes() / sizeof(cfloat)) +
                " complex values, " + std::to_string(elements) + " are needed");
}

constexpr index_t kChunkCoils = 8;      // coils spread together (tile copies stay in L2)
constexpr double kGridBudgetBytes = 1024.0 * 1024 * 1024;
// Below this much work a loop runs on one thread: waking a team costs more than it saves, and much more
// on a loaded machine.
constexpr index_t kParallelWork = 1 << 15;

class CpuNufftPlan final : public NufftPlan {
 public:
  CpuNufftPlan(Backend& backend, const NufftGeometry& g, const NufftOptions& o) : backend_(backend) {
    require(g.dims == 2 || g.dims == 3, "NUFFT: dims must be 2 or 3, got " + std::to_string(g.dims));
    require(o.width >= 2 && o.width <= 16, "NUFFT: kernel width W must be 2 to 16, got " + std::to_string(o.width));
    require(std::isfinite(o.oversampling) && o.oversampling >= 1.0 && o.oversampling <= 4.0,
            "NUFFT: grid oversampling sigma must be 1 to 4, got " + std::to_string(o.oversampling));
    dims_ = g.dims;
    for (int d = 0; d < 3; ++d) {
      n_[d] = d < dims_ ? g.image[d] : 1;
      require(n_[d] >= 1 && n_[d] <= 65536, "NUFFT: image size must be 1 to 65536 in each dimension");
    }
    require(dims_ == 3 || g.image[2] <= 1, "NUFFT: a 2D plan needs image[2] = 1");
    traj::validate(g.trajectory, dims_, n_, "NUFFT trajectory");
    m_ = g.samples();
    require(m_ < (index_t{1} << 31), "NUFFT: more than 2^31 samples");
    width_ = o.width;
    beta_ = o.beta();
    table_ = o.kernel == KernelEvaluation::Table;
    for (int d = 0; d < 3; ++d) {
      g_[d] = kernels::gridLength(n_[d], o.oversampling, d < dims_);
      gridVoxels_ *= g_[d];
      imageVoxels_ *= n_[d];
    }
    // The kernel is scaled to a peak of 1 (divided by I0(beta)), and its transform alike: the same
    // ratio, and 3D weight products stay in float range for wide kernels.
    peak_ = kb::besselI0(beta_);
    if (table_) kernelTable_ = kb::kernelTable(width_, beta_, peak_);
    // Deapodization with the sqrt(G) of the unitary FFT folded in (see the top of the file).
    const double gridScale = std::sqrt(static_cast<double>(gridVoxels_));
    for (int d = 0; d < 3; ++d) {
      deapod_[d].resize(static_cast<std::size_t>(n_[d]));
      for (index_t n = 0; n < n_[d]; ++n) {
        const double x = static_cast<double>(n - n_[d] / 2) / static_cast<double>(g_[d]);
        const double c = d < dims_ ? kb::transform(x, width_, beta_) / peak_ : 1.0;
        deapod_[d][static_cast<std::size_t>(n)] = static_cast<float>((d == 0 ? gridScale : 1.0) / c);
      }
    }
    layoutSamples(g.trajectory);
  }

  index_t samples() const override { return m_; }
  Shape imageShape() const override { return Shape{n_[0], n_[1], n_[2]}; }

  void adjoint(const Buffer& samples, Buffer& image, index_t batch) override {
    require(batch >= 1, "NUFFT adjoint: batch must be at least 1");
    checkBuffer(samples, m_ * batch, "sample");
    checkBuffer(image, imageVoxels_ * batch, "image");
    const auto* in = static_cast<const cfloat*>(samples.ptr());
    auto* out = static_cast<cfloat*>(image.ptr());
    const index_t chunk = chunkSize(batch);
    Buffer& grid = gridBuffer(chunk);
    for (index_t c0 = 0; c0 < batch; c0 += chunk) {
      CancelScope::check();  // per chunk of coils (util/cancel_scope.hpp)
      const index_t cb = std::min(chunk, batch - c0);
      gatherSorted(in + m_ * c0, cb);
      spread(static_cast<cfloat*>(grid.ptr()), cb);
      backend_.fft(grid, Shape{g_[0], g_[1], g_[2], cb}, dims_, FftDirection::Inverse);
      cropDeapodize(static_cast<const cfloat*>(grid.ptr()), out + imageVoxels_ * c0, cb);
    }
  }

  void forward(const Buffer& image, Buffer& samples, index_t batch) override {
    require(batch >= 1, "NUFFT forward: batch must be at least 1");
    checkBuffer(image, imageVoxels_ * batch, "image");
    checkBuffer(samples, m_ * batch, "sample");
    const auto* in = static_cast<const cfloat*>(image.ptr());
    auto* out = static_cast<cfloat*>(samples.ptr());
    const index_t chunk = chunkSize(batch);
    Buffer& grid = gridBuffer(chunk);
    for (index_t c0 = 0; c0 < batch; c0 += chunk) {
      CancelScope::check();  // per chunk of coils (util/cancel_scope.hpp)
      const index_t cb = std::min(chunk, batch - c0);
      padDeapodize(in + imageVoxels_ * c0, static_cast<cfloat*>(grid.ptr()), cb);
      backend_.fft(grid, Shape{g_[0], g_[1], g_[2], cb}, dims_, FftDirection::Forward);
      interpolate(static_cast<const cfloat*>(grid.ptr()), out + m_ * c0, cb);
    }
  }

  void spreadInterpolate(const Buffer& weights, Buffer& out) override {
    checkBuffer(weights, m_, "weight");
    checkBuffer(out, m_, "output");
    Buffer& grid = gridBuffer(1);
    gatherSorted(static_cast<const cfloat*>(weights.ptr()), 1);
    spread(static_cast<cfloat*>(grid.ptr()), 1);
    interpolate(static_cast<const cfloat*>(grid.ptr()), static_cast<cfloat*>(out.ptr()), 1);
  }

 private:
  // --- layout: per sample (sorted by tile) the first footprint index and the offset of its kernel ---
  void layoutSamples(const RArray& k) {
    chooseTiles();
    sortSamples(k);
    listTiles();
  }

  /// Tiles of 32^2 (2D) or 16^3 (3D) grid points, at least a footprint wide.
  void chooseTiles() {
    const index_t tileDefault = dims_ == 2 ? 32 : 16;
    tiles_ = 1;
    for (int d = 0; d < 3; ++d) {
      tile_[d] = d < dims_ ? std::min(g_[d], std::max<index_t>(tileDefault, width_)) : 1;
      tileCount_[d] = (g_[d] + tile_[d] - 1) / tile_[d];
      tiles_ *= tileCount_[d];
    }
  }

  /// order_: the samples sorted by home tile (the tile of their footprint's centre); start_ and offset_: their
  /// footprints in that order.
  void sortSamples(const RArray& k) {
    // Footprint of sample j along d: grid points i0 .. i0 + W - 1 with i0 = floor(u - W/2) + 1, where
    // u = c_G + s k is the grid position; kernel argument of point i0 + i: (i0 - u) + i in (-W/2, W/2]
    // (kernel_math.hpp, the GPU's rule too).
    std::vector<std::int32_t> start(static_cast<std::size_t>(m_ * dims_));
    std::vector<float> offset(start.size());
    std::vector<std::uint32_t> home(static_cast<std::size_t>(m_));
#pragma omp parallel for schedule(static) if (m_ > kParallelWork / 8)
    for (index_t j = 0; j < m_; ++j) {
      index_t tileIndex = 0, stride = 1;
      for (int d = 0; d < dims_; ++d) {
        const double u = kernels::gridPosition(static_cast<double>(k[3 * j + d]), n_[d], g_[d]);
        const double i0 = kernels::footprintStart(u, width_);
        start[static_cast<std::size_t>(j * dims_ + d)] = static_cast<std::int32_t>(i0);
        offset[static_cast<std::size_t>(j * dims_ + d)] = static_cast<float>(i0 - u);
        const index_t centre = wrap(static_cast<index_t>(std::floor(u)), g_[d]);
        tileIndex += stride * (centre / tile_[d]);
        stride *= tileCount_[d];
      }
      home[static_cast<std::size_t>(j)] = static_cast<std::uint32_t>(tileIndex);
    }
    // Counting sort by home tile (stable: original order within a tile).
    std::vector<index_t> count(static_cast<std::size_t>(tiles_) + 1, 0);
    for (index_t j = 0; j < m_; ++j) ++count[home[static_cast<std::size_t>(j)] + 1];
    for (index_t t = 0; t < tiles_; ++t) count[static_cast<std::size_t>(t) + 1] += count[static_cast<std::size_t>(t)];
    order_.resize(static_cast<std::size_t>(m_));
    for (index_t j = 0; j < m_; ++j) order_[static_cast<std::size_t>(count[home[static_cast<std::size_t>(j)]]++)] =
        static_cast<std::uint32_t>(j);
    start_.resize(start.size());
    offset_.resize(offset.size());
#pragma omp parallel for schedule(static) if (m_ > kParallelWork / 8)
    for (index_t p = 0; p < m_; ++p) {
      const index_t j = order_[static_cast<std::size_t>(p)];
      for (int d = 0; d < dims_; ++d) {
        start_[static_cast<std::size_t>(p * dims_ + d)] = start[static_cast<std::size_t>(j * dims_ + d)];
        offset_[static_cast<std::size_t>(p * dims_ + d)] = offset[static_cast<std::size_t>(j * dims_ + d)];
      }
    }
  }

  /// The distinct tiles along d that sorted sample p's footprint reaches, into out; returns their number.
  int tilesOf(index_t p, int d, index_t* out) const {
    int n = 0;
    const index_t i0 = start_[static_cast<std::size_t>(p * dims_ + d)];
    for (int i = 0; i < width_; ++i) {
      const index_t t = wrap(i0 + i, g_[d]) / tile_[d];
      bool seen = false;
      for (int q = 0; q < n; ++q) seen |= out[q] == t;
      if (!seen) out[n++] = t;
    }
    return n;
  }

  /// f(tile) for every tile sorted sample p's footprint reaches, x fastest.
  template <class F>
  void forEachTile(index_t p, F&& f) const {
    index_t list[3][16];
    int n[3] = {1, 1, 1};
    list[1][0] = list[2][0] = 0;
    for (int d = 0; d < dims_; ++d) n[d] = tilesOf(p, d, list[d]);
    for (int z = 0; z < n[2]; ++z)
      for (int y = 0; y < n[1]; ++y)
        for (int x = 0; x < n[0]; ++x)
          f(list[0][x] + tileCount_[0] * (list[1][y] + tileCount_[1] * list[2][z]));
  }

  /// Tile lists (CSR): every sample whose footprint reaches a tile, in sorted order; tileOrder_: busy tiles first.
  void listTiles() {
    tileStart_.assign(static_cast<std::size_t>(tiles_) + 1, 0);
    for (index_t p = 0; p < m_; ++p) forEachTile(p, [&](index_t t) { ++tileStart_[static_cast<std::size_t>(t) + 1]; });
    for (index_t t = 0; t < tiles_; ++t)
      tileStart_[static_cast<std::size_t>(t) + 1] += tileStart_[static_cast<std::size_t>(t)];
    tileSamples_.resize(static_cast<std::size_t>(tileStart_.back()));
    std::vector<index_t> fill(tileStart_.begin(), tileStart_.end() - 1);
    for (index_t p = 0; p < m_; ++p)
      forEachTile(p, [&](index_t t) {
        tileSamples_[static_cast<std::size_t>(fill[static_cast<std::size_t>(t)]++)] = static_cast<std::uint32_t>(p);
      });
    // Busy tiles first, so the dynamic schedule does not end on a long one.
    tileOrder_.resize(static_cast<std::size_t>(tiles_));
    for (index_t t = 0; t < tiles_; ++t) tileOrder_[static_cast<std::size_t>(t)] = t;
    std::stable_sort(tileOrder_.begin(), tileOrder_.end(), [&](index_t a, index_t b) {
      return tileStart_[static_cast<std::size_t>(a) + 1] - tileStart_[static_cast<std::size_t>(a)] >
             tileStart_[static_cast<std::size_t>(b) + 1] - tileStart_[static_cast<std::size_t>(b)];
    });
  }

  /// Kernel weights at arguments x0 + i, i < W (grid units).
  void weights(float x0, float* w) const {
    if (table_) {
      const float* tab = kernelTable_.data();
      const float limit = static_cast<float>(kernelTable_.size() - 2);
      for (int i = 0; i < width_; ++i) {
        const float t = std::min(std::abs(x0 + static_cast<float>(i)) * kb::kTableResolution, limit);
        const int k = static_cast<int>(t);
        const float f = t - static_cast<float>(k);
        w[i] = tab[k] + f * (tab[k + 1] - tab[k]);
      }
    } else {
      for (int i = 0; i < width_; ++i)
        w[i] = static_cast<float>(kb::kernel(static_cast<double>(x0) + i, width_, beta_) / peak_);
    }
  }

  index_t chunkSize(index_t batch) const {
    const double perCoil = static_cast<double>(gridVoxels_) * sizeof(cfloat);
    const auto fit = static_cast<index_t>(std::max(1.0, std::floor(kGridBudgetBytes / perCoil)));
    return std::max<index_t>(1, std::min({batch, kChunkCoils, fit}));
  }

  Buffer& gridBuffer(index_t chunk) {
    const std::size_t bytes = static_cast<std::size_t>(gridVoxels_ * chunk) * sizeof(cfloat);
    if (!grid_ || grid_->bytes() < bytes) {
      grid_.reset();
      grid_ = backend_.allocate(bytes);
    }
    return *grid_;
  }

  /// sorted_[p * cb + c] = in[order[p] + M c]: the samples of the chunk, coil-interleaved, in tile order.
  void gatherSorted(const cfloat* in, index_t cb) {
    sorted_.resize(static_cast<std::size_t>(m_ * cb));
    cfloat* dst = sorted_.data();
    const std::uint32_t* order = order_.data();
    const index_t m = m_;
#pragma omp parallel for schedule(static) if (m * cb > kParallelWork)
    for (index_t p = 0; p < m; ++p) {
      const index_t j = order[p];
      for (index_t c = 0; c < cb; ++c) dst[p * cb + c] = in[j + m * c];
    }
  }

  void spread(cfloat* grid, index_t cb) {
    // The coil count of a chunk as a compile-time constant where it is common (1 for Pipe-Menon, 8 for
    // full chunks), so the per-point update is a fixed-length vector operation.
    switch (cb) {
      case 1: return dims_ == 2 ? spreadTiles<2, 1>(grid, cb) : spreadTiles<3, 1>(grid, cb);
      case 2: return dims_ == 2 ? spreadTiles<2, 2>(grid, cb) : spreadTiles<3, 2>(grid, cb);
      case 4: return dims_ == 2 ? spreadTiles<2, 4>(grid, cb) : spreadTiles<3, 4>(grid, cb);
      case 8: return dims_ == 2 ? spreadTiles<2, 8>(grid, cb) : spreadTiles<3, 8>(grid, cb);
      default: return dims_ == 2 ? spreadTiles<2, 0>(grid, cb) : spreadTiles<3, 0>(grid, cb);
    }
  }

  /// CB: coils per chunk when known at compile time, 0 for any (cb at run time).
  template <int D, int CB>
  void spreadTiles(cfloat* grid, index_t cb) {
    const index_t tileVoxels = tile_[0] * tile_[1] * tile_[2];
    const float* src = reinterpret_cast<const float*>(sorted_.data());
    const int w = width_;
    const index_t cf = CB > 0 ? 2 * CB : 2 * cb;  // floats per sample
    const index_t work = static_cast<index_t>(tileSamples_.size()) * cb * (D == 2 ? width_ * width_ : width_ * width_ * width_);
    ParallelCancel cancel;  // polled per tile: a 3D multi-coil spread takes seconds
#pragma omp parallel if (tiles_ > 1 && work > kParallelWork)
    {
      std::vector<float> acc(static_cast<std::size_t>(tileVoxels * cf));
      float weight[3][16];
      int local[3][16];
      int n[3];
#pragma omp for schedule(dynamic, 1)
      for (index_t ti = 0; ti < tiles_; ++ti) {
        if (cancel.stop()) continue;
        const index_t t = tileOrder_[static_cast<std::size_t>(ti)];
        index_t o[3], e[3];
        {
          index_t r = t;
          for (int d = 0; d < 3; ++d) {
            const index_t td = r % tileCount_[d];
            r /= tileCount_[d];
            o[d] = td * tile_[d];
            e[d] = std::min(tile_[d], g_[d] - o[d]);
          }
        }
        float* __restrict accData = acc.data();
        std::fill(accData, accData + e[0] * e[1] * e[2] * cf, 0.f);
        const index_t begin = tileStart_[static_cast<std::size_t>(t)], end = tileStart_[static_cast<std::size_t>(t) + 1];
        for (index_t q = begin; q < end; ++q) {
          const index_t p = tileSamples_[static_cast<std::size_t>(q)];
          n[1] = n[2] = 1;
          weight[1][0] = weight[2][0] = 1.f;
          local[1][0] = local[2][0] = 0;
          for (int d = 0; d < D; ++d) {
            const index_t i0 = start_[static_cast<std::size_t>(p * D + d)];
            float wd[16];
            weights(offset_[static_cast<std::size_t>(p * D + d)], wd);
            int cnt = 0;
            for (int i = 0; i < w; ++i) {
              const index_t li = wrapNear(i0 + i, g_[d]) - o[d];
              if (li >= 0 && li < e[d]) {
                local[d][cnt] = static_cast<int>(li);
                weight[d][cnt++] = wd[i];
              }
            }
            n[d] = cnt;
          }
          const float* __restrict s = src + p * cf;
          for (int z = 0; z < n[2]; ++z)
            for (int y = 0; y < n[1]; ++y) {
              const float wzy = weight[2][z] * weight[1][y];
              float* row = accData + ((local[2][z] * e[1] + local[1][y]) * e[0]) * cf;
              for (int x = 0; x < n[0]; ++x) {
                const float wx = wzy * weight[0][x];
                float* __restrict a = row + local[0][x] * cf;
                if constexpr (CB > 0) {
#pragma omp simd
                  for (int f = 0; f < 2 * CB; ++f) a[f] += wx * s[f];
                } else {
                  for (index_t f = 0; f < cf; ++f) a[f] += wx * s[f];
                }
              }
            }
        }
        // The owner stores its tile (every grid point belongs to exactly one tile).
        const cfloat* tileData = reinterpret_cast<const cfloat*>(accData);
        for (index_t c = 0; c < cb; ++c)
          for (index_t z = 0; z < e[2]; ++z)
            for (index_t y = 0; y < e[1]; ++y) {
              cfloat* dst = grid + c * gridVoxels_ + ((o[2] + z) * g_[1] + o[1] + y) * g_[0] + o[0];
              const cfloat* a = tileData + ((z * e[1] + y) * e[0]) * cb + c;
              for (index_t x = 0; x < e[0]; ++x) dst[x] = a[x * cb];
            }
      }
    }
    cancel.rethrow();
  }

  void interpolate(const cfloat* grid, cfloat* out, index_t cb) {
    // Several coils: read them together from a coil-interleaved copy of the grid ([G][cb], one pass),
    // so each footprint point is one contiguous vector of 2 cb floats (the mirror of the spreader's
    // tiles); a single plane is read as it is.
    switch (cb) {
      case 1: return dims_ == 2 ? interpolateSamples<2, 1>(grid, out, cb) : interpolateSamples<3, 1>(grid, out, cb);
      case 2: return dims_ == 2 ? interpolateSamples<2, 2>(interleave(grid, cb), out, cb)
                                : interpolateSamples<3, 2>(interleave(grid, cb), out, cb);
      case 4: return dims_ == 2 ? interpolateSamples<2, 4>(interleave(grid, cb), out, cb)
                                : interpolateSamples<3, 4>(interleave(grid, cb), out, cb);
      case 8: return dims_ == 2 ? interpolateSamples<2, 8>(interleave(grid, cb), out, cb)
                                : interpolateSamples<3, 8>(interleave(grid, cb), out, cb);
      default: return dims_ == 2 ? interpolateSamples<2, 0>(interleave(grid, cb), out, cb)
                                 : interpolateSamples<3, 0>(interleave(grid, cb), out, cb);
    }
  }

  /// grid planes [cb][G] -> interleaved_[G][cb].
  const cfloat* interleave(const cfloat* grid, index_t cb) {
    interleaved_.resize(static_cast<std::size_t>(gridVoxels_ * cb));
    cfloat* dst = interleaved_.data();
    const index_t rows = gridVoxels_ / g_[0], n0 = g_[0], gv = gridVoxels_;
#pragma omp parallel for schedule(static) if (gridVoxels_ * cb > kParallelWork)
    for (index_t r = 0; r < rows; ++r)
      for (index_t c = 0; c < cb; ++c) {
        const cfloat* src = grid + c * gv + r * n0;
        cfloat* d = dst + r * n0 * cb + c;
        for (index_t x = 0; x < n0; ++x) d[x * cb] = src[x];
      }
    return interleaved_.data();
  }

  /// CB = 1: grid is one plane. CB > 1 or 0 (run-time cb): grid is coil-interleaved [G][cb].
  template <int D, int CB>
  void interpolateSamples(const cfloat* grid, cfloat* out, index_t cb) {
    const int w = width_;
    const index_t m = m_;
    const index_t cf = CB > 0 ? 2 * CB : 2 * cb;
    const index_t work = m * cb * (D == 2 ? w * w : w * w * w);
    const float* g = reinterpret_cast<const float*>(grid);
#pragma omp parallel for schedule(static, 256) if (work > kParallelWork)
    for (index_t p = 0; p < m; ++p) {
      float weight[3][16];
      index_t index[3][16];
      for (int d = 0; d < 3; ++d) {
        if (d >= D) {
          weight[d][0] = 1.f;
          index[d][0] = 0;
          continue;
        }
        weights(offset_[static_cast<std::size_t>(p * D + d)], weight[d]);
        const index_t i0 = start_[static_cast<std::size_t>(p * D + d)];
        for (int i = 0; i < w; ++i) index[d][i] = wrapNear(i0 + i, g_[d]);
      }
      float acc[2 * 16];
      std::fill(acc, acc + cf, 0.f);
      const int nz = D == 3 ? w : 1;
      for (int z = 0; z < nz; ++z)
        for (int y = 0; y < w; ++y) {
          const float wzy = weight[2][z] * weight[1][y];
          const index_t row = (index[2][z] * g_[1] + index[1][y]) * g_[0];
          for (int x = 0; x < w; ++x) {
            const float wx = wzy * weight[0][x];
            const float* __restrict v = g + (row + index[0][x]) * cf;
            if constexpr (CB > 0) {
#pragma omp simd
              for (int f = 0; f < 2 * CB; ++f) acc[f] += wx * v[f];
            } else {
              for (index_t f = 0; f < cf; ++f) acc[f] += wx * v[f];
            }
          }
        }
      const index_t j = order_[static_cast<std::size_t>(p)];
      for (index_t c = 0; c < cf / 2; ++c) out[j + m * c] = cfloat(acc[2 * c], acc[2 * c + 1]);
    }
  }

  /// image[n] = grid[centre-aligned n] * deapodization (the crop of the adjoint).
  void cropDeapodize(const cfloat* grid, cfloat* image, index_t cb) {
    const index_t off[3] = {g_[0] / 2 - n_[0] / 2, g_[1] / 2 - n_[1] / 2, g_[2] / 2 - n_[2] / 2};
#pragma omp parallel for collapse(3) schedule(static) if (imageVoxels_ * cb > kParallelWork)
    for (index_t c = 0; c < cb; ++c)
      for (index_t z = 0; z < n_[2]; ++z)
        for (index_t y = 0; y < n_[1]; ++y) {
          const float f = deapod_[2][static_cast<std::size_t>(z)] * deapod_[1][static_cast<std::size_t>(y)];
          const cfloat* src = grid + c * gridVoxels_ + ((z + off[2]) * g_[1] + y + off[1]) * g_[0] + off[0];
          cfloat* dst = image + c * imageVoxels_ + (z * n_[1] + y) * n_[0];
          const float* a = deapod_[0].data();
          for (index_t x = 0; x < n_[0]; ++x) dst[x] = src[x] * (f * a[x]);
        }
  }

  /// grid = zero-padded image * deapodization (the forward's first step).
  void padDeapodize(const cfloat* image, cfloat* grid, index_t cb) {
    const index_t off[3] = {g_[0] / 2 - n_[0] / 2, g_[1] / 2 - n_[1] / 2, g_[2] / 2 - n_[2] / 2};
#pragma omp parallel for collapse(3) schedule(static) if (gridVoxels_ * cb > kParallelWork)
    for (index_t c = 0; c < cb; ++c)
      for (index_t z = 0; z < g_[2]; ++z)
        for (index_t y = 0; y < g_[1]; ++y) {
          cfloat* dst = grid + c * gridVoxels_ + (z * g_[1] + y) * g_[0];
          const index_t iz = z - off[2], iy = y - off[1];
          if (iz < 0 || iz >= n_[2] || iy < 0 || iy >= n_[1]) {
            std::fill(dst, dst + g_[0], cfloat(0));
            continue;
          }
          const float f = deapod_[2][static_cast<std::size_t>(iz)] * deapod_[1][static_cast<std::size_t>(iy)];
          const cfloat* src = image + c * imageVoxels_ + (iz * n_[1] + iy) * n_[0];
          const float* a = deapod_[0].data();
          std::fill(dst, dst + off[0], cfloat(0));
          for (index_t x = 0; x < n_[0]; ++x) dst[off[0] + x] = src[x] * (f * a[x]);
          std::fill(dst + off[0] + n_[0], dst + g_[0], cfloat(0));
        }
  }

  Backend& backend_;
  int dims_ = 2;
  index_t n_[3] = {1, 1, 1}, g_[3] = {1, 1, 1};
  index_t imageVoxels_ = 1, gridVoxels_ = 1, m_ = 0;
  int width_ = 4;
  double beta_ = 0, peak_ = 1;
  bool table_ = true;
  std::vector<float> kernelTable_;
  std::vector<float> deapod_[3];
  // Samples in tile order.
  std::vector<std::uint32_t> order_;  // sorted position -> sample
  std::vector<std::int32_t> start_;   // [p * dims + d]
  std::vector<float> offset_;         // [p * dims + d]
  // Tiles.
  index_t tile_[3] = {1, 1, 1}, tileCount_[3] = {1, 1, 1}, tiles_ = 1;
  std::vector<index_t> tileStart_;
  std::vector<std::uint32_t> tileSamples_;
  std::vector<index_t> tileOrder_;
  // Work buffers.
  std::vector<cfloat> sorted_;
  std::vector<cfloat> interleaved_;
  std::unique_ptr<Buffer> grid_;
};

}  // namespace

std::unique_ptr<NufftPlan> CpuBackend::makeNufftPlan(const NufftGeometry& geometry, const NufftOptions& options) {
  return std::make_unique<CpuNufftPlan>(*this, geometry, options);
}

}  // namespace larmor::cpu
