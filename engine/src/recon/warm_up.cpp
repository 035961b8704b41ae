// recon::warmUp (larmor/recon/warm_up.hpp): a tiny reconstruction of the caller's method and trajectory family,
// thrown away, so that the backend has its library handles, cuFFT's first plan and the kernels of that method
// loaded before the first real reconstruction.
#include "larmor/recon/warm_up.hpp"

#include <chrono>
#include <exception>

#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/recon.hpp"

namespace larmor::recon {

double warmUp(const std::shared_ptr<Backend>& backend, const ReconSettings& settings, const WarmUpHint& hint,
              std::string* whyNot) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    phantom::SimulateSettings sim;
    const index_t n = hint.threeD ? 16 : 32;
    sim.matrix[0] = sim.matrix[1] = n;
    sim.matrix[2] = hint.threeD ? n : 1;
    sim.coils = 8;
    sim.seed = 7;
    const bool cartesianOnly = settings.method == Method::Fft || settings.method == Method::Grappa;
    if (hint.nonCartesian && !cartesianOnly)
      sim.trajectory = hint.threeD ? TrajectoryKind::Radial3D : TrajectoryKind::GoldenAngle;
    if (settings.method == Method::Grappa) {
      sim.accel = 2;
      sim.acs = 12;
    }
    const Dataset data = phantom::simulate(sim);

    ReconRequest req;
    req.dataset = &data;
    req.backend = backend;
    req.settings = settings;
    for (long& m : req.settings.matrix) m = 0;
    req.settings.keepCoilImages = false;
    req.settings.iterative.iterations = 2;
    req.settings.iterative.cacheDirectory = "none";  // a phantom's Q does not belong in the user's cache
    if (req.settings.iterative.coilMaps == CoilMapSource::File) req.settings.iterative.coilMaps = CoilMapSource::Espirit;
    req.settings.grappa.outCoils = 0;
    (void)run(req);
  } catch (const std::exception& e) {
    if (whyNot) *whyNot = e.what();
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace larmor::recon
