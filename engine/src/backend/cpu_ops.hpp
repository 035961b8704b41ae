#pragma once
// The CPU backend's larger ops, each in its own file: ops/nufft_cpu.cpp, ops/dft_cpu.cpp,
// backend/cpu_linalg.cpp. Internal to the engine.
#include <memory>

#include "larmor/backend/backend.hpp"
#include "larmor/ops/nufft.hpp"

namespace larmor::cpu {

std::unique_ptr<NufftPlan> makeNufftPlan(Backend& backend, const NufftGeometry& geometry, const NufftOptions& options);
std::unique_ptr<NufftPlan> makeDftPlan(Backend& backend, const NufftGeometry& geometry, const DftOptions& options);

/// ops/coil_combine_cpu.cpp
void adaptiveCombine(Buffer& out, const Buffer& in, const index_t dims[3], index_t coils, index_t batch, int window);

/// ops/finite_difference_cpu.cpp
void finiteDifference(Buffer& out, const Buffer& in, const index_t dims[3], index_t batch, int axis, bool adjoint);

/// ops/prior_cpu.cpp
Backend::NeighbourDifferences neighbourDifferences(const Buffer& image, const index_t dims[3], std::uint64_t k);
void edgeWeights(Buffer& out, const Buffer& image, const index_t dims[3], int axis, double delta);
void addDifferenceDiagonal(Buffer& out, const Buffer* w, const index_t dims[3], int axis);
void reciprocalDiagonal(Buffer& out, const Buffer& a, double alpha, const Buffer* b, double beta, index_t n);

void gemmBatched(MatOp opA, MatOp opB, index_t m, index_t n, index_t k, cfloat alpha, const Buffer& A,
                 const MatrixBatch& a, const Buffer& B, const MatrixBatch& b, cfloat beta, Buffer& C,
                 const MatrixBatch& c, index_t batch);
void choleskySolveBatched(Buffer& A, const MatrixBatch& a, Buffer& B, const MatrixBatch& b, index_t batch);
void gather(Buffer& out, const Buffer& src, const Buffer& index, index_t n);
void scatter(Buffer& out, const Buffer& src, const Buffer& index, index_t n);

}  // namespace larmor::cpu
