// Non-Cartesian reconstructions on any backend: gridding (Jackson et al. 1991; density compensation ->
// adjoint NUFFT -> deapodization -> scale -> combine), TRON (Smith et al. 2019: the same chain with the
// output-parallel radial spreader, radial data only) and the exact conjugate-phase reconstruction
// (Stone et al. 2008's F^H d with density compensation).
//
// Scale: simulated and file data follow d = F(k) sqrt(N) (docs/conventions.md, N = N0 N1 N2 the recon
// matrix); with weights w in units of k-space area per sample (traj/dcf.hpp), N^{-1/2} F^H (w d) =
// sum_j w_j F(k_j) exp(2 pi i k_j r) is a Riemann sum of the inverse Fourier integral: the object's
// intensities, on the same scale as the Cartesian reconstruction.
//
// Data stay on the backend from the k-space upload to the image download (TRON's lesson); the density
// compensation is computed (or found in its cache) first and uploaded with the k-space. Several 2D slices
// are streamed in chunks (streamBatch): a chunk's upload runs beside the previous chunk's gridding.
#include "larmor/recon/noncartesian.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "larmor/backend/streamed_batch.hpp"
#include "larmor/ops/nufft.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/traj/dcf.hpp"
#include "larmor/traj/trajectory.hpp"

