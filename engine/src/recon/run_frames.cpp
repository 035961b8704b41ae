// recon::runFrames: a series' frames, jointly with a temporal prior (recon/dynamic.hpp) or one by one (run()).
// The joint path does what run() does around the reconstruction (checks, noise whitening, the backend, the
// metrics, the provenance) for every frame, with one reconstruction for all of them.

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

std::vector<ReconResult> runJoint(const std::vector<Dataset>& input, const ReconRequest& request,
                                  const Progress& progress) {
  settings::validate(request.settings);
  const std::vector<Dataset> frames = preparedFrames(input, request.settings);
  const Selection sel =
      request.backend ? Selection{request.backend, {}} : BackendRegistry::instance().select(request.device);
  Backend& backend = *sel.backend;
  const DeviceInfo dev = backend.info();
  // Refused up front, with one line, when the series cannot fit (resources.hpp).
  const MemoryEstimate memory = planDynamicMemory(frames, request.settings, dev);
  progress.report(0.0, "reconstructing " + std::to_string(frames.size()) + " frames jointly on " + dev.id);
  Timings timings;
  backend.resetPeakMemory();
  SeriesImages images = reconstructDynamic(backend, frames, request.settings, timings, progress);
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
    compareWithReference(backend, frames[t], r);
    r.provenance = provenance(toJson(request.settings), dev.id, dev.name, timings, frames[t].source);
    r.provenance["dynamic"] = dynamic;
    r.provenance["dynamic"]["frame"] = t;
    r.provenance["convergence"] = r.convergence;
    r.provenance["memory"] = {{"rule", memory.rule},
                              {"estimated_host_bytes", memory.hostBytes()},
                              {"estimated_device_bytes", memory.deviceBytes()},
                              {"peak_resident_bytes", peakResidentBytes()}};
    if (const MemoryStats ms = backend.memoryStats(); ms.tracked)
      r.provenance["memory"]["backend_peak_live_bytes"] = ms.peakLiveBytes;
  }
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

}  // namespace larmor::recon
