// Placeholder until the non-Cartesian work (issue 4) lands: a clear error, not a fake result.
#include "../backend/cpu_ops.hpp"

namespace larmor::cpu {
void adaptiveCombine(Buffer&, const Buffer&, const index_t*, index_t, index_t, int) {
  throw Error("--combine adaptive is not implemented yet; use --combine sos");
}
}  // namespace larmor::cpu
