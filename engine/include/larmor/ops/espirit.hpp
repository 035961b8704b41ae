#pragma once
// ESPIRiT coil sensitivities (Uecker, Lai, Murphy, Virtue, Elad, Pauly, Vasanawala, Lustig, "ESPIRiT - an
// eigenvalue approach to autocalibrating parallel MRI: where SENSE meets GRAPPA", MRM 71:990, 2014).
//
// 1. Calibration matrix A (eq. 5): one row per position p of a k0 x k1 x k2 kernel inside the fully sampled
//    calibration box y [c0, c1, c2, C], the row holding the patch A[p, (r, c)] = y_c(p + r); columns are
//    (r, c), r the kernel offset (dimension 0 fastest), then the coil.
// 2. Its right singular vectors from the Gram matrix A^H A = V diag(sigma^2) V^H (the backend's Hermitian
//    eigensolver in double precision, EspiritOps::hermitianEigen: Eigen on the CPU, cuSOLVER zheevd on
//    CUDA; the maps depend only on the kept subspace, not on the eigenvectors' phases). The signal subspace V_par keeps kernel i when
//    sigma_i / sigma_0 > sqrt(threshold), i.e. sigma_i^2 > threshold * sigma_0^2: BART's rule for
//    `ecalib -t` (default 0.001), where the eigenvalues of A^H A are compared.
// 3. Kernel to image (eq. 13): a patch of an image m s (coil sensitivities s) is x -> s_c(x) exp(-2 pi i r x)
//    up to m(x), so conj of it lies in span(V_par); at each voxel the C x C matrix
//        M(x) = (1/K) sum_i u_i(x) u_i(x)^H,   u_{i,c}(x) = sum_r conj(V_i[r, c]) exp(+2 pi i r . x)
//    (K = k0 k1 k2) has s(x) as eigenvector with eigenvalue 1 and all eigenvalues in [0, 1]. Its entries
//    are trigonometric polynomials of degree < k per dimension: they are computed exactly on a small grid
//    of 2k points per dimension (centred inverse FFT of the zero-padded kernels, on the backend), then
//    brought to the image grid by sinc interpolation (FFT, zero-padding, inverse FFT on the backend), which
//    is exact for them (BART's calone/caltwo do the same).
// 4. Pointwise: the largest eigenvalue lambda(x) and its unit eigenvector (EspiritOps, CPU and CUDA twins),
//    maps = 0 where lambda < crop (BART's `-c 0.8`: inside the mask sum_c |S_c|^2 = 1, outside 0).
// 5. Phase: the eigenvector's phase is arbitrary per voxel. As BART (rotphase), it is fixed relative to the
//    first principal component u of the calibration data's coil covariance sum_p y(p) y(p)^H: u^H S(x) is
//    made real and >= 0 (u's own phase: its largest component real and positive).
// 3D data use 3D kernels (k0 k1 k2 = 6^3); BART loops its eigen-decomposition over planes only to save
// memory, with the same 3D kernels, so the result is the same.
#include <memory>
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/backend/backend.hpp"

namespace larmor::ops {

struct EspiritOptions {
  int kernel = 6;            ///< kernel size per dimension (BART -k 6); 1 along dimensions of grid size 1
  double threshold = 0.001;  ///< keep kernel i when sigma_i^2 > threshold sigma_0^2 (BART -t 0.001)
  double crop = 0.8;         ///< maps zero where the eigenvalue < crop (BART -c 0.8)
  /// Leave the maps on the backend (EspiritResult::deviceMaps) and download neither them nor the eigenvalues:
  /// SENSE uses them where they are (128³ x 8 coils: 134 MB that would go to the host and back).
  bool keepOnDevice = false;
};

struct EspiritResult {
  CArray maps;         ///< [N0, N1, N2, C] (empty with keepOnDevice)
  std::unique_ptr<Buffer> deviceMaps;  ///< the same on the backend (keepOnDevice only)
  RArray eigenvalues;  ///< [N0, N1, N2], the largest eigenvalue of M(x) (~1 inside the object)
  index_t kernelsKept = 0, kernelsTotal = 0;  ///< the signal subspace's dimension, of K C
  index_t kernel[3] = {1, 1, 1};
  index_t eigenBatch = 1;  ///< the Gram's eigen-decomposition solved with this many (EspiritOps::gramKernelsBatched)
};

/// The kernel extent for a calibration box and an image grid: `size` along every dimension whose grid is
/// larger than 1, else 1. Throws Error when the box is smaller than the kernel along such a dimension.
void espiritKernelSize(const index_t calibration[3], const index_t grid[3], int size, index_t kernel[3]);

/// The whole pipeline: calibration k-space [c0, c1, c2, C] (unit spacing, the k-space centre at c_i / 2)
/// -> maps on the image grid [N0, N1, N2] whose FOV is 1 / spacing of the calibration samples.
EspiritResult espirit(Backend& backend, const CArray& calibration, const index_t grid[3],
                      const EspiritOptions& options = {});

/// espirit() for several calibration boxes onto the same grid (the slices of a multi-slice dataset): their Grams'
/// eigen-decompositions batched over the Grams of each size (EspiritOps::gramKernelsBatched), the rest per box. Each result is espirit()'s for its box up to the eigen-solver's rounding, and depends only
/// on its own box, never on the others of the list (a slice's maps are the same bits whichever slices share
/// its call).
std::vector<EspiritResult> espiritBatch(Backend& backend, const std::vector<CArray>& calibrations, const index_t grid[3],
                                        const EspiritOptions& options = {});

}  // namespace larmor::ops
