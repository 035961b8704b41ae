#pragma once
// recon::run: the one entry point the GUI and the CLI share.
// ReconRequest {dataset, settings, device} -> ReconResult {images, timings, metrics, provenance}.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "larmor/array/array.hpp"
#include "larmor/data/dataset.hpp"
#include "larmor/recon/operator_cache.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/util/progress.hpp"
#include "larmor/util/timer.hpp"

namespace larmor {
class Backend;
}

namespace larmor::recon {

struct ReconRequest {
  const Dataset* dataset = nullptr;  ///< not owned; must outlive run()
  ReconSettings settings;
  std::string device = "auto";       ///< auto | cpu | cuda | cuda:N
  /// A backend already selected (the GUI keeps one, with its plan caches); overrides `device`.
  std::shared_ptr<Backend> backend;
  /// Operators kept from an earlier call for the next (recon/operator_cache.hpp; a batch worker's), or null.
  std::shared_ptr<OperatorCache> cache;
};

struct ReconResult {
  CArray coilImages;  ///< [x, y, z, coils, slices] (after oversampling removal)
  CArray image;       ///< [x, y, z, 1, slices] coil-combined
  Timings timings;
  std::string device;        ///< the backend that ran it ("cpu", "cuda:0")
  std::string deviceName;
  std::string deviceNotice;  ///< e.g. why auto fell back to the CPU
  nlohmann::json metrics;    ///< against dataset.reference when present (percent error, PSNR, SSIM)
  nlohmann::json convergence; ///< iterative methods: residual and objective per iteration
  nlohmann::json provenance; ///< settings, version, device, timings, input
  /// What did not stop the reconstruction but should be seen (the reference could not be compared): one
  /// line each.
  std::vector<std::string> warnings;
};

ReconResult run(const ReconRequest& request, const Progress& progress = {});

/// Every frame of a series (io::Series::frames; request.dataset is not read): jointly, with the temporal prior of
/// the settings, where jointOverFrames says so (recon/dynamic.hpp: --method cs on 2D frames), else run() on each
/// frame in turn. One result per frame, in order; a joint result's timings and convergence are the whole series'
/// (provenance "dynamic" says so), its metrics its own frame's against that frame's reference.
std::vector<ReconResult> runFrames(const std::vector<Dataset>& frames, const ReconRequest& request,
                                   const Progress& progress = {});

/// result.metrics against d.reference when it has the image's size (a "metrics" stage in result.timings); a
/// reference that cannot be compared costs the metrics and adds a warning, one of another size is noted as skipped.
void compareWithReference(Backend& backend, const Dataset& d, ReconResult& result);

/// Throws Error when --matrix gives a z size (> 1) for 2D data, where it would be ignored.
/// run() calls it; the CLI calls it before loading the samples.
void requireMatrixFitsData(const Dataset& d, const ReconSettings& s);

}  // namespace larmor::recon
