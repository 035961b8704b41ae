#pragma once
// Advanced iterative reconstruction (Stone et al. 2008; Haldar et al. 2008): the regularised least-squares
// image of Stone's eq. 1,
//   rho = argmin ||E rho - d||^2 + lambda ||W rho||^2,   i.e.   (E^H E + lambda W^H W) rho = E^H d  (eq. 2),
// by preconditioned CG (60 iterations by default, as in the paper), with
//   - E = N^{-1/2} [F S_1; ...; F S_C]: the raw non-uniform Fourier sums of ops/nufft.hpp at the physics
//     scale of docs/conventions.md, coil sensitivities inside (CG-SENSE) when there are several coils;
//   - E^H d exactly (exact DFT, Stone's F^H d) or by NUFFT (--fhd dft|nufft);
//   - E^H E by Toeplitz embedding (ops/toeplitz.hpp): Q once per trajectory (exact or NUFFT; cached on
//     disk), then one FFT pair on the 2N grid per coil and iteration;
//   - W: identity, finite differences, or reference-weighted finite differences (ops/regularizer.hpp).
// Everything inside the CG loop stays in the backend's memory.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "larmor/backend/backend.hpp"
#include "larmor/data/dataset.hpp"
#include "larmor/ops/nufft.hpp"
#include "larmor/ops/regularizer.hpp"
#include "larmor/recon/operator_cache.hpp"
#include "larmor/solve/cg.hpp"
#include "larmor/solve/fista.hpp"
#include "larmor/util/progress.hpp"
#include "larmor/util/timer.hpp"

