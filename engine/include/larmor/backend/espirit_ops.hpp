#pragma once
// EspiritOps: the pointwise kernel of ESPIRiT and the eigen-decomposition of its Gram matrix (Uecker et al., MRM 71:990, 2014), one algorithm with its own
// interface so that the Backend interface does not grow with it (docs/architecture.md, "the PriorOps rule").
// Each backend provides one (Backend::espiritOps(); engine/src/cpu/espirit.cpp, cuda/espirit.cu); both run
// the same lines of larmor/kernels/espirit_math.hpp. The rest of ESPIRiT is backend-neutral
// (engine/src/ops/espirit.cpp).
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/backend/buffer.hpp"

namespace larmor {

class EspiritOps {
 public:
  virtual ~EspiritOps() = default;

  /// Per voxel v < voxels, the Hermitian channels x channels matrix M(v) given by its lower triangle:
  /// M_ij (i >= j) at cov[v + voxels * (i (i + 1) / 2 + j)]. Writes its largest eigenvalue lambda to
  /// values[v] (imaginary part 0) and a unit eigenvector s to maps[v + voxels * c] (power iteration on
  /// M^16, espirit_math.hpp; deterministic), with the phase chosen so that sum_c conj(reference[c]) s_c is
  /// real and >= 0, and s = 0 where lambda < crop. reference has `channels` entries (host memory).
  virtual void dominantEigenvectors(Buffer& maps, Buffer& values, const Buffer& cov, index_t voxels,
                                    index_t channels, const std::vector<cfloat>& reference, float crop) = 0;

  /// ESPIRiT's calibration matrix on this backend: a [rows, K C] (column-major) from the calibration box
  /// cal [b0, b1, b2, C] (this backend), rows = prod_d (b_d - kernel_d + 1), K = prod_d kernel_d; entry by
  /// espirit_math.hpp's espiritCalibrationSource (ops/espirit.hpp, step 1).
  virtual void calibrationMatrix(Buffer& a, const Buffer& cal, const index_t box[4], const index_t kernel[3]) = 0;

  /// M on ESPIRiT's small grid from the kernels' images u [points, channels, kept] (this backend):
  /// cov[x + points l] = scale sum_{i < kept} u_{a,i}(x) conj(u_{b,i}(x)) for l = a (a + 1) / 2 + b, b <= a,
  /// summed in double (espirit_math.hpp, espiritSmallGridEntry). cov holds points * channels (channels + 1) / 2.
  virtual void smallGridMatrices(Buffer& cov, const Buffer& u, index_t points, index_t channels, index_t kept,
                                 double scale) = 0;

  /// The eigen-decomposition of the Hermitian n x n matrix `a` (host memory, column-major, double; both
  /// triangles filled): on return `values` holds its n eigenvalues in ascending order and column j of `a`
  /// (a[i + n j]) the unit eigenvector of values[j]. Double precision on every backend (CPU: Eigen's
  /// SelfAdjointEigenSolver; CUDA: cuSOLVER zheevd, divide and conquer); the two agree to double rounding
  /// up to each eigenvector's phase (and rotations within repeated eigenvalues). Throws Error on failure.
  virtual void hermitianEigen(std::vector<cdouble>& a, std::vector<double>& values, index_t n) = 0;

  /// ESPIRiT's k-space kernels from the Gram matrix of the calibration matrix, which stays in this backend's
  /// memory: `gram` is Hermitian n x n complex float (column-major, both triangles); it is decomposed in
  /// double as hermitianEigen does, `values` (host) gets the n eigenvalues ascending, and `kernels` (this
  /// backend, n x n complex float) the conjugated eigenvectors, largest eigenvalue first:
  /// kernels[e + n i] = conj(v_{n-1-i}[e]). On a GPU only the eigenvalues cross to the host (the matrix and
  /// its eigenvectors used to go down and up again: ~1 ms of a 256^2 SENSE call).
  virtual void gramKernels(const Buffer& gram, index_t n, std::vector<double>& values, Buffer& kernels) = 0;

  /// gramKernels for a list of Grams of the same n (the slices of a multi-slice dataset): values[b] and
  /// kernels[b] as gramKernels gives them for grams[b]. Returns how many were decomposed together (1: one at a
  /// time). Here one at a time (the CPU); CUDA decomposes them in batched cuSOLVER calls of a size fixed by n
  /// (0.66 ms a 288^2 Gram in a batch of 32 on an H200 against zheevd's 2.94, measured 2026-11-29), which
  /// agree with zheevd to double rounding up to each eigenvector's phase. Either way a Gram's result depends only
  /// on that Gram and n, not on the others of the list or their number.
  virtual index_t gramKernelsBatched(const std::vector<const Buffer*>& grams, index_t n,
                                     std::vector<std::vector<double>>& values, const std::vector<Buffer*>& kernels) {
    values.resize(grams.size());
    for (std::size_t b = 0; b < grams.size(); ++b) gramKernels(*grams[b], n, values[b], *kernels[b]);
    return 1;
  }
};

}  // namespace larmor
