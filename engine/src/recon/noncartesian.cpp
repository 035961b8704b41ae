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

namespace {

// The sizes of one reconstruction: the image (z = 1 for 2D data) of rank dims, m samples per coil and slice.
struct Layout {
  int dims = 2;
  index_t image[3] = {1, 1, 1};
  index_t m = 0, coils = 0, slices = 0, batch = 0;
};

// The method, the trajectory and the k-space's size checked against each other.
Layout checkedLayout(const Dataset& d, const ReconSettings& s) {
  const Header& h = d.header;
  const std::string method = toString(s.method);
  require(s.method == Method::Gridding || s.method == Method::Tron || s.method == Method::Dft,
          "non-Cartesian reconstruction: --method " + method + " is not one of gridding, tron, dft");
  require(h.trajectory != TrajectoryKind::Cartesian,
          d.source + ": --method " + method + " needs non-Cartesian data (a trajectory); this file is Cartesian "
                     "(use --method fft)");
  require(!d.trajectory.empty(), d.source + ": --method " + method + " needs a trajectory; the file has none");
  Layout l;
  l.coils = h.coils;
  l.slices = h.slices;
  l.batch = l.coils * l.slices;
  l.dims = nonCartesianRank(d, h.recon[2]);
  l.image[0] = h.recon[0];
  l.image[1] = h.recon[1];
  l.image[2] = l.dims == 3 ? h.recon[2] : 1;
  require(l.dims == 2 || l.slices == 1,
          d.source + ": 3D non-Cartesian data with " + std::to_string(l.slices) + " slices is not supported");
  traj::validate(d.trajectory, l.dims, l.image, d.source + ": trajectory");
  l.m = d.trajectory.size() / 3;
  require(d.kspace.size() == l.m * l.batch, d.source + ": k-space " + d.kspace.shape().str() +
                                                " does not match the " + std::to_string(l.m) + "-sample trajectory");
  return l;
}

// Radial lines through k = 0 (2D, 3D kooshball) or a stack of 2D radial planes (stack of stars): the ramp is
// exact for them.
bool hasRadialLines(const Dataset& d, int dims, const std::optional<RadialInfo>& radial) {
  bool radialLines = dims == 2 ? radial.has_value() : traj::isRadialLines(d.trajectory);
  if (dims == 3 && !radialLines)
    if (const auto stack = traj::detectStack(d.trajectory)) radialLines = traj::detectRadial(stack->plane).has_value();
  return radialLines;
}

// The NUFFT's options from the settings; TRON (the method or the spreader) needs 2D radial data.
NufftOptions checkedNufftOptions(const Dataset& d, const ReconSettings& s, const std::optional<RadialInfo>& radial) {
  if (s.method == Method::Tron)
    require(radial.has_value(), d.source + ": --method tron needs 2D radial data (linear or golden-angle spokes "
                                           "through the centre); this file has a " +
                                    toString(d.header.trajectory) + " trajectory (use --method gridding or dft)");
  NufftOptions nufft = nufftOptions(s.nufft);
  if (s.method == Method::Tron) nufft.spreader = Spreader::Tron;
  if (nufft.spreader == Spreader::Tron)
    require(radial.has_value(), d.source + ": --spreader tron needs 2D radial data; use --spreader sector or auto");
  return nufft;
}

// Density compensation (host, cached per trajectory): the settings' method, or under auto the ramp for radial
// lines and Pipe-Menon otherwise; no weights (empty) under none.
RArray densityWeights(Backend& backend, const Dataset& d, const ReconSettings& s, const NufftGeometry& geometry,
                      const NufftOptions& nufft, bool radialLines, Timings& timings, const Progress& progress) {
  DensityCompensation dcf = s.nufft.dcf;
  if (dcf == DensityCompensation::Auto) dcf = radialLines ? DensityCompensation::Ramp : DensityCompensation::PipeMenon;
  RArray weights;
  if (dcf == DensityCompensation::None) return weights;
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
  return weights;
}

// The k-space and the density compensation's weights on the backend. Slices of 2D data go in chunks streamed
// through a GPU when there are several (slicesPerStreamedChunk): chunk c + 1 uploaded while chunk c is gridded
// (streamBatch), only two chunks' k-space on the device; then the k-space stays on the host here and the
// weights stay on the device for the chunks. One chunk: uploaded whole, its weights applied.
struct DeviceKspace {
  CDeviceArray kspace, dcf;
  index_t perChunk = 1, chunks = 1;
};

DeviceKspace uploadKspace(Backend& backend, const Dataset& d, const Layout& l, const RArray& weights,
                          Timings& timings, const Progress& progress) {
  const index_t m = l.m, coils = l.coils, slices = l.slices, batch = l.batch;
  DeviceKspace k;
  const std::size_t sliceBytes = static_cast<std::size_t>(m * coils) * sizeof(cfloat);
  k.perChunk = slicesPerStreamedChunk(backend, slices, sliceBytes);
  k.chunks = (slices + k.perChunk - 1) / k.perChunk;

  progress.report(0.15, "upload k-space");
  {
    ScopedStage st(timings, "upload", &backend);
    if (k.chunks == 1) {
      k.kspace = CDeviceArray::upload(backend, d.kspace);
      k.kspace.reshape(Shape{m, batch});
    }
    if (!weights.empty()) {
      CArray w(Shape{m});
      for (index_t j = 0; j < m; ++j) w[j] = cfloat(weights[j], 0.f);
      k.dcf = CDeviceArray::upload(backend, w);
    }
  }
  if (k.chunks == 1 && !weights.empty()) {
    ScopedStage st(timings, "apply density compensation", &backend);
    backend.multiply(k.kspace.buffer(), k.dcf.buffer(), m, k.kspace.buffer(), m * batch, false);
    k.dcf = {};  // streamed chunks still need it
  }
  return k;
}

// The exact DFT's plan (--method dft) or the NUFFT's.
std::unique_ptr<NufftPlan> makePlan(Backend& backend, const ReconSettings& s, const NufftGeometry& geometry,
                                    const NufftOptions& nufft, Timings& timings) {
  ScopedStage st(timings, s.method == Method::Dft ? "dft plan" : "nufft plan", &backend);
  if (s.method == Method::Dft) {
    DftOptions o;
    o.trig = s.nufft.trig;
    return backend.makeDftPlan(geometry, o);
  }
  return backend.makeNufftPlan(geometry, nufft);
}

// The coil images F^H (w d), unscaled: of the whole k-space at once, or chunk by chunk (upload, density
// compensation and gridding of each chunk, the next chunk's upload beside them).
CDeviceArray adjointImages(Backend& backend, const Dataset& d, const ReconSettings& s, const Layout& l,
                           NufftPlan& plan, DeviceKspace& k, bool weighted, Timings& timings) {
  const index_t m = l.m, coils = l.coils, batch = l.batch;
  const index_t* image = l.image;
  const Shape imageShape{image[0], image[1], image[2], 1, batch};
  CDeviceArray images(backend, imageShape);
  const std::string stage = s.method == Method::Dft    ? "adjoint dft (F^H d, " + settings::choiceName("nufft.trig", static_cast<int>(s.nufft.trig)) + ")"
                            : s.method == Method::Tron ? "adjoint nufft (tron)"
                                                       : "adjoint nufft";
  if (k.chunks == 1) {
    ScopedStage st(timings, stage, &backend);
    plan.adjoint(k.kspace.buffer(), images.buffer(), batch);
  } else {
    ScopedStage st(timings, "upload + density compensation + " + stage + " (" + std::to_string(k.chunks) +
                                " chunks of " + std::to_string(k.perChunk) + " slices, streamed)", &backend);
    streamSlices(backend, d.kspace.data(), l.slices, m * coils, k.perChunk, images.buffer(),
                 image[0] * image[1] * image[2] * coils, [&](Buffer& in, index_t n, Buffer& chunkImages) {
                   if (weighted) backend.multiply(in, k.dcf.buffer(), m, in, m * n * coils, false);
                   plan.adjoint(in, chunkImages, n * coils);
                 });
  }
  return images;
}

}  // namespace

