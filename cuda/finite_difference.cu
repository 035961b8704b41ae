// Placeholder until the iterative work (issue 5) lands: a clear error, not a fake result.
#include "ops.hpp"

namespace larmor::cuda {
void CudaBackend::finiteDifference(Buffer&, const Buffer&, const index_t*, index_t, int, bool) {
  throw Error("finite differences are not implemented yet on " + info_.id);
}
}  // namespace larmor::cuda
