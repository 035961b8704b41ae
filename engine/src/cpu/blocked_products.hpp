#pragma once
// One large product of the CPU backend's gemmBatched (linalg.cpp) cut into blocks, with a poll of the caller's
// cancellation between blocks (util/cancel_scope.hpp): 3D GRAPPA's A A^H and B A^H (99792 equations), its fill
// F W^T (a million rows) and ESPIRiT's Gram A^H A (1728^2 from 6859 rows) are each seconds in one Eigen call.
// Every block does the arithmetic Eigen 3.4 does for the same elements inside the one call, so the results are
// the same bits:
//   rows of C (float products): an element's sum is the same wherever its row lies (complex gebp: mr equals
//     the packet size, so every row but a last odd one takes the same path), and the depth blocking kc depends
//     only on k and on whether the product runs threaded, which a block of 2^24 multiply-adds does like the whole;
//   depth (double products, k > max(m, n)): C += A_j^H B_j over the slices j of exactly Eigen's kc, the sums
//     Eigen forms and adds one slice after another (the slices cast to double one at a time);
//   the Hermitian rank-k update: Eigen's own loop (general_matrix_matrix_triangular_product, its packing and
//     kernels) with a poll per panel, the row panels spread over the threads (each element written by one).
// Small products run as one call, as before.
#include <Eigen/Core>

#include "larmor/backend/backend.hpp"
#include "larmor/util/cancel_scope.hpp"

namespace larmor::cpu {

using MatF = Eigen::Matrix<cfloat, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
using MatD = Eigen::Matrix<cdouble, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
using Stride = Eigen::OuterStride<Eigen::Dynamic>;
using ConstMapF = Eigen::Map<const MatF, Eigen::Unaligned, Stride>;
using MapF = Eigen::Map<MatF, Eigen::Unaligned, Stride>;

/// c += alpha op(a) op(b); `hermitian`: a == b, op(a) = a^H, op(b) = b, alpha real: the lower triangle by a
/// rank-k update, then mirrored. One Eigen call.
template <class MA, class MB, class MC, class Scalar>
void accumulate(MatOp opA, MatOp opB, const MA& ma, const MB& mb, Scalar alpha, MC& mc, bool hermitian) {
  if (hermitian) {
    mc.template selfadjointView<Eigen::Lower>().rankUpdate(ma.adjoint(), std::real(alpha));
    for (Eigen::Index j = 1; j < mc.cols(); ++j)
      for (Eigen::Index i = 0; i < j; ++i) mc(i, j) = std::conj(mc(j, i));
    return;
  }
  auto product = [&](const auto& lhs) {
    switch (opB) {
      case MatOp::None: mc.noalias() += alpha * (lhs * mb); break;
      case MatOp::Transpose: mc.noalias() += alpha * (lhs * mb.transpose()); break;
      case MatOp::ConjTranspose: mc.noalias() += alpha * (lhs * mb.adjoint()); break;
    }
  };
  switch (opA) {
    case MatOp::None: product(ma); break;
    case MatOp::Transpose: product(ma.transpose()); break;
    case MatOp::ConjTranspose: product(ma.adjoint()); break;
  }
}

/// c += alpha op(a) op(b) in float by blocks of c's rows. False when `cancel` stopped it (c then partial).
bool rowBlockedProduct(MatOp opA, MatOp opB, const ConstMapF& a, const ConstMapF& b, cfloat alpha, MapF& c,
                       ParallelCancel& cancel);

/// c += alpha op(a) op(b), a and b cast to double, by slices of the depth. False when stopped.
bool depthBlockedProduct(MatOp opA, MatOp opB, const ConstMapF& a, const ConstMapF& b, cdouble alpha, MatD& c,
                         ParallelCancel& cancel);

/// c += alpha a^H a (a: k x m, stored), both triangles (the lower computed, the upper its mirror), in double
/// (a cast slice by slice) or float. False when stopped.
bool hermitianBlocked(const ConstMapF& a, double alpha, MatD& c, ParallelCancel& cancel);
bool hermitianBlocked(const ConstMapF& a, float alpha, MapF& c, ParallelCancel& cancel);

}  // namespace larmor::cpu
