// The worker's tasks (tasks.hpp): closures that load, simulate or reconstruct on the worker thread.
#include "tasks.hpp"

#include <QFileInfo>

#include "larmor/backend/registry.hpp"
#include "larmor/phantom/dynamic.hpp"
#include "larmor/quality/display.hpp"
#include "larmor/recon/iterative.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/recon/warm_up.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace larmor::ui {

Task makeReconTask(ReconJob job, TaskKind kind, const QString& label) {
  Task t;
  t.kind = kind;
  t.label = label.isEmpty() ? QString::fromStdString(recon::toString(job.settings.method)) : label;
  t.work = [job = std::move(job)](const Progress& progress) {
    recon::ReconRequest req;
    req.dataset = job.dataset.get();
    req.settings = job.settings;
    req.device = job.device;
    req.backend = job.backend;
    req.settings.iterative.warmStart = job.warmStart;
    TaskOutput out;
    if (job.series) {
      // Every frame: jointly with the temporal prior where recon::jointOverFrames says so (cs), else one by one.
      for (recon::ReconResult& r : recon::runFrames(job.series->frames, req, progress))
        out.frames.push_back(std::make_shared<const recon::ReconResult>(std::move(r)));
      out.dataset = job.dataset;
      return out;
    }
    out.result = std::make_shared<const recon::ReconResult>(recon::run(req, progress));
    out.dataset = job.dataset;
    return out;
  };
  return t;
}

Task makeWarmUpTask(std::shared_ptr<Backend> backend, const recon::ReconSettings& settings) {
  Task t;
  t.kind = TaskKind::WarmUp;
  t.label = QObject::tr("warming up %1").arg(QString::fromStdString(backend->info().id));
  t.work = [backend, settings](const Progress&) {
    recon::WarmUpHint hint;
    // No data yet: a radial problem (the workstation's demos); warmUp takes a Cartesian one for FFT and GRAPPA.
    hint.nonCartesian = true;
    std::string why;
    TaskOutput out;
    const double ms = recon::warmUp(backend, settings, hint, &why);
    out.extra = {{"ms", ms}, {"error", why}};
    return out;
  };
  return t;
}

namespace {

/// One λ of the sweep on the kept problem, warm-started from the last λ's solution after the first: CG
/// for cg, FISTA (the CS prior's TV or wavelet norm as ‖Wρ‖) for cs; its percent error where a truth exists.
nlohmann::json sweepPoint(Backend& backend, recon::IterativeProblem& p, const ReconJob& job, double lambda,
                          bool warm, const Progress& progress) {
  const auto& it = job.settings.iterative;
  const int iterations = job.settings.method == recon::Method::Cs
                             ? p.solveSparse(lambda, it.iterations, it.tolerance, warm, nullptr, progress).iterations
                             : p.solve(lambda, it.iterations, it.tolerance, warm, nullptr, progress).iterations;
  nlohmann::json point = {{"lambda", lambda}, {"residual_norm", p.residualNorm()}, {"prior_norm", p.priorNorm()},
                          {"iterations", iterations}};
  const Dataset& d = *job.dataset;
  CArray image = p.combined();
  const Shape s = p.imageShape();
  image.reshape(Shape{s[0], s[1], s[2], 1, 1});
  if (d.reference && d.reference->size() == image.size()) {
    try {
      point["percent_error"] = quality::compareWithTruthOn(backend, image, d).percentError;
    } catch (const Error&) {
      // No comparison for this data: the L-curve point stands alone.
    }
  }
  return point;
}

}  // namespace

Task makeLambdaSweepTask(ReconJob job, const QVector<double>& lambdaList) {
  Task t;
  t.kind = TaskKind::Sweep;
  t.label = QObject::tr("λ sweep over %1 values").arg(lambdaList.size());
  std::vector<double> lambdas(lambdaList.begin(), lambdaList.end());
  std::sort(lambdas.begin(), lambdas.end());  // warm starts walk from one λ to the next
  t.work = [job = std::move(job), lambdas](const Progress& progress) {
    TaskOutput out;
    out.extra = nlohmann::json::array();
    std::shared_ptr<Backend> backend = job.backend ? job.backend : BackendRegistry::instance().select(job.device).backend;
    recon::settings::validate(job.settings);
    Timings timings;
    recon::IterativeProblem problem(*backend, *job.dataset, job.settings, 0, timings, progress);
    for (std::size_t i = 0; i < lambdas.size(); ++i) {
      char l[32];
      std::snprintf(l, sizeof l, "%.3g", lambdas[i]);
      const std::string which = "λ sweep: λ " + std::string(l) + " (" + std::to_string(i + 1) + "/" +
                                std::to_string(lambdas.size()) + ") — ";
      const double n = static_cast<double>(lambdas.size());
      const Progress::Sub sub(progress, i / n, (i + 1) / n, which);  // cancellation is the task's
      out.extra.push_back(sweepPoint(*backend, problem, job, lambdas[i], i > 0, sub));
    }
    return out;
  };
  return t;
}

Task makeLoadTask(const QString& path, const io::LoadOptions& options) {
  Task t;
  t.kind = TaskKind::Load;
  t.label = QObject::tr("loading %1").arg(QFileInfo(path).fileName());
  const std::string p = path.toStdString();
  t.work = [p, options](const Progress& progress) {
    TaskOutput out;
    // Every frame of the file (series, not merges); the window shows one at a time.
    out.series = std::make_shared<const io::Series>(io::loadSeries(p, options, progress));
    out.dataset = std::shared_ptr<const Dataset>(out.series, &out.series->frames.front());
    return out;
  };
  return t;
}

Task makeSimulateTask(const phantom::SimulateSettings& s) {
  Task t;
  t.kind = TaskKind::Load;
  t.label = QObject::tr("simulating a %1x%2x%3 phantom").arg(s.matrix[0]).arg(s.matrix[1]).arg(s.matrix[2]);
  if (s.frames > 1) t.label = QObject::tr("simulating a %1x%2 dynamic phantom, %3 frames").arg(s.matrix[0]).arg(s.matrix[1]).arg(s.frames);
  t.work = [s](const Progress& progress) {
    TaskOutput out;
    if (s.frames <= 1) {
      out.dataset = std::make_shared<const Dataset>(phantom::simulate(s, progress));
      return out;
    }
    auto series = std::make_shared<io::Series>();
    series->frames = phantom::simulateSeries(s, phantom::DynamicModel{}, progress);
    series->repetitions.clear();
    for (std::size_t f = 0; f < series->frames.size(); ++f) {
      io::FrameKey k;
      k.repetition = static_cast<int>(f);
      series->keys.push_back(k);
      series->repetitions.push_back(static_cast<int>(f));
    }
    series->echoTimeMs.assign(series->frames.size(), io::unknownTime());
    series->triggerTimeMs.assign(series->frames.size(), io::unknownTime());
    out.series = std::move(series);
    out.dataset = std::shared_ptr<const Dataset>(out.series, &out.series->frames.front());
    return out;
  };
  return t;
}

}  // namespace larmor::ui
