#pragma once
// The Gram operator of the Fourier part of an encoding, T = F_u^H diag(w) F_u with the unitary scale of
// docs/conventions.md (E = N^{-1/2} F on raw sums, so T = N^{-1} F^H diag(w) F): what CG-SENSE and FISTA
// apply per coil and iteration (ops/sense.hpp). Two implementations:
//   - ToeplitzOperator (ops/toeplitz.hpp): any trajectory, one FFT pair on the 2N grid (Stone et al. 2008);
//   - CartesianGram (ops/cartesian_sampling.hpp): samples on the N grid itself, T = IFFT diag(mask) FFT,
//     one FFT pair on the N grid (the sampling mask is the forward model).
#include "larmor/array/array.hpp"
#include "larmor/backend/buffer.hpp"

namespace larmor::ops {

class FourierGram {
 public:
  virtual ~FourierGram() = default;
  virtual index_t voxels() const = 0;
  virtual const Shape& imageShape() const = 0;
  /// y = T x; x and y hold voxels() * batch elements; y may be x.
  virtual void apply(const Buffer& x, Buffer& y, index_t batch = 1) = 0;
  /// Every diagonal entry of T (they are all equal): N^{-1} sum_j w_j.
  virtual double diagonal() const = 0;
};

}  // namespace larmor::ops
