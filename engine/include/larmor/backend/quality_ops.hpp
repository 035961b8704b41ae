#pragma once
// QualityOps: the image metrics of quality/metrics.hpp (percent error, PSNR, SSIM, NRMSE against a reference)
// on images in a backend's memory, one interface that each backend provides (Backend::qualityOps(); CPU twin
// engine/src/cpu/quality.cpp, CUDA twin cuda/quality.cu). A reconstruction with a reference computes them on
// its own backend: on the host the 256^2 metrics took 6-7 ms of a 22 ms SENSE call on the H100's machine
// (SSIM's five Gaussian-blurred moments), on the GPU they are a few small kernels.
// Both twins compute in double the same terms as quality::compare, the GPU in another summation order
// (results equal to ~1e-12 relative; tests/gpu compares them).
#include "larmor/array/array.hpp"
#include "larmor/backend/buffer.hpp"
#include "larmor/quality/metrics.hpp"

namespace larmor {

class QualityOps {
 public:
  virtual ~QualityOps() = default;
  /// quality::compare(test, reference) for complex images of `shape` ([x, y, rest...]) in this backend's
  /// memory. Throws Error naming the first non-finite voxel, or when the reference is all zero.
  virtual quality::Metrics compare(const Buffer& test, const Buffer& reference, const Shape& shape,
                                   const quality::CompareOptions& options) = 0;
};

}  // namespace larmor
