// Toeplitz embedding of F^H F (ops/toeplitz.hpp): Q on the 2N grid by one adjoint transform, its FFT kept
// in the backend's memory, one FFT pair per application; Q cached on disk.
#include "larmor/ops/toeplitz.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "larmor/io/cfl.hpp"
#include "larmor/util/atomic_file.hpp"
#include "larmor/util/cancel_scope.hpp"

namespace fs = std::filesystem;

namespace larmor::ops {

std::string toString(PsfMethod m) { return m == PsfMethod::Dft ? "dft" : "nufft"; }

std::string toString(PsfCacheStatus s) {
  switch (s) {
    case PsfCacheStatus::Disabled: return "disabled";
    case PsfCacheStatus::Hit: return "hit";
    case PsfCacheStatus::Miss: return "miss";
    case PsfCacheStatus::Rejected: return "rejected (recomputed)";
    case PsfCacheStatus::Unwritable: return "unwritable";
  }
  return "?";
}

namespace {

constexpr int kCacheFormat = 1;

/// 64-bit FNV-1a (Fowler, Noll, Vo): a fast, well-mixed hash of bytes; not cryptographic, which a cache
/// key and a corruption check do not need.
class Fnv1a {
 public:
  void add(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) {
      h_ ^= p[i];
      h_ *= 0x100000001b3ULL;
    }
  }
  template <class T>
  void addValue(const T& v) {
    add(&v, sizeof(T));
  }
  void addString(const std::string& s) {
    addValue(static_cast<std::uint64_t>(s.size()));
    add(s.data(), s.size());
  }
  std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

std::string hex(std::uint64_t v) {
  std::ostringstream s;
  s << std::hex << std::setw(16) << std::setfill('0') << v;
  return s.str();
}

index_t centreIndex(const Shape& grid) {
  return grid[0] / 2 + grid[0] * ((grid[1] / 2) + grid[1] * (grid[2] / 2));
}

double weightSum(const NufftGeometry& g, const RArray* weights) {
  if (!weights) return static_cast<double>(g.samples());
  double s = 0;
  for (index_t j = 0; j < weights->size(); ++j) s += (*weights)[j];
  return s;
}

double weightAbsSum(const NufftGeometry& g, const RArray* weights) {
  if (!weights) return static_cast<double>(g.samples());
  double s = 0;
  for (index_t j = 0; j < weights->size(); ++j) s += std::abs((*weights)[j]);
  return s;
}

std::uint64_t checksum(const CArray& a) {
  Fnv1a h;
  h.add(a.data(), static_cast<std::size_t>(a.size()) * sizeof(cfloat));
  return h.value();
}

/// Throws Error unless the loaded Q is the one this key promises: whole (checksum), the right shape, finite,
/// and with Q[centre] = sum_j w_j (its defining value: every phase is 1 there).
void checkLoaded(const CArray& q, const Shape& shape, const nlohmann::json& meta, const std::string& key,
                 double wsum, double wabs) {
  require(meta.value("format", 0) == kCacheFormat && meta.value("key", std::string()) == key,
          "metadata of another key or format");
  require(q.size() == shape.size(), "size " + std::to_string(q.size()) + ", expected " + std::to_string(shape.size()));
  require(hex(checksum(q)) == meta.value("checksum", std::string()), "checksum mismatch");
  for (index_t i = 0; i < q.size(); ++i) require(std::isfinite(q[i].real()) && std::isfinite(q[i].imag()), "non-finite");
  const cfloat c = q[centreIndex(shape)];
  const double tol = 1e-3 * wabs + 1e-30;
  require(std::abs(c.real() - wsum) <= tol && std::abs(c.imag()) <= tol, "centre value does not match the weights");
}

}  // namespace

Shape psfShape(const NufftGeometry& g) {
  require(g.dims == 2 || g.dims == 3, "Toeplitz: dims must be 2 or 3");
  return Shape{2 * g.image[0], 2 * g.image[1], g.dims == 3 ? 2 * g.image[2] : 1};
}

NufftGeometry psfGeometry(const NufftGeometry& g) {
  NufftGeometry g2;
  g2.dims = g.dims;
  const Shape s = psfShape(g);
  for (int d = 0; d < 3; ++d) g2.image[d] = s[d];
  // On the 2N grid a pixel sits at (p - N)/(2N); q needs exp(2 pi i k (p - N)/N) = exp(2 pi i (2k) (p - N)/(2N)).
  g2.trajectory = RArray(g.trajectory.shape());
  for (index_t i = 0; i < g.trajectory.size(); ++i) g2.trajectory[i] = 2.f * g.trajectory[i];
  return g2;
}

namespace {

void checkWeights(const NufftGeometry& g, const RArray* weights) {
  const index_t m = g.samples();
  require(m > 0, "Toeplitz: the trajectory has no samples");
  require(!weights || weights->size() == m, "Toeplitz: " + std::to_string(weights ? weights->size() : 0) +
                                                " weights for " + std::to_string(m) + " samples");
}

/// The raw adjoint of `data` [M] onto `box` with `backend`'s plan (exact DFT or NUFFT).
CArray adjointOn(Backend& backend, const NufftGeometry& box, const CArray& data, const PsfOptions& options) {
  auto plan = options.method == PsfMethod::Dft ? backend.makeDftPlan(box, options.dft)
                                               : backend.makeNufftPlan(box, options.nufft);
  auto samples = backend.allocate(static_cast<std::size_t>(data.size()) * sizeof(cfloat));
  backend.upload(*samples, data.data(), static_cast<std::size_t>(data.size()) * sizeof(cfloat));
  const index_t voxels = box.image[0] * box.image[1] * (box.dims == 3 ? box.image[2] : 1);
  auto image = backend.allocate(static_cast<std::size_t>(voxels) * sizeof(cfloat));
  plan->adjoint(*samples, *image, 1);
  CArray out(Shape{box.image[0], box.image[1], box.dims == 3 ? box.image[2] : 1});
  backend.download(out.data(), *image, static_cast<std::size_t>(voxels) * sizeof(cfloat));
  return out;
}

/// One box [lo, lo + len) of the 2N grid (u = p - N) as an adjoint problem. A box of extent len_d puts its voxel
/// p' at X = p' - floor(len_d / 2), so u_d = X + s_d with s_d = floor(len_d / 2) + lo_d - N_d; the plan sees
/// k'_d = k_d len_d / N_d (2k, k or, for len_d = 1 where X = 0, k / N) and each weight carries
/// exp(2 pi i sum_d k_d s_d / N_d), computed in double.
struct PsfBox {
  NufftGeometry geometry;
  CArray data;  ///< [M] the phased weights
};

PsfBox psfBox(const NufftGeometry& g, const RArray* weights, const index_t N[3], const index_t lo[3],
              const index_t len[3]) {
  const index_t m = g.samples();
  PsfBox box;
  NufftGeometry& b = box.geometry;
  b.dims = g.dims;
  for (int d = 0; d < 3; ++d) b.image[d] = d < g.dims ? len[d] : 1;
  b.trajectory = RArray(Shape{3, m});
  box.data = CArray(Shape{m});
  CArray& data = box.data;
  for (index_t j = 0; j < m; ++j) {
    double phase = 0;
    for (int d = 0; d < 3; ++d) {
      const double k = g.trajectory[3 * j + d];
      if (d >= g.dims) {
        b.trajectory[3 * j + d] = 0.f;
        continue;
      }
      const index_t sd = len[d] / 2 + lo[d] - N[d];
      phase += k * static_cast<double>(sd) / static_cast<double>(N[d]);
      b.trajectory[3 * j + d] = static_cast<float>(k * static_cast<double>(len[d]) / static_cast<double>(N[d]));
    }
    phase -= std::floor(phase);
    const double w = weights ? static_cast<double>((*weights)[j]) : 1.0;
    data[j] = cfloat(static_cast<float>(w * std::cos(2 * M_PI * phase)), static_cast<float>(w * std::sin(2 * M_PI * phase)));
  }
  return box;
}

/// The box's adjoint `part` [len] into its place [lo, lo + len) of q (the 2N grid G).
void placeBox(CArray& q, const CArray& part, const index_t G[3], const index_t lo[3], const index_t len[3]) {
  require(part.size() == len[0] * len[1] * len[2], "Toeplitz: a partial Q of the wrong size");
  for (index_t z = 0; z < len[2]; ++z)
    for (index_t y = 0; y < len[1]; ++y)
      for (index_t x = 0; x < len[0]; ++x)
        q[(lo[0] + x) + G[0] * ((lo[1] + y) + G[1] * (lo[2] + z))] = part[x + len[0] * (y + len[1] * z)];
}

/// u_L in [-(N_L - 1), -1] from the half u_L >= 0 by Q(-u) = conj(Q(u)) (real weights): index p -> 2N - p
/// along every axis, defined where no index is 0 (u_d = -N_d has no mirror on the grid).
void mirrorHalf(CArray& q, const index_t N[3], const index_t G[3], int L) {
  for (index_t z = L == 2 ? 1 : 0; z < (L == 2 ? N[2] : G[2]); ++z)
    for (index_t y = 1; y < (L == 1 ? N[1] : G[1]); ++y)
      for (index_t x = 1; x < G[0]; ++x) {
        const index_t mz = L == 2 ? G[2] - z : z;  // 2D: the unit z axis is not mirrored
        q[x + G[0] * (y + G[1] * z)] = std::conj(q[(G[0] - x) + G[0] * ((G[1] - y) + G[1] * mz)]);
      }
}

}  // namespace

CArray psfBySymmetry(const NufftGeometry& g, const RArray* weights, const PsfAdjoint& adjoint,
                     const Progress& progress) {
  checkWeights(g, weights);
  const Shape grid = psfShape(g);
  const int L = g.dims == 3 ? 2 : 1;  // the halved axis
  index_t N[3], G[3];
  for (int d = 0; d < 3; ++d) {
    N[d] = d < g.dims ? g.image[d] : 1;
    G[d] = grid[d];
  }
  CArray q(grid);
  // 1. The half u_L in [0, N_L): every other axis whole, in P boxes of N_L / P >= 8 planes (progress).
  index_t parts = 1;
  while (parts < 8 && N[L] % (2 * parts) == 0 && N[L] / (2 * parts) >= 8) parts *= 2;
  const index_t boxes = parts + g.dims;  // + the planes of step 3
  index_t done = 0;
  // Q on the box [lo, lo + len) of the 2N grid (psfBox), then the progress.
  auto box = [&](const index_t lo[3], const index_t len[3]) {
    const PsfBox b = psfBox(g, weights, N, lo, len);
    placeBox(q, adjoint(b.geometry, b.data), G, lo, len);
    ++done;
    progress.report(static_cast<double>(done) / static_cast<double>(boxes),
                    "Q: " + std::to_string(done) + "/" + std::to_string(boxes));
  };
  for (index_t part = 0; part < parts; ++part) {
    index_t lo[3] = {0, 0, 0}, len[3] = {G[0], G[1], G[2]};
    lo[L] = N[L] + part * (N[L] / parts);
    len[L] = N[L] / parts;
    box(lo, len);
  }
  // 2. u_L in [-(N_L - 1), -1] by symmetry.
  mirrorHalf(q, N, G, L);
  // 3. What has no mirror, directly: the plane u_L = -N_L, and where u_L < 0 the planes u_d = -N_d of the
  //    other axes (a few N^(d-1) voxels).
  {
    index_t lo[3] = {0, 0, 0}, len[3] = {G[0], G[1], G[2]};
    len[L] = 1;
    box(lo, len);
  }
  for (int d = 0; d < g.dims; ++d) {
    if (d == L) continue;
    index_t lo[3] = {0, 0, 0}, len[3] = {G[0], G[1], G[2]};
    len[d] = 1;
    len[L] = N[L];  // u_L in [-N_L, -1]
    box(lo, len);
  }
  return q;
}

CArray computePsf(Backend& backend, const NufftGeometry& g, const RArray* weights, const PsfOptions& options,
                  const Progress& progress) {
  checkWeights(g, weights);
  const CancelScope cancel(progress);  // the exact DFT's transforms poll it
  if (options.method == PsfMethod::Dft)
    return psfBySymmetry(
        g, weights, [&](const NufftGeometry& box, const CArray& data) { return adjointOn(backend, box, data, options); },
        progress);
  progress.report(0.0, "Q by NUFFT");
  // The NUFFT's cost is its oversampled grid, not the voxels it keeps: one transform of the whole 2N grid.
  const index_t m = g.samples();
  CArray w(Shape{m}, cfloat(1.f, 0.f));
  if (weights)
    for (index_t j = 0; j < m; ++j) w[j] = cfloat((*weights)[j], 0.f);
  CArray q = adjointOn(backend, psfGeometry(g), w, options);
  q.reshape(psfShape(g));
  progress.report(1.0, "Q by NUFFT");
  return q;
}

std::string defaultPsfCacheDirectory() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return (fs::path(x) / "larmor").string();
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "larmor").string();
  return {};
}

