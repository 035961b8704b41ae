// --method cg: the advanced reconstruction of Stone et al. (2008) / Haldar et al. (2008) on any backend
// (recon/iterative.hpp): E^H d, coil maps, Q and W built once per slice (IterativeProblem), then PCG on
// (E^H E + lambda W^H W) rho = E^H d with every vector in the backend's memory.
#include "larmor/recon/iterative.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>

#include "larmor/backend/solver_ops.hpp"
#include "larmor/backend/registry.hpp"
#include "larmor/io/cfl.hpp"
#include "larmor/io/dataset_io.hpp"
#include "larmor/ops/cartesian_sampling.hpp"
#include "larmor/ops/regularizer.hpp"
#include "larmor/ops/sense.hpp"
#include "larmor/ops/toeplitz.hpp"
#include "larmor/recon/calibration.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/coil_maps.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/recon/settings_table.hpp"

namespace larmor::recon {

namespace {

std::size_t bytesOf(index_t n) { return static_cast<std::size_t>(n) * sizeof(cfloat); }

using BackendPlanFactory = std::function<std::unique_ptr<NufftPlan>(Backend&, const NufftGeometry&)>;

BackendPlanFactory planFactory(const ReconSettings& s, bool exact) {
  if (exact) {
    DftOptions o;
    o.trig = s.nufft.trig;
    return [o](Backend& b, const NufftGeometry& g) { return b.makeDftPlan(g, o); };
  }
  const NufftOptions o = nufftOptions(s.nufft);
  return [o](Backend& b, const NufftGeometry& g) { return b.makeNufftPlan(g, o); };
}

/// Q's trigonometry: its own, or the F^H d's.
TrigMode qTrigMode(const ReconSettings& s) {
  switch (s.iterative.qTrig) {
    case QTrig::Accurate: return TrigMode::Accurate;
    case QTrig::Fast: return TrigMode::Fast;
    case QTrig::Recurrence: return TrigMode::Recurrence;
    case QTrig::Auto: break;
  }
  return s.nufft.trig;
}

/// The reference image of the anatomical prior: --ref (a .cfl image, or a dataset file with a reference),
/// else the dataset's own reference (simulated data), else an error.
/// The reference image: the dataset's own (not copied), or one read from --ref into `storage`.
const CArray& loadReference(const IterativeSettings& it, const Dataset& d, std::string* source, CArray& storage) {
  if (!it.referencePath.empty()) {
    *source = it.referencePath;
    const std::string ext = std::filesystem::path(it.referencePath).extension().string();
    if (ext == ".cfl" || ext == ".hdr" || ext.empty()) {
      storage = io::readCfl(it.referencePath);
      return storage;
    }
    Dataset r = io::loadDataset(it.referencePath);
    require(r.reference.has_value(), it.referencePath + ": has no reference image for --reg anatomical");
    storage = std::move(*r.reference);
    return storage;
  }
  require(d.reference.has_value(), "--reg anatomical needs --ref REF.cfl|.h5 (the dataset has no reference image)");
  *source = "dataset reference";
  return *d.reference;
}

/// The other GPUs for Stone's GPU.Multi and the slices' split, besides `primary`: every visible CUDA device, at
/// most `most` of them. Each is made once per process and kept, as the GUI and the CLI keep their primary
/// backend: a backend's stream, allocator and library handles are set up at its first use (with the libraries'
/// first calls ~0.1-0.2 s on the H100s and H200s measured in 2026-11), which a call of tens of ms must not pay each
/// time. Backends are thread-safe per call (their mutex), so concurrent calls may share one.
std::vector<std::shared_ptr<Backend>> otherGpus(Backend& primary, std::size_t most = SIZE_MAX) {
  std::vector<std::shared_ptr<Backend>> out;
  if (!primary.isGpu()) return out;
  static std::mutex mutex;
  // Never destroyed: at exit the CUDA runtime may already be gone when a static's destructor would free.
  static auto* kept = new std::map<std::string, std::shared_ptr<Backend>>;
  auto& reg = BackendRegistry::instance();
  const std::string self = primary.info().id;
  for (const DeviceInfo& dev : reg.devices()) {
    if (!dev.gpu || dev.id == self) continue;
    if (out.size() >= most) break;
    std::lock_guard lock(mutex);
    std::shared_ptr<Backend>& b = (*kept)[dev.id];
    if (!b) {
      try {
        b = reg.select(dev.id).backend;
      } catch (const std::exception&) {
        kept->erase(dev.id);  // a device that cannot be used is left out; the others share its work
        continue;
      }
    }
    out.push_back(b);
  }
  return out;
}

}  // namespace

// --- IterativeProblem -------------------------------------------------------------------------------------

struct IterativeProblem::TrajectoryOperators {
  NufftGeometry geometry;
  std::unique_ptr<NufftPlan> plan;                  ///< F for E^H d and E (fhd: dft or nufft)
  std::unique_ptr<ops::FourierGram> gram;           ///< N^{-1} F^H F (Toeplitz, or the Cartesian mask)
  std::vector<std::shared_ptr<Backend>> extraGpus;  ///< GPU.Multi helpers (exact DFT only)
  std::unique_ptr<SlabAdjoint> slabs;               ///< GPU.Multi's F^H d plans, made at the first use
  /// ESPIRiT of non-Cartesian data: the calibration box's gridding, made at the first slice's maps.
  std::shared_ptr<const CalibrationGridding> calibration;
  nlohmann::json info;
};

struct IterativeProblem::Impl {
  explicit Impl(Backend& b) : backend(b) {}
  Backend& backend;
  IterativeSettings settings;
  std::shared_ptr<TrajectoryOperators> traj;
  const CoilMapsSource* mapsSource = nullptr;  ///< the constructor's maps (only during it)
  index_t n = 0, m = 0, coils = 1;
  index_t dims[3] = {1, 1, 1};  ///< the solve grid
  /// Cartesian data are solved on [recon FOV along the readout, encoded pe1, encoded pe2]; the pe FOV crop
  /// (fov) and the resampling to the output matrix (out, rank) follow the solve. Non-Cartesian: all = dims.
  index_t fov[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int rank = 2;
  double scale = 1;  ///< N^{-1/2}
  std::unique_ptr<ops::CoilSensitivities> maps;
  std::unique_ptr<ops::Regularizer> regularizer;
  std::unique_ptr<ops::SenseEncoding> encoding;
  std::vector<std::unique_ptr<Buffer>> data;  ///< one buffer of M samples per coil
  std::unique_ptr<Buffer> rhs, x;
  double dataNorm2 = 0;
  bool haveSolution = false;
  /// diag(E^H E) and diag(W^H W) (real parts) for the Jacobi preconditioner, in the backend's memory.
  std::unique_ptr<Buffer> encodingDiagonal, priorDiagonal;
  // Compressed sensing: FISTA's step bound, max|E^H d| (the relative lambda's scale; < 0: not yet
  // computed) and the TV proximal map's dual field, kept between solves for warm starts.
  double lipschitz = 0, rhsMax = -1;
  std::unique_ptr<Buffer> tvDual;
  /// sum_c |S_c|^2 at voxel i (1 for one coil): host values, for a warm start's scaling only.
  double sumOfSquares(index_t i) const { return maps ? maps->sumOfSquares()[static_cast<std::size_t>(i)] : 1.0; }
  nlohmann::json info;

  // The constructor's steps, in order.
  std::shared_ptr<TrajectoryOperators> buildTrajectoryOperators(const Dataset& d, const ReconSettings& s, int nd,
                                                                Timings& timings, const Progress& progress);
  /// Also puts the slice's samples on the device (data, dataNorm2): they are gathered there.
  std::shared_ptr<TrajectoryOperators> buildCartesianOperators(const Dataset& d, const ReconSettings& s,
                                                               index_t slice, Timings& timings,
                                                               const Progress& progress);
  // buildCartesianOperators' steps.
  void setCartesianGrid(const Dataset& d, const ReconSettings& s);
  std::vector<std::int64_t> sampledPoints(const Dataset& d, index_t slice) const;
  std::unique_ptr<Buffer> gatherCartesianSamples(const Dataset& d, index_t slice, ops::CartesianPlan& plan);
  void readCartesianNorms(const Dataset& d, index_t slice, const Buffer& norms);
  void uploadSlice(const CArray& samples);
  void buildCoilMaps(const Dataset& d, const ReconSettings& s, index_t slice, Timings& timings,
                     const Progress& progress);
  void computeRhs(const ReconSettings& s, const CArray& samples, Timings& timings, const Progress& progress);
  void buildPrior(const Dataset& d, index_t slice, Timings& timings);
  void buildEncodingDiagonal();
  CArray toOutput(CArray images, index_t batch) const;
  /// The same from images on the backend (no round trip: crop and resampling there, one download).
  CArray toOutput(const Buffer& images, index_t batch) const;
  /// x from `initial` (the combined-image convention rho sqrt(sum |S|^2), back to rho); false when null.
  bool loadInitial(const CArray* initial);
  void proxSparse(Buffer& x, double threshold, std::mt19937& shifts);
};

IterativeProblem::IterativeProblem(Backend& backend, const Dataset& d, const ReconSettings& s, index_t slice,
                                   Timings& timings, const Progress& progress,
                                   std::shared_ptr<TrajectoryOperators> shared, const CoilMapsSource* maps)
    : impl_(std::make_unique<Impl>(backend)) {
  Impl& p = *impl_;
  p.mapsSource = maps;
  const IterativeSettings& it = s.iterative;
  p.settings = it;
  const Header& h = d.header;
  require(slice >= 0 && slice < h.slices, "cg: slice " + std::to_string(slice) + " does not exist");
  settings::validate(s, "iterative");
  p.coils = std::max<index_t>(1, h.coils);

  CArray samples;  // this slice's samples [M, coils] (host; non-Cartesian only: Cartesian ones stay on the device)
  if (h.trajectory == TrajectoryKind::Cartesian) {
    p.traj = p.buildCartesianOperators(d, s, slice, timings, progress);
  } else {
    require(d.trajectory.size() > 0, d.source + ": non-Cartesian data without a trajectory");
    index_t out[3];
    outputMatrix(d, s, out);
    const int nd = nonCartesianRank(d, out[2]);
    if (nd == 2) out[2] = 1;
    for (int i = 0; i < 3; ++i) p.dims[i] = p.fov[i] = p.out[i] = out[i];
    p.rank = nd;
    p.n = out[0] * out[1] * out[2];
    p.m = d.trajectory.size() / 3;
    require(d.kspace.size() == p.m * p.coils * h.slices,
            d.source + ": k-space holds " + std::to_string(d.kspace.size()) + " samples, the trajectory " +
                std::to_string(p.m) + " x " + std::to_string(p.coils) + " coils x " + std::to_string(h.slices) +
                " slices");
    samples = CArray(Shape{p.m, p.coils});
    std::copy_n(d.kspace.data() + slice * p.coils * p.m, p.m * p.coils, samples.data());
    p.traj = shared ? std::move(shared) : p.buildTrajectoryOperators(d, s, nd, timings, progress);
  }
  p.scale = 1.0 / std::sqrt(static_cast<double>(p.n));
  require(p.traj->gram->voxels() == p.n && p.traj->plan->samples() == p.m, "cg: shared operators of another geometry");
  if (p.data.empty()) p.uploadSlice(samples);
  p.buildCoilMaps(d, s, slice, timings, progress);
  p.encoding = std::make_unique<ops::SenseEncoding>(backend, *p.traj->plan, p.maps.get(), p.scale);
  p.computeRhs(s, samples, timings, progress);
  p.buildPrior(d, slice, timings);
  p.buildEncodingDiagonal();
  p.x = backend.allocate(bytesOf(p.n));
  backend.fill(*p.x, cfloat(0.f), p.n);
  p.info["fhd"] = settings::choiceName("iterative.fhd", static_cast<int>(it.fhd));
  p.mapsSource = nullptr;
}

// --- the constructor's steps --------------------------------------------------------------------------------

namespace {
bool exactFhd(const IterativeSettings& it) { return it.fhd == FhdMethod::Dft; }
bool exactQ(const IterativeSettings& it) {
  return it.toeplitz == ToeplitzMethod::Dft || (it.toeplitz == ToeplitzMethod::Auto && exactFhd(it));
}
}  // namespace

/// What depends on the trajectory only: the F^H d plan and Q (cached on disk), shared by the slices.
std::shared_ptr<IterativeProblem::TrajectoryOperators> IterativeProblem::Impl::buildTrajectoryOperators(
    const Dataset& d, const ReconSettings& s, int nd, Timings& timings, const Progress& progress) {
  Impl& p = *this;
  const IterativeSettings& it = s.iterative;
  const BackendPlanFactory fhdPlan = planFactory(s, exactFhd(it));
  auto shared = std::make_shared<TrajectoryOperators>();
  TrajectoryOperators& t = *shared;
  t.geometry.dims = nd;
  for (int i = 0; i < 3; ++i) t.geometry.image[i] = dims[i];
  t.geometry.trajectory = RArray(Shape{3, p.m});
  for (index_t i = 0; i < 3 * p.m; ++i) {
    const float v = d.trajectory[i];
    require(std::isfinite(v), [&] { return d.source + ": trajectory coordinate " + std::to_string(i) + " is not finite"; });
    t.geometry.trajectory[i] = v;
  }
  if (it.multiGpu && (exactFhd(it) || exactQ(it))) t.extraGpus = otherGpus(backend);
  {
    progress.report(0.02, "cg: plan");
    ScopedStage st(timings, "plan", &backend);
    t.plan = fhdPlan(backend, t.geometry);
  }
  {
    progress.report(0.05, "cg: Q (Toeplitz kernel)");
    const Progress::Sub qProgress(progress, 0.05, 0.3, "cg: ");
    ScopedStage st(timings, "Q", &backend);
    ops::PsfOptions po;
    po.method = exactQ(it) ? ops::PsfMethod::Dft : ops::PsfMethod::Nufft;
    po.dft.trig = qTrigMode(s);
    po.nufft = nufftOptions(s.nufft);
    const std::string dir = it.cacheDirectory == "none" ? std::string()
                            : it.cacheDirectory.empty() ? ops::defaultPsfCacheDirectory()
                                                        : it.cacheDirectory;
    std::function<CArray()> compute;
    if (exactQ(it) && !t.extraGpus.empty()) {
      // GPU.Multi for Q: the 8N-voxel adjoint of the weights, split by slabs over every GPU.
      compute = [&]() {
        std::vector<Backend*> all{&backend};
        for (auto& b : t.extraGpus) all.push_back(b.get());
        return ops::psfBySymmetry(t.geometry, nullptr, [&](const NufftGeometry& box, const CArray& data) {
          const DftOptions qo = po.dft;
          CArray part = slabAdjoint(all, box, data, 1, [qo](Backend& b, const NufftGeometry& gg) {
            return b.makeDftPlan(gg, qo);
          });
          part.reshape(Shape{box.image[0], box.image[1], box.dims == 3 ? box.image[2] : 1});
          return part;
        }, qProgress);
      };
    }
    ops::PsfCacheStatus status = ops::PsfCacheStatus::Disabled;
    const CArray q = ops::cachedPsf(backend, t.geometry, nullptr, po, dir, &status, compute, qProgress);
    t.gram = std::make_unique<ops::ToeplitzOperator>(backend, t.geometry, q, 1.0 / static_cast<double>(p.n));
    t.info["q_method"] = ops::toString(po.method);
    t.info["q_cache"] = ops::toString(status);
    t.info["gpus"] = 1 + t.extraGpus.size();
  }
  return shared;
}

/// Cartesian SENSE (ops/cartesian_sampling.hpp): the slice's k-space brought to the recon FOV along the
/// readout (its oversampling cropped in image space, as the FFT pipeline does; the readout is always fully
/// sampled), the sampled lines' points as the samples, the FFT + mask as F and its Gram operator. All of it
/// on the device, one coil at a time: upload the coil's encoded k-space, crop the readout (IFFT, centred
/// crop, FFT), gather the sampled points (the plan's index, uploaded once). Only the line list is built on
/// the host. Per slice: the sampling mask may differ between slices.
std::shared_ptr<IterativeProblem::TrajectoryOperators> IterativeProblem::Impl::buildCartesianOperators(
    const Dataset& d, const ReconSettings& s, index_t slice, Timings& timings, const Progress& progress) {
  Impl& p = *this;
  setCartesianGrid(d, s);
  progress.report(0.02, "cg: Cartesian sampling");
  ScopedStage st(timings, "plan", &backend);
  std::vector<std::int64_t> index = sampledPoints(d, slice);
  p.m = static_cast<index_t>(index.size());
  require(p.m > 0, d.source + ": slice " + std::to_string(slice) + " has no sampled line");

  auto shared = std::make_shared<TrajectoryOperators>();
  TrajectoryOperators& t = *shared;
  t.geometry.dims = p.rank;  // no trajectory: the Cartesian operators need none
  for (int i = 0; i < 3; ++i) t.geometry.image[i] = p.dims[i];
  const Shape grid{p.dims[0], p.dims[1], p.dims[2]};
  auto plan = std::make_unique<ops::CartesianPlan>(backend, grid, std::move(index));
  const std::unique_ptr<Buffer> norms = gatherCartesianSamples(d, slice, *plan);
  t.gram = std::make_unique<ops::CartesianGram>(backend, *plan);
  readCartesianNorms(d, slice, *norms);
  t.plan = std::move(plan);
  t.info["encoding"] = "cartesian";
  t.info["sampled_fraction"] = static_cast<double>(p.m) / static_cast<double>(p.n);
  return shared;
}

/// The solve grid [recon FOV along the readout, encoded pe1, encoded pe2], the pe FOV and the output matrix;
/// the k-space's size checked against the encoded matrix.
void IterativeProblem::Impl::setCartesianGrid(const Dataset& d, const ReconSettings& s) {
  Impl& p = *this;
  const Header& h = d.header;
  const CartesianGeometry g = cartesianGeometry(d, s);
  const index_t e0 = h.encoded[0], e1 = h.encoded[1], e2 = h.encoded[2];
  require(g.rank == 3 || e2 == 1, d.source + ": 2D Cartesian data with " + std::to_string(e2) + " partitions");
  p.rank = g.rank;
  p.dims[0] = g.fov[0];
  p.dims[1] = e1;
  p.dims[2] = e2;
  for (int i = 0; i < 3; ++i) {
    p.fov[i] = i == 0 ? g.fov[0] : std::min(g.fov[i], p.dims[i]);
    p.out[i] = g.out[i];
  }
  p.n = p.dims[0] * p.dims[1] * p.dims[2];
  const index_t encodedVoxels = e0 * e1 * e2;
  require(d.kspace.size() == encodedVoxels * p.coils * h.slices,
          d.source + ": k-space " + d.kspace.shape().str() + " does not match the encoded matrix and coils");
}

/// The sampled points: every readout point of every sampled line of the solve grid [N0, e1, e2].
std::vector<std::int64_t> IterativeProblem::Impl::sampledPoints(const Dataset& d, index_t slice) const {
  const index_t e1 = d.header.encoded[1], e2 = d.header.encoded[2];
  std::vector<std::int64_t> index;
  const index_t n0 = dims[0];
  for (index_t p2 = 0; p2 < e2; ++p2)
    for (index_t p1 = 0; p1 < e1; ++p1) {
      if (!d.sampled(p1, p2, slice)) continue;
      for (index_t x = 0; x < n0; ++x) index.push_back(x + n0 * (p1 + e1 * p2));
    }
  return index;
}

/// The coils' encoded k-space to the device, the readout oversampling cropped there, the samples gathered into
/// `data`: in groups of coils (one upload, one batched FFT pair and one gather a group; up to 16 MiB of k-space
/// a group, so a 3D volume still goes coil by coil). Returns [||d_c||^2 for every coil, the count of non-finite
/// samples uploaded] on the device, to be read back once (SolverOps), not once a coil.
std::unique_ptr<Buffer> IterativeProblem::Impl::gatherCartesianSamples(const Dataset& d, index_t slice,
                                                                       ops::CartesianPlan& plan) {
  Impl& p = *this;
  const index_t e0 = d.header.encoded[0], e1 = d.header.encoded[1], e2 = d.header.encoded[2];
  const index_t encodedVoxels = e0 * e1 * e2;
  const index_t group = cartesianPlanCoilGroup(encodedVoxels, p.coils);
  auto encoded = backend.allocate(bytesOf(encodedVoxels * group));
  auto cropped = p.dims[0] == e0 ? nullptr : backend.allocate(bytesOf(p.n * group));
  auto gathered = group > 1 ? backend.allocate(bytesOf(p.m * group)) : nullptr;
  SolverOps& ops = backend.solverOps();
  std::unique_ptr<Buffer> norms;
  const cfloat* src = d.kspace.data() + slice * encodedVoxels * p.coils;
  for (index_t c0 = 0; c0 < p.coils; c0 += group) {
    const index_t nc = std::min(group, p.coils - c0);
    const Shape from{e0, e1, e2, nc}, to{p.dims[0], e1, e2, nc};
    // The first upload before any other work: onto an idle stream a pinned dataset's k-space goes straight
    // from its own memory (HostStaging: no staging copy, ~1 ms of the 256^2 call on the GPU machine).
    backend.upload(*encoded, src + c0 * encodedVoxels, bytesOf(encodedVoxels * nc));
    if (!norms) norms = ops.scalars(p.coils + 1);
    // Every sample of the group, sampled line or not, checked where it now is (samplesCheckedOnBackend):
    // recon::run leaves this path's data to this count.
    ops.countNonFinite(*norms, p.coils, *encoded, encodedVoxels * nc);
    if (cropped) {
      backend.fft(*encoded, from, 1, FftDirection::Inverse);
      backend.resizeCentred(*cropped, to, *encoded, from);
      // Unitary FFTs: the solve grid's IFFT of this is the FFT pipeline's cropped image, no factor.
      backend.fft(*cropped, to, 1, FftDirection::Forward);
    }
    const Buffer& grids = cropped ? *cropped : *encoded;
    if (nc > 1) plan.sample(grids, *gathered, nc);
    for (index_t c = c0; c < c0 + nc; ++c) {
      auto b = backend.allocate(bytesOf(p.m));
      if (nc > 1) backend.copy(*b, *gathered, bytesOf(p.m), 0, bytesOf(p.m * (c - c0)));
      else plan.sample(grids, *b);
      ops.dot(*norms, c, *b, *b, p.m);
      p.data.push_back(std::move(b));
    }
  }
  return norms;
}

/// ||d||^2 from the coils' norms; an error naming the slice (and the first bad sample) if the count of
/// non-finite samples is not zero.
void IterativeProblem::Impl::readCartesianNorms(const Dataset& d, index_t slice, const Buffer& norms) {
  Impl& p = *this;
  std::vector<double> norm2(static_cast<std::size_t>(p.coils + 1));
  backend.solverOps().read(norm2.data(), norms, 0, p.coils + 1);
  if (norm2.back() > 0) {
    d.requireFiniteSamples();  // names the first one (none in an earlier slice: each was counted)
    throw Error(d.source + ": slice " + std::to_string(slice) + " holds non-finite samples");
  }
  norm2.pop_back();
  for (double v : norm2) p.dataNorm2 += v;
}

bool samplesCheckedOnBackend(const Dataset& d, const ReconSettings& s) {
  return (s.method == Method::Cg || s.method == Method::Cs) && d.header.trajectory == TrajectoryKind::Cartesian;
}

index_t cartesianPlanCoilGroup(index_t encodedVoxels, index_t coils) {
  const index_t bytes = std::max<index_t>(1, encodedVoxels) * static_cast<index_t>(sizeof(cfloat));
  return std::clamp<index_t>((index_t{16} << 20) / bytes, 1, std::max<index_t>(1, coils));
}

/// The slice's samples on the device, one buffer per coil, and ||d||^2 for the objective.
void IterativeProblem::Impl::uploadSlice(const CArray& samples) {
  Impl& p = *this;
  for (index_t c = 0; c < p.coils; ++c) {
    auto b = backend.allocate(bytesOf(p.m));
    const cfloat* src = samples.data() + c * p.m;
    backend.upload(*b, src, bytesOf(p.m));
    for (index_t j = 0; j < p.m; ++j) p.dataNorm2 += std::norm(cdouble(src[j]));
    p.data.push_back(std::move(b));
  }

}

/// CG-SENSE's coil sensitivities (recon/coil_maps.hpp: ESPIRiT, Walsh, the dataset's, or a file).
void IterativeProblem::Impl::buildCoilMaps(const Dataset& d, const ReconSettings& s, index_t slice, Timings& timings,
                                           const Progress& progress) {
  Impl& p = *this;
  if (p.coils > 1) {
    progress.report(0.3, "cg: coil maps");
    ScopedStage st(timings, "coil maps", &backend);
    if (p.mapsSource && *p.mapsSource) {
      p.maps = std::make_unique<ops::CoilSensitivities>(backend, (*p.mapsSource)(slice, dims, p.traj->calibration, p.info), p.n, p.coils);
      return;
    }
    const BackendPlanFactory fhdPlan = planFactory(s, exactFhd(s.iterative));
    const ops::PlanFactory walshPlan = [&](const NufftGeometry& g) { return fhdPlan(backend, g); };
    p.maps = std::make_unique<ops::CoilSensitivities>(
        backend,
        coilMapsForSliceOnBackend(backend, d, slice, dims, s, &p.info, &walshPlan,
                                  Progress::Sub(progress, 0.3, 0.4, "cg: coil maps: "), &p.traj->calibration),
        p.n, p.coils);
  } else {
    p.info["coil_maps"] = "none (one coil)";
  }
}

/// E^H d: on this backend, or by slabs over every GPU (GPU.Multi) for the exact DFT.
void IterativeProblem::Impl::computeRhs(const ReconSettings& s, const CArray& samples, Timings& timings,
                                        const Progress& progress) {
  Impl& p = *this;
  TrajectoryOperators& t = *p.traj;
  const bool exact = exactFhd(s.iterative);
  const BackendPlanFactory fhdPlan = planFactory(s, exact);
  progress.report(0.4, "cg: F^H d");
  ScopedStage st(timings, "F^H d", &backend);
  p.rhs = backend.allocate(bytesOf(p.n));
  if (exact && !t.extraGpus.empty()) {
    // GPU.Multi: every coil's F^H d by slabs over every GPU (their planes gathered on this one by peer copies),
    // then S_c^H and the sum here.
    if (!t.slabs) {
      std::vector<Backend*> all{&backend};
      for (auto& b : t.extraGpus) all.push_back(b.get());
      t.slabs = std::make_unique<SlabAdjoint>(all, t.geometry, fhdPlan);
    }
    // One coil: gathered straight into E^H d's buffer.
    auto img = p.coils > 1 ? backend.allocate(bytesOf(p.n * p.coils)) : nullptr;
    t.slabs->adjoint(samples, p.coils, backend, img ? *img : *p.rhs);
    auto tmp = p.coils > 1 ? backend.allocate(bytesOf(p.n)) : nullptr;
    for (index_t c = 0; c < p.coils; ++c) {
      Buffer& dst = c == 0 ? *p.rhs : *tmp;
      if (img) backend.copy(dst, *img, bytesOf(p.n), 0, bytesOf(c * p.n));
      if (p.maps) backend.multiply(dst, p.maps->map(c), p.n, dst, p.n, true);
      if (c > 0) backend.axpby(*p.rhs, cfloat(1.f), *tmp, cfloat(1.f), p.n);
    }
    backend.scale(*p.rhs, cfloat(static_cast<float>(p.scale), 0.f), p.n);
  } else {
    p.encoding->adjoint(p.data, *p.rhs, Progress::Sub(progress, 0.4, 0.9, "cg: "));
  }
}

/// W (identity, finite differences, or weighted by the reference image's edges) and diag(W^H W).
void IterativeProblem::Impl::buildPrior(const Dataset& d, index_t slice, Timings& timings) {
  Impl& p = *this;
  const IterativeSettings& it = settings;
  const Header& h = d.header;
  const index_t* out = dims;
  ScopedStage st(timings, "W", &backend);
  const ops::RegularizerKind kind = it.regularizer;
  p.info["regularizer"] = settings::choiceName("iterative.regularizer", static_cast<int>(kind));
  if (ops::isSparsityPrior(kind)) return;  // compressed sensing: a proximal map (solveSparse), no W
  if (kind == ops::RegularizerKind::Tikhonov) {
    p.regularizer = ops::makeTikhonov(backend, p.dims);
  } else if (kind == ops::RegularizerKind::FiniteDifference) {
    p.regularizer = ops::makeFiniteDifference(backend, p.dims);
  } else {
    // The reference goes to the device as it is (the slice's part of it); edge scale, weights and the
    // prior's diagonal are computed there.
    std::string source;
    CArray loaded;
    const CArray& ref = loadReference(it, d, &source, loaded);
    const bool perSlice = ref.size() == p.n * h.slices && h.slices > 1;
    require(perSlice || ref.size() == p.n, source + ": the reference image " + ref.shape().str() +
                                               " does not match the " + std::to_string(out[0]) + "x" +
                                               std::to_string(out[1]) + "x" + std::to_string(out[2]) +
                                               " reconstruction");
    auto refBuffer = backend.allocate(bytesOf(p.n));
    backend.upload(*refBuffer, ref.data() + (perSlice ? slice * p.n : 0), bytesOf(p.n));
    double delta = 0;
    p.regularizer = ops::makeAnatomical(backend, p.dims, *refBuffer, it.anatomicalDelta, &delta);
    p.info["anatomical_delta"] = delta;
    p.info["reference"] = source;
  }
  p.priorDiagonal = backend.allocate(bytesOf(p.n));
  p.regularizer->diagonal(*p.priorDiagonal);
}

/// diag(E^H E) for the Jacobi preconditioner.
void IterativeProblem::Impl::buildEncodingDiagonal() {
  Impl& p = *this;
  TrajectoryOperators& t = *p.traj;
  // diag(E^H E) = T's diagonal times sum_c |S_c|^2.
  p.encodingDiagonal = backend.allocate(bytesOf(p.n));
  const double td = t.gram->diagonal();
  if (!p.maps) {
    backend.fill(*p.encodingDiagonal, cfloat(static_cast<float>(td), 0.f), p.n);
  } else {
    const Buffer& root = p.maps->rootSumOfSquares();  // on the backend: |root|^2 td there
    backend.multiply(*p.encodingDiagonal, root, p.n, root, p.n, true);
    backend.scale(*p.encodingDiagonal, cfloat(static_cast<float>(td), 0.f), p.n);
  }
}

IterativeProblem::~IterativeProblem() = default;

solve::CgResult IterativeProblem::solve(double lambda, int iterations, double tolerance, bool warmFromLast,
                                        const CArray* initial, const Progress& progress,
                                        const solve::CgObserver& observer) {
  Impl& p = *impl_;
  require(std::isfinite(lambda) && lambda >= 0, "cg: lambda must be >= 0");
  ops::NormalOperator A(p.backend, *p.traj->gram, p.maps.get(), p.regularizer.get(), lambda);
  std::unique_ptr<solve::DiagonalPreconditioner> M;
  if (p.settings.preconditioner) {
    M = std::make_unique<solve::DiagonalPreconditioner>(p.backend, *p.encodingDiagonal, 1.0, p.priorDiagonal.get(),
                                                        p.priorDiagonal ? lambda : 0.0, p.n);
  }
  solve::CgOptions o;
  o.maxIterations = iterations;
  o.tolerance = tolerance;
  o.objectiveOffset = p.dataNorm2;
  o.warmStart = warmFromLast && p.haveSolution;
  if (!o.warmStart) o.warmStart = p.loadInitial(initial);
  o.stage = "cg";
  solve::CgResult r = solve::conjugateGradient(p.backend, A, *p.rhs, *p.x, o, M.get(), progress, observer);
  p.haveSolution = true;
  return r;
}

bool IterativeProblem::Impl::loadInitial(const CArray* initial) {
  if (!initial) return false;
  require(initial->size() == n, "iterative: the initial image has " + std::to_string(initial->size()) +
                                    " voxels, " + std::to_string(n) + " expected");
  std::vector<cfloat> x0(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) {
    const double s = std::sqrt(sumOfSquares(i));
    x0[i] = s > 1e-6 ? cfloat(cdouble((*initial)[i]) / s) : cfloat(0.f);
  }
  backend.upload(*x, x0.data(), bytesOf(n));
  return true;
}

/// The sparsity prior's proximal map at `threshold`; wavelets get a fresh random circular shift each call
/// (cycle spinning), drawn from `shifts` so that a solve is deterministic.
void IterativeProblem::Impl::proxSparse(Buffer& v, double threshold, std::mt19937& shifts) {
  const Shape image{dims[0], dims[1], dims[2]};
  SparsityOps& ops = backend.sparsityOps();
  if (settings.regularizer == ops::RegularizerKind::Tv) {
    ops.tvProx(v, image, threshold, settings.tvIterations, *tvDual);
  } else {
    std::array<index_t, 3> shift{0, 0, 0};
    for (int d = 0; d < 3; ++d)
      shift[static_cast<std::size_t>(d)] =
          dims[d] > 1 ? static_cast<index_t>(shifts() % static_cast<std::uint32_t>(dims[d])) : 0;
    ops.waveletProx(v, image, threshold, shift);
  }
}

double IterativeProblem::sparsityWeight(double lambda) {
  Impl& p = *impl_;
  if (p.rhsMax < 0) {
    std::vector<cfloat> b(static_cast<std::size_t>(p.n));
    p.backend.download(b.data(), *p.rhs, bytesOf(p.n));
    double m = 0;
    for (const cfloat& v : b) m = std::max(m, static_cast<double>(std::abs(v)));
    p.rhsMax = m;
  }
  return lambda * p.rhsMax;
}

double IterativeProblem::noiseLambda(double variance, double factor) {
  const double scale = sparsityWeight(1.0);  // max|E^H d|
  if (!(scale > 0) || !(variance > 0)) return 0;
  // diag(E^H E) = T's diagonal times sum_c |S_c|^2, which is 1 where estimated maps have signal.
  return factor * std::sqrt(variance * impl_->traj->gram->diagonal()) / scale;
}

/// Least-squares CG steps that start a cold compressed-sensing solve (solveSparse).
constexpr int kSparseStartCg = 10;

double IterativeProblem::lipschitz() const { return impl_->lipschitz; }

std::unique_ptr<solve::LinearOperator> IterativeProblem::normalOperator() {
  return std::make_unique<ops::NormalOperator>(impl_->backend, *impl_->traj->gram, impl_->maps.get(), nullptr, 0);
}
const Buffer& IterativeProblem::rhsBuffer() const { return *impl_->rhs; }
Buffer& IterativeProblem::solutionBuffer() {
  impl_->haveSolution = true;
  return *impl_->x;
}

void IterativeProblem::startLeastSquares() {
  Impl& p = *impl_;
  ops::NormalOperator A(p.backend, *p.traj->gram, p.maps.get(), nullptr, 0);
  solve::DiagonalPreconditioner M(p.backend, *p.encodingDiagonal, 1.0, nullptr, 0, p.n);
  solve::CgOptions co;
  co.maxIterations = kSparseStartCg;
  co.trackObjective = false;
  co.stage = "cs: start";
  solve::conjugateGradient(p.backend, A, *p.rhs, *p.x, co, &M);
  p.haveSolution = true;
}

solve::FistaResult IterativeProblem::solveSparse(double lambda, int iterations, double tolerance, bool warmFromLast,
                                                 const CArray* initial, const Progress& progress,
                                                 const solve::FistaObserver& observer) {
  Impl& p = *impl_;
  require(std::isfinite(lambda) && lambda >= 0, "cs: lambda must be >= 0");
  require(ops::isSparsityPrior(p.settings.regularizer), "cs: the prior must be tv or wavelet");
  ops::NormalOperator A(p.backend, *p.traj->gram, p.maps.get(), nullptr, 0);
  if (p.lipschitz <= 0) {
    // ||E^H E|| from 30 power steps started at E^H d, with a 10 % margin: the estimate converges from below,
    // and a step above 1/||E^H E|| would let FISTA diverge.
    p.lipschitz = 1.1 * solve::largestEigenvalue(p.backend, A, *p.rhs, 30);
    if (!(p.lipschitz > 0)) p.lipschitz = 1;  // E^H d = 0: any step; FISTA returns 0
  }
  const double mu = sparsityWeight(lambda);
  solve::FistaOptions o;
  o.maxIterations = iterations;
  o.tolerance = tolerance;
  o.warmStart = warmFromLast && p.haveSolution;
  if (!o.warmStart) o.warmStart = p.loadInitial(initial);
  if (!o.warmStart) {
    startLeastSquares();
    o.warmStart = true;
  }
  o.stage = "cs";
  if (p.settings.regularizer == ops::RegularizerKind::Tv) {
    if (!p.tvDual) {
      p.tvDual = p.backend.allocate(bytesOf(SparsityOps::tvDualElements(Shape{p.dims[0], p.dims[1], p.dims[2]})));
      p.backend.fill(*p.tvDual, cfloat(0.f), SparsityOps::tvDualElements(Shape{p.dims[0], p.dims[1], p.dims[2]}));
    }
  }
  std::mt19937 shifts(20070101u);  // fixed seed: the same image for the same inputs
  const solve::FistaResult r = solve::fista(
      p.backend, A, *p.rhs, *p.x, p.lipschitz, mu, [&](Buffer& v, double t) { p.proxSparse(v, t, shifts); }, o,
      progress, observer);
  p.haveSolution = true;
  return r;
}

index_t IterativeProblem::voxels() const { return impl_->n; }
index_t IterativeProblem::coils() const { return impl_->coils; }
Shape IterativeProblem::imageShape() const { return Shape{impl_->out[0], impl_->out[1], impl_->out[2]}; }
Shape IterativeProblem::gridShape() const { return Shape{impl_->dims[0], impl_->dims[1], impl_->dims[2]}; }

/// Images on the solve grid [dims, batch] -> the output [out, batch]: the pe FOV crop and the resampling to
/// the matrix of Cartesian data (the FFT pipeline's tail); nothing for non-Cartesian data.
CArray IterativeProblem::Impl::toOutput(CArray images, index_t batch) const {
  const Shape grid{dims[0], dims[1], dims[2], 1, batch}, target{out[0], out[1], out[2], 1, batch};
  if (grid == target) {
    images.reshape(Shape{out[0], out[1], out[2], batch});
    return images;
  }
  CDeviceArray a(backend, grid);
  backend.upload(a.buffer(), images.data(), a.bytes());
  return toOutput(a.buffer(), batch);
}

CArray IterativeProblem::Impl::toOutput(const Buffer& images, index_t batch) const {
  const Shape grid{dims[0], dims[1], dims[2], 1, batch}, cropped{fov[0], fov[1], fov[2], 1, batch},
      target{out[0], out[1], out[2], 1, batch};
  const Buffer* now = &images;
  CDeviceArray c, r;
  if (cropped != grid) {
    c = CDeviceArray(backend, cropped);
    backend.resizeCentred(c.buffer(), cropped, *now, grid);
    now = &c.buffer();
  }
  if (target != cropped) {
    if (now == &images) {  // resampleToMatrix transforms its input in place: never the caller's images
      c = CDeviceArray(backend, cropped);
      backend.copy(c.buffer(), images, c.bytes());
    }
    r = CDeviceArray(backend, target);
    resampleToMatrix(backend, c.buffer(), cropped, r.buffer(), target, rank);
    now = &r.buffer();
  }
  CArray result(Shape{out[0], out[1], out[2], batch}, CArray::NoInit{});  // the download writes every element
  backend.download(result.data(), *now, bytesOf(target.size()));
  return result;
}

CArray IterativeProblem::solution() const {
  CArray x(Shape{impl_->dims[0], impl_->dims[1], impl_->dims[2]});
  impl_->backend.download(x.data(), *impl_->x, bytesOf(impl_->n));
  return x;
}

CArray IterativeProblem::combined() const {
  const Impl& p = *impl_;
  CArray o;
  if (!p.maps) {
    o = p.toOutput(*p.x, 1);
  } else {  // x sqrt(sum_c |S_c|^2) on the backend, then the crop there
    auto weighted = p.backend.allocate(bytesOf(p.n));
    p.backend.multiply(*weighted, p.maps->rootSumOfSquares(), p.n, *p.x, p.n, false);
    o = p.toOutput(*weighted, 1);
  }
  o.reshape(imageShape());
  return o;
}

CArray IterativeProblem::coilImages() const {
  const Impl& p = *impl_;
  CArray out(Shape{p.dims[0], p.dims[1], p.dims[2], p.coils});
  if (!p.maps) {
    p.backend.download(out.data(), *p.x, bytesOf(p.n));
  } else {
    auto tmp = p.backend.allocate(bytesOf(p.n));
    for (index_t c = 0; c < p.coils; ++c) {
      p.backend.multiply(*tmp, p.maps->map(c), p.n, *p.x, p.n, false);
      p.backend.download(out.data() + c * p.n, *tmp, bytesOf(p.n));
    }
  }
  return p.toOutput(std::move(out), p.coils);
}

double IterativeProblem::residualNorm() { return std::sqrt(impl_->encoding->residualSquared(*impl_->x, impl_->data)); }

double IterativeProblem::residualNormOf(const CArray& rho) {
  Impl& p = *impl_;
  require(rho.size() == p.n, "iterative: the image has " + std::to_string(rho.size()) + " voxels, " +
                                 std::to_string(p.n) + " expected");
  p.backend.upload(*p.x, rho.data(), bytesOf(p.n));
  return residualNorm();
}
double IterativeProblem::priorNorm() {
  Impl& p = *impl_;
  const Shape image{p.dims[0], p.dims[1], p.dims[2]};
  switch (p.settings.regularizer) {
    case ops::RegularizerKind::Tv: return p.backend.sparsityOps().totalVariation(*p.x, image);
    case ops::RegularizerKind::Wavelet: return p.backend.sparsityOps().waveletL1(*p.x, image);
    default: return std::sqrt(p.regularizer->normSquared(*p.x));
  }
}
double IterativeProblem::dataNormSquared() const { return impl_->dataNorm2; }

nlohmann::json IterativeProblem::describe() const {
  nlohmann::json j = impl_->info;
  for (auto& [k, v] : impl_->traj->info.items()) j[k] = v;
  return j;
}

std::shared_ptr<IterativeProblem::TrajectoryOperators> IterativeProblem::trajectoryOperators() const {
  return impl_->traj;
}

// --- the pipeline --------------------------------------------------------------------------------------------

ImageSet reconstructIterative(Backend& backend, const Dataset& d, const ReconSettings& s, Timings& timings,
                              const Progress& progress, OperatorCache* cache) {
  // A multi-slice dataset on a GPU with GPU.Multi on: the slices over every visible GPU (iterative_slices.cpp).
  const index_t slices = std::max<index_t>(1, d.header.slices);
  std::vector<std::shared_ptr<Backend>> others;
  if (s.iterative.multiGpu && slices > 1) others = otherGpus(backend, static_cast<std::size_t>(slices - 1));
  std::vector<Backend*> devices{&backend};
  for (auto& b : others) devices.push_back(b.get());
  return reconstructIterativeOn(devices, d, s, timings, progress, cache);
}

std::vector<LCurvePoint> lcurve(Backend& backend, const Dataset& d, const ReconSettings& s,
                                const std::vector<double>& lambdas, const Progress& progress) {
  Timings timings;
  IterativeProblem problem(backend, d, s, 0, timings, progress);
  std::vector<LCurvePoint> out;
  for (std::size_t i = 0; i < lambdas.size(); ++i) {
    const double from = static_cast<double>(i) / lambdas.size(), to = static_cast<double>(i + 1) / lambdas.size();
    const Progress::Sub sub(progress, from, to);
    const auto cg = problem.solve(lambdas[i], s.iterative.iterations, s.iterative.tolerance, i > 0, nullptr, sub);
    out.push_back({lambdas[i], problem.residualNorm(), problem.priorNorm(), cg.iterations});
  }
  return out;
}

}  // namespace larmor::recon
