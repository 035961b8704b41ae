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
#include "larmor/util/cancel_scope.hpp"
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

namespace {

// The checks before any work: the data's structure, the settings, the matrix against the data. Every sample
// finite (Dataset::validate): here, a pass over the whole k-space at the host's memory speed, unless the method
// counts each slice's bad samples on the backend where they go anyway (the iterative Cartesian path; 0.6-0.9 ms
// of the 256^2 SENSE call on the GPU machine). Whitening mixes the coils, so data to be whitened are checked
// here, before a NaN spreads to the other coils of its sample.
void validateRequest(const ReconRequest& request, bool whiten) {
  require(request.dataset != nullptr, "recon: no dataset");
  request.dataset->validateStructure();
  settings::validate(request.settings);
  requireMatrixFitsData(*request.dataset, request.settings);
  if (whiten || !samplesCheckedOnBackend(*request.dataset, request.settings)) request.dataset->requireFiniteSamples();
}

// The backend to run on. The resource planner (resources.hpp) refuses up front what cannot fit; a GPU chosen
// by "auto" that is too small gives way to the CPU when the host has the room. `memory` gets the plan.
Selection selectBackend(const ReconRequest& request, const Dataset& d, MemoryEstimate& memory) {
  Selection sel = request.backend ? Selection{request.backend, {}} : BackendRegistry::instance().select(request.device);
  bool cpuInstead = false;
  memory = planMemory(d, request.settings, sel.backend->info(), request.device == "auto", true, &cpuInstead);
  if (cpuInstead) {
    sel = BackendRegistry::instance().select("cpu");
    sel.notice = memory.rule + ": running on the CPU";
  }
  return sel;
}

// The images by the method the settings name.
ImageSet reconstructByMethod(Backend& backend, const Dataset& d, const ReconRequest& request, Timings& timings,
                             const Progress& progress) {
  switch (request.settings.method) {
    case Method::Fft:
      return reconstructCartesian(backend, d, request.settings, timings, progress);
    case Method::Gridding:
    case Method::Tron:
    case Method::Dft:
      return reconstructNonCartesian(backend, d, request.settings, timings, progress);
    case Method::Cg:
    case Method::Cs:
      return reconstructIterative(backend, d, request.settings, timings, progress, request.cache.get());
    case Method::Grappa:
      return reconstructGrappa(backend, d, request.settings, timings, progress);
  }
  return {};
}

// The metrics against the dataset's reference image, where it has one of the image's size. The reference is
// optional: one that cannot be compared (NaN, all zero) costs the metrics, not the image.

// The provenance of the result: the settings, device, timings and source, the noise whitening's report, the
// convergence, the partial Fourier, the device notice, and the memory: the planner's estimate beside the
// backend's own count of its buffers during this call (ExecutionOps::memoryStats), how good the estimate is,
// measured on every run.
void addProvenance(ReconResult& result, const ReconRequest& request, const Dataset& d, const ImageSet& images,
                   const Selection& sel, const DeviceInfo& dev, const NoiseWhitening& whitening,
                   const MemoryEstimate& memory) {
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
  if (const MemoryStats ms = sel.backend->executionOps().memoryStats(); ms.tracked) {
    result.provenance["memory"]["backend_peak_live_bytes"] = ms.peakLiveBytes;
    result.provenance["memory"]["backend_peak_reserved_bytes"] = ms.peakReservedBytes;
  }
}

}  // namespace

void compareWithReference(Backend& backend, const Dataset& d, ReconResult& result) {
  if (d.reference && d.reference->size() == result.image.size()) {
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
}

ReconResult run(const ReconRequest& request, const Progress& progress) {
  const CancelScope cancel(progress);  // the exact DFT's transforms poll it (util/cancel_scope.hpp)
  const bool whiten = request.dataset && request.settings.noiseWhitening == NoiseWhiteningMode::Auto &&
                      request.dataset->noise;
  validateRequest(request, whiten);
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

  MemoryEstimate memory;
  const Selection sel = selectBackend(request, d, memory);
  Backend& backend = *sel.backend;
  const DeviceInfo dev = backend.info();

  ReconResult result;
  result.device = dev.id;
  result.deviceName = dev.name;
  result.deviceNotice = sel.notice;
  progress.report(0.0, "reconstructing on " + dev.id);
  for (const auto& st : whiteningTime.stages()) result.timings.add(st.stage, st.milliseconds, st.device);

  backend.executionOps().resetPeakMemory();  // the backend's peak during this call: the provenance's "memory"
  ImageSet images = reconstructByMethod(backend, d, request, result.timings, progress);
  result.convergence = std::move(images.convergence);
  if (!images.partialFourier.is_null()) result.warnings.push_back(d.source + ": " + images.partialFourier["line"].get<std::string>());
  result.coilImages = std::move(images.coilImages);
  result.image = std::move(images.combined);

  compareWithReference(backend, d, result);
  addProvenance(result, request, d, images, sel, dev, whitening, memory);
  progress.report(1.0, "done");
  return result;
}

}  // namespace larmor::recon