namespace larmor::recon {

int nonCartesianRank(const Dataset& d, index_t outputZ) {
  bool kz = false;
  for (index_t i = 2; i < d.trajectory.size() && !kz; i += 3) kz = d.trajectory[i] != 0.f;
  return d.header.is3D() || outputZ > 1 || kz ? 3 : 2;
}

NufftOptions nufftOptions(const NufftSettings& n) {
  NufftOptions o;
  o.width = n.width;
  o.oversampling = n.oversampling;
  o.kernel = n.kernelTable ? KernelEvaluation::Table : KernelEvaluation::Direct;
  o.spreader = n.spreader;
  return o;
}

ImageSet reconstructNonCartesian(Backend& backend, const Dataset& d, const ReconSettings& s, Timings& timings,
                                 const Progress& progress) {
  const Header& h = d.header;
  const std::string method = toString(s.method);
  require(s.method == Method::Gridding || s.method == Method::Tron || s.method == Method::Dft,
          "non-Cartesian reconstruction: --method " + method + " is not one of gridding, tron, dft");
  require(h.trajectory != TrajectoryKind::Cartesian,
          d.source + ": --method " + method + " needs non-Cartesian data (a trajectory); this file is Cartesian "
                     "(use --method fft)");
  require(!d.trajectory.empty(), d.source + ": --method " + method + " needs a trajectory; the file has none");
  const index_t coils = h.coils, slices = h.slices, batch = coils * slices;

  const int dims = nonCartesianRank(d, h.recon[2]);
  const index_t image[3] = {h.recon[0], h.recon[1], dims == 3 ? h.recon[2] : 1};
  require(dims == 2 || slices == 1,
          d.source + ": 3D non-Cartesian data with " + std::to_string(slices) + " slices is not supported");
  traj::validate(d.trajectory, dims, image, d.source + ": trajectory");
  const index_t m = d.trajectory.size() / 3;
  require(d.kspace.size() == m * batch, d.source + ": k-space " + d.kspace.shape().str() + " does not match the " +
                                           std::to_string(m) + "-sample trajectory");

  std::optional<RadialInfo> radial;
  if (dims == 2) radial = traj::detectRadial(d.trajectory);
  // Radial lines through k = 0 (2D, 3D kooshball) or a stack of 2D radial planes (stack of stars): the
  // ramp is exact for them.
  bool radialLines = dims == 2 ? radial.has_value() : traj::isRadialLines(d.trajectory);
  if (dims == 3 && !radialLines)
    if (const auto stack = traj::detectStack(d.trajectory)) radialLines = traj::detectRadial(stack->plane).has_value();
  if (s.method == Method::Tron)
    require(radial.has_value(), d.source + ": --method tron needs 2D radial data (linear or golden-angle spokes "
                                           "through the centre); this file has a " +
                                    toString(h.trajectory) + " trajectory (use --method gridding or dft)");

  NufftOptions nufft = nufftOptions(s.nufft);
  if (s.method == Method::Tron) nufft.spreader = Spreader::Tron;
  if (nufft.spreader == Spreader::Tron)
    require(radial.has_value(), d.source + ": --spreader tron needs 2D radial data; use --spreader sector or auto");
  const NufftGeometry geometry = traj::geometry(d.trajectory, dims, image, radial);

  // Density compensation (host, cached per trajectory).
  DensityCompensation dcf = s.nufft.dcf;
  if (dcf == DensityCompensation::Auto) dcf = radialLines ? DensityCompensation::Ramp : DensityCompensation::PipeMenon;
  RArray weights;
  if (dcf != DensityCompensation::None) {
    progress.report(0.05, "density compensation (" + settings::choiceName("nufft.dcf", static_cast<int>(dcf)) + ")");
    ScopedStage st(timings, "density compensation (" + settings::choiceName("nufft.dcf", static_cast<int>(dcf)) + ")", &backend);
    traj::DcfOptions o;
    o.method = dcf == DensityCompensation::Ramp ? traj::DcfMethod::Ramp : traj::DcfMethod::PipeMenon;
    o.iterations = s.nufft.dcfIterations;
    o.nufft = nufft;
    try {
      weights = traj::densityCompensation(backend, geometry, o, Progress::Sub(progress, 0.05, 0.15, "density compensation: "));
    } catch (const Cancelled&) {
      throw;
    } catch (const Error& e) {
      throw Error(d.source + ": " + e.what());
    }
  }

  // Slices of 2D data in chunks streamed through a GPU when there are several (slicesPerStreamedChunk): chunk
  // c + 1 uploaded while chunk c is gridded (streamBatch), only two chunks' k-space on the device.
  const std::size_t sliceBytes = static_cast<std::size_t>(m * coils) * sizeof(cfloat);
  const index_t perChunk = slicesPerStreamedChunk(backend, slices, sliceBytes);
  const index_t chunks = (slices + perChunk - 1) / perChunk;

  progress.report(0.15, "upload k-space");
  CDeviceArray kspace, dcfDevice;
  {
    ScopedStage st(timings, "upload", &backend);
    if (chunks == 1) {
      kspace = CDeviceArray::upload(backend, d.kspace);
      kspace.reshape(Shape{m, batch});
    }
    if (!weights.empty()) {
      CArray w(Shape{m});
      for (index_t j = 0; j < m; ++j) w[j] = cfloat(weights[j], 0.f);
      dcfDevice = CDeviceArray::upload(backend, w);
    }
  }
  if (chunks == 1 && !weights.empty()) {
    ScopedStage st(timings, "apply density compensation", &backend);
    backend.multiply(kspace.buffer(), dcfDevice.buffer(), m, kspace.buffer(), m * batch, false);
    dcfDevice = {};  // streamed chunks still need it
  }

  progress.report(0.25, "plan");
  std::unique_ptr<NufftPlan> plan;
  {
    ScopedStage st(timings, s.method == Method::Dft ? "dft plan" : "nufft plan", &backend);
    if (s.method == Method::Dft) {
      DftOptions o;
      o.trig = s.nufft.trig;
      plan = backend.makeDftPlan(geometry, o);
    } else {
      plan = backend.makeNufftPlan(geometry, nufft);
    }
  }

  progress.report(0.35, s.method == Method::Dft ? "exact adjoint DFT (F^H d)" : "adjoint NUFFT");
  const Shape imageShape{image[0], image[1], image[2], 1, batch};
  CDeviceArray images(backend, imageShape);
  {
    const std::string stage = s.method == Method::Dft    ? "adjoint dft (F^H d, " + settings::choiceName("nufft.trig", static_cast<int>(s.nufft.trig)) + ")"
                              : s.method == Method::Tron ? "adjoint nufft (tron)"
                                                         : "adjoint nufft";
    if (chunks == 1) {
      ScopedStage st(timings, stage, &backend);
      plan->adjoint(kspace.buffer(), images.buffer(), batch);
    } else {
      // Upload, density compensation and gridding of each chunk, the next chunk's upload beside them.
      ScopedStage st(timings, "upload + density compensation + " + stage + " (" + std::to_string(chunks) +
                                  " chunks of " + std::to_string(perChunk) + " slices, streamed)", &backend);
      streamSlices(backend, d.kspace.data(), slices, m * coils, perChunk, images.buffer(),
                   image[0] * image[1] * image[2] * coils, [&](Buffer& in, index_t n, Buffer& chunkImages) {
                     if (!weights.empty()) backend.multiply(in, dcfDevice.buffer(), m, in, m * n * coils, false);
                     plan->adjoint(in, chunkImages, n * coils);
                   });
    }
  }
  plan.reset();
  kspace = {};
  dcfDevice = {};
  {
    ScopedStage st(timings, "scale", &backend);
    const double voxels = static_cast<double>(image[0]) * static_cast<double>(image[1]) * static_cast<double>(image[2]);
    backend.scale(images.buffer(), cfloat(static_cast<float>(1.0 / std::sqrt(voxels))), images.size());
  }

  index_t out[3];
  outputMatrix(d, s, out);
  if (dims == 2) out[2] = 1;
  return finishCoilImages(backend, std::move(images), out, dims, coils, slices, s, timings, progress);
}

}  // namespace larmor::recon
