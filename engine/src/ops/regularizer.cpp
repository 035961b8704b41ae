// W^H W, ||W x||^2 and diag(W^H W) of the priors in ops/regularizer.hpp, on any Backend: the differences
// are the backend's finiteDifference op, the weights elementwise multiplies, so nothing leaves the device.
#include "larmor/ops/regularizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace larmor::ops {

std::string toString(RegularizerKind k) {
  switch (k) {
    case RegularizerKind::Tikhonov: return "tikhonov";
    case RegularizerKind::FiniteDifference: return "fd";
    case RegularizerKind::Anatomical: return "anatomical";
  }
  return "?";
}

RegularizerKind regularizerFromString(const std::string& s) {
  if (s == "tikhonov") return RegularizerKind::Tikhonov;
  if (s == "fd") return RegularizerKind::FiniteDifference;
  if (s == "anatomical") return RegularizerKind::Anatomical;
  throw Error("regularizer " + s + ": expected tikhonov, fd or anatomical");
}

namespace {

std::size_t bytesOf(index_t n) { return static_cast<std::size_t>(n) * sizeof(cfloat); }

/// f(i, coordinate along `axis`, extent along `axis`) for every voxel, without a division per voxel, rows
/// in parallel (128^3 volumes: this runs on the host while a reconstruction is set up). f may write only
/// to entries of voxel i.
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

/// Radix select over the |differences to the next voxel| of `mag` along every axis of extent > 1, computed
/// on the fly (no array of them: at 128^3 that would be 24 MB of fresh pages). Returns the element at
/// position k of their sorted values, exactly as std::nth_element would, from the float bits (monotonic for
/// non-negative floats), 11 + 11 + 10 bits, with per-thread histograms.
float selectDifference(const std::vector<float>& mag, const index_t dims[3], std::uint64_t k) {
  std::uint32_t prefix = 0, prefixMask = 0;
  const int shifts[3] = {21, 10, 0}, widths[3] = {11, 11, 10};
  const index_t rows = dims[1] * dims[2], plane = dims[0] * dims[1];
  for (int pass = 0; pass < 3; ++pass) {
    const int sh = shifts[pass], buckets = 1 << widths[pass];
    const auto mask = static_cast<std::uint32_t>(buckets - 1);
    std::vector<std::uint64_t> hist(static_cast<std::size_t>(buckets), 0);
#pragma omp parallel if (rows * dims[0] > (index_t{1} << 16))
    {
      std::vector<std::uint64_t> local(static_cast<std::size_t>(buckets), 0);
      auto add = [&](float d) {
        std::uint32_t bits;
        std::memcpy(&bits, &d, sizeof bits);
        if ((bits & prefixMask) == prefix) ++local[(bits >> sh) & mask];
      };
#pragma omp for schedule(static) nowait
      for (index_t r = 0; r < rows; ++r) {
        const index_t y = r % dims[1], z = r / dims[1];
        const float* m = mag.data() + r * dims[0];
        for (index_t x = 0; x + 1 < dims[0]; ++x) add(std::abs(m[x + 1] - m[x]));
        if (y + 1 < dims[1])
          for (index_t x = 0; x < dims[0]; ++x) add(std::abs(m[x + dims[0]] - m[x]));
        if (z + 1 < dims[2])
          for (index_t x = 0; x < dims[0]; ++x) add(std::abs(m[x + plane] - m[x]));
      }
#pragma omp critical
      for (int j = 0; j < buckets; ++j) hist[static_cast<std::size_t>(j)] += local[static_cast<std::size_t>(j)];
    }
    int j = 0;
    while (j < buckets - 1 && k >= hist[static_cast<std::size_t>(j)]) k -= hist[static_cast<std::size_t>(j++)];
    prefix |= static_cast<std::uint32_t>(j) << sh;
    prefixMask |= mask << sh;
  }
  float out;
  std::memcpy(&out, &prefix, sizeof out);
  return out;
}

class Tikhonov final : public Regularizer {
 public:
  Tikhonov(Backend& b, const index_t dims[3]) : Regularizer(b, dims) {}
  RegularizerKind kind() const override { return RegularizerKind::Tikhonov; }
  void applyNormal(const Buffer& x, Buffer& y) override { backend_.copy(y, x, bytesOf(size())); }
  double normSquared(const Buffer& x) override {
    const double n = backend_.norm2(x, size());
    return n * n;
  }
  std::vector<double> diagonal() const override { return std::vector<double>(static_cast<std::size_t>(size()), 1.0); }
};

/// W = [w_a D_a] stacked over the axes of extent > 1; unweighted when `weights` is empty.
class FiniteDifferences final : public Regularizer {
 public:
  FiniteDifferences(Backend& b, const index_t dims[3], AnatomicalWeights* weights)
      : Regularizer(b, dims), kind_(weights ? RegularizerKind::Anatomical : RegularizerKind::FiniteDifference) {
    const index_t n = size();
    for (int a = 0; a < 3; ++a)
      if (dims_[a] > 1) axes_.push_back(a);
    if (weights) {
      std::vector<cfloat> w2;  // one staging buffer for every axis
      for (int a : axes_) {
        RArray& w = weights->weights[a];
        require(w.size() == n, "anatomical weights: axis " + std::to_string(a) + " has " + std::to_string(w.size()) +
                                   " weights for " + std::to_string(n) + " voxels");
        w2.resize(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static) if (n > (index_t{1} << 16))
        for (index_t i = 0; i < n; ++i) w2[static_cast<std::size_t>(i)] = cfloat(w[i] * w[i], 0.f);
        auto buf = backend_.allocate(bytesOf(n));
        backend_.upload(*buf, w2.data(), bytesOf(n));
        squaredWeights_[a] = std::move(buf);
        hostWeights_[a] = std::move(w);  // for diag(W^H W); the caller's copy is not needed any more
      }
    }
    tmp_ = backend_.allocate(bytesOf(n));
    tmp2_ = backend_.allocate(bytesOf(n));
  }
  RegularizerKind kind() const override { return kind_; }

