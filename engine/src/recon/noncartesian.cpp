// Placeholder until the non-Cartesian work (issue 4) lands: a clear error, not a fake result.
#include "larmor/recon/noncartesian.hpp"

#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/settings.hpp"

namespace larmor::recon {

nlohmann::json toJson(const NufftSettings& s) {
  return {{"width", s.width}, {"oversampling", s.oversampling}, {"kernel_table", s.kernelTable},
          {"spreader", s.spreader}, {"dcf_iterations", s.dcfIterations}, {"trig", s.trig}};
}

ImageSet reconstructNonCartesian(Backend&, const Dataset&, const ReconSettings& s, Timings&, const Progress&) {
  throw Error("--method " + toString(s.method) + " is not implemented yet");
}

}  // namespace larmor::recon
