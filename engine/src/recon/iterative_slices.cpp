// The slices of a multi-slice --method cg / cs reconstruction, on one device or spread over several
// (recon/iterative.hpp: reconstructIterativeOn). Each slice is an IterativeProblem of its own (E^H d, maps, W;
// the trajectory's operators, the plan and Q, shared by the slices of one device), solved by PCG or FISTA and
// downloaded into its place of the result.
//
// Several devices (the slices of a multi-slice file over every GPU): device k of D
// takes the contiguous block of slices [k S / D, (k + 1) S / D) and works through it in a thread of its own,
// building its own trajectory operators; the slices are independent, so each slice's image is the one its device
// makes alone (bit for bit where the devices are alike) and the split changes no result. The calling thread only
// watches: it reports the slices' combined progress every 50 ms and the devices see a cancellation at their
// next step (Progress::checkCancelled); an error of any device stops the others at their next step too, and is
// rethrown after every thread has stopped.
// Timings: the devices' stages ran side by side, so the call's timings carry one wall-clock stage for the
// whole block and each device's own stages (summed over its slices) go to the convergence record.
//
// Coil maps (ESPIRiT, several coils and slices): each device makes its own slices' maps a group of up to 32 at a
// time with the Grams' eigen-decompositions batched (BatchedMaps below).
//
// OperatorCache (recon/operator_cache.hpp): a device's trajectory operators are taken from the cache before its
// first slice when an earlier call left ones of the same trajectory, geometry and settings there, and put back
// after its last slice; each slice's record then says "operators": "kept from an earlier call".
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include <omp.h>

#include "larmor/recon/calibration.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/coil_maps.hpp"
#include "larmor/recon/iterative.hpp"
#include "larmor/recon/lambda_cv.hpp"
#include "larmor/recon/noise_level.hpp"
#include "larmor/recon/operator_cache.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/util/cancel_scope.hpp"
#include "larmor/util/error.hpp"

namespace larmor::recon {

// --- OperatorCache (recon/operator_cache.hpp) ------------------------------------------------------------------

struct OperatorCache::Impl {
  struct Entry {
    std::string settings;           ///< the call's whole canonical settings JSON
    std::vector<float> trajectory;  ///< compared in full
    index_t recon[3] = {0, 0, 0}, encoded[3] = {0, 0, 0}, coils = 0;
    std::shared_ptr<IterativeProblem::TrajectoryOperators> operators;
  };
  std::mutex mutex;
  std::map<std::uint64_t, Entry> entries;  ///< by Backend::serial(): a later backend at the same address is another

  static bool applies(const Dataset& d) { return d.header.trajectory != TrajectoryKind::Cartesian && !d.trajectory.empty(); }

  /// The backend's operators if they were made for the same trajectory, geometry and settings; taken out (a
  /// backend's operators serve one call at a time), else null.
  std::shared_ptr<IterativeProblem::TrajectoryOperators> take(const Backend& be, const Dataset& d,
                                                               const std::string& settings) {
    if (!applies(d)) return nullptr;
    std::lock_guard lock(mutex);
    auto it = entries.find(be.serial());
    if (it == entries.end()) return nullptr;
    Entry& e = it->second;
    const Header& h = d.header;
    const bool same = e.settings == settings && e.coils == h.coils &&
                      std::equal(h.recon, h.recon + 3, e.recon) && std::equal(h.encoded, h.encoded + 3, e.encoded) &&
                      e.trajectory.size() == static_cast<std::size_t>(d.trajectory.size()) &&
                      std::memcmp(e.trajectory.data(), d.trajectory.data(), e.trajectory.size() * sizeof(float)) == 0;
    if (!same) return nullptr;
    auto ops = std::move(e.operators);
    entries.erase(it);
    return ops;
  }

