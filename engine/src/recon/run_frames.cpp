// recon::runFrames: a series' frames, jointly with a temporal prior (recon/dynamic.hpp) or one by one (run()).
// The joint path does what run() does around the reconstruction (checks, noise whitening, the backend, the
// metrics, the provenance) for every frame, with one reconstruction for all of them. LiveSeries
// (recon/live_series.hpp) is the same path with the reconstruction kept between solves.
#include "larmor/recon/live_series.hpp"

#include <algorithm>

#include "larmor/backend/registry.hpp"
#include "larmor/recon/dynamic.hpp"
#include "larmor/recon/noise.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/resources.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/util/provenance.hpp"

namespace larmor::recon {
namespace {

/// The frames, checked as run() checks one, whitened where asked (copies).
std::vector<Dataset> preparedFrames(const std::vector<Dataset>& frames, const ReconSettings& s) {
  std::vector<Dataset> out;
  out.reserve(frames.size());
  for (const Dataset& f : frames) {
    f.validateStructure();
    requireMatrixFitsData(f, s);
    f.requireFiniteSamples();
    out.push_back(f);
    if (s.noiseWhitening == NoiseWhiteningMode::Auto && out.back().noise) whitenIfRequested(out.back(), s.noiseWhitening);
  }
  return out;
}

/// The backend, the frames prepared and the memory plan of a joint run: what runJoint and LiveSeries share.
struct JointRun {
  JointRun(const std::vector<Dataset>& input, const ReconRequest& request)
      : settings((settings::validate(request.settings), request.settings)),
        frames(preparedFrames(input, settings)),
        sel(request.backend ? Selection{request.backend, {}} : BackendRegistry::instance().select(request.device)),
        dev(sel.backend->info()),
        memory(planDynamicMemory(frames, settings, dev)) {}  // refused up front, with one line, when it cannot fit
  Backend& backend() const { return *sel.backend; }

  /// One result per frame from the series' images, as run() makes one.
  std::vector<ReconResult> results(SeriesImages images, const Timings& timings) const {
    // The prior and its weights are in the settings' JSON (dynamic.*).
    const nlohmann::json dynamic = {{"joint", true}, {"frames", frames.size()}};
    std::vector<ReconResult> results(frames.size());
    for (std::size_t t = 0; t < frames.size(); ++t) {
      ReconResult& r = results[t];
      r.device = dev.id;
      r.deviceName = dev.name;
      r.deviceNotice = sel.notice;
      r.image = std::move(images.combined[t]);
      r.timings = timings;
      r.convergence = images.convergence;
      compareWithReference(backend(), frames[t], r);
      r.provenance = provenance(toJson(settings), dev.id, dev.name, timings, frames[t].source);
      r.provenance["dynamic"] = dynamic;
      r.provenance["dynamic"]["frame"] = t;
      r.provenance["convergence"] = r.convergence;
      r.provenance["memory"] = {{"rule", memory.rule},
                                {"estimated_host_bytes", memory.hostBytes()},
                                {"estimated_device_bytes", memory.deviceBytes()},
                                {"peak_resident_bytes", peakResidentBytes()}};
      if (const MemoryStats ms = backend().executionOps().memoryStats(); ms.tracked)
        r.provenance["memory"]["backend_peak_live_bytes"] = ms.peakLiveBytes;
    }
    return results;
  }

