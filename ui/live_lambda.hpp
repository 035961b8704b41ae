#pragma once
// Live λ: a slider move redoes only the solve. Everything of an iterative reconstruction that does not depend on
// λ — the NUFFT plan, the Toeplitz kernel Q, the coil maps, E^H d — is built once into an
// IterativeProblem (engine/include/larmor/recon/iterative.hpp) and kept between slider moves; each new
// λ is then solved warm-started from the last iterate in growing chunks of iterations (2, 4, 8, ...),
// and every chunk's image is published to the window at once, so the picture follows
// the slider after a few iterations instead of after the whole solve. A newer λ cancels the solve at its
// next iteration (the worker's cancel token); the chunks go on until the settings' iterations or
// tolerance are reached, so the image converges where the slider rests. Single-slice data only (a
// multi-slice data set re-runs the whole pipeline per λ, warm-started).
#include <QString>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "tasks.hpp"

namespace larmor::recon {
class IterativeProblem;
class LiveSeries;
}

namespace larmor::ui {

class LiveLambdaEngine {
 public:
  /// (image [x, y, z, 1, 1], iterations done so far for this λ, the settings' total).
  using Publish = std::function<void(std::shared_ptr<const CArray> image, int done, int total)>;
  LiveLambdaEngine();
  ~LiveLambdaEngine();

  /// Whether `job` can take the live path (CG or CS, one slice).
  static bool applies(const ReconJob& job);
  /// Builds the λ-independent problem for `job` unless the kept one fits it (worker thread).
  void prepare(const ReconJob& job, const Progress& progress);
  /// Solves job.settings.iterative.lambda as described above (worker thread); the final result as a run.
  recon::ReconResult solve(const ReconJob& job, const Progress& progress, const Publish& publish);
  /// Forgets the kept problem (new data).
  void reset();
  bool ready(const ReconJob& job) const;

 private:
  static std::string keyOf(const ReconJob& job);
  mutable std::mutex mutex_;
  std::unique_ptr<recon::IterativeProblem> problem_;
  std::shared_ptr<Backend> backend_;
  std::shared_ptr<const Dataset> dataset_;  ///< kept: its address is part of the key
  std::string key_;
  double setupMs_ = 0;
};

/// Live temporal λ: the same for a series under cs (the joint reconstruction): one kept recon::LiveSeries
/// (engine/include/larmor/recon/live_series.hpp: frames' problems, coil maps, E^H d and step bound made once), each
/// new temporal λ solved from the last series in growing chunks, every chunk's frames published.
class LiveSeriesEngine {
 public:
  /// (every frame's image [x, y, 1, 1, slices], iterations done for this λ, the settings' total).
  using Publish = std::function<void(std::shared_ptr<const std::vector<CArray>> frames, int done, int total)>;
  LiveSeriesEngine();
  ~LiveSeriesEngine();
  /// Whether `job` can take the live path (a series that recon::jointOverFrames reconstructs jointly).
  static bool applies(const ReconJob& job);
  /// Makes the kept series for `job` unless the kept one fits it (worker thread).
  void prepare(const ReconJob& job, const Progress& progress);
  bool ready(const ReconJob& job);
  /// Solves job.settings.dynamic.temporal_lambda (worker thread), making the kept series first unless the kept
  /// one fits `job`; one result per frame, as recon::runFrames.
  std::vector<recon::ReconResult> solve(const ReconJob& job, const Progress& progress, const Publish& publish);
  void reset();

 private:
  static std::string keyOf(const ReconJob& job);
  void prepareLocked(const ReconJob& job, const Progress& progress);
  std::mutex mutex_;
  std::unique_ptr<recon::LiveSeries> series_;
  std::shared_ptr<const io::Series> data_;  ///< kept: its address is part of the key
  std::string key_;
};

/// The worker's tasks over one engine: keep it alive as long as the window.
Task makeLivePrepareTask(std::shared_ptr<LiveLambdaEngine> engine, ReconJob job);
Task makeLiveLambdaTask(std::shared_ptr<LiveLambdaEngine> engine, ReconJob job, const QString& label,
                        LiveLambdaEngine::Publish publish);
Task makeLiveSeriesPrepareTask(std::shared_ptr<LiveSeriesEngine> engine, ReconJob job);
Task makeLiveSeriesTask(std::shared_ptr<LiveSeriesEngine> engine, ReconJob job, const QString& label,
                        LiveSeriesEngine::Publish publish);

}  // namespace larmor::ui