  /// Keeps `operators` as the backend's entry (replacing what it had).
  void put(const Backend& be, const Dataset& d, const std::string& settings,
           std::shared_ptr<IterativeProblem::TrajectoryOperators> operators) {
    if (!applies(d) || !operators) return;
    Entry e;
    e.settings = settings;
    e.trajectory.assign(d.trajectory.data(), d.trajectory.data() + d.trajectory.size());
    std::copy_n(d.header.recon, 3, e.recon);
    std::copy_n(d.header.encoded, 3, e.encoded);
    e.coils = d.header.coils;
    e.operators = std::move(operators);
    std::lock_guard lock(mutex);
    entries[be.serial()] = std::move(e);
  }
};

OperatorCache::OperatorCache() : impl_(std::make_unique<Impl>()) {}
OperatorCache::~OperatorCache() = default;

namespace {

/// LambdaRule::Noise: FISTA's threshold as a multiple of the noise of one gradient step's image, the same for
/// both priors (docs/iterative.md "Choosing lambda": 1, not fitted).
constexpr double kNoiseThreshold = 1.0;

/// A device's run of slices with the cache: its operators taken before the first slice and kept after the last.
struct CachedOperators {
  OperatorCache* cache;
  const Backend& be;
  const Dataset& d;
  std::string settings;
  std::shared_ptr<IterativeProblem::TrajectoryOperators> operators;
  bool reused = false;
  CachedOperators(OperatorCache* c, const Backend& b, const Dataset& data, const ReconSettings& s)
      : cache(c), be(b), d(data), settings(c ? toJson(s).dump() : std::string()) {
    if (cache) operators = cache->impl().take(be, d, settings);
    reused = operators != nullptr;
  }
  void keep() {
    if (cache) cache->impl().put(be, d, settings, operators);
  }
};

/// A device's slices' ESPIRiT maps a group at a time, the Grams' eigen-decompositions batched (ops::espiritBatch:
/// on a GPU batched cuSOLVER calls, ~0.66 against ~2.9 ms a slice for 288^2 Grams). A group is the next run of its
/// own block, up to kMapsGroup slices and kMapsGroupBytes of maps and Grams (128^2 x 8 coils: 32 slices of ~4
/// MiB; a 2x readout grid of 256 x 512 x 32 coils: 2 of ~100 MiB), so a device computes only its own slices'
/// maps and a large dataset's group holds no more than a few slices' memory. The backend batches the
/// eigen-solves in chunks fixed by the Gram's size (EspiritOps::gramKernelsBatched), so a slice's maps, and its
/// image, do not depend on how the slices were grouped or split over devices.
constexpr index_t kMapsGroup = 32;
constexpr std::size_t kMapsGroupBytes = std::size_t{256} << 20;

class BatchedMaps {
 public:
  /// `progress`: checked for cancellation while a group is made (its fractions are not the slice's).
  BatchedMaps(Backend& be, const Dataset& d, const ReconSettings& s, index_t end, const Progress& progress)
      : be_(be), d_(d), s_(s), end_(end), progress_(progress) {}
  static bool applies(const Dataset& d, const ReconSettings& s) {
    return s.iterative.coilMaps == CoilMapSource::Espirit && d.header.coils > 1 && d.header.slices > 1;
  }
  IterativeProblem::CoilMapsSource source() {
    return [this](index_t slice, const index_t dims[3], std::shared_ptr<const CalibrationGridding>& gridding,
                  nlohmann::json& info) { return take(slice, dims, gridding, info); };
  }
  /// Slices per group for maps of `dims` x `coils`: the maps on the output and on a calibration grid up to twice
  /// as large (an oversampled readout), and the Gram and kernels of 6^k x coils rows (k the image's dimensions).
  static index_t groupSize(const index_t dims[3], index_t coils) {
    const index_t voxels = dims[0] * dims[1] * dims[2];
    index_t rows = coils;
    for (int a = 0; a < 3; ++a)
      if (dims[a] > 1) rows *= 6;
    const std::size_t bytes = static_cast<std::size_t>(3 * voxels * coils + 2 * rows * rows) * sizeof(cfloat);
    return std::clamp<index_t>(static_cast<index_t>(kMapsGroupBytes / std::max<std::size_t>(bytes, 1)), 1, kMapsGroup);
  }

