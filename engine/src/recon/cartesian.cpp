#include "larmor/recon/cartesian.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "larmor/backend/streamed_batch.hpp"

namespace larmor::recon {

void outputMatrix(const Dataset& d, const ReconSettings& s, index_t out[3]) {
  for (int i = 0; i < 3; ++i) {
    out[i] = s.matrix[i] > 0 ? s.matrix[i] : d.header.recon[i];
    require(out[i] > 0 && out[i] <= 65536, "--matrix: dimension " + std::to_string(i) + " must be in 1..65536");
  }
}

void combineCoils(Backend& backend, const CDeviceArray& coilImages, CDeviceArray& combined, index_t voxels,
                  index_t coils, index_t slices, Combine how) {
  if (how == Combine::Adaptive) {
    const Shape& s = coilImages.shape();
    const index_t dims[3] = {s[0], s[1], s[2]};
    require(dims[0] * dims[1] * dims[2] == voxels, "combine: coil image shape does not match the voxel count");
    // 5x5(x5) window: Walsh et al. used a few pixels around each; large enough for a stable covariance.
    backend.coilCombineOps().adaptiveCombine(combined.buffer(), coilImages.buffer(), dims, coils, slices, 5);
    return;
  }
  backend.sumOfSquares(combined.buffer(), coilImages.buffer(), voxels, coils, slices);
}

CartesianGeometry cartesianGeometry(const Dataset& d, const ReconSettings& s) {
  const Header& h = d.header;
  CartesianGeometry g;
  g.rank = h.encoded[2] > 1 ? 3 : 2;
  outputMatrix(d, s, g.out);
  for (int i = 0; i < 3; ++i) {
    const double ratio = h.encodedFovMm[i] > 0 ? h.reconFovMm[i] / h.encodedFovMm[i] : 1.0;
    g.fov[i] = std::max<index_t>(1, std::llround(static_cast<double>(h.encoded[i]) * std::min(ratio, 1.0)));
  }
  if (g.rank == 2) g.fov[2] = g.out[2] = 1;
  return g;
}

void resampleToMatrix(Backend& backend, Buffer& images, const Shape& from, Buffer& out, const Shape& to, int rank) {
  backend.fft(images, from, rank, FftDirection::Forward);
  backend.resizeCentred(out, to, images, from);
  backend.fft(out, to, rank, FftDirection::Inverse);
  const double factor = std::sqrt(static_cast<double>(to.span(0, 3)) / static_cast<double>(from.span(0, 3)));
  backend.scale(out, cfloat(static_cast<float>(factor)), to.size());
}

ImageSet finishCoilImages(Backend& backend, CDeviceArray images, const index_t out[3], int rank, index_t coils,
                          index_t slices, const ReconSettings& s, Timings& timings, const Progress& progress) {
  const Shape imageShape = images.shape();
  const Shape outShape{out[0], out[1], out[2], 1, imageShape[4]};
  if (outShape != imageShape) {
    progress.report(0.7, "resample to matrix");
    ScopedStage st(timings, "resample to matrix", &backend);
    CDeviceArray resampled(backend, outShape);
    resampleToMatrix(backend, images.buffer(), imageShape, resampled.buffer(), outShape, rank);
    images = std::move(resampled);
  }

  progress.report(0.8, "combine coils");
  const index_t voxels = outShape.span(0, 3);
  CDeviceArray combined(backend, Shape{out[0], out[1], out[2], 1, slices});
  {
    ScopedStage st(timings, "combine " + toString(s.combine), &backend);
    combineCoils(backend, images, combined, voxels, coils, slices, s.combine);
  }

  progress.report(0.9, "download images");
  ImageSet result;
  {
    ScopedStage st(timings, "download", &backend);
    if (s.keepCoilImages) {
      result.coilImages = images.download();
      result.coilImages.reshape(Shape{out[0], out[1], out[2], coils, slices});
    }
    result.combined = combined.download();
  }
  return result;
}

void kspaceToImages(Backend& backend, Buffer& kspace, Buffer& images, const Header& h, const CartesianGeometry& g,
                    index_t volumes, PartialFourierMethod method, PartialFourierReport& pf, Timings* timings,
                    const Progress& progress) {
  // Each step a stage of its own when timed, else part of the caller's.
  const auto step = [&](double at, const std::string& name, const auto& work) {
    if (!timings) return work();
    progress.report(at, name);
    ScopedStage st(*timings, name, &backend);
    work();
  };
  const Shape enc{h.encoded[0], h.encoded[1], h.encoded[2], 1, volumes};
  const Shape fov{g.fov[0], g.fov[1], g.fov[2], 1, volumes};
  // Partial Fourier / asymmetric echo (partial_fourier.hpp): the missing edge filled per coil before the FFT.
  if (pf.region.any())
    step(0.1, "partial Fourier (" + toString(method) + ")",
         [&] { pf = fillPartialFourier(backend, kspace, volumes, g.rank, pf.region, method); });
  step(0.2, "ifft", [&] { backend.fft(kspace, enc, g.rank, FftDirection::Inverse); });
  step(0.5, "crop oversampling", [&] { backend.resizeCentred(images, fov, kspace, enc); });
}

ImageSet reconstructCartesian(Backend& backend, const Dataset& d, const ReconSettings& s, Timings& timings,
                              const Progress& progress) {
  require(d.header.trajectory == TrajectoryKind::Cartesian,
          d.source + ": --method fft needs Cartesian data; this file has a " + toString(d.header.trajectory) +
              " trajectory (use gridding, tron or dft)");
  const Header& h = d.header;
  const index_t coils = h.coils, slices = h.slices, batch = coils * slices;
  const CartesianGeometry g = cartesianGeometry(d, s);
  const int rank = g.rank;
  const Shape fovShape{g.fov[0], g.fov[1], g.fov[2], 1, batch};
  PartialFourierReport pf;
  pf.region = detectPartialFourier(d);

  // 2D slices in chunks streamed through a GPU when there are several (slicesPerStreamedChunk): chunk c + 1
  // uploaded while chunk c is transformed and cropped (streamBatch), only two chunks' k-space on the device.
  const index_t volume = h.encoded[0] * h.encoded[1] * h.encoded[2];
  const std::size_t sliceBytes = static_cast<std::size_t>(volume * coils) * sizeof(cfloat);
  const index_t perChunk = rank == 2 ? slicesPerStreamedChunk(backend, slices, sliceBytes) : slices;
  const index_t chunks = (slices + perChunk - 1) / perChunk;
  CDeviceArray images(backend, fovShape);
  if (chunks > 1) {
    progress.report(0.05, "upload k-space, inverse FFT, crop (streamed)");
    ScopedStage st(timings, "upload + ifft + crop (" + std::to_string(chunks) + " chunks of " +
                                std::to_string(perChunk) + " slices, streamed)", &backend);
    streamSlices(backend, d.kspace.data(), slices, volume * coils, perChunk, images.buffer(), fovShape.span(0, 3) * coils,
                 [&](Buffer& in, index_t n, Buffer& chunkImages) {
                   kspaceToImages(backend, in, chunkImages, h, g, n * coils, s.partialFourier, pf);
                 });
  } else {
    progress.report(0.05, "upload k-space");
    CDeviceArray kspace;
    {
      ScopedStage st(timings, "upload", &backend);
      kspace = CDeviceArray::upload(backend, d.kspace);
    }
    kspaceToImages(backend, kspace.buffer(), images.buffer(), h, g, batch, s.partialFourier, pf, &timings, progress);
  }  // the k-space freed early: large 3D data sets

  ImageSet result = finishCoilImages(backend, std::move(images), g.out, rank, coils, slices, s, timings, progress);
  if (pf.region.any()) {
    result.partialFourier = pf.toJson();
    result.partialFourier["line"] = pf.line();
  }
  return result;
}

}  // namespace larmor::recon