std::string psfCacheKey(const NufftGeometry& g, const RArray* weights, const PsfOptions& o) {
  Fnv1a h;
  h.addString("larmor-psf-v" + std::to_string(kCacheFormat));
  h.addValue(static_cast<std::int32_t>(g.dims));
  for (int d = 0; d < 3; ++d) h.addValue(static_cast<std::int64_t>(d < 2 || g.dims == 3 ? g.image[d] : 1));
  h.addValue(static_cast<std::int64_t>(g.samples()));
  h.add(g.trajectory.data(), static_cast<std::size_t>(g.trajectory.size()) * sizeof(float));
  h.addValue(static_cast<std::int32_t>(weights != nullptr));
  if (weights) h.add(weights->data(), static_cast<std::size_t>(weights->size()) * sizeof(float));
  h.addString(toString(o.method));
  if (o.method == PsfMethod::Dft) {
    h.addValue(static_cast<std::int32_t>(o.dft.trig));
  } else {
    h.addValue(static_cast<std::int32_t>(o.nufft.width));
    h.addValue(o.nufft.oversampling);
    h.addValue(static_cast<std::int32_t>(o.nufft.kernel));
  }
  return hex(h.value());
}

CArray cachedPsf(Backend& backend, const NufftGeometry& g, const RArray* weights, const PsfOptions& options,
                 const std::string& directory, PsfCacheStatus* status, const std::function<CArray()>& compute,
                 const Progress& progress) {
  auto run = [&]() {
    if (!compute) return computePsf(backend, g, weights, options, progress);
    CArray q = compute();
    require(q.size() == psfShape(g).size(), "Toeplitz: the computed Q has the wrong size");
    q.reshape(psfShape(g));
    return q;
  };
  auto set = [&](PsfCacheStatus s) {
    if (status) *status = s;
  };
  if (directory.empty()) {
    set(PsfCacheStatus::Disabled);
    return run();
  }
  const Shape grid = psfShape(g);
  const std::string key = psfCacheKey(g, weights, options);
  const std::string base = (fs::path(directory) / ("q-" + key)).string();
  const std::string metaPath = base + ".json";
  const double wsum = weightSum(g, weights), wabs = weightAbsSum(g, weights);

  bool rejected = false;
  std::error_code ec;
  if (fs::exists(metaPath, ec) || fs::exists(base + ".cfl", ec)) {
    try {
      std::ifstream in(metaPath);
      require(static_cast<bool>(in), "no metadata");
      const nlohmann::json meta = nlohmann::json::parse(in);
      CArray q = io::readCfl(base);
      checkLoaded(q, grid, meta, key, wsum, wabs);
      q.reshape(grid);
      set(PsfCacheStatus::Hit);
      return q;
    } catch (const std::exception&) {
      rejected = true;  // truncated, foreign or corrupt: recompute and replace it
    }
  }

  CArray q = run();
  try {
    fs::create_directories(directory);
    // The data first, then the metadata that vouches for it: a reader that finds metadata whose checksum
    // does not match the data (a crash or a concurrent writer in between) recomputes.
    io::writeCfl(base, q);
    AtomicFile meta(metaPath);
    {
      std::ofstream out(meta.tempPath());
      const nlohmann::json j = {{"format", kCacheFormat},
                                {"key", key},
                                {"what", "Toeplitz kernel Q (Stone et al. 2008, eq. 3) on the 2N grid"},
                                {"shape", grid.dims()},
                                {"samples", g.samples()},
                                {"method", toString(options.method)},
                                {"checksum", hex(checksum(q))}};
      out << j.dump(1) << "\n";
      require(static_cast<bool>(out), "write failed");
    }
    meta.commit();
    set(rejected ? PsfCacheStatus::Rejected : PsfCacheStatus::Miss);
  } catch (const std::exception&) {
    set(PsfCacheStatus::Unwritable);
  }
  return q;
}