namespace larmor::recon {

struct ReconSettings;
struct ImageSet;
class CalibrationGridding;

/// How E^H d (and Q) are computed: the exact DFT (Stone's F^H d) or a NUFFT.
enum class FhdMethod { Dft, Nufft };
/// cs: lambda as given (Fixed), at least the weight that the data's noise level asks for (Noise:
/// IterativeProblem::noiseLambda, recon/noise_level.hpp), or the one that best predicts held-out samples
/// (CrossValidation: recon/lambda_cv.hpp); Auto (cs's default): CrossValidation for a 2D slice's lambda where the
/// data can be split, else Fixed (3D volumes, a joint series' lambda_t, data with nothing to hold out: the reason is
/// recorded); docs/iterative.md "Choosing lambda".
enum class LambdaRule { Fixed, Noise, CrossValidation, Auto };
/// How the Toeplitz kernel Q is computed; Auto: as E^H d.
enum class ToeplitzMethod { Auto, Dft, Nufft };
/// Trigonometry of the exact Q; Auto: the F^H d's (--trig).
enum class QTrig { Auto, Accurate, Fast, Recurrence };
/// Coil sensitivities (recon/coil_maps.hpp): ESPIRiT from the calibration region, Walsh-style (low-resolution
/// coil images over their sum of squares), the dataset's own (the true maps of simulated data), or a .cfl file.
enum class CoilMapSource { Espirit, Walsh, Dataset, File };

/// Settings of --method cg and --method cs. The defaults are cg's; settings::applyMethodDefaults() puts cs's
/// (total variation, lambda 3e-4, 100 iterations, tolerance 1e-4) in when cs is chosen.
struct IterativeSettings {
  ops::RegularizerKind regularizer = ops::RegularizerKind::Tikhonov;
  /// cg: the weight of the l2 prior, absolute (the l2 solution scales with the data, lambda does not).
  /// cs: relative: the objective is 1/2 ||E x - d||^2 + lambda max|E^H d| R(x), so FISTA's threshold is lambda
  /// times the peak of one gradient step's image, whatever the data's scale (docs/iterative.md).
  double lambda = 0.0;
  LambdaRule lambdaRule = LambdaRule::Fixed;
  int iterations = 60;                   ///< the paper's default
  /// cg: relative residual; cs: relative change of the image between iterations; 0 = iterations only.
  double tolerance = 0.0;
  int tvIterations = 10;                 ///< cs with TV: inner FGP steps of each proximal map
  std::string referencePath;             ///< anatomical prior image (.cfl, or .h5 with a reference)
  FhdMethod fhd = FhdMethod::Nufft;  // the exact DFT (Stone's F^H d) is --fhd dft: 0.5 s on a GPU, ~30 s on 2 CPU cores for 256^2
  ToeplitzMethod toeplitz = ToeplitzMethod::Auto;
  /// Q is computed once per trajectory and cached, so it can afford accurate trigonometry when F^H d is fast.
  QTrig qTrig = QTrig::Auto;
  CoilMapSource coilMaps = CoilMapSource::Espirit;
  std::string coilMapsPath;              ///< the .cfl of CoilMapSource::File
  double calibrationRadius = 12;         ///< Walsh, non-Cartesian: k-space radius (cycles/FOV) of the calibration region
  int calibrationSize = 24;              ///< ESPIRiT: calibration box per dimension (BART ecalib -r 24)
  double espiritCrop = 0.8;              ///< ESPIRiT: maps 0 where the eigenvalue < crop (BART ecalib -c 0.8)
  double anatomicalDelta = 0;            ///< edge scale of the anatomical weights; 0: from the reference
  bool preconditioner = true;            ///< Jacobi (diagonal) preconditioner
  /// Q cache folder; "" = $XDG_CACHE_HOME/larmor or ~/.cache/larmor; "none" disables the cache.
  std::string cacheDirectory;
  /// When the backend is a GPU and more than one is visible: a multi-slice dataset's slices spread over every
  /// GPU (reconstructIterativeOn); within a slice, the exact F^H d and Q split by voxel slabs over them
  /// (Stone's GPU.Multi).
  bool multiGpu = true;
  /// The previous result's combined image [x, y, z, 1, slices] to start from (warm start: the GUI's lambda
  /// slider). Ignored (with a note in the convergence record) when its size does not match. Not a setting:
  /// state of a session, so not in the settings table.
  std::shared_ptr<const CArray> warmStart;
};

/// Whether reconstructIterative checks every sample of `d` for NaN and Inf on the backend as each slice's
/// k-space arrives there (Cartesian data: a count read back with the data's norms, instead of recon::run's pass
/// over the whole k-space on the host), with Dataset::validate's error.
bool samplesCheckedOnBackend(const Dataset& d, const ReconSettings& s);

/// Coils whose encoded k-space (encodedVoxels each) Cartesian SENSE's plan stage uploads, crops and samples
/// together: as many as fit 16 MiB, at least one (iterative.cpp; the memory planner counts the same group).
index_t cartesianPlanCoilGroup(index_t encodedVoxels, index_t coils);

/// Every slice of `d` (recon::run's --method cg / cs): on `backend`, or, for a multi-slice dataset on a GPU with
/// multiGpu on, spread over every visible GPU by reconstructIterativeOn.
/// cache (optional): operators of an earlier call to reuse, and this call's kept for the next.
ImageSet reconstructIterative(Backend& backend, const Dataset& d, const ReconSettings& s, Timings& timings,
                              const Progress& progress, OperatorCache* cache = nullptr);

/// The slices of `d` on `devices` (iterative_slices.cpp): one device works through them in the calling thread;
/// several take contiguous blocks of slices, a thread each, every slice solved on one device alone (so the images
/// are those of one device, bit for bit where the devices are alike). Progress and cancellation as one call; the
/// timings then hold one wall-clock stage for the devices' work and the convergence record each device's stages.
ImageSet reconstructIterativeOn(const std::vector<Backend*>& devices, const Dataset& d, const ReconSettings& s,
                                Timings& timings, const Progress& progress, OperatorCache* cache = nullptr);

/// Everything of one slice that does not depend on lambda: the plan, E^H d, the coil maps, Q (Toeplitz) and
/// W, all in the backend's memory; solve() then runs PCG for any lambda, warm-starting from the previous
/// solution (still on the device) when asked. The GUI's lambda slider and lcurve() reuse one problem.
class IterativeProblem {
 public:
  /// What depends only on the trajectory and the matrix (the F^H d plan, Q): shared by the slices of a
  /// multi-slice dataset. Opaque.
  struct TrajectoryOperators;