ImageSet reconstructNonCartesian(Backend& backend, const Dataset& d, const ReconSettings& s, Timings& timings,
                                 const Progress& progress) {
  const Layout l = checkedLayout(d, s);
  std::optional<RadialInfo> radial;
  if (l.dims == 2) radial = traj::detectRadial(d.trajectory);
  const bool radialLines = hasRadialLines(d, l.dims, radial);
  const NufftOptions nufft = checkedNufftOptions(d, s, radial);
  const NufftGeometry geometry = traj::geometry(d.trajectory, l.dims, l.image, radial);
  const RArray weights = densityWeights(backend, d, s, geometry, nufft, radialLines, timings, progress);
  DeviceKspace k = uploadKspace(backend, d, l, weights, timings, progress);

  progress.report(0.25, "plan");
  std::unique_ptr<NufftPlan> plan = makePlan(backend, s, geometry, nufft, timings);
  progress.report(0.35, s.method == Method::Dft ? "exact adjoint DFT (F^H d)" : "adjoint NUFFT");
  CDeviceArray images = adjointImages(backend, d, s, l, *plan, k, !weights.empty(), timings);
  plan.reset();
  k.kspace = {};
  k.dcf = {};
  {
    ScopedStage st(timings, "scale", &backend);
    const double voxels = static_cast<double>(l.image[0]) * static_cast<double>(l.image[1]) * static_cast<double>(l.image[2]);
    backend.scale(images.buffer(), cfloat(static_cast<float>(1.0 / std::sqrt(voxels))), images.size());
  }

  index_t out[3];
  outputMatrix(d, s, out);
  if (l.dims == 2) out[2] = 1;
  return finishCoilImages(backend, std::move(images), out, l.dims, l.coils, l.slices, s, timings, progress);
}

}  // namespace larmor::recon
