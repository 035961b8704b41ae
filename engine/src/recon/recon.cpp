#include "larmor/recon/recon.hpp"

#include <optional>

#include "larmor/backend/registry.hpp"
#include "larmor/quality/display.hpp"
#include "larmor/quality/metrics.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/iterative.hpp"
#include "larmor/recon/noncartesian.hpp"
#include "larmor/recon/noise.hpp"
#include "larmor/recon/resources.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/util/provenance.hpp"

namespace larmor::recon {

void requireMatrixFitsData(const Dataset& d, const ReconSettings& s) {
  const Header& h = d.header;
  if (s.matrix[2] <= 1) return;
  const bool twoD = h.trajectory == TrajectoryKind::Cartesian ? h.encoded[2] <= 1 : nonCartesianRank(d, 1) == 2;
  if (twoD)
    throw Error("--matrix " + std::to_string(s.matrix[0]) + "x" + std::to_string(s.matrix[1]) + "x" +
                std::to_string(s.matrix[2]) + ": " + d.source + " holds 2D data (" + std::to_string(h.slices) +
                (h.slices == 1 ? " slice" : " slices") + "), so a z size does not apply; give NxN");
}

ReconResult run(const ReconRequest& request, const Progress& progress) {
  require(request.dataset != nullptr, "recon: no dataset");
  request.dataset->validateStructure();
  settings::validate(request.settings);
  requireMatrixFitsData(*request.dataset, request.settings);
  const bool whiten = request.settings.noiseWhitening == NoiseWhiteningMode::Auto && request.dataset->noise;
  // Every sample finite (Dataset::validate): here, a pass over the whole k-space at the host's memory speed,
  // unless the method counts each slice's bad samples on the backend where they go anyway (the iterative
  // Cartesian path; 0.6-0.9 ms of the 256^2 SENSE call on the GPU machine). Whitening mixes the coils, so
  // data to be whitened are checked here, before a NaN spreads to the other coils of its sample.
  if (whiten || !samplesCheckedOnBackend(*request.dataset, request.settings)) request.dataset->requireFiniteSamples();
  // Noise pre-whitening (noise.hpp) on a copy, when asked for and the data have noise samples.
  std::optional<Dataset> whitenedCopy;
  NoiseWhitening whitening;
  Timings whiteningTime;
  if (whiten) {
    ScopedStage st(whiteningTime, "noise whitening");
    whitenedCopy = *request.dataset;
    whitening = whitenIfRequested(*whitenedCopy, request.settings.noiseWhitening);
  }
  const Dataset& d = whitenedCopy ? *whitenedCopy : *request.dataset;

  Selection sel = request.backend ? Selection{request.backend, {}} : BackendRegistry::instance().select(request.device);
  // The resource planner (resources.hpp): refuse up front what cannot fit; a GPU chosen by "auto" that
  // is too small gives way to the CPU when the host has the room.
  bool cpuInstead = false;
  const MemoryEstimate memory =
      planMemory(d, request.settings, sel.backend->info(), request.device == "auto", true, &cpuInstead);
  if (cpuInstead) {
    sel = BackendRegistry::instance().select("cpu");
    sel.notice = memory.rule + ": running on the CPU";
  }
  Backend& backend = *sel.backend;
  const DeviceInfo dev = backend.info();

  ReconResult result;
  result.device = dev.id;
  result.deviceName = dev.name;
  result.deviceNotice = sel.notice;
  progress.report(0.0, "reconstructing on " + dev.id);
  for (const auto& st : whiteningTime.stages()) result.timings.add(st.stage, st.milliseconds, st.device);

  // The backend's own count of its buffers during this call (Backend::memoryStats), beside the planner's
  // estimate in the provenance: how good the estimate is, measured on every run.
  backend.resetPeakMemory();
  ImageSet images;
  switch (request.settings.method) {
    case Method::Fft:
      images = reconstructCartesian(backend, d, request.settings, result.timings, progress);
      break;
    case Method::Gridding:
    case Method::Tron:
    case Method::Dft:
      images = reconstructNonCartesian(backend, d, request.settings, result.timings, progress);
      break;
    case Method::Cg:
    case Method::Cs:
      images = reconstructIterative(backend, d, request.settings, result.timings, progress, request.cache.get());
      break;
    case Method::Grappa:
      images = reconstructGrappa(backend, d, request.settings, result.timings, progress);
      break;
  }
  result.convergence = std::move(images.convergence);
  if (!images.partialFourier.is_null()) result.warnings.push_back(d.source + ": " + images.partialFourier["line"].get<std::string>());
  result.coilImages = std::move(images.coilImages);
  result.image = std::move(images.combined);

  if (d.reference && d.reference->size() == result.image.size()) {
    // The reference is optional: one that cannot be compared (NaN, all zero) costs the metrics, not the
    // image.
    ScopedStage st(result.timings, "metrics");
    try {
      result.metrics = quality::toJson(quality::compareWithTruthOn(backend, result.image, d));
    } catch (const Cancelled&) {
      throw;
    } catch (const Error& e) {
      result.metrics = {{"skipped", e.what()}};
      result.warnings.push_back(d.source + ": the reference image cannot be compared (" + e.what() + "); no metrics");
    }
  } else if (d.reference) {
    result.metrics = {{"skipped", "the reference " + d.reference->shape().str() + " and the image " +
                                      result.image.shape().str() + " differ in size (--matrix)"}};
  }
  result.provenance = provenance(toJson(request.settings), dev.id, dev.name, result.timings, d.source);
  if (whitening.coils > 0)
    result.provenance["noise_whitening"] = {{"report", whitening.report()},
                                            {"coils", whitening.coils},
                                            {"samples", whitening.samples},
                                            {"condition_number", whitening.conditionNumber},
                                            {"bandwidth_ratio", whitening.bandwidthRatio}};
  if (!result.convergence.is_null()) result.provenance["convergence"] = result.convergence;
  if (!images.partialFourier.is_null()) result.provenance["partial_fourier"] = images.partialFourier;
  if (!sel.notice.empty()) result.provenance["device"]["notice"] = sel.notice;
  result.provenance["memory"] = {{"rule", memory.rule},
                                 {"estimated_host_bytes", memory.hostBytes()},
                                 {"estimated_device_bytes", memory.deviceBytes()},
                                 {"peak_resident_bytes", peakResidentBytes()}};
  if (const MemoryStats ms = backend.memoryStats(); ms.tracked) {
    result.provenance["memory"]["backend_peak_live_bytes"] = ms.peakLiveBytes;
    result.provenance["memory"]["backend_peak_reserved_bytes"] = ms.peakReservedBytes;
  }
  progress.report(1.0, "done");
  return result;
}

}  // namespace larmor::recon