  void applyNormal(const Buffer& x, Buffer& y) override {
    const index_t n = size();
    if (axes_.empty()) {  // a single voxel: no differences
      backend_.fill(y, cfloat(0.f), n);
      return;
    }
    bool first = true;
    for (int a : axes_) {
      backend_.finiteDifference(*tmp_, x, dims_, 1, a, false);
      if (squaredWeights_[a]) backend_.multiply(*tmp_, *squaredWeights_[a], n, *tmp_, n, false);
      if (first) {
        backend_.finiteDifference(y, *tmp_, dims_, 1, a, true);
        first = false;
      } else {
        backend_.finiteDifference(*tmp2_, *tmp_, dims_, 1, a, true);
        backend_.axpby(y, cfloat(1.f), *tmp2_, cfloat(1.f), n);
      }
    }
  }

  double normSquared(const Buffer& x) override {
    const index_t n = size();
    double s = 0;
    for (int a : axes_) {
      backend_.finiteDifference(*tmp_, x, dims_, 1, a, false);
      if (squaredWeights_[a]) {
        backend_.multiply(*tmp2_, *squaredWeights_[a], n, *tmp_, n, false);
        s += backend_.dot(*tmp_, *tmp2_, n).real();  // sum w^2 |D x|^2
      } else {
        const double v = backend_.norm2(*tmp_, n);
        s += v * v;
      }
    }
    return s;
  }

  std::vector<double> diagonal() const override {
    // (D_a^H diag(w^2) D_a)_{ii} = w_a(i)^2 [i_a < N_a - 1] + w_a(i - e_a)^2 [i_a > 0].
    const index_t n = size();
    std::vector<double> d(static_cast<std::size_t>(n), 0.0);
    for (int a : axes_) {
      const index_t stride = a == 0 ? 1 : a == 1 ? dims_[0] : dims_[0] * dims_[1];
      const float* w = squaredWeights_[a] ? hostWeights_[a].data() : nullptr;
      forEachVoxel(dims_, a, [&](index_t i, index_t c, index_t len) {
        if (c < len - 1) d[i] += w ? static_cast<double>(w[i]) * w[i] : 1.0;
        if (c > 0) d[i] += w ? static_cast<double>(w[i - stride]) * w[i - stride] : 1.0;
      });
    }
    return d;
  }

 private:
  RegularizerKind kind_;
  std::vector<int> axes_;
  std::unique_ptr<Buffer> squaredWeights_[3];
  RArray hostWeights_[3];
  std::unique_ptr<Buffer> tmp_, tmp2_;
};

}  // namespace

