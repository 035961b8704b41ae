// Defaults for the Backend ops that a backend may not provide: a clear error naming the backend.
#include "larmor/backend/backend.hpp"
#include "larmor/ops/nufft.hpp"

namespace larmor {
namespace {
[[noreturn]] void unavailable(const Backend& b, const char* op) {
  throw Error(std::string(op) + " is not available on " + b.info().id);
}
}  // namespace

std::unique_ptr<NufftPlan> Backend::makeNufftPlan(const NufftGeometry&, const NufftOptions&) {
  unavailable(*this, "the NUFFT");
}
std::unique_ptr<NufftPlan> Backend::makeDftPlan(const NufftGeometry&, const DftOptions&) {
  unavailable(*this, "the exact DFT");
}
void Backend::gemmBatched(MatOp, MatOp, index_t, index_t, index_t, cfloat, const Buffer&, const MatrixBatch&,
                          const Buffer&, const MatrixBatch&, cfloat, Buffer&, const MatrixBatch&, index_t) {
  unavailable(*this, "batched GEMM");
}
void Backend::choleskySolveBatched(Buffer&, const MatrixBatch&, Buffer&, const MatrixBatch&, index_t) {
  unavailable(*this, "batched Cholesky solve");
}
void Backend::adaptiveCombine(Buffer&, const Buffer&, const index_t*, index_t, index_t, int) {
  unavailable(*this, "adaptive coil combination");
}
void Backend::finiteDifference(Buffer&, const Buffer&, const index_t*, index_t, int, bool) {
  unavailable(*this, "finite differences");
}
Backend::NeighbourDifferences Backend::neighbourDifferences(const Buffer&, const index_t*, std::uint64_t) {
  unavailable(*this, "neighbour differences");
}
void Backend::edgeWeights(Buffer&, const Buffer&, const index_t*, int, double) {
  unavailable(*this, "edge weights");
}
void Backend::addDifferenceDiagonal(Buffer&, const Buffer*, const index_t*, int) {
  unavailable(*this, "the difference diagonal");
}
void Backend::reciprocalDiagonal(Buffer&, const Buffer&, double, const Buffer*, double, index_t) {
  unavailable(*this, "the reciprocal diagonal");
}
void Backend::gather(Buffer&, const Buffer&, const Buffer&, index_t) { unavailable(*this, "gather"); }
void Backend::scatter(Buffer&, const Buffer&, const Buffer&, index_t) { unavailable(*this, "scatter"); }

}  // namespace larmor
