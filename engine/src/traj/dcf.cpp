#include "larmor/traj/dcf.hpp"

#include <algorithm>
#include <cmath>
#include <list>
#include <mutex>
#include <numbers>
#include <vector>

#include "larmor/traj/trajectory.hpp"

namespace larmor::traj {

RArray rampWeights(const RArray& k, int dims) {
  require(dims == 2 || dims == 3, "ramp DCF: dims must be 2 or 3");
  require(!k.empty() && k.shape()[0] == 3, "ramp DCF: the trajectory is empty");
  const index_t n = k.shape()[1], profiles = k.shape()[2];
  require(n >= 2, "ramp DCF needs at least 2 samples per spoke, got " + std::to_string(n));
  require(isRadialLines(k), "ramp DCF needs radial spokes (every profile a line through k = 0); use "
                            "--dcf pipe-menon for this trajectory");
  const double pi = std::numbers::pi;
  // Per profile: sample spacing, direction, and whether it has samples on both sides of k = 0 (a full
  // spoke: two rays) or one (centre-out: one ray).
  // positions[p]: the samples' signed positions along profile p's line (profileLine), kept for the weights.
  std::vector<std::vector<double>> positions(static_cast<std::size_t>(profiles));
  std::vector<double> spacing(static_cast<std::size_t>(profiles)), angle(spacing.size());
  std::vector<char> full(spacing.size());
  for (index_t p = 0; p < profiles; ++p) {
    double u[3];
    std::vector<double>& t = positions[static_cast<std::size_t>(p)];
    profileLine(k.data() + 3 * n * p, n, u, t);
    const auto [lo, hi] = std::minmax_element(t.begin(), t.end());
    const double dk = (*hi - *lo) / static_cast<double>(n - 1);
    spacing[static_cast<std::size_t>(p)] = dk;
    full[static_cast<std::size_t>(p)] = *lo < -0.5 * dk && *hi > 0.5 * dk;
    angle[static_cast<std::size_t>(p)] = std::atan2(u[1], u[0]);
  }
  // 2D: the angular share of every ray (half the gaps to its neighbours on the circle), so spokes at
  // uneven angles (golden angle: gaps up to 1.6x the mean) get their own sector; for P evenly spaced full
  // spokes every share is pi/P and the weights are the textbook ramp pi |k| dk / P.
  // 3D: rays are taken as evenly spread over the sphere (the golden means keep them nearly so).
  std::vector<double> share(static_cast<std::size_t>(2 * profiles), 0.0);  // [2p]: +u ray, [2p+1]: -u ray
  double rays = 0;
  {
    std::vector<std::pair<double, index_t>> dirs;  // (angle in [0, 2 pi), ray id)
    for (index_t p = 0; p < profiles; ++p) {
      const auto wrap2pi = [&](double a) { return a - 2 * pi * std::floor(a / (2 * pi)); };
      dirs.emplace_back(wrap2pi(angle[static_cast<std::size_t>(p)]), 2 * p);
      if (full[static_cast<std::size_t>(p)]) dirs.emplace_back(wrap2pi(angle[static_cast<std::size_t>(p)] + pi), 2 * p + 1);
    }
    rays = static_cast<double>(dirs.size());
    std::sort(dirs.begin(), dirs.end());
    const std::size_t nd = dirs.size();
    for (std::size_t i = 0; i < nd; ++i) {
      const double prev = i == 0 ? dirs[nd - 1].first - 2 * pi : dirs[i - 1].first;
      const double next = i + 1 == nd ? dirs[0].first + 2 * pi : dirs[i + 1].first;
      share[static_cast<std::size_t>(dirs[i].second)] = nd == 1 ? 2 * pi : 0.5 * (next - prev);
    }
  }
  RArray w(Shape{n * profiles});
  for (index_t p = 0; p < profiles; ++p) {
    const double dk = spacing[static_cast<std::size_t>(p)];
    const std::vector<double>& t = positions[static_cast<std::size_t>(p)];
    const double sPlus = share[static_cast<std::size_t>(2 * p)], sMinus = share[static_cast<std::size_t>(2 * p + 1)];
    for (index_t i = 0; i < n; ++i) {
      const double ti = t[static_cast<std::size_t>(i)], r = std::abs(ti);
      double wi;
      if (r < 0.25 * dk) {
        // k = 0: the central disc (ball) of radius dk/2, shared by the spokes (each with its rays' sectors).
        wi = dims == 2 ? 0.5 * (dk / 2) * (dk / 2) * (sPlus + sMinus)
                       : pi * dk * dk * dk / 6 * (full[static_cast<std::size_t>(p)] ? 2 : 1) / rays;
      } else {
        // The ring (shell) [r - dk/2, r + dk/2]: the ray's sector of it.
        wi = dims == 2 ? r * dk * (ti > 0 ? sPlus : sMinus) : (4 * pi * r * r * dk + pi * dk * dk * dk / 3) / rays;
      }
      w[i + n * p] = static_cast<float>(wi);
    }
  }
  return w;
}

namespace {

/// spreadInterpolate of w on a plan, downloaded.
std::vector<cfloat> applySpreadInterpolate(Backend& backend, NufftPlan& plan, const std::vector<cfloat>& w) {
  const index_t m = plan.samples();
  const std::size_t bytes = static_cast<std::size_t>(m) * sizeof(cfloat);
  auto in = backend.allocate(bytes), out = backend.allocate(bytes);
  backend.upload(*in, w.data(), bytes);
  plan.spreadInterpolate(*in, *out);
  std::vector<cfloat> result(static_cast<std::size_t>(m));
  backend.download(result.data(), *out, bytes);
  return result;
}

/// The scale c of dcf.hpp: spreadInterpolate at the centre sample of a uniform lattice of spacing 1/4
/// cycle/FOV with weights 1/16 (1/64 in 3D), i.e. unit weight per (cycles/FOV)^d. The lattice is fine so
/// that it samples the kernel without aliasing: on a unit-spacing lattice the sum picks up the kernel
/// transform's alias at 1/(sigma * spacing) cycles per grid point, about +9% for W = 4, sigma = 2, and the
/// scale would then depend on the sampling pattern. When the matrix is large enough the lattice is a patch
/// around k = 0 a little wider than the kernel's reach; otherwise the full periodic lattice, whose samples
/// all see the same neighbourhood.
double latticeScale(Backend& backend, const NufftGeometry& g, const NufftOptions& nufft) {
  const int dims = g.dims;
  constexpr int kFine = 4;  // lattice points per cycle/FOV
  // Reach of spread-then-interpolate: W grid points = W/sigma cycles/FOV at most, each way.
  const index_t reach = static_cast<index_t>(std::ceil(nufft.width / nufft.oversampling)) + 1;
  bool patch = true;
  for (int d = 0; d < dims; ++d) patch &= g.image[d] >= 2 * reach + 2;
  index_t count[3] = {1, 1, 1};
  double first[3] = {0, 0, 0};
  for (int d = 0; d < dims; ++d) {
    count[d] = patch ? 2 * kFine * reach + 1 : kFine * g.image[d];
    first[d] = patch ? -static_cast<double>(reach) : -static_cast<double>(g.image[d] / 2);
  }
  const index_t m = count[0] * count[1] * count[2];
  NufftGeometry lattice;
  lattice.dims = dims;
  for (int d = 0; d < 3; ++d) lattice.image[d] = g.image[d];
  lattice.trajectory = RArray(Shape{3, m}, 0.f);
  index_t probe = 0;
  for (index_t c = 0, j = 0; c < count[2]; ++c)
    for (index_t b = 0; b < count[1]; ++b)
      for (index_t a = 0; a < count[0]; ++a, ++j) {
        const index_t idx[3] = {a, b, c};
        bool centre = true;
        for (int d = 0; d < dims; ++d) {
          lattice.trajectory[3 * j + d] = static_cast<float>(first[d] + static_cast<double>(idx[d]) / kFine);
          centre &= idx[d] == (patch ? kFine * reach : count[d] / 2);
        }
        if (centre) probe = j;
      }
  auto plan = backend.makeNufftPlan(lattice, nufft);
  const float weight = static_cast<float>(std::pow(1.0 / kFine, dims));
  const auto si = applySpreadInterpolate(backend, *plan, std::vector<cfloat>(static_cast<std::size_t>(m), cfloat(weight)));
  return si[static_cast<std::size_t>(probe)].real();
}

}  // namespace

RArray pipeMenonWeights(Backend& backend, const NufftGeometry& g, int iterations, const NufftOptions& nufft,
                        const Progress& progress) {
  require(iterations >= 1 && iterations <= 1000, "Pipe-Menon DCF: iterations must be 1 to 1000");
  auto plan = backend.makeNufftPlan(g, nufft);
  const index_t m = plan->samples();
  std::vector<cfloat> w(static_cast<std::size_t>(m), cfloat(1));
  for (int it = 0; it < iterations; ++it) {
    const auto d = applySpreadInterpolate(backend, *plan, w);
    for (index_t j = 0; j < m; ++j) {
      const float v = d[static_cast<std::size_t>(j)].real();
      // v > 0 wherever the sample itself contributes (kernel peak); guard against pathological zeros.
      w[static_cast<std::size_t>(j)] = v > 0 ? cfloat(w[static_cast<std::size_t>(j)].real() / v) : cfloat(0);
    }
    progress.report(static_cast<double>(it + 1) / iterations,
                    "iteration " + std::to_string(it + 1) + "/" + std::to_string(iterations));
  }
  const double c = latticeScale(backend, g, nufft);
  RArray out(Shape{m});
  for (index_t j = 0; j < m; ++j) out[j] = static_cast<float>(c * w[static_cast<std::size_t>(j)].real());
  return out;
}

namespace {

struct CacheEntry {
  std::uint64_t key;
  RArray weights;
};

std::mutex cacheMutex;
std::list<CacheEntry> cache;  // most recent first
constexpr std::size_t kCacheEntries = 16;

std::uint64_t mixKey(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

}  // namespace

RArray densityCompensation(Backend& backend, const NufftGeometry& g, const DcfOptions& o, const Progress& progress) {
  std::uint64_t key = hash(g.trajectory);
  key = mixKey(key, static_cast<std::uint64_t>(g.dims));
  for (int d = 0; d < 3; ++d) key = mixKey(key, static_cast<std::uint64_t>(g.image[d]));
  key = mixKey(key, static_cast<std::uint64_t>(o.method));
  if (o.method == DcfMethod::PipeMenon) {
    key = mixKey(key, static_cast<std::uint64_t>(o.iterations));
    key = mixKey(key, static_cast<std::uint64_t>(o.nufft.width));
    key = mixKey(key, static_cast<std::uint64_t>(std::llround(o.nufft.oversampling * 1e6)));
    key = mixKey(key, static_cast<std::uint64_t>(o.nufft.kernel));
    // Weights from different backends agree to rounding; the device is not part of the key.
  }
  {
    std::lock_guard lock(cacheMutex);
    for (auto it = cache.begin(); it != cache.end(); ++it)
      if (it->key == key && it->weights.size() == g.samples()) {
        cache.splice(cache.begin(), cache, it);
        progress.report(1.0, "cached");
        return cache.front().weights;
      }
  }
  RArray w;
  const std::optional<StackInfo> stack = g.dims == 3 ? detectStack(g.trajectory) : std::nullopt;
  if (stack) {
    // Separable: the plane's 2D weights times the kz spacing (exact for the Cartesian kz direction; a
    // 3D Pipe-Menon would see the grid-sampled kernel alias at the unit kz spacing, dcf.hpp).
    const index_t image2[3] = {g.image[0], g.image[1], 1};
    const NufftGeometry plane = geometry(stack->plane, 2, image2);
    const RArray w2 = o.method == DcfMethod::Ramp ? rampWeights(plane.trajectory, 2)
                                                  : pipeMenonWeights(backend, plane, o.iterations, o.nufft, progress);
    const index_t n = g.trajectory.shape()[1], profiles = g.trajectory.shape()[2];
    w = RArray(Shape{n * profiles});
    for (index_t p = 0; p < profiles; ++p)
      for (index_t i = 0; i < n; ++i)
        w[i + n * p] = static_cast<float>(w2[i + n * stack->profileInPlane[static_cast<std::size_t>(p)]] * stack->kzSpacing);
  } else {
    w = o.method == DcfMethod::Ramp ? rampWeights(g.trajectory, g.dims)
                                    : pipeMenonWeights(backend, g, o.iterations, o.nufft, progress);
  }
  progress.report(1.0, "done");
  std::lock_guard lock(cacheMutex);
  cache.push_front({key, w});
  while (cache.size() > kCacheEntries) cache.pop_back();
  return w;
}

std::size_t dcfCacheEntries() {
  std::lock_guard lock(cacheMutex);
  return cache.size();
}

void clearDcfCache() {
  std::lock_guard lock(cacheMutex);
  cache.clear();
}

}  // namespace larmor::traj
