// Hermitian eigen-decomposition with cancellation points (hermitian_eigen.hpp): Eigen 3.4.0's
// SelfAdjointEigenSolver::compute, tridiagonalization_inplace, HouseholderSequence::evalTo (in place) and
// computeFromTridiagonal_impl line for line, a CancelScope::check() added per loop step.
#include "hermitian_eigen.hpp"

#include <complex>
#include <limits>

#include "larmor/util/cancel_scope.hpp"

#if !EIGEN_VERSION_AT_LEAST(3, 4, 0) || EIGEN_VERSION_AT_LEAST(3, 4, 1)
#error "hermitian_eigen.cpp follows Eigen 3.4.0's SelfAdjointEigenSolver: check it against this Eigen version"
#endif

namespace larmor::cpu {

namespace {

using Eigen::Index;
using Mat = Eigen::MatrixXcd;
using Tridiagonalization = Eigen::Tridiagonalization<Mat>;

/// tridiagonalization_inplace(matA, hCoeffs): A = H A H' per column.
void tridiagonalize(Mat& matA, Tridiagonalization::CoeffVectorType& hCoeffs) {
  using Scalar = std::complex<double>;
  const Index n = matA.rows();
  for (Index i = 0; i < n - 1; ++i) {
    CancelScope::check();
    const Index remainingSize = n - i - 1;
    double beta;
    Scalar h;
    matA.col(i).tail(remainingSize).makeHouseholderInPlace(h, beta);
    matA.col(i).coeffRef(i + 1) = 1;
    hCoeffs.tail(n - i - 1).noalias() =
        (matA.bottomRightCorner(remainingSize, remainingSize).template selfadjointView<Eigen::Lower>() *
         (Eigen::numext::conj(h) * matA.col(i).tail(remainingSize)));
    hCoeffs.tail(n - i - 1) +=
        (Eigen::numext::conj(h) * double(-0.5) * (hCoeffs.tail(remainingSize).dot(matA.col(i).tail(remainingSize)))) *
        matA.col(i).tail(n - i - 1);
    matA.bottomRightCorner(remainingSize, remainingSize)
        .template selfadjointView<Eigen::Lower>()
        .rankUpdate(matA.col(i).tail(remainingSize), hCoeffs.tail(remainingSize), Scalar(-1));
    matA.col(i).coeffRef(i + 1) = beta;
    hCoeffs.coeffRef(i) = h;
  }
}

/// mat = HouseholderSequence(mat, conj(hCoeffs)).setLength(n - 1).setShift(1): evalTo's in-place branch.
void accumulateQ(Mat& mat, const Tridiagonalization::CoeffVectorType& hCoeffs) {
  const Tridiagonalization::HouseholderSequenceType h =
      Tridiagonalization::HouseholderSequenceType(mat, hCoeffs.conjugate()).setLength(mat.rows() - 1).setShift(1);
  const Index rows = mat.rows(), vecs = mat.rows() - 1, shift = 1;
  Eigen::VectorXcd workspace(rows);
  mat.diagonal().setOnes();
  mat.template triangularView<Eigen::StrictlyUpper>().setZero();
  for (Index k = vecs - 1; k >= 0; --k) {
    CancelScope::check();
    const Index cornerSize = rows - k - shift;
    mat.bottomRightCorner(cornerSize, cornerSize)
        .applyHouseholderOnTheLeft(h.essentialVector(k), Eigen::numext::conj(hCoeffs.coeff(k)), workspace.data());
    mat.col(k).tail(rows - k - 1).setZero();
  }
  for (Index k = 0; k < mat.cols() - vecs; ++k) mat.col(k).tail(rows - k - 1).setZero();
}

/// computeFromTridiagonal_impl: implicit symmetric QR steps on (diag, subdiag), rotations applied to eivec.
bool qrIterations(Eigen::VectorXd& diag, Eigen::VectorXd& subdiag, Index maxIterations, Mat& eivec) {
  const Index n = diag.size();
  Index end = n - 1, start = 0, iter = 0;
  const double considerAsZero = (std::numeric_limits<double>::min)();
  const double precision_inv = 1.0 / Eigen::NumTraits<double>::epsilon();
  while (end > 0) {
    CancelScope::check();
    for (Index i = start; i < end; ++i) {
      if (Eigen::numext::abs(subdiag[i]) < considerAsZero) {
        subdiag[i] = 0;
      } else {
        const double scaled_subdiag = precision_inv * subdiag[i];
        if (scaled_subdiag * scaled_subdiag <= (Eigen::numext::abs(diag[i]) + Eigen::numext::abs(diag[i + 1])))
          subdiag[i] = 0;
      }
    }
    while (end > 0 && subdiag[end - 1] == 0) end--;
    if (end <= 0) break;
    iter++;
    if (iter > maxIterations * n) break;
    start = end - 1;
    while (start > 0 && subdiag[start - 1] != 0) start--;
    Eigen::internal::tridiagonal_qr_step<Eigen::ColMajor>(diag.data(), subdiag.data(), start, end, eivec.data(), n);
  }
  if (iter > maxIterations * n) return false;
  for (Index i = 0; i < n - 1; ++i) {
    Index k;
    diag.segment(i, n - i).minCoeff(&k);
    if (k > 0) {
      std::swap(diag[i], diag[k + i]);
      eivec.col(i).swap(eivec.col(k + i));
    }
  }
  return true;
}

}  // namespace

bool hermitianEigenCancellable(const Eigen::Ref<const Eigen::MatrixXcd>& a, Eigen::MatrixXcd& vectors,
                               Eigen::VectorXd& values) {
  const Index n = a.cols();
  values.resize(n);
  if (n <= 1) {  // SelfAdjointEigenSolver's n == 1 (and n == 0) case
    vectors = a;
    if (n == 1) values(0) = Eigen::numext::real(vectors(0, 0));
    vectors.setOnes(n, n);
    return true;
  }
  Mat& mat = vectors;
  mat = a.template triangularView<Eigen::Lower>();
  double scale = mat.cwiseAbs().maxCoeff();
  if (scale == 0) scale = 1;
  mat.template triangularView<Eigen::Lower>() /= scale;
  Eigen::VectorXd subdiag(n - 1);
  Tridiagonalization::CoeffVectorType hcoeffs(n - 1);
  tridiagonalize(mat, hcoeffs);
  values = mat.diagonal().real();
  subdiag = mat.template diagonal<-1>().real();
  accumulateQ(mat, hcoeffs);
  const bool converged = qrIterations(values, subdiag, Eigen::SelfAdjointEigenSolver<Mat>::m_maxIterations, mat);
  values *= scale;
  return converged;
}

}  // namespace larmor::cpu
