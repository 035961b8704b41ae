// Placeholder until the non-Cartesian work (issue 4) lands: a clear error, not a fake result.
#include "ops.hpp"

namespace larmor::cuda {
std::unique_ptr<NufftPlan> CudaBackend::makeDftPlan(const NufftGeometry&, const DftOptions&) {
  throw Error("the exact DFT is not implemented yet on " + info_.id);
}
}  // namespace larmor::cuda