  /// Coil maps made elsewhere (the slices' ESPIRiT eigen-solves batched, iterative_slices.cpp): called with the
  /// slice, the problem's grid [N0, N1, N2] and its trajectory operators' calibration gridding (planned by the
  /// source where null, kept there for the next call of the trajectory), returns that slice's maps on the backend
  /// ([N0, N1, N2, coils]) and adds their record (calibration region, kernels kept) to `info`.
  using CoilMapsSource = std::function<std::unique_ptr<Buffer>(
      index_t slice, const index_t dims[3], std::shared_ptr<const CalibrationGridding>& gridding, nlohmann::json& info)>;

  /// shared: from another slice's trajectoryOperators() (null: build them). maps (optional): where the coil
  /// maps come from instead of coilMapsForSliceOnBackend (several coils only).
  IterativeProblem(Backend& backend, const Dataset& d, const ReconSettings& s, index_t slice, Timings& timings,
                   const Progress& progress = {}, std::shared_ptr<TrajectoryOperators> shared = nullptr,
                   const CoilMapsSource* maps = nullptr);
  ~IterativeProblem();
  IterativeProblem(const IterativeProblem&) = delete;
  IterativeProblem& operator=(const IterativeProblem&) = delete;

  /// PCG for `lambda`. warmFromLast: start from the last solution (kept on the device); otherwise from
  /// `initial` when given (an image of voxels() elements in the combined-image convention), else 0.
  solve::CgResult solve(double lambda, int iterations, double tolerance, bool warmFromLast,
                        const CArray* initial = nullptr, const Progress& progress = {},
                        const solve::CgObserver& observer = {});

  /// Compressed sensing (--method cs): FISTA on 1/2 ||E x - d||^2 + lambda max|E^H d| R(x) with R the
  /// settings' sparsity prior (TV or wavelet), lambda relative (recon/iterative.hpp: IterativeSettings).
  /// Warm start and `initial` as solve(). The step bound L (power iteration) is computed at the first call
  /// and kept.
  solve::FistaResult solveSparse(double lambda, int iterations, double tolerance, bool warmFromLast,
                                 const CArray* initial = nullptr, const Progress& progress = {},
                                 const solve::FistaObserver& observer = {});
  // --- the pieces a joint solve over several problems is made of (recon/dynamic.hpp: the frames of a series) -----
  /// E^H E of this problem (no prior), on its buffers; must not outlive the problem.
  std::unique_ptr<solve::LinearOperator> normalOperator();
  /// E^H d on the backend (voxels() elements).
  const Buffer& rhsBuffer() const;
  /// rho on the backend (voxels() elements); writing it makes it the problem's solution (combined(), warm starts).
  Buffer& solutionBuffer();
  /// rho <- a few Jacobi-preconditioned CG steps of the least-squares problem from zero: how a cold compressed-
  /// sensing solve starts (FISTA's constant step is small for the low-density part of a non-Cartesian spectrum,
  /// which CG reaches in a few iterations).
  void startLeastSquares();