AnatomicalWeights anatomicalWeights(const CArray& reference, const index_t dims[3], double delta) {
  const index_t n = dims[0] * dims[1] * dims[2];
  require(reference.size() == n, "anatomical prior: the reference image has " + std::to_string(reference.size()) +
                                     " voxels, the reconstruction " + std::to_string(n) + " (" +
                                     std::to_string(dims[0]) + "x" + std::to_string(dims[1]) + "x" +
                                     std::to_string(dims[2]) + ")");
  std::vector<float> mag(static_cast<std::size_t>(n));
  bool finite = true;
#pragma omp parallel for schedule(static) reduction(&& : finite) if (n > (index_t{1} << 16))
  for (index_t i = 0; i < n; ++i) {
    // |z| without hypot's care for overflow (a reference image is nowhere near 1e19): several times faster.
    const double re = reference[i].real(), im = reference[i].imag();
    mag[static_cast<std::size_t>(i)] = static_cast<float>(std::sqrt(re * re + im * im));
    finite = finite && std::isfinite(mag[static_cast<std::size_t>(i)]);
  }
  if (!finite)
    for (index_t i = 0; i < n; ++i)
      require(std::isfinite(mag[static_cast<std::size_t>(i)]),
              "anatomical prior: the reference image has a non-finite voxel " + std::to_string(i));
  AnatomicalWeights out;
  std::uint64_t count = 0;
  for (int a = 0; a < 3; ++a) {
    out.weights[a] = RArray(Shape{dims[0], dims[1], dims[2]}, 1.f);
    if (dims[a] > 1) count += static_cast<std::uint64_t>(n - n / dims[a]);
  }
  if (delta <= 0) {
    double median = 0, maximum = 0;
    if (count > 0) {
      float mx = 0.f;
      const index_t rows = dims[1] * dims[2], plane = dims[0] * dims[1];
#pragma omp parallel for schedule(static) reduction(max : mx) if (n > (index_t{1} << 16))
      for (index_t r = 0; r < rows; ++r) {
        const index_t y = r % dims[1], z = r / dims[1];
        const float* m = mag.data() + r * dims[0];
        for (index_t x = 0; x + 1 < dims[0]; ++x) mx = std::max(mx, std::abs(m[x + 1] - m[x]));
        if (y + 1 < dims[1])
          for (index_t x = 0; x < dims[0]; ++x) mx = std::max(mx, std::abs(m[x + dims[0]] - m[x]));
        if (z + 1 < dims[2])
          for (index_t x = 0; x < dims[0]; ++x) mx = std::max(mx, std::abs(m[x + plane] - m[x]));
      }
      maximum = mx;
      median = selectDifference(mag, dims, count / 2);
    }
    delta = std::max(3.0 * median, 0.02 * maximum);
    // A constant reference has no edges: every weight 1 (plain smoothness).
    if (!(delta > 0)) delta = 1.0;
  }
  out.delta = delta;
  for (int a = 0; a < 3; ++a) {
    if (dims[a] <= 1) continue;
    const index_t stride = a == 0 ? 1 : a == 1 ? dims[0] : dims[0] * dims[1];
    float* w = out.weights[a].data();
    forEachVoxel(dims, a, [&](index_t i, index_t c, index_t len) {
      if (c >= len - 1) return;
      const double t = (mag[i + stride] - mag[i]) / delta;
      w[i] = static_cast<float>(1.0 / std::sqrt(1.0 + t * t));
    });
  }
  return out;
}

std::unique_ptr<Regularizer> makeTikhonov(Backend& backend, const index_t dims[3]) {
  return std::make_unique<Tikhonov>(backend, dims);
}
std::unique_ptr<Regularizer> makeFiniteDifference(Backend& backend, const index_t dims[3]) {
  return std::make_unique<FiniteDifferences>(backend, dims, nullptr);
}
std::unique_ptr<Regularizer> makeWeightedFiniteDifference(Backend& backend, const index_t dims[3],
                                                          AnatomicalWeights weights) {
  return std::make_unique<FiniteDifferences>(backend, dims, &weights);
}
std::unique_ptr<Regularizer> makeAnatomical(Backend& backend, const index_t dims[3], const CArray& reference,
                                            double delta) {
  return makeWeightedFiniteDifference(backend, dims, anatomicalWeights(reference, dims, delta));
}

}  // namespace larmor::ops