  ReconSettings settings;
  std::vector<Dataset> frames;
  Selection sel;
  DeviceInfo dev;
  MemoryEstimate memory;
};

std::vector<ReconResult> runJoint(const std::vector<Dataset>& input, const ReconRequest& request,
                                  const Progress& progress) {
  const JointRun run(input, request);
  progress.report(0.0, "reconstructing " + std::to_string(run.frames.size()) + " frames jointly on " + run.dev.id);
  Timings timings;
  run.backend().executionOps().resetPeakMemory();
  std::vector<ReconResult> results =
      run.results(reconstructDynamic(run.backend(), run.frames, run.settings, timings, progress), timings);
  progress.report(1.0, "done");
  return results;
}

}  // namespace

std::vector<ReconResult> runFrames(const std::vector<Dataset>& frames, const ReconRequest& request,
                                   const Progress& progress) {
  if (jointOverFrames(frames, request.settings)) return runJoint(frames, request, progress);
  std::vector<ReconResult> results;
  ReconRequest one = request;
  for (std::size_t f = 0; f < frames.size(); ++f) {
    one.dataset = &frames[f];
    const double f0 = static_cast<double>(f) / frames.size(), f1 = (f + 1.0) / frames.size();
    results.push_back(run(one, Progress::Sub(progress, f0, f1, "")));
  }
  return results;
}

struct LiveSeries::Impl {
  Impl(const std::vector<Dataset>& frames, const ReconRequest& request) : run(frames, request) {}
  JointRun run;
  std::vector<std::unique_ptr<DynamicProblem>> slices;
  double setupMs = 0;
  bool solved = false;
};

LiveSeries::LiveSeries(const std::vector<Dataset>& frames, const ReconRequest& request, const Progress& progress) {
  require(jointOverFrames(frames, request.settings),
          (frames.empty() ? std::string("series") : frames.front().source) +
              ": live temporal lambda needs a joint reconstruction (--method cs, two or more 2D frames)");
  impl_ = std::make_unique<Impl>(frames, request);
  require(impl_->run.settings.iterative.lambdaRule != LambdaRule::CrossValidation,
          frames.front().source + ": live temporal lambda takes the lambda it is given, not --lambda-rule cv");
  Timings setup;
  Backend& backend = impl_->run.backend();
  const index_t slices = impl_->run.frames.front().header.slices;
  for (index_t sl = 0; sl < slices; ++sl)
    impl_->slices.push_back(std::make_unique<DynamicProblem>(
        backend, impl_->run.frames, impl_->run.settings, sl, setup,
        Progress::Sub(progress, static_cast<double>(sl) / slices, (sl + 1.0) / slices, "")));
  backend.synchronize();
  impl_->setupMs = setup.totalMilliseconds();
}

LiveSeries::~LiveSeries() = default;

double LiveSeries::setupMilliseconds() const { return impl_->setupMs; }

std::vector<ReconResult> LiveSeries::solve(double temporalLambda, const Publish& publish, const Progress& progress) {
  Impl& m = *impl_;
  Backend& backend = m.run.backend();
  const int total = std::max(1, m.run.settings.iterative.iterations);
  const auto slices = static_cast<index_t>(m.slices.size());
  const auto images = [&] {
    SeriesImages out;
    for (index_t sl = 0; sl < slices; ++sl)
      for (std::size_t t = 0; t < m.run.frames.size(); ++t)
        placeSlice(out, t, sl, slices, m.slices[static_cast<std::size_t>(sl)]->combined(t));
    return out;
  };
  Timings timings;
  backend.executionOps().resetPeakMemory();
  std::vector<solve::FistaResult> last(m.slices.size());
  int done = 0;
  {
    ScopedStage st(timings, "dynamic: FISTA (live temporal lambda)", &backend);
    // With a publisher, growing chunks, each published; without, one run (the first: runFrames' images).
    for (int chunk = publish ? 2 : total; done < total; chunk *= 2) {
      const int n = std::min(chunk, total - done);
      for (index_t sl = 0; sl < slices; ++sl) {
        const double f0 = (done + static_cast<double>(sl) / slices * n) / total;
        last[static_cast<std::size_t>(sl)] = m.slices[static_cast<std::size_t>(sl)]->solve(
            temporalLambda, n, m.solved || done > 0, timings, Progress::Sub(progress, f0, f0 + n / (total * 1.0 * slices), ""));
      }
      done += n;
      if (publish && done < total) publish(images().combined, done, total);
    }
  }
  m.solved = true;
  SeriesImages out = images();
  out.convergence = nlohmann::json::array();
  for (index_t sl = 0; sl < slices; ++sl) {
    nlohmann::json j = last[static_cast<std::size_t>(sl)].toJson();
    j["slice"] = sl;
    j["iterations"] = total;
    j["lipschitz"] = m.slices[static_cast<std::size_t>(sl)]->lipschitz();
    j["weight"] = m.slices[static_cast<std::size_t>(sl)]->weight();
    j["temporal_lambda"] = temporalLambda;
    j["live"] = {{"chunked", static_cast<bool>(publish)}, {"setup_ms_kept", m.setupMs}};
    out.convergence.push_back(std::move(j));
  }
  m.run.settings.dynamic.temporalLambda = temporalLambda;  // what the provenance records
  std::vector<ReconResult> results = m.run.results(std::move(out), timings);
  progress.report(1.0, "done");
  return results;
}

}  // namespace larmor::recon
