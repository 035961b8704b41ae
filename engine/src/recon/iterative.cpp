// Placeholder until the iterative work (issue 5) lands: a clear error, not a fake result.
#include "larmor/recon/iterative.hpp"

#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/settings.hpp"

namespace larmor::recon {

nlohmann::json toJson(const IterativeSettings& s) {
  return {{"regularizer", s.regularizer}, {"lambda", s.lambda}, {"iterations", s.iterations},
          {"tolerance", s.tolerance}, {"reference", s.referencePath}, {"fhd", s.fhd}};
}

ImageSet reconstructIterative(Backend&, const Dataset&, const ReconSettings&, Timings&, const Progress&) {
  throw Error("--method cg is not implemented yet");
}

}  // namespace larmor::recon
