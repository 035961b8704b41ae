#include "larmor/quality/display.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "larmor/util/error.hpp"

namespace larmor::quality {

std::string toString(Component c) {
  switch (c) {
    case Component::Magnitude: return "magnitude";
    case Component::Phase: return "phase";
    case Component::Real: return "real";
    case Component::Imaginary: return "imaginary";
  }
  return "?";
}

Component componentFromString(const std::string& s) {
  for (Component c : {Component::Magnitude, Component::Phase, Component::Real, Component::Imaginary})
    if (toString(c) == s) return c;
  throw Error("component " + s + ": expected magnitude, phase, real or imaginary");
}

RArray component(const CArray& image, Component c, double scale) {
  RArray out(image.shape());
  const float s = static_cast<float>(scale);
  const index_t n = image.size();
  const cfloat* in = image.data();
  float* o = out.data();
  switch (c) {
    case Component::Magnitude:
      for (index_t i = 0; i < n; ++i) o[i] = s * std::abs(in[i]);
      break;
    case Component::Phase:
      for (index_t i = 0; i < n; ++i) o[i] = std::arg(in[i]);
      break;
    case Component::Real:
      for (index_t i = 0; i < n; ++i) o[i] = s * in[i].real();
      break;
    case Component::Imaginary:
      for (index_t i = 0; i < n; ++i) o[i] = s * in[i].imag();
      break;
  }
  return out;
}

namespace {

std::vector<float> finiteValues(const RArray& image) {
  std::vector<float> v;
  v.reserve(static_cast<std::size_t>(image.size()));
  for (float x : image.vec())
    if (std::isfinite(x)) v.push_back(x);
  return v;
}

DisplayWindow widen(float lo, float hi) {
  if (hi > lo) return {lo, hi};
  return {lo - 0.5f, lo + 0.5f};
}

}  // namespace

DisplayWindow percentileWindow(const RArray& image, double lowPercent, double highPercent) {
  require(lowPercent >= 0 && highPercent <= 100 && lowPercent <= highPercent,
          "percentileWindow: expected 0 <= low <= high <= 100");
  std::vector<float> v = finiteValues(image);
  if (v.empty()) return {0, 1};
  // Subsample large volumes: the percentiles of a 256^3 volume move by far less than a grey level when
  // estimated from ~1M evenly spread voxels, and the window must follow a slider interactively.
  constexpr std::size_t kMaxSamples = 1 << 20;
  if (v.size() > kMaxSamples) {
    const std::size_t step = (v.size() + kMaxSamples - 1) / kMaxSamples;
    std::size_t k = 0;
    for (std::size_t i = 0; i < v.size(); i += step) v[k++] = v[i];
    v.resize(k);
  }
  auto at = [&](double pct) {
    const auto k = static_cast<std::size_t>(std::llround(pct / 100.0 * static_cast<double>(v.size() - 1)));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
  };
  const float lo = at(lowPercent);
  const float hi = at(highPercent);
  return widen(lo, hi);
}

DisplayWindow valueRange(const RArray& image) {
  const std::vector<float> v = finiteValues(image);
  if (v.empty()) return {0, 1};
  const auto [mn, mx] = std::minmax_element(v.begin(), v.end());
  return widen(*mn, *mx);
}

ProbeValue probe(const CArray& image, index_t x, index_t y, index_t z, index_t frame) {
  const Shape& s = image.shape();
  const index_t frames = image.size() / std::max<index_t>(1, s.span(0, 3));
  require(x >= 0 && y >= 0 && z >= 0 && frame >= 0 && x < s[0] && y < s[1] && z < s[2] && frame < frames,
          "probe: voxel outside the image " + s.str());
  const cfloat v = image[((frame * s[2] + z) * s[1] + y) * s[0] + x];
  return {v, std::abs(v), std::arg(v)};
}

CArray plane(const CArray& volume, int normalAxis, index_t index) {
  const Shape& s = volume.shape();
  const index_t nx = s[0], ny = s[1], nz = s[2];
  require(volume.size() == nx * ny * nz, "plane: expected a volume [x, y, z], got " + s.str());
  require(normalAxis >= 0 && normalAxis <= 2, "plane: the normal axis must be 0, 1 or 2");
  require(index >= 0 && index < s[static_cast<std::size_t>(normalAxis)],
          "plane: index " + std::to_string(index) + " outside " + s.str());
  if (normalAxis == 2) {
    CArray out(Shape{nx, ny, 1});
    std::copy_n(volume.data() + index * nx * ny, nx * ny, out.data());
    return out;
  }
  if (normalAxis == 1) {
    CArray out(Shape{nx, nz, 1});
    for (index_t z = 0; z < nz; ++z)
      std::copy_n(volume.data() + (z * ny + index) * nx, nx, out.data() + z * nx);
    return out;
  }
  CArray out(Shape{ny, nz, 1});
  for (index_t z = 0; z < nz; ++z)
    for (index_t y = 0; y < ny; ++y) out[z * ny + y] = volume[(z * ny + y) * nx + index];
  return out;
}

CArray comparisonTruth(const Dataset& d) {
  require(d.reference.has_value(), d.source + ": has no reference image to compare with");
  const CArray& ref = *d.reference;
  if (!d.coilMaps || d.header.coils <= 1) return ref;
  const CArray& maps = *d.coilMaps;
  const index_t voxels = ref.shape().span(0, 3), slices = ref.size() / voxels, coils = d.header.coils;
  require(maps.size() == voxels * coils * slices, d.source + ": coil maps do not match the reference image");
  CArray weighted(ref.shape());
  // A pass over the maps at the host's memory speed: a few threads saturate it, and each more thread to wake
  // (OMP_WAIT_POLICY=PASSIVE in the programs) only adds to a 256^2 x 8 slice's fraction of a millisecond.
#pragma omp parallel for collapse(2) schedule(static) num_threads(4) if (voxels * slices * coils >= (1 << 16))
  for (index_t sl = 0; sl < slices; ++sl)
    for (index_t v = 0; v < voxels; ++v) {
      double w = 0;
      for (index_t c = 0; c < coils; ++c) w += std::norm(cdouble(maps[(sl * coils + c) * voxels + v]));
      // |ref| as the root of the squared norm: the same value as std::abs here, without hypot's cost.
      const double r = std::sqrt(std::norm(cdouble(ref[sl * voxels + v])));
      weighted[sl * voxels + v] = cfloat(static_cast<float>(r * std::sqrt(w)), 0.f);
    }
  return weighted;
}

CDeviceArray comparisonTruthOn(Backend& backend, const Dataset& d) {
  require(d.reference.has_value(), d.source + ": has no reference image to compare with");
  const CArray& ref = *d.reference;
  if (!d.coilMaps || d.header.coils <= 1) return CDeviceArray::upload(backend, ref);
  const index_t voxels = ref.shape().span(0, 3), slices = ref.size() / voxels, coils = d.header.coils;
  require(d.coilMaps->size() == voxels * coils * slices, d.source + ": coil maps do not match the reference image");
  // The maps first, onto the idle stream: a large pinned array then goes by one DMA (HostStaging), where behind
  // the reference's upload it would be staged through a host copy (0.4 ms of the 256^2 x 8 call, measured on the H100).
  const CDeviceArray maps = CDeviceArray::upload(backend, *d.coilMaps);
  CDeviceArray truth = CDeviceArray::upload(backend, ref);
  auto root = backend.allocate(static_cast<std::size_t>(ref.size()) * sizeof(cfloat));
  backend.sumOfSquares(*root, maps.buffer(), voxels, coils, slices);
  backend.multiply(truth.buffer(), *root, ref.size(), truth.buffer(), ref.size(), false);
  return truth;
}

Metrics compareWithTruthOn(Backend& backend, const CArray& image, const Dataset& d) {
  const CDeviceArray truth = comparisonTruthOn(backend, d);
  return compareOn(backend, image, truth);
}

}  // namespace larmor::quality
