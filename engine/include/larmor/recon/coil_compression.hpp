#pragma once
// SVD coil compression (Buehrer et al., MRM 57:1131, 2007; Huang et al., MRI 26:133, 2008): per slice, the
// N dominant left singular vectors of the calibration data (coils x samples) span N virtual coils that
// keep most of the signal; GRAPPA then calibrates and fills N coils instead of all of them, which the
// thesis's outlook (sec. 5.3.2, "channel reduction") names as the way to make 64 and 128 coils affordable.
// The singular vectors are the eigenvectors of the coils' covariance, computed on the host in double
// (a coils x coils problem) from the ACS lines before the upload; the compression itself is one batched
// GEMM on the backend.
#include <vector>

#include "larmor/backend/backend.hpp"
#include "larmor/data/dataset.hpp"

namespace larmor::recon {

struct CoilCompression {
  index_t inCoils = 0, outCoils = 0, slices = 0;
  /// [inCoils, outCoils, slices]: virtual coil v of slice s = Σ_c matrix(c, v, s) · coil c (the conjugated
  /// singular vectors, strongest first).
  CArray matrix;
  /// Per slice: the fraction of the calibration data's energy the virtual coils keep.
  std::vector<double> keptEnergy;
};

/// From the calibration (ACS) lines of slices [firstSlice, firstSlice + count) (count < 0: to the end); all
/// sampled lines where a slice has no calibration lines. Throws Error when outCoils is not in 1..coils.
CoilCompression computeCoilCompression(const Dataset& d, int outCoils, index_t firstSlice = 0, index_t count = -1);

/// out [voxels, outCoils, slices] = in [voxels, inCoils, slices] through `matrix` (already on the backend,
/// [inCoils, outCoils, slices]) as one batched GEMM.
void applyCoilCompression(Backend& backend, const Buffer& matrix, index_t inCoils, index_t outCoils,
                          const Buffer& in, Buffer& out, index_t voxels, index_t slices);

/// The same on the host (small arrays: calibration blocks, tests). data: [voxels, inCoils, slices].
CArray applyCoilCompression(const CoilCompression& cc, const CArray& data, index_t voxels);

}  // namespace larmor::recon
