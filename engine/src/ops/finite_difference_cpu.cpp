// Placeholder until the iterative work (issue 5) lands: a clear error, not a fake result.
#include "../backend/cpu_ops.hpp"

namespace larmor::cpu {
void finiteDifference(Buffer&, const Buffer&, const index_t*, index_t, int, bool) {
  throw Error("finite differences are not implemented yet on the CPU");
}
}  // namespace larmor::cpu
