#include "larmor/recon/coil_compression.hpp"

#include <Eigen/Eigenvalues>
#include <string>

namespace larmor::recon {

CoilCompression computeCoilCompression(const Dataset& d, int outCoils, index_t firstSlice, index_t count) {
  const Header& h = d.header;
  const index_t coils = h.coils, n0 = h.encoded[0], n1 = h.encoded[1], n2 = h.encoded[2];
  require(outCoils >= 1 && outCoils <= coils, "--out-coils " + std::to_string(outCoils) + ": must be 1 to the " +
                                                  std::to_string(coils) + " coils of " + d.source);
  if (count < 0) count = h.slices - firstSlice;
  require(firstSlice >= 0 && count >= 0 && firstSlice + count <= h.slices, "coil compression: slices out of range");
  CoilCompression cc;
  cc.inCoils = coils;
  cc.outCoils = outCoils;
  cc.slices = count;
  cc.matrix = CArray(Shape{coils, outCoils, count});
  cc.keptEnergy.resize(static_cast<std::size_t>(count));
  for (index_t sl = 0; sl < count; ++sl) {
    const index_t s = firstSlice + sl;
    // Lines used: the calibration block, or every sampled line where the slice has none.
    bool anyCal = false;
    for (index_t z = 0; z < n2; ++z)
      for (index_t y = 0; y < n1; ++y) anyCal = anyCal || d.calibration(y, z, s);
    // Covariance Σ s s^H over the samples (s: the coil vector of one k-space sample), in double.
    Eigen::MatrixXcd cov = Eigen::MatrixXcd::Zero(coils, coils);
    Eigen::MatrixXcd block(coils, n0);
    for (index_t z = 0; z < n2; ++z)
      for (index_t y = 0; y < n1; ++y) {
        if (!(anyCal ? d.calibration(y, z, s) : d.sampled(y, z, s))) continue;
        for (index_t c = 0; c < coils; ++c)
          for (index_t x = 0; x < n0; ++x) block(c, x) = cdouble(d.kspace(x, y, z, c, s));
        cov.noalias() += block * block.adjoint();
      }
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXcd> eig(cov);
    require(eig.info() == Eigen::Success, "coil compression: the eigen decomposition failed for slice " + std::to_string(s));
    const double total = std::max(eig.eigenvalues().sum(), 1e-300);
    double kept = 0;
    for (int v = 0; v < outCoils; ++v) {
      const index_t col = coils - 1 - v;  // eigenvalues ascend: the strongest last
      kept += eig.eigenvalues()(col);
      for (index_t c = 0; c < coils; ++c) cc.matrix(c, v, sl) = cfloat(std::conj(eig.eigenvectors()(c, col)));
    }
    cc.keptEnergy[static_cast<std::size_t>(sl)] = kept / total;
  }
  return cc;
}

void applyCoilCompression(Backend& backend, const Buffer& matrix, index_t inCoils, index_t outCoils, const Buffer& in,
                          Buffer& out, index_t voxels, index_t slices) {
  backend.gemmBatched(MatOp::None, MatOp::None, voxels, outCoils, inCoils, cfloat(1), in,
                      MatrixBatch{voxels, inCoils, voxels, voxels * inCoils}, matrix,
                      MatrixBatch{inCoils, outCoils, inCoils, inCoils * outCoils}, cfloat(0), out,
                      MatrixBatch{voxels, outCoils, voxels, voxels * outCoils}, slices);
}

CArray applyCoilCompression(const CoilCompression& cc, const CArray& data, index_t voxels) {
  const index_t slices = data.size() / std::max<index_t>(voxels * cc.inCoils, 1);
  require(slices <= cc.slices && voxels * cc.inCoils * slices == data.size(), "coil compression: data does not match");
  CArray out(Shape{voxels, cc.outCoils, slices}, cfloat(0));
  for (index_t s = 0; s < slices; ++s)
    for (index_t v = 0; v < cc.outCoils; ++v)
      for (index_t c = 0; c < cc.inCoils; ++c) {
        const cfloat w = cc.matrix(c, v, s);
        const cfloat* src = data.data() + voxels * (c + cc.inCoils * s);
        cfloat* dst = out.data() + voxels * (v + cc.outCoils * s);
        for (index_t i = 0; i < voxels; ++i) dst[i] += w * src[i];
      }
  return out;
}

}  // namespace larmor::recon
