#pragma once
// The partial-Fourier tests' reconstructions (tests/shared/partial_fourier*.cpp): the FFT or GRAPPA pipeline
// with one filler, combined image only, and the filler's report when asked for.
#include <nlohmann/json.hpp>

#include "larmor/backend/backend.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/grappa.hpp"
#include "larmor/recon/partial_fourier.hpp"
#include "larmor/recon/settings.hpp"

namespace larmor::testing {

inline CArray partialFourierRecon(Backend& be, const Dataset& d, recon::PartialFourierMethod m, bool grappa = false,
                                  bool basic = false, nlohmann::json* report = nullptr) {
  recon::ReconSettings s;
  if (grappa) s.method = recon::Method::Grappa;
  if (basic) s.grappa.calibration = recon::GrappaCalibration::Basic;
  s.partialFourier = m;
  s.keepCoilImages = false;
  Timings t;
  recon::ImageSet r = grappa ? recon::reconstructGrappa(be, d, s, t, {}) : recon::reconstructCartesian(be, d, s, t, {});
  if (report) *report = r.partialFourier;
  return r.combined;
}

}  // namespace larmor::testing