 private:
  std::unique_ptr<Buffer> take(index_t slice, const index_t dims[3], std::shared_ptr<const CalibrationGridding>& gridding,
                               nlohmann::json& info) {
    if (!ready_.count(slice)) {
      ready_.clear();
      const index_t g1 = std::min(end_, slice + groupSize(dims, std::max<index_t>(1, d_.header.coils)));
      std::vector<index_t> group;
      for (index_t sl = slice; sl < g1; ++sl) group.push_back(sl);
      std::vector<nlohmann::json> infos;
      auto maps = espiritMapsForSlices(be_, d_, group, dims, s_, &infos, &gridding, progress_);
      for (std::size_t i = 0; i < group.size(); ++i) ready_[group[i]] = {std::move(maps[i]), std::move(infos[i])};
    }
    auto it = ready_.find(slice);
    require(it != ready_.end(), "cg: the coil maps of slice " + std::to_string(slice) + " were not made");
    for (auto& [k, v] : it->second.second.items()) info[k] = v;
    auto out = std::move(it->second.first);
    ready_.erase(it);
    return out;
  }
  Backend& be_;
  const Dataset& d_;
  const ReconSettings& s_;
  index_t end_;
  const Progress& progress_;
  std::map<index_t, std::pair<std::unique_ptr<Buffer>, nlohmann::json>> ready_;
};

/// What the slices write: the images, each slice's convergence record, the warm start's note.
struct SliceOutputs {
  std::mutex mutex;
  ImageSet result;
  std::vector<nlohmann::json> perSlice;
  std::string warmNote;
};

/// LambdaRule::Auto: "" where cross-validation applies to this slice (a 2D problem whose data can be split), else
/// why the given lambda is used instead (the record says it: auto never fails where fixed would not).
std::string whyNotCrossValidated(const Dataset& d, const IterativeProblem& problem, index_t sl) {
  if (problem.gridShape()[2] > 1) return "a 3D volume (cross-validation would cost seven volume solves: --lambda-rule cv)";
  try {
    (void)crossValidationSplit(d, sl);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// The relative lambda of a cs slice under the settings' rule; `rule` gets its record (null for fixed).
double csLambda(Backend& backend, const Dataset& d, const ReconSettings& s, index_t sl, IterativeProblem& problem,
                Timings& timings, nlohmann::json& rule, const Progress& progress) {
  const IterativeSettings& it = s.iterative;
  double lambda = it.lambda;
  if (it.lambdaRule == LambdaRule::Noise) {
    const NoiseLevel noise = estimateNoiseLevel(d, sl);
    const double fromNoise = problem.noiseLambda(noise.variance, kNoiseThreshold);
    lambda = std::max(lambda, fromNoise);
    rule = {{"rule", "noise"}, {"noise_variance", noise.variance}, {"noise_source", noise.source},
            {"noise_samples", noise.samples}, {"lambda_from_noise", fromNoise}, {"lambda_floor", it.lambda}};
  } else if (it.lambdaRule == LambdaRule::CrossValidation || it.lambdaRule == LambdaRule::Auto) {
    const std::string skip = it.lambdaRule == LambdaRule::Auto ? whyNotCrossValidated(d, problem, sl) : "";
    if (skip.empty()) {
      LambdaChoice cv = crossValidatedLambda(backend, d, s, sl, timings, progress);  // its own stage, before FISTA's
      lambda = cv.lambda;
      rule = std::move(cv.record);
    } else {
      rule = {{"rule", "fixed"}, {"why", skip}};
    }
    if (it.lambdaRule == LambdaRule::Auto) rule["chosen_by"] = "auto";
  }
  return lambda;
}

/// One slice on `backend`: its problem (the trajectory's operators from `shared`, kept there for the next
/// slice; the coil maps from `maps` when given), the solve, the images into `out`.
void solveSlice(Backend& backend, const Dataset& d, const ReconSettings& s, index_t sl, index_t slices,
                Timings& timings, const Progress& setup, const Progress& iterations,
                std::shared_ptr<IterativeProblem::TrajectoryOperators>& shared, SliceOutputs& out,
                const IterativeProblem::CoilMapsSource* maps) {
  const IterativeSettings& it = s.iterative;
  IterativeProblem problem(backend, d, s, sl, timings, setup, shared, maps);
  shared = problem.trajectoryOperators();
  const Shape img = problem.imageShape();
  const index_t n = img.size();
  {
    std::lock_guard lock(out.mutex);
    if (out.result.combined.size() == 0) {
      out.result.combined = CArray(Shape{img[0], img[1], img[2], 1, slices});
      if (s.keepCoilImages) out.result.coilImages = CArray(Shape{img[0], img[1], img[2], problem.coils(), slices});
    }
  }

  CArray initial;
  const CArray* init = nullptr;
  if (it.warmStart) {
    std::lock_guard lock(out.mutex);
    if (it.warmStart->size() == n * slices && n == problem.voxels()) {
      initial = CArray(img);
      std::copy_n(it.warmStart->data() + sl * n, n, initial.data());
      init = &initial;
      out.warmNote = "used";
    } else {
      out.warmNote = "ignored: the previous image " + it.warmStart->shape().str() + " does not match " +
                     out.result.combined.shape().str();
    }
  }
  nlohmann::json j;
  if (s.method == Method::Cs) {
    nlohmann::json rule;
    // Cross-validation's seven solves take the first 7/8 of the iterations' progress (and its Cancel), FISTA the rest.
    const Progress::Sub choosing(iterations, 0.0, 0.875, "cs: ");
    const double lambda = csLambda(backend, d, s, sl, problem, timings, rule, choosing);
    const bool chose = rule.is_object() && rule.value("rule", "") == "cv";
    const Progress::Sub solving(iterations, chose ? 0.875 : 0.0, 1.0);
    ScopedStage st(timings, "FISTA", &backend);
    const solve::FistaResult r = problem.solveSparse(lambda, it.iterations, it.tolerance, false, init, solving);
    j = r.toJson();
    j["solver"] = "FISTA";
    j["lambda_used"] = lambda;
    if (!rule.is_null()) j["lambda_rule"] = rule;
    j["lambda_absolute"] = problem.sparsityWeight(lambda);
    j["lipschitz"] = problem.lipschitz();
  } else {
    ScopedStage st(timings, "CG", &backend);
    j = problem.solve(it.lambda, it.iterations, it.tolerance, false, init, iterations).toJson();
    j["solver"] = "CG";
  }
  {
    ScopedStage st(timings, "download", &backend);
    const CArray c = problem.combined();
    std::copy_n(c.data(), n, out.result.combined.data() + sl * n);  // this slice's part: no other writer
    if (s.keepCoilImages) {
      const CArray ci = problem.coilImages();
      std::copy_n(ci.data(), ci.size(), out.result.coilImages.data() + sl * ci.size());
    }
  }
  j["lambda"] = it.lambda;
  j["data_norm_squared"] = problem.dataNormSquared();
  const nlohmann::json described = problem.describe();  // named: a temporary would die before the loop
  for (auto& [k, v] : described.items()) j[k] = v;
  std::lock_guard lock(out.mutex);
  out.perSlice[static_cast<std::size_t>(sl)] = std::move(j);
}

/// What the devices' threads of solveOnDevices share with the watching thread: each device's progress through
/// its block, its stages, its error and when its thread ran; the count still running; the stop flag.
class DeviceRun {
 public:
  DeviceRun(const std::vector<Backend*>& devices, const Dataset& d, const ReconSettings& s, index_t slices,
            const Progress& progress, SliceOutputs& out, OperatorCache* cache)
      : devices_(devices), d_(d), own_(s), slices_(slices), nd_(devices.size()), progress_(progress), out_(out),
        cache_(cache), fraction_(nd_), deviceTimings_(nd_), errors_(nd_), running_(nd_), span_(nd_, {0.0, 0.0}) {
    // Each device solves its slices alone: no GPU.Multi helpers inside a slice.
    own_.iterative.multiGpu = false;
  }

  /// Device k's thread: its block of slices, the error kept (and every device stopped) should one fail.
  void work(std::size_t k) {
    span_[k][0] = since();
    try {
      omp_set_num_threads(ompThreads_);  // the host's cores shared by the devices' threads
      const CancelScope cancel(progress_);  // inside the exact DFT too
      solveBlock(k);
    } catch (...) {
      errors_[k] = std::current_exception();
      stop_ = true;
    }
    span_[k][1] = since();
    std::lock_guard lock(doneMutex_);
    --running_;
    doneSignal_.notify_all();
  }

  /// The calling thread until every device is done: a report at once (the stage's text and a first cancellation
  /// point), then every 50 ms. Returns the progress callback's own error (Cancelled, or the caller's), if any.
  std::exception_ptr watch(const std::string& what) {
    std::exception_ptr watchError;
    for (;;) {
      if (!watchError) {
        double f = 0;
        for (std::size_t k = 0; k < nd_; ++k)
          f += fraction_[k].load() * static_cast<double>(block(k + 1) - block(k)) / static_cast<double>(slices_);
        try {
          progress_.report(f, what);
        } catch (...) {
          watchError = std::current_exception();
          stop_ = true;  // the devices stop at their next step
        }
      }
      std::unique_lock lock(doneMutex_);
      if (doneSignal_.wait_for(lock, std::chrono::milliseconds(50), [&] { return running_ == 0; })) break;
    }
    return watchError;
  }

  /// A device's own error first, then the caller's (its progress callback's), then a cancellation (Cancelled
  /// is also what the others throw once the first has stopped them).
  void rethrowErrors(const std::exception_ptr& watchError) const {
    std::exception_ptr failed, cancelled;
    for (const auto& e : errors_) {
      if (!e) continue;
      try {
        std::rethrow_exception(e);
      } catch (const Cancelled&) {
        if (!cancelled) cancelled = e;
      } catch (...) {
        failed = e;
        break;
      }
    }
    if (failed) std::rethrow_exception(failed);
    if (watchError) std::rethrow_exception(watchError);
    if (cancelled) std::rethrow_exception(cancelled);
  }

  /// Each device's slices, its stages summed over them, and when its thread started and ended.
  nlohmann::json record() const {
    nlohmann::json perDevice = nlohmann::json::array();
    for (std::size_t k = 0; k < nd_; ++k) {
      std::map<std::string, double> stages;
      for (const auto& st : deviceTimings_[k].stages()) stages[st.stage] += st.milliseconds;
      perDevice.push_back({{"device", devices_[k]->info().id},
                           {"slices", {block(k) + 1, block(k + 1)}},
                           {"stages_ms", stages},
                           {"thread_ms", span_[k]}});  // when its thread started and ended, from the block's start
    }
    return perDevice;
  }

  /// Milliseconds since the block's start.
  double since() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  index_t block(std::size_t k) const { return static_cast<index_t>(k) * slices_ / static_cast<index_t>(nd_); }

  /// Set by the first device to fail and by the watcher when the caller's progress throws: every device stops
  /// at its next step (Cancelled), so an error on one GPU does not wait for the others' whole blocks.
  void check() const {
    if (stop_.load()) throw Cancelled();
    progress_.checkCancelled();
  }

  /// Device k's slices [block(k), block(k + 1)), its operators kept from an earlier call where the cache has
  /// them, its coil maps batched.
  void solveBlock(std::size_t k) {
    const index_t first = block(k), count = block(k + 1) - first;
    CachedOperators cached(cache_, *devices_[k], d_, own_);
    std::shared_ptr<IterativeProblem::TrajectoryOperators>& shared = cached.operators;
    const Progress checked([&](double, const std::string&) { check(); });
    BatchedMaps batched(*devices_[k], d_, own_, first + count, checked);
    const IterativeProblem::CoilMapsSource mapsSource = batched.source();
    const IterativeProblem::CoilMapsSource* maps = BatchedMaps::applies(d_, own_) ? &mapsSource : nullptr;
    for (index_t sl = first; sl < first + count; ++sl) {
      const double done = static_cast<double>(sl - first);
      const Progress setup([&](double f, const std::string&) {
        check();
        fraction_[k] = (done + 0.2 * std::clamp(f, 0.0, 1.0)) / static_cast<double>(count);
      });
      const Progress iterations([&](double f, const std::string&) {
        check();
        fraction_[k] = (done + 0.2 + 0.8 * std::clamp(f, 0.0, 1.0)) / static_cast<double>(count);
      });
      solveSlice(*devices_[k], d_, own_, sl, slices_, deviceTimings_[k], setup, iterations, shared, out_, maps);
      std::lock_guard lock(out_.mutex);
      out_.perSlice[static_cast<std::size_t>(sl)]["device"] = devices_[k]->info().id;
      if (cached.reused) out_.perSlice[static_cast<std::size_t>(sl)]["operators"] = "kept from an earlier call";
    }
    cached.keep();
    fraction_[k] = 1.0;
  }

  const std::vector<Backend*>& devices_;
  const Dataset& d_;
  ReconSettings own_;
  const index_t slices_;
  const std::size_t nd_;
  const Progress& progress_;
  SliceOutputs& out_;
  OperatorCache* cache_;
  std::vector<std::atomic<double>> fraction_;  // of each device's block
  std::vector<Timings> deviceTimings_;
  std::vector<std::exception_ptr> errors_;
  std::mutex doneMutex_;
  std::condition_variable doneSignal_;
  std::size_t running_;
  std::atomic<bool> stop_{false};
  const int ompThreads_ = std::max(1, omp_get_max_threads() / static_cast<int>(nd_));
  const std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  std::vector<std::array<double, 2>> span_;  // each device's thread: started, done (ms from t0)
};

/// The slices over several devices, a thread each; see the top of the file. Returns each device's record (its
/// slices and its stages).
nlohmann::json solveOnDevices(const std::vector<Backend*>& devices, const Dataset& d, const ReconSettings& s, index_t slices,
                    Timings& timings, const Progress& progress, SliceOutputs& out, OperatorCache* cache) {
  DeviceRun run(devices, d, s, slices, progress, out, cache);
  std::vector<std::jthread> threads;  // joined on the way out should starting one of them throw
  threads.reserve(devices.size());
  for (std::size_t k = 0; k < devices.size(); ++k) threads.emplace_back([&run, k] { run.work(k); });
  const std::string what = std::string(s.method == Method::Cs ? "cs" : "cg") + ": " + std::to_string(slices) +
                           " slices on " + std::to_string(devices.size()) + " devices";
  const std::exception_ptr watchError = run.watch(what);
  for (auto& t : threads) t.join();
  const double wallMs = run.since();
  run.rethrowErrors(watchError);

  std::string ran;  // every device of the stage: "cuda:0+cuda:1"
  for (Backend* b : devices) ran += (ran.empty() ? "" : "+") + b->info().id;
  timings.add(what, wallMs, ran);
  return run.record();
}

}  // namespace

ImageSet reconstructIterativeOn(const std::vector<Backend*>& devices, const Dataset& d, const ReconSettings& s,
                                Timings& timings, const Progress& progress, OperatorCache* cache) {
  require(!devices.empty() && std::all_of(devices.begin(), devices.end(), [](Backend* b) { return b != nullptr; }),
          "cg: no device to reconstruct on");
  const index_t slices = std::max<index_t>(1, d.header.slices);
  SliceOutputs out;
  out.perSlice.resize(static_cast<std::size_t>(slices));
  const std::size_t nd = std::min(devices.size(), static_cast<std::size_t>(slices));

  nlohmann::json devicesRecord;  // several devices: each one's slices and stages
  if (nd == 1) {
    Backend& backend = *devices[0];
    CachedOperators cached(cache, backend, d, s);
    std::shared_ptr<IterativeProblem::TrajectoryOperators>& shared = cached.operators;
    const Progress checked([&](double, const std::string&) { progress.checkCancelled(); });
    BatchedMaps batched(backend, d, s, slices, checked);
    const IterativeProblem::CoilMapsSource mapsSource = batched.source();
    const IterativeProblem::CoilMapsSource* maps = BatchedMaps::applies(d, s) ? &mapsSource : nullptr;
    for (index_t sl = 0; sl < slices; ++sl) {
      const double from = static_cast<double>(sl) / slices, to = static_cast<double>(sl + 1) / slices;
      // Setup takes the first fifth of a slice's share, the iterations the rest.
      const Progress::Sub setup(progress, from, from + 0.2 * (to - from));
      const Progress iterations([&](double f, const std::string& st) {
        progress.report(from + (to - from) * (0.2 + 0.8 * f),
                        st + (slices > 1 ? " (slice " + std::to_string(sl + 1) + ")" : ""));
      });
      solveSlice(backend, d, s, sl, slices, timings, setup, iterations, shared, out, maps);
      if (cached.reused) out.perSlice[static_cast<std::size_t>(sl)]["operators"] = "kept from an earlier call";
    }
    cached.keep();
  } else {
    devicesRecord = solveOnDevices(std::vector<Backend*>(devices.begin(), devices.begin() + static_cast<std::ptrdiff_t>(nd)),
                                   d, s, slices, timings, progress, out, cache);
  }

  ImageSet result = std::move(out.result);
  if (slices == 1) {
    result.convergence = out.perSlice[0];
  } else {
    result.convergence = {{"slices", out.perSlice}};
  }
  if (!devicesRecord.is_null()) result.convergence["devices"] = std::move(devicesRecord);
  if (!out.warmNote.empty()) result.convergence["warm_start"] = out.warmNote;
  progress.report(1.0, s.method == Method::Cs ? "cs: done" : "cg: done");
  return result;
}

}  // namespace larmor::recon
