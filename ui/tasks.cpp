#include "tasks.hpp"

#include <QFileInfo>

#include "larmor/backend/registry.hpp"
#include "larmor/recon/iterative.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/settings_table.hpp"

#include <algorithm>
#include <vector>

namespace larmor::ui {
namespace {

// The warm start arrived in the engine while this GUI was written (IterativeSettings::warmStart); the
// templates find it at compile time, so the GUI also builds against an engine without it (then the
// request goes out cold and the slider still works, only slower).
template <class Settings>
constexpr bool takesWarmStart() {
  return requires(Settings s, std::shared_ptr<const CArray> x) { s.iterative.warmStart = x; };
}

template <class Settings>
void setWarmStart(Settings& s, const std::shared_ptr<const CArray>& x) {
  if constexpr (requires { s.iterative.warmStart = x; }) s.iterative.warmStart = x;
}

// The engine's L-curve helper (recon::lcurve), found the same way.
template <class Backend_, class Settings>
bool engineLCurve(Backend_& backend, const Dataset& d, const Settings& s, const std::vector<double>& lambdas,
                  const Progress& progress, nlohmann::json& out) {
  if constexpr (requires { recon::lcurve(backend, d, s, lambdas, progress); }) {
    for (const auto& p : recon::lcurve(backend, d, s, lambdas, progress))
      out.push_back({{"lambda", p.lambda}, {"residual_norm", p.residualNorm}, {"prior_norm", p.priorNorm},
                     {"iterations", p.iterations}});
    return true;
  }
  return false;
}

}  // namespace

bool warmStartSupported() { return takesWarmStart<recon::ReconSettings>(); }

QString describeJob(const ReconJob& job) {
  QString s = QString::fromStdString(recon::toString(job.settings.method));
  if (job.settings.method == recon::Method::Cg)
    s += QStringLiteral(", %1 λ %2").arg(QString::fromStdString(recon::settings::choiceName("iterative.regularizer", static_cast<int>(job.settings.iterative.regularizer))))
             .arg(job.settings.iterative.lambda, 0, 'g', 3);
  return s;
}

Task makeReconTask(ReconJob job, TaskKind kind, const QString& label) {
  Task t;
  t.kind = kind;
  t.label = label.isEmpty() ? describeJob(job) : label;
  t.work = [job = std::move(job)](const Progress& progress) {
    recon::ReconRequest req;
    req.dataset = job.dataset.get();
    req.settings = job.settings;
    req.device = job.device;
    req.backend = job.backend;
    setWarmStart(req.settings, job.warmStart);
    TaskOutput out;
    out.result = std::make_shared<const recon::ReconResult>(recon::run(req, progress));
    out.dataset = job.dataset;
    return out;
  };
  return t;
}

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
    if (engineLCurve(*backend, *job.dataset, job.settings, lambdas, progress, out.extra)) return out;
    for (std::size_t i = 0; i < lambdas.size(); ++i) {
      const double from = static_cast<double>(i) / lambdas.size(), to = static_cast<double>(i + 1) / lambdas.size();
      const Progress sub([&](double f, const std::string& st) { progress.report(from + (to - from) * f, st); });
      recon::ReconRequest req;
      req.dataset = job.dataset.get();
      req.settings = job.settings;
      req.settings.iterative.lambda = lambdas[i];
      req.backend = backend;
      const recon::ReconResult r = recon::run(req, sub);
      if (r.metrics.contains("percent_error"))
        out.extra.push_back({{"lambda", lambdas[i]}, {"percent_error", r.metrics["percent_error"]}});
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
    out.dataset = std::make_shared<const Dataset>(io::loadDataset(p, options, progress));
    return out;
  };
  return t;
}

Task makeSimulateTask(const phantom::SimulateSettings& s) {
  Task t;
  t.kind = TaskKind::Load;
  t.label = QObject::tr("simulating a %1x%2x%3 phantom").arg(s.matrix[0]).arg(s.matrix[1]).arg(s.matrix[2]);
  t.work = [s](const Progress& progress) {
    TaskOutput out;
    out.dataset = std::make_shared<const Dataset>(phantom::simulate(s, progress));
    return out;
  };
  return t;
}

}  // namespace larmor::ui
