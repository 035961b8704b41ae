#pragma once
// CoilCombineOps: the kernel of adaptive coil combination, one algorithm with its own interface so that the
// Backend interface does not grow with it. Each backend provides one (Backend::coilCombineOps();
// engine/src/cpu/coil_combine.cpp, cuda/coil_combine.cu). The plain sum of squares, which every pipeline
// uses, stays a Backend op.
#include "larmor/array/array.hpp"
#include "larmor/backend/buffer.hpp"

namespace larmor {

class CoilCombineOps {
 public:
  virtual ~CoilCombineOps() = default;

  /// Adaptive coil combination (Walsh, Gmitro, Marcellin 2000): per voxel, the dominant eigenvector v of
  /// the coil covariance summed over a window^3 (window^2 in 2D: dims[2] == 1) neighbourhood; out = v^H x,
  /// with the phase of v fixed so that the first coil's component is real and positive. Images are
  /// [dims[0], dims[1], dims[2], coils, batch]; out [dims[0], dims[1], dims[2], 1, batch].
  virtual void adaptiveCombine(Buffer& out, const Buffer& coilImages, const index_t dims[3], index_t coils,
                               index_t batch, int window) = 0;
};

}  // namespace larmor
