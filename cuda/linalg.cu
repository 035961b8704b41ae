// Placeholder until the GRAPPA work (issue 6) lands: a clear error, not a fake result.
#include "ops.hpp"

namespace larmor::cuda {
void CudaBackend::gemmBatched(MatOp, MatOp, index_t, index_t, index_t, cfloat, const Buffer&, const MatrixBatch&,
                              const Buffer&, const MatrixBatch&, cfloat, Buffer&, const MatrixBatch&, index_t) {
  throw Error("batched GEMM is not implemented yet on " + info_.id);
}
void CudaBackend::choleskySolveBatched(Buffer&, const MatrixBatch&, Buffer&, const MatrixBatch&, index_t) {
  throw Error("batched Cholesky is not implemented yet on " + info_.id);
}
void CudaBackend::gather(Buffer&, const Buffer&, const Buffer&, index_t) {
  throw Error("gather is not implemented yet on " + info_.id);
}
void CudaBackend::scatter(Buffer&, const Buffer&, const Buffer&, index_t) {
  throw Error("scatter is not implemented yet on " + info_.id);
}
}  // namespace larmor::cuda
