#include "larmor/recon/recon.hpp"

#include "larmor/backend/registry.hpp"
#include "larmor/quality/display.hpp"
#include "larmor/quality/metrics.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/util/provenance.hpp"

namespace larmor::recon {
ReconResult run(const ReconRequest& request, const Progress& progress) {
  require(request.dataset != nullptr, "recon: no dataset");
  const Dataset& d = *request.dataset;
  d.validate();
  settings::validate(request.settings);

  Selection sel = request.backend ? Selection{request.backend, {}} : BackendRegistry::instance().select(request.device);
  Backend& backend = *sel.backend;
  const DeviceInfo dev = backend.info();

  ReconResult result;
  result.device = dev.id;
  result.deviceName = dev.name;
  result.deviceNotice = sel.notice;
  progress.report(0.0, "reconstructing on " + dev.id);

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
      images = reconstructIterative(backend, d, request.settings, result.timings, progress);
      break;
    case Method::Grappa:
      images = reconstructGrappa(backend, d, request.settings, result.timings, progress);
      break;
  }
  result.convergence = std::move(images.convergence);
  result.coilImages = std::move(images.coilImages);
  result.image = std::move(images.combined);

  if (d.reference && d.reference->size() == result.image.size()) {
    ScopedStage st(result.timings, "metrics");
    result.metrics = quality::toJson(quality::compare(result.image, quality::comparisonTruth(d)));
  } else if (d.reference) {
    result.metrics = {{"skipped", "the reference " + d.reference->shape().str() + " and the image " +
                                      result.image.shape().str() + " differ in size (--matrix)"}};
  }
  result.provenance = provenance(toJson(request.settings), dev.id, dev.name, result.timings, d.source);
  if (!result.convergence.is_null()) result.provenance["convergence"] = result.convergence;
  if (!sel.notice.empty()) result.provenance["device"]["notice"] = sel.notice;
  progress.report(1.0, "done");
  return result;
}

}  // namespace larmor::recon
