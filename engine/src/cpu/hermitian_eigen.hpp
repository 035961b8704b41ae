#pragma once
// The eigen-decomposition of a Hermitian matrix with cancellation points (util/cancel_scope.hpp): the steps of
// Eigen 3.4's SelfAdjointEigenSolver::compute (scale to [-1, 1], Householder tridiagonalization, Q accumulated
// in place, implicit symmetric QR steps, selection sort, scale back) with CancelScope::check() per Householder
// reflector and per QR step, so the same bits as that one call. ESPIRiT's 3D Gram (1728^2) takes seconds in it.
#include <Eigen/Dense>

namespace larmor::cpu {

/// a (n x n, the lower triangle read) -> vectors (its unit eigenvectors, columns) and values (ascending), as
/// SelfAdjointEigenSolver<MatrixXcd>(a) gives them. False where its info() is NoConvergence. Throws Cancelled when
/// the caller's scope is cancelled.
bool hermitianEigenCancellable(const Eigen::Ref<const Eigen::MatrixXcd>& a, Eigen::MatrixXcd& vectors,
                               Eigen::VectorXd& values);

}  // namespace larmor::cpu
