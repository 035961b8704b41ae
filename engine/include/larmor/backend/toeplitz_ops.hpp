#pragma once
// ToeplitzOps: the Gram operator of the FFT, F^H diag(d) F, one interface that each backend provides
// (Backend::toeplitzOps()). Plain, the Gram of a k-space diagonal: Cartesian sampling masks
// (engine/src/ops/cartesian_sampling.cpp); padded, the Toeplitz operator's product (ops/toeplitz.hpp;
// Fessler et al., IEEE TSP 53:3393, 2005), out = crop(F^H diag(d) F pad(image)) (engine/src/ops/toeplitz.cpp).
// CPU twin engine/src/cpu/cpu_backend.cpp (FFTW between two shifts, or the composition; padded: resizeCentred,
// fftGram, resizeCentred); CUDA twin cuda/cuda_backend.cu and cuda/fft_last.cu, which fuse the diagonal into the
// last dimension's pass, the padding and the cropping into the transforms' first and last passes, and transform
// only the rows and planes the image spans.
// F is the centred unitary FFT of backend.hpp over dims [0, rank) of the grid, d one transform's elements.
#include "larmor/array/array.hpp"
#include "larmor/backend/buffer.hpp"

namespace larmor {

class ToeplitzOps {
 public:
  virtual ~ToeplitzOps() = default;

  /// In place, data <- F^H diag(d) F data for F the centred unitary FFT over dims [0, rank) of `shape` (the Gram
  /// operator of a k-space diagonal: Cartesian sampling masks): d holds shape.span(0, rank) elements, applied to
  /// every batch. The same as fft, multiply, inverse fft; on a GPU the two inner modulations of the centred FFTs
  /// cancel (their product is 1/N) and are not made. The caller: ops/cartesian_sampling.cpp.
  virtual void fftGram(Buffer& data, const Shape& shape, int rank, const Buffer& diagonal) = 0;

  /// out <- crop(F^H diag(d) F pad(image)). pad and crop are Backend::resizeCentred between imageShape and
  /// gridShape (equal batch), F and d as in fftGram over dims [0, rank) of gridShape; `grid` (gridShape's
  /// elements) is scratch whose contents on return are unspecified; out may be image. The caller: the Toeplitz
  /// operator's product (engine/src/ops/toeplitz.cpp).
  virtual void fftGramPadded(Buffer& out, const Buffer& image, const Shape& imageShape, Buffer& grid,
                             const Shape& gridShape, int rank, const Buffer& diagonal) = 0;

  /// fftGram where `data` is zero outside the centred box `box` of each transform (box[d] <= shape[d]
  /// for d < rank; centres floor(N/2) coinciding, as in resizeCentred) and only that box of the result is used:
  /// outside it the result is unspecified. The step fftGramPadded is built from on a GPU, which then transforms
  /// only the planes the box spans; the CPU computes fftGram itself. Called by no algorithm: kept here so that the
  /// GPU tests check it on its own (tests/gpu/test_cuda_backend.cpp).
  virtual void fftGramInBox(Buffer& data, const Shape& shape, int rank, const Buffer& diagonal, const Shape& box) = 0;
};

}  // namespace larmor
