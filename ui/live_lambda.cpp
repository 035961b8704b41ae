// Live λ: one kept IterativeProblem, warm-started chunked solves, each chunk published (live_lambda.hpp).
#include "live_lambda.hpp"

#include <algorithm>

#include "larmor/backend/registry.hpp"
#include "larmor/quality/display.hpp"
#include "larmor/quality/metrics.hpp"
#include "larmor/recon/dynamic.hpp"
#include "larmor/recon/iterative.hpp"
#include "larmor/recon/live_series.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/util/provenance.hpp"
#include "larmor/util/timer.hpp"

namespace larmor::ui {

LiveLambdaEngine::LiveLambdaEngine() = default;
LiveLambdaEngine::~LiveLambdaEngine() = default;

bool LiveLambdaEngine::applies(const ReconJob& job) {
  const auto m = job.settings.method;
  return job.dataset && (m == recon::Method::Cg || m == recon::Method::Cs) && job.dataset->header.slices <= 1;
}

std::string LiveLambdaEngine::keyOf(const ReconJob& job) {
  recon::ReconSettings s = job.settings;
  s.iterative.lambda = 0;  // what a solve takes, not what the problem is built from
  s.iterative.iterations = 1;
  s.iterative.tolerance = 0;
  s.iterative.warmStart.reset();
  return std::to_string(reinterpret_cast<std::uintptr_t>(job.dataset.get())) + "|" + job.device + "|" +
         recon::settings::toJson(s).dump();
}

bool LiveLambdaEngine::ready(const ReconJob& job) const {
  std::lock_guard lock(mutex_);
  return problem_ && key_ == keyOf(job);
}

void LiveLambdaEngine::reset() {
  std::lock_guard lock(mutex_);
  problem_.reset();
  dataset_.reset();
  key_.clear();
}

void LiveLambdaEngine::prepare(const ReconJob& job, const Progress& progress) {
  std::lock_guard lock(mutex_);
  const std::string key = keyOf(job);
  if (problem_ && key_ == key) return;
  problem_.reset();
  key_.clear();
  dataset_ = job.dataset;
  backend_ = job.backend ? job.backend : BackendRegistry::instance().select(job.device).backend;
  recon::settings::validate(job.settings);
  Timings setup;
  {
    ScopedStage st(setup, "setup", backend_.get());
    problem_ = std::make_unique<recon::IterativeProblem>(*backend_, *job.dataset, job.settings, 0, setup, progress);
  }
  if (job.settings.method == recon::Method::Cs) {
    // Compressed sensing also needs the step bound L (a power iteration) and a starting image (a few CG
    // steps) before its first FISTA step: both here, so that the first slider move only iterates.
    ScopedStage st(setup, "step bound", backend_.get());
    const CArray* initial = job.warmStart && job.warmStart->size() == problem_->voxels() ? job.warmStart.get() : nullptr;
    problem_->solveSparse(job.settings.iterative.lambda, 1, 0, false, initial, progress);
  }
  setupMs_ = setup.totalMilliseconds();
  key_ = key;
}

recon::ReconResult LiveLambdaEngine::solve(const ReconJob& job, const Progress& progress, const Publish& publish) {
  prepare(job, Progress([&](double f, const std::string& st) { progress.report(0.2 * f, st); }));
  std::lock_guard lock(mutex_);
  recon::IterativeProblem& p = *problem_;
  const auto& it = job.settings.iterative;
  const bool cs = job.settings.method == recon::Method::Cs;
  const int total = std::max(1, it.iterations);
  recon::ReconResult result;
  int done = 0, chunk = 2;  // the first picture after two iterations, then 4, 8, ... (fewer while dragging)

  bool converged = false;
  nlohmann::json j;
  const Shape img = p.imageShape();
  auto image = [&] {
    CArray c = p.combined();
    c.reshape(Shape{img[0], img[1], img[2], 1, 1});
    return c;
  };
  {
    ScopedStage st(result.timings, cs ? "FISTA (live λ)" : "CG (live λ)", backend_.get());
    while (done < total && !converged) {
      const int n = std::min(chunk, total - done);
      const int from = done;
      // The first chunk after a fresh setup starts from the image on screen when it fits the solve grid.
      const CArray* initial =
          done == 0 && job.warmStart && job.warmStart->size() == p.voxels() ? job.warmStart.get() : nullptr;
      const Progress sub([&](double f, const std::string& s) {
        progress.report(0.2 + 0.8 * (from + f * n) / total, s + " (λ " + std::to_string(it.lambda) + ")");
      });
      if (cs) {
        const solve::FistaResult r = p.solveSparse(it.lambda, n, it.tolerance, true, initial, sub);
        converged = r.converged;
        j = r.toJson();
        j["solver"] = "FISTA";
      } else {
        const solve::CgResult r = p.solve(it.lambda, n, it.tolerance, true, initial, sub);
        converged = r.converged;
        j = r.toJson();
        j["solver"] = "CG";
      }
      done += n;
      if (publish && done < total && !converged) publish(std::make_shared<const CArray>(image()), done, total);
      chunk *= 2;
    }
  }
  {
    ScopedStage st(result.timings, "download", backend_.get());
    result.image = image();
  }
  const DeviceInfo dev = backend_->info();
  result.device = dev.id;
  result.deviceName = dev.name;
  j["iterations"] = done;
  j["lambda"] = it.lambda;
  j["live"] = {{"chunked", true}, {"setup_ms_kept", setupMs_}};
  result.convergence = j;
  const Dataset& d = *job.dataset;
  if (d.reference && d.reference->size() == result.image.size()) {
    try {
      result.metrics = quality::toJson(quality::compareWithTruthOn(*backend_, result.image, d));
    } catch (const Error& e) {
      result.metrics = {{"skipped", e.what()}};
    }
  }
  result.provenance = provenance(recon::settings::toJson(job.settings), dev.id, dev.name, result.timings, d.source);
  result.provenance["convergence"] = result.convergence;
  progress.report(1.0, cs ? "cs: done" : "cg: done");
  return result;
}

LiveSeriesEngine::LiveSeriesEngine() = default;
LiveSeriesEngine::~LiveSeriesEngine() = default;

bool LiveSeriesEngine::applies(const ReconJob& job) {
  return job.series && recon::jointOverFrames(job.series->frames, job.settings) &&
         job.settings.iterative.lambdaRule != recon::LambdaRule::CrossValidation;
}

std::string LiveSeriesEngine::keyOf(const ReconJob& job) {
  recon::ReconSettings s = job.settings;
  s.dynamic.temporalLambda = 0;  // what a solve takes, not what the series is built from
  s.iterative.warmStart.reset();
  return std::to_string(reinterpret_cast<std::uintptr_t>(job.series.get())) + "|" + job.device + "|" +
         recon::settings::toJson(s).dump();
}

void LiveSeriesEngine::reset() {
  std::lock_guard lock(mutex_);
  series_.reset();
  data_.reset();
  key_.clear();
}

bool LiveSeriesEngine::ready(const ReconJob& job) {
  std::lock_guard lock(mutex_);
  return series_ && key_ == keyOf(job);
}

void LiveSeriesEngine::prepare(const ReconJob& job, const Progress& progress) {
  std::lock_guard lock(mutex_);
  prepareLocked(job, progress);
}

void LiveSeriesEngine::prepareLocked(const ReconJob& job, const Progress& progress) {
  const std::string key = keyOf(job);
  if (series_ && key_ == key) return;
  series_.reset();
  key_.clear();
  data_ = job.series;
  recon::ReconRequest r;
  r.settings = job.settings;
  r.device = job.device;
  r.backend = job.backend;
  series_ = std::make_unique<recon::LiveSeries>(job.series->frames, r, progress);
  key_ = key;
}

std::vector<recon::ReconResult> LiveSeriesEngine::solve(const ReconJob& job, const Progress& progress,
                                                        const Publish& publish) {
  std::lock_guard lock(mutex_);
  prepareLocked(job, Progress::Sub(progress, 0.0, 0.3, ""));
  recon::LiveSeries::Publish each;
  if (publish)
    each = [&](const std::vector<CArray>& frames, int done, int total) {
      publish(std::make_shared<const std::vector<CArray>>(frames), done, total);
    };
  return series_->solve(job.settings.dynamic.temporalLambda, each, Progress::Sub(progress, 0.3, 1.0, ""));
}

namespace {

/// The worker's task that makes `engine`'s kept problem for `job` (LiveLambdaEngine or LiveSeriesEngine).
template <class Engine>
Task prepareTask(std::shared_ptr<Engine> engine, ReconJob job, const QString& label) {
  Task t;
  t.kind = TaskKind::Prepare;
  t.label = label;
  t.work = [engine = std::move(engine), job = std::move(job)](const Progress& progress) {
    engine->prepare(job, progress);
    return TaskOutput{};
  };
  return t;
}

}  // namespace

Task makeLivePrepareTask(std::shared_ptr<LiveLambdaEngine> engine, ReconJob job) {
  return prepareTask(std::move(engine), std::move(job), QObject::tr("preparing live λ"));
}

Task makeLiveLambdaTask(std::shared_ptr<LiveLambdaEngine> engine, ReconJob job, const QString& label,
                        LiveLambdaEngine::Publish publish) {
  Task t;
  t.kind = TaskKind::Recon;
  t.label = label;
  t.work = [engine = std::move(engine), job = std::move(job), publish = std::move(publish)](const Progress& progress) {
    TaskOutput out;
    out.result = std::make_shared<const recon::ReconResult>(engine->solve(job, progress, publish));
    out.dataset = job.dataset;
    return out;
  };
  return t;
}

Task makeLiveSeriesPrepareTask(std::shared_ptr<LiveSeriesEngine> engine, ReconJob job) {
  return prepareTask(std::move(engine), std::move(job), QObject::tr("preparing live temporal λ"));
}

Task makeLiveSeriesTask(std::shared_ptr<LiveSeriesEngine> engine, ReconJob job, const QString& label,
                        LiveSeriesEngine::Publish publish) {
  Task t;
  t.kind = TaskKind::Recon;
  t.label = label;
  t.work = [engine = std::move(engine), job = std::move(job), publish = std::move(publish)](const Progress& progress) {
    TaskOutput out;
    for (recon::ReconResult& r : engine->solve(job, progress, publish))
      out.frames.push_back(std::make_shared<const recon::ReconResult>(std::move(r)));
    out.dataset = job.dataset;
    return out;
  };
  return t;
}

}  // namespace larmor::ui
