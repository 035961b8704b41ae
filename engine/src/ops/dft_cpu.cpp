// Placeholder until the non-Cartesian work (issue 4) lands: a clear error, not a fake result.
#include "../backend/cpu_ops.hpp"

namespace larmor::cpu {
std::unique_ptr<NufftPlan> makeDftPlan(Backend&, const NufftGeometry&, const DftOptions&) {
  throw Error("the exact DFT is not implemented yet");
}
}  // namespace larmor::cpu
