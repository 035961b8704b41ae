// Placeholder until the GRAPPA work (issue 6) lands: a clear error, not a fake result.
#include "cpu_ops.hpp"

namespace larmor::cpu {
void gemmBatched(MatOp, MatOp, index_t, index_t, index_t, cfloat, const Buffer&, const MatrixBatch&, const Buffer&,
                 const MatrixBatch&, cfloat, Buffer&, const MatrixBatch&, index_t) {
  throw Error("batched GEMM is not implemented yet on the CPU");
}
void choleskySolveBatched(Buffer&, const MatrixBatch&, Buffer&, const MatrixBatch&, index_t) {
  throw Error("batched Cholesky is not implemented yet on the CPU");
}
void gather(Buffer&, const Buffer&, const Buffer&, index_t) { throw Error("gather is not implemented yet on the CPU"); }
void scatter(Buffer&, const Buffer&, const Buffer&, index_t) { throw Error("scatter is not implemented yet on the CPU"); }
}  // namespace larmor::cpu