ToeplitzOperator::ToeplitzOperator(Backend& backend, const NufftGeometry& g, const CArray& psf, double scale)
    : backend_(backend),
      image_(Shape{g.image[0], g.image[1], g.dims == 3 ? g.image[2] : 1}),
      grid_(psfShape(g)),
      rank_(g.dims) {
  require(psf.size() == grid_.size(), "Toeplitz: Q has " + std::to_string(psf.size()) + " elements, the 2N grid " +
                                          grid_.str() + " needs " + std::to_string(grid_.size()));
  const std::size_t bytes = static_cast<std::size_t>(grid_.size()) * sizeof(cfloat);
  qhat_ = backend_.allocate(bytes);
  backend_.upload(*qhat_, psf.data(), bytes);
  backend_.fft(*qhat_, grid_, rank_, FftDirection::Forward);
  // The unitary convolution theorem: circular convolution = sqrt(M2) * IFFT(FFT(x) FFT(Q)).
  const double factor = std::sqrt(static_cast<double>(grid_.size())) * scale;
  backend_.scale(*qhat_, cfloat(static_cast<float>(factor), 0.f), grid_.size());
  diagonal_ = scale * static_cast<double>(psf[centreIndex(grid_)].real());
}

ToeplitzOperator::~ToeplitzOperator() = default;

void ToeplitzOperator::apply(const Buffer& x, Buffer& y, index_t batch) {
  require(batch >= 1, "Toeplitz: batch must be >= 1");
  const index_t plane = grid_.size();
  if (workBatch_ < batch) {
    work_.reset();
    work_ = backend_.allocate(static_cast<std::size_t>(plane * batch) * sizeof(cfloat));
    workBatch_ = batch;
  }
  const Shape small{image_[0], image_[1], image_[2], 1, batch};
  const Shape big{grid_[0], grid_[1], grid_[2], 1, batch};
  backend_.toeplitzOps().fftGramPadded(y, x, small, *work_, big, rank_, *qhat_);  // crop(F^H Q F pad(x))
}

}  // namespace larmor::ops
