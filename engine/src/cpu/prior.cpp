// The set-up ops of the iterative reconstruction's priors on the CPU (PriorOps::neighbourDifferences,
// edgeWeights, addDifferenceDiagonal; formulas in larmor/backend/prior_ops.hpp and ops/regularizer.hpp).
// They run once per reconstruction on volumes of up to 128^3 and more, so each is one parallel pass over
// the rows without per-voxel divisions, and nothing is kept but the output (no array of differences: at
// 128^3 that would be 24 MB of fresh pages).
//
// Twin: cuda/prior.cu, which gives the same bits; with finite_difference.cpp these are CpuPriorOps
// (larmor/backend/prior_ops.hpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cpu_backend.hpp"
#include "larmor/kernels/kernel_math.hpp"

namespace larmor::cpu {

namespace {

using kernels::axisStride;

/// |z| in double, rounded to float (without hypot's care for overflow: several times faster).
inline float magnitude(cfloat z) {
  const double re = z.real(), im = z.imag();
  return static_cast<float>(std::sqrt(re * re + im * im));
}

/// f(i, coordinate along `axis`, extent along `axis`) for every voxel, without a division per voxel, rows
/// in parallel. f may write only to entries of voxel i.
template <class F>
void forEachVoxel(const index_t dims[3], int axis, F&& f) {
  const index_t rows = dims[1] * dims[2];
#pragma omp parallel for schedule(static) if (rows * dims[0] > (index_t{1} << 16))
  for (index_t r = 0; r < rows; ++r) {
    const index_t y = r % dims[1], z = r / dims[1];
    index_t i = r * dims[0];
    for (index_t x = 0; x < dims[0]; ++x, ++i) f(i, axis == 0 ? x : axis == 1 ? y : z, dims[axis]);
  }
}

/// g(|difference|) for every neighbour pair inside the volume of `mag` (every axis of extent > 1), rows
/// in parallel; g is called from several threads (per-thread state goes through `perThread`).
template <class Local, class G, class Merge>
void forEachDifference(const std::vector<float>& mag, const index_t dims[3], Local make, G&& g, Merge&& merge) {
  const index_t rows = dims[1] * dims[2], plane = dims[0] * dims[1];
#pragma omp parallel if (rows * dims[0] > (index_t{1} << 16))
  {
    auto local = make();
#pragma omp for schedule(static) nowait
    for (index_t r = 0; r < rows; ++r) {
      const index_t y = r % dims[1], z = r / dims[1];
      const float* m = mag.data() + r * dims[0];
      for (index_t x = 0; x + 1 < dims[0]; ++x) g(local, std::abs(m[x + 1] - m[x]));
      if (y + 1 < dims[1])
        for (index_t x = 0; x < dims[0]; ++x) g(local, std::abs(m[x + dims[0]] - m[x]));
      if (z + 1 < dims[2])
        for (index_t x = 0; x < dims[0]; ++x) g(local, std::abs(m[x + plane] - m[x]));
    }
#pragma omp critical
    merge(local);
  }
}

/// Radix select over the differences: the element at rank k of their sorted values, exactly as
/// std::nth_element would place it, from the float bits (monotonic for non-negative floats), 11 + 11 + 10
/// bits, with per-thread histograms.
float selectDifference(const std::vector<float>& mag, const index_t dims[3], std::uint64_t k) {
  std::uint32_t prefix = 0, prefixMask = 0;
  const int shifts[3] = {21, 10, 0}, widths[3] = {11, 11, 10};
  for (int pass = 0; pass < 3; ++pass) {
    const int sh = shifts[pass], buckets = 1 << widths[pass];
    const auto mask = static_cast<std::uint32_t>(buckets - 1);
    std::vector<std::uint64_t> hist(static_cast<std::size_t>(buckets), 0);
    forEachDifference(
        mag, dims, [&] { return std::vector<std::uint64_t>(static_cast<std::size_t>(buckets), 0); },
        [&](std::vector<std::uint64_t>& local, float d) {
          std::uint32_t bits;
          std::memcpy(&bits, &d, sizeof bits);
          if ((bits & prefixMask) == prefix) ++local[(bits >> sh) & mask];
        },
        [&](const std::vector<std::uint64_t>& local) {
          for (int j = 0; j < buckets; ++j) hist[static_cast<std::size_t>(j)] += local[static_cast<std::size_t>(j)];
        });
    int j = 0;
    while (j < buckets - 1 && k >= hist[static_cast<std::size_t>(j)]) k -= hist[static_cast<std::size_t>(j++)];
    prefix |= static_cast<std::uint32_t>(j) << sh;
    prefixMask |= mask << sh;
  }
  float out;
  std::memcpy(&out, &prefix, sizeof out);
  return out;
}

}  // namespace

PriorOps::NeighbourDifferences CpuPriorOps::neighbourDifferences(const Buffer& image, const index_t dims[3],
                                                                 std::uint64_t k) {
  checkImage(dims, "neighbour differences");
  const index_t n = dims[0] * dims[1] * dims[2];
  const cfloat* p = elements(image, n, "neighbour differences");
  const std::uint64_t count = neighbourPairs(dims);
  require(count == 0 || k < count, "neighbour differences: rank " + std::to_string(k) + " of " +
                                       std::to_string(count) + " differences");
  std::vector<float> mag(static_cast<std::size_t>(n));
  bool finite = true;
#pragma omp parallel for schedule(static) reduction(&& : finite) if (n > (index_t{1} << 16))
  for (index_t i = 0; i < n; ++i) {
    mag[static_cast<std::size_t>(i)] = magnitude(p[i]);
    finite = finite && std::isfinite(mag[static_cast<std::size_t>(i)]);
  }
  NeighbourDifferences out;
  out.finite = finite;
  if (!finite || count == 0) return out;
  forEachDifference(
      mag, dims, [] { return 0.f; }, [](float& mx, float d) { mx = std::max(mx, d); },
      [&](float mx) { out.maximum = std::max(out.maximum, mx); });
  out.kth = selectDifference(mag, dims, k);
  return out;
}

void CpuPriorOps::edgeWeights(Buffer& out, const Buffer& image, const index_t dims[3], int axis, double delta) {
  checkImage(dims, "edge weights");
  checkAxis(axis, "edge weights");
  require(delta > 0 && std::isfinite(delta), "edge weights: the edge scale must be > 0");
  const index_t n = dims[0] * dims[1] * dims[2];
  const cfloat* p = elements(image, n, "edge weights");
  cfloat* w = elements(out, n, "edge weights");
  require(static_cast<const void*>(w) != static_cast<const void*>(p) || n == 0, "edge weights cannot run in place");
  const index_t stride = axisStride(dims, axis);
  forEachVoxel(dims, axis, [&](index_t i, index_t c, index_t len) {
    if (c >= len - 1) {
      w[i] = cfloat(1.f, 0.f);
      return;
    }
    const double t = (static_cast<double>(magnitude(p[i + stride])) - magnitude(p[i])) / delta;
    w[i] = cfloat(static_cast<float>(1.0 / std::sqrt(1.0 + t * t)), 0.f);
  });
}

void CpuPriorOps::addDifferenceDiagonal(Buffer& out, const Buffer* weights, const index_t dims[3], int axis) {
  checkImage(dims, "difference diagonal");
  checkAxis(axis, "difference diagonal");
  const index_t n = dims[0] * dims[1] * dims[2];
  cfloat* d = elements(out, n, "difference diagonal");
  const cfloat* w = weights ? elements(*weights, n, "difference diagonal") : nullptr;
  const index_t stride = axisStride(dims, axis);
  forEachVoxel(dims, axis, [&](index_t i, index_t c, index_t len) {
    float v = d[i].real();
    if (c < len - 1) v += w ? w[i].real() : 1.f;
    if (c > 0) v += w ? w[i - stride].real() : 1.f;
    d[i] = cfloat(v, 0.f);
  });
}

}  // namespace larmor::cpu
