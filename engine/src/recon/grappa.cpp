// Placeholder until the GRAPPA work (issue 6) lands: a clear error, not a fake result.
#include "larmor/recon/grappa.hpp"

#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/settings.hpp"

namespace larmor::recon {

nlohmann::json toJson(const GrappaSettings& s) {
  return {{"calibration", s.calibration == GrappaCalibration::Basic ? "basic" : "improved"},
          {"kernel", std::to_string(s.kernelPe) + "x" + std::to_string(s.kernelRo)},
          {"blocks", s.blocks}, {"segment", s.segment}, {"chi", s.chi}, {"eta", s.eta}, {"kappa", s.kappa},
          {"out_coils", s.outCoils}};
}

ImageSet reconstructGrappa(Backend&, const Dataset&, const ReconSettings&, Timings&, const Progress&) {
  throw Error("--method grappa is not implemented yet");
}

}  // namespace larmor::recon
