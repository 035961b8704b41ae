// EspiritOps on the host (larmor/backend/espirit_ops.hpp): ESPIRiT's pointwise dominant eigenvector,
// eigenvalue, phase and crop, one voxel per OpenMP iteration, with the arithmetic of
// larmor/kernels/espirit_math.hpp. Twin: cuda/espirit.cu (the same lines, one thread per voxel).
// The Gram matrix's eigen-decomposition: Eigen's SelfAdjointEigenSolver in double (CUDA: cuSOLVER zheevd), its
// steps with cancellation points (hermitian_eigen.hpp; 3D: 1728^2, seconds); the voxels polled per block.
#include <Eigen/Dense>
#include <algorithm>
#include <vector>

#include "cpu_backend.hpp"
#include "hermitian_eigen.hpp"
#include "larmor/kernels/espirit_math.hpp"
#include "larmor/util/cancel_scope.hpp"
#include "larmor/util/error.hpp"

namespace larmor::cpu {

void CpuEspiritOps::dominantEigenvectors(Buffer& maps, Buffer& values, const Buffer& cov, index_t voxels,
                                         index_t channels, const std::vector<cfloat>& reference, float crop) {
  require(channels >= 1 && channels <= 1024, "ESPIRiT: 1 to 1024 channels, got " + std::to_string(channels));
  require(static_cast<index_t>(reference.size()) == channels, "ESPIRiT: the phase reference needs one entry per channel");
  const index_t packed = channels * (channels + 1) / 2;
  require(cov.bytes() >= static_cast<std::size_t>(voxels * packed) * sizeof(cfloat) &&
              maps.bytes() >= static_cast<std::size_t>(voxels * channels) * sizeof(cfloat) &&
              values.bytes() >= static_cast<std::size_t>(voxels) * sizeof(cfloat),
          "ESPIRiT: buffers too small for " + std::to_string(voxels) + " voxels");
  const float* m = static_cast<const float*>(cov.ptr());
  float* out = static_cast<float*>(maps.ptr());
  float* val = static_cast<float*>(values.ptr());
  const float* ref = reinterpret_cast<const float*>(reference.data());
  const int C = static_cast<int>(channels);
  constexpr index_t kBlock = 4096;  // voxels between polls of the caller's cancellation (3D: 4M voxels, seconds)
  ParallelCancel cancel;
#pragma omp parallel
  {
    std::vector<float> a(2 * C * C), b(2 * C * C), v(2 * C), w(2 * C);
#pragma omp for schedule(static)
    for (index_t x0 = 0; x0 < voxels; x0 += kBlock) {
      if (cancel.stop()) continue;
      for (index_t x = x0; x < std::min(voxels, x0 + kBlock); ++x) {
        const auto entry = [&](int l, float& re, float& im) {
          re = m[2 * (x + voxels * l)];
          im = m[2 * (x + voxels * l) + 1];
        };
        const float lambda = kernels::espiritDominantEigen(C, entry, a.data(), b.data(), v.data(), w.data());
        kernels::espiritPhaseAndCrop(C, v.data(), ref, lambda, crop);
        for (int c = 0; c < C; ++c) {
          out[2 * (x + voxels * c)] = v[2 * c];
          out[2 * (x + voxels * c) + 1] = v[2 * c + 1];
        }
        val[2 * x] = lambda;
        val[2 * x + 1] = 0.f;
      }
    }
  }
  cancel.rethrow();
}

void CpuEspiritOps::smallGridMatrices(Buffer& cov, const Buffer& u, index_t points, index_t channels, index_t kept,
                                      double scale) {
  require(channels >= 1 && kept >= 0 && points >= 0, "ESPIRiT: small-grid matrices of " + std::to_string(channels) +
                                                          " channels and " + std::to_string(kept) + " kernels");
  const index_t packed = channels * (channels + 1) / 2;
  const float* pu = reinterpret_cast<const float*>(elements(u, points * channels * kept, "ESPIRiT small grid"));
  cfloat* out = elements(cov, points * packed, "ESPIRiT small grid");
  const int C = static_cast<int>(channels);
#pragma omp parallel for collapse(2) schedule(static) if (points * packed * kept * channels >= (1 << 16))
  for (index_t l = 0; l < packed; ++l)
    for (index_t x = 0; x < points; ++x) {
      int a = 0, b = 0;
      kernels::espiritPackedPair(static_cast<int>(l), a, b);
      double re = 0, im = 0;
      kernels::espiritSmallGridEntry(points, C, kept, x, a, b, scale, pu, re, im);
      out[x + points * l] = cfloat(static_cast<float>(re), static_cast<float>(im));
    }
}

void CpuEspiritOps::calibrationMatrix(Buffer& a, const Buffer& cal, const index_t box[4], const index_t kernel[3]) {
  const long long b[3] = {box[0], box[1], box[2]}, k[3] = {kernel[0], kernel[1], kernel[2]};
  const index_t rows = (box[0] - kernel[0] + 1) * (box[1] - kernel[1] + 1) * (box[2] - kernel[2] + 1);
  const index_t cols = kernel[0] * kernel[1] * kernel[2] * box[3];
  require(rows >= 1 && cols >= 1, "ESPIRiT: the kernel does not fit the calibration region");
  const cfloat* src = elements(cal, box[0] * box[1] * box[2] * box[3], "ESPIRiT calibration");
  cfloat* out = elements(a, rows * cols, "ESPIRiT calibration matrix");
#pragma omp parallel for schedule(static) if (rows * cols >= (1 << 20))
  for (index_t col = 0; col < cols; ++col)
    for (index_t row = 0; row < rows; ++row) out[row + rows * col] = src[kernels::espiritCalibrationSource(row, col, b, k)];
}

void CpuEspiritOps::hermitianEigen(std::vector<cdouble>& a, std::vector<double>& values, index_t n) {
  require(n >= 0 && static_cast<index_t>(a.size()) == n * n, "ESPIRiT: the eigen-decomposition needs an n x n matrix");
  values.assign(static_cast<std::size_t>(n), 0.0);
  if (n == 0) return;
  Eigen::Map<Eigen::MatrixXcd> m(a.data(), n, n);
  Eigen::MatrixXcd vectors;
  Eigen::VectorXd ev;
  require(hermitianEigenCancellable(m, vectors, ev), "ESPIRiT: the eigen-decomposition of the calibration matrix failed");
  m = vectors;
  for (index_t j = 0; j < n; ++j) values[static_cast<std::size_t>(j)] = ev(j);
}

void CpuEspiritOps::gramKernels(const Buffer& gram, index_t n, std::vector<double>& values, Buffer& kernels) {
  const cfloat* g = elements(gram, n * n, "ESPIRiT gram");
  cfloat* out = elements(kernels, n * n, "ESPIRiT kernels");
  std::vector<cdouble> a(static_cast<std::size_t>(n * n));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = cdouble(g[i]);
  hermitianEigen(a, values, n);
  for (index_t i = 0; i < n; ++i)
    for (index_t e = 0; e < n; ++e)
      out[e + n * i] = cfloat(std::conj(a[static_cast<std::size_t>(e + n * (n - 1 - i))]));
}

}  // namespace larmor::cpu