  /// What the last solveSparse used: the step bound L and the absolute weight lambda max|E^H d|.
  double lipschitz() const;
  double sparsityWeight(double lambda);
  /// cs: the relative lambda at which FISTA's threshold is `factor` times the noise of one gradient step's image:
  /// factor sqrt(variance max diag(E^H E)) / max|E^H d| (variance: of one complex sample, recon/noise_level.hpp).
  double noiseLambda(double variance, double factor);
  index_t voxels() const;               ///< of the solve grid (Cartesian: readout FOV x encoded pe1 x pe2)
  index_t coils() const;
  Shape imageShape() const;             ///< the output [N0, N1, N2] (the matrix); = the grid unless Cartesian
  Shape gridShape() const;              ///< the solve grid [N0, N1, N2] (voxels() elements)
  CArray solution() const;              ///< rho on the solve grid
  /// rho * sqrt(sum_c |S_c|^2) (single coil: rho): matches the sum-of-squares truth of docs/conventions.md
  /// for estimated and for true maps alike, and keeps rho's phase.
  CArray combined() const;
  CArray coilImages() const;            ///< S_c rho [N0, N1, N2, coils] (output shape)
  double residualNorm();                ///< ||E rho - d|| (forward transforms)
  /// ||E rho - d|| of another rho (on the solve grid, as solution() gives it); it becomes the problem's solution.
  double residualNormOf(const CArray& rho);
  double priorNorm();                   ///< ||W rho||
  double dataNormSquared() const;       ///< ||d||^2
  /// What was used: regularizer, coil maps, Q method and cache status, delta, fhd.
  nlohmann::json describe() const;
  std::shared_ptr<TrajectoryOperators> trajectoryOperators() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct LCurvePoint {
  double lambda = 0;
  double residualNorm = 0;  ///< ||E rho - d||
  double priorNorm = 0;     ///< ||W rho||
  int iterations = 0;
};

/// The L-curve (Hansen 1992) over `lambdas` for slice 0, each solve warm-started from the previous one
/// (in the order given: pass them sorted). Iterations and tolerance from the settings.
std::vector<LCurvePoint> lcurve(Backend& backend, const Dataset& d, const ReconSettings& s,
                                const std::vector<double>& lambdas, const Progress& progress = {});

/// Stone's GPU.Multi: the adjoint sums of `g` (raw, ops/nufft.hpp) computed on several backends, each for
/// a slab of the slowest image axis (z in 3D, y in 2D). A slab of Ns planes starting at z0 is an image of
/// its own: its pixels sit at (n' - floor(Ns/2))/Ns, so with the trajectory's slab coordinate scaled by
/// Ns/N and the samples multiplied by exp(+2 pi i k_z (z0 - floor(N/2) + floor(Ns/2)) / N), the slab
/// plan's adjoint is exactly the full adjoint restricted to those planes (the phase of the slab's offset
/// moves into the data). Each backend gets a contiguous slab sized by its share; the work is O(M N / B)
/// each. samples: [M, batch] (host); returns [N0, N1, N2, batch] (host). `slabsPerBackend` > 1 splits
/// further (tests check the decomposition on one device).
/// The same, planned once: each slab's plan and phase factors built (per device, in parallel) at
/// construction, so that repeated adjoints (every reconstruction of a trajectory) pay only the transforms.
class SlabAdjoint {
 public:
  using PlanMaker = std::function<std::unique_ptr<NufftPlan>(Backend&, const NufftGeometry&)>;
  SlabAdjoint(const std::vector<Backend*>& backends, const NufftGeometry& g, const PlanMaker& makePlan,
              int slabsPerBackend = 1);
  ~SlabAdjoint();
  SlabAdjoint(const SlabAdjoint&) = delete;
  SlabAdjoint& operator=(const SlabAdjoint&) = delete;
  /// samples [M, batch] (host) -> [N0, N1, N2, batch] (host).
  CArray adjoint(const CArray& samples, index_t batch) const;
  /// The same into `out` ([N0, N1, N2, batch]) on `primary`, one of the backends: in 3D each slab's planes go
  /// there from its device without a stop on the host where the devices reach each other
  /// (ExecutionOps::copyFromPeer); 2D through the host.
  void adjoint(const CArray& samples, index_t batch, Backend& primary, Buffer& out) const;

 private:
  struct Slab;
  void forEachBackend(const std::function<void(std::size_t)>& work) const;
  void checkSamples(const CArray& samples, index_t batch) const;
  index_t imageVoxels() const;  ///< N0 N1 (N2 in 3D)
  index_t slabVoxels(const Slab& slab) const;
  /// One slab's image [n0, n1, ns] (or [n0, ns, n2]) x batch on its device: the samples uploaded, modulated
  /// by the slab's phases there, transformed by its plan.
  std::unique_ptr<Buffer> slabImage(const Slab& slab, const CArray& samples, index_t batch) const;
  std::vector<Backend*> backends_;
  NufftGeometry geometry_;
  index_t m_ = 0;
  int axis_ = 2;
  std::vector<std::unique_ptr<Slab>> slabs_;
};

CArray slabAdjoint(const std::vector<Backend*>& backends, const NufftGeometry& g, const CArray& samples,
                   index_t batch, const std::function<std::unique_ptr<NufftPlan>(Backend&, const NufftGeometry&)>& makePlan,
                   int slabsPerBackend = 1);

}  // namespace larmor::recon
