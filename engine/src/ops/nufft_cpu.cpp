// Placeholder until the non-Cartesian work (issue 4) lands: a clear error, not a fake result.
#include "../backend/cpu_ops.hpp"

namespace larmor::cpu {
std::unique_ptr<NufftPlan> makeNufftPlan(Backend&, const NufftGeometry&, const NufftOptions&) {
  throw Error("the NUFFT is not implemented yet");
}
}  // namespace larmor::cpu
