// Placeholder until the non-Cartesian work (issue 4) lands: a clear error, not a fake result.
#include "ops.hpp"

namespace larmor::cuda {
void CudaBackend::adaptiveCombine(Buffer&, const Buffer&, const index_t*, index_t, index_t, int) {
  throw Error("--combine adaptive is not implemented yet on " + info_.id);
}
}  // namespace larmor::cuda
