#pragma once
// ToeplitzOps: the padded Gram product of the Toeplitz operator (ops/toeplitz.hpp; Fessler et al., IEEE TSP
// 53:3393, 2005), out = crop(F^H diag(d) F pad(image)), one interface that each backend provides
// (Backend::toeplitzOps(); CPU twin engine/src/cpu/cpu_backend.cpp: resizeCentred, Backend::fftGram, resizeCentred;
// CUDA twin cuda/cuda_backend.cu and cuda/fft_last.cu, which fuse the padding and the cropping into the
// transforms' first and last passes and transform only the rows and planes the image spans).
// F is the centred unitary FFT of backend.hpp over dims [0, rank) of the grid, d one transform's elements.
#include "larmor/array/array.hpp"
#include "larmor/backend/buffer.hpp"

namespace larmor {

class ToeplitzOps {
 public:
  virtual ~ToeplitzOps() = default;

  /// out <- crop(F^H diag(d) F pad(image)). pad and crop are Backend::resizeCentred between imageShape and
  /// gridShape (equal batch), F and d as in Backend::fftGram over dims [0, rank) of gridShape; `grid` (gridShape's
  /// elements) is scratch whose contents on return are unspecified; out may be image. The caller: the Toeplitz
  /// operator's product (engine/src/operators/toeplitz.cpp).
  virtual void fftGramPadded(Buffer& out, const Buffer& image, const Shape& imageShape, Buffer& grid,
                             const Shape& gridShape, int rank, const Buffer& diagonal) = 0;

  /// Backend::fftGram where `data` is zero outside the centred box `box` of each transform (box[d] <= shape[d]
  /// for d < rank; centres floor(N/2) coinciding, as in resizeCentred) and only that box of the result is used:
  /// outside it the result is unspecified. The step fftGramPadded is built from on a GPU, which then transforms
  /// only the planes the box spans; the CPU computes fftGram itself. Called by no algorithm: kept here so that the
  /// GPU tests check it on its own (tests/gpu/test_cuda_backend.cpp).
  virtual void fftGramInBox(Buffer& data, const Shape& shape, int rank, const Buffer& diagonal, const Shape& box) = 0;
};

}  // namespace larmor
