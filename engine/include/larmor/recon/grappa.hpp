#pragma once
// GRAPPA (Griswold et al., MRM 47:1202, 2002) with the autocalibration of Schneider's thesis "GPGPU for
// accelerated GRAPPA autocalibration in MRI" (2008): basic findWs (Nb blocks along phase encoding, one
// weight set per readout segment of Δs columns, Alg. 4.2) and improved findWsImproved (a K_PE x K_RO
// kernel, power clipping and normalization, Alg. 4.3), both solving W = B A^H (A A^H + λE)^{-1} with
// λ = χ trace(A A^H) / rows(A) (Listing 4.1); filling of the missing lines, inverse FFT, coil combination;
// optional SVD coil compression first. Written once against the Backend primitives (gather, gemmBatched,
// scatter, fft) and GrappaOps's batched Cholesky, so the CPU and the GPU run the same algorithm with the data on the
// device from the upload to the download. docs/grappa.md has the method, the choices and the accuracy.
// 3D data undersampled along pe1 and pe2 (R = Ry x Rz) use a kernel over both phase encodings (2D GRAPPA,
// Blaimer et al. 2006; Brau et al. 2008): see grappa.cpp.
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "larmor/backend/backend.hpp"
#include "larmor/data/dataset.hpp"
#include "larmor/util/progress.hpp"
#include "larmor/util/timer.hpp"

namespace larmor::recon {

struct ReconSettings;
struct ImageSet;

enum class GrappaCalibration { Basic, Improved };

/// Defaults: the thesis's Table 5.1 (Nb = 4, Δs = 128, χ = 0.0001, η = 1.0), which the thesis benchmarks
/// with findWs. The improved kernel's K_PE is Table 5.1's block size (4 lines) and K_RO = 5 is the kernel
/// width of the thesis's Figure 4.2; κ = 0 (no clipping) because Table 5.1 names no κ. The CLI's defaults
/// (`--grappa-calibration improved --grappa-kernel 4x5 --chi 1e-4 --eta 1 --kappa 0`) are the same.
struct GrappaSettings {
  GrappaCalibration calibration = GrappaCalibration::Improved;
  int kernelPe = 4;        ///< K_PE source lines of the improved kernel (Table 5.1's Nb)
  int kernelRo = 5;        ///< K_RO source columns of the improved kernel (Figure 4.2)
  /// K_PE2 source partitions along pe2 (Rz apart) when the data are accelerated along pe2 too (2D GRAPPA);
  /// the pe1 extent is K_PE (improved) or Nb (basic). 2: the nearest acquired partition on either side.
  int kernelPe2 = 2;
  int blocks = 4;          ///< Nb source blocks of the basic kernel (Table 5.1)
  int segment = 128;       ///< Δs readout columns per basic weight set (Table 5.1)
  double chi = 1e-4;       ///< χ: regularization λ = χ·trace(AA^H)/rows(A) (Table 5.1)
  double eta = 1.0;        ///< η: each group of equations is scaled by p^{-η/2}, p its power (Table 5.1)
  double kappa = 0.0;      ///< κ in [0, 1): fraction of the strongest equations dropped (improved only)
  int outCoils = 0;        ///< SVD coil compression to N virtual coils before GRAPPA (0 = off)
  /// Basic only: weights interpolated linearly between the segment centres along the readout instead of
  /// one set per segment (smoother in x; costs a weight set per column).
  bool interpolateSegments = false;
};

/// Reconstructs Cartesian data undersampled along pe1 with a calibration (ACS) block: 2D, multi-slice,
/// and 3D (pe2 fully sampled: each pe2 partition is its own 2D problem after an inverse FFT along pe2; pe2
/// undersampled too: one 3D problem per slice with a kernel over pe1 x pe2, calibrated on the fully
/// sampled centre box).
/// Output conventions as reconstructCartesian. Throws Error for data or settings GRAPPA cannot use.
ImageSet reconstructGrappa(Backend& backend, const Dataset& d, const ReconSettings& s, Timings& timings,
                           const Progress& progress);

namespace grappa {

/// The phase-encoding pattern GRAPPA works with, the same in every slice (and pe2 partition when pe2 is
/// not accelerated): a regular grid of acquired lines g0 + kR (2D acceleration: points (g0 + kRy,
/// h0 + lRz)), and one calibration block. Pe1 only: depth = 1, the pattern is per line. Pe1 x pe2: depth =
/// the pe2 points, the pattern is per (pe1, pe2) point and the block is the fully sampled centre box
/// (recon/calibration.hpp's findCalibrationBox).
struct Sampling {
  index_t lines = 0;
  index_t depth = 1;                   ///< pe2 points of one problem (1 unless pe2 is accelerated)
  int accel = 1;                       ///< R (Ry)
  int accelPe2 = 1;                    ///< Rz (1 unless pe2 is accelerated)
  index_t gridFirst = 0;               ///< g0 in [0, Ry)
  index_t gridFirstPe2 = 0;            ///< h0 in [0, Rz)
  std::vector<std::uint8_t> acquired;  ///< [lines x depth] (y + lines z): 1 where measured (grid or ACS)
  index_t acsFirst = 0, acsCount = 0;  ///< the calibration block along pe1
  index_t acsFirstPe2 = 0, acsCountPe2 = 1;  ///< ... and along pe2 (within the problem's depth)
  bool twoD() const { return depth > 1; }  ///< one 3D problem per slice (pe2 accelerated or irregular along pe2)
  bool isAcquired(index_t y, index_t z) const {
    return y >= 0 && y < lines && z >= 0 && z < depth && acquired[static_cast<std::size_t>(y + lines * z)] != 0;
  }
};

/// Reads the pattern from d.sampled / d.calibration (R from the header where it says R > 1, else from the
/// spacing of the non-calibration lines) and checks it: one clear Error when GRAPPA cannot use it. Data
/// accelerated along pe2 (header R_pe2 > 1, or a pattern that differs between pe2 partitions) get the 2D
/// analysis: Ry, Rz from the header or the spacings, the calibration box from findCalibrationBox.
Sampling analyseSampling(const Dataset& d);

/// Checks the settings against the data (kernel inside the ACS block, R < lines, κ in [0, 1), ...).
void validate(const GrappaSettings& s, const Sampling& sampling, index_t columns, index_t coils);

/// The data in the domain the calibration works in, on the host: [columns, lines, depth, coils, problems]
/// with problem = pe2 partition + partitions * slice (depth 1), or with pe2 accelerated problem = slice
/// and depth = the pe2 points; after coil compression (when s.outCoils > 0). Basic: hybrid space (x, ky),
/// inverse FFT along the readout (the segment's "sensitivities approximately constant", thesis sec.
/// 2.6.2, hold in x, not in kx); improved: k-space (kx, ky). 3D accelerated along pe1 only: pe2 in image
/// space; along pe2 too: kz stays k-space. For tests and benchmarks; the reconstruction does this on the
/// device.
CArray calibrationDomain(const Dataset& d, const GrappaSettings& s);

/// Weights of every calibration entry with the fast path on `backend` (float32 products, the solve as the
/// backend does it): W^T [rows(A), rows(B), entries], entry = segment + segments * problem (improved: one
/// segment). planes: calibrationDomain's output.
CArray calibrationWeights(Backend& backend, const CArray& planes, const Sampling& sampling, const GrappaSettings& s);

/// GRAPPA's filling alone, from given weights W^T in calibrationWeights' layout [rows(A), rows(B), entries] (entries
/// for all of d's problems: slices x pe2 partitions, or slices when pe2 is accelerated too): d's k-space with its
/// missing lines filled by eq. 2.5 as the pipeline fills them after its calibration (the same backend calls, in the
/// calibration domain and back), measured lines untouched; [readout, pe1, pe2, coils, slices] like d.kspace. No
/// calibration runs: weights edited, or calibrated on another scan of the same geometry, are used as given. The
/// weights act on d's own coils (settings with coil compression, outCoils > 0, are refused). Throws Error when the
/// weights' shape is not the kernel's for d.
CArray fillFromWeights(Backend& backend, const Dataset& d, const GrappaSettings& s, const CArray& weights);

/// How the pipeline batches a data set's slices, and the backend memory that batch takes: the one rule
/// of the pipeline (which allocates it) and of the memory planner (recon/resources.cpp, which estimates it).
struct BatchPlan {
  index_t slices = 1;      ///< slices per batch
  index_t capacity = 1;    ///< problems (slices x pe2 partitions) calibrated together
  bool compact = false;    ///< a 3D volume's partitions in sub-batches through a compact buffer
  index_t subBatches = 1;  ///< calibrations per batch
  double budgetBytes = 0;  ///< the budget the batch was sized for
  double bytes = 0;        ///< the pipeline's buffers at their peak for this batch (batchPlan's comment)
};

/// The batch for `d` and `s` on a backend described by `device`: slicesPerBatch > 0 fixes it; else as
/// many slices as fit memoryBudgetBytes (0: 40 % of a GPU's memory, 2 GiB on the CPU). Throws Error for
/// settings or sampling GRAPPA cannot use (as the pipeline does). `d` needs its sampling mask.
BatchPlan batchPlan(const Dataset& d, const ReconSettings& s, const DeviceInfo& device, std::size_t memoryBudgetBytes = 0,
                    index_t slicesPerBatch = 0);

/// The whole GRAPPA reconstruction of one data set's geometry, reusable for data of the same geometry (the
/// index tables stay on the device). Slices go through in batches: one upload, the calibration (one
/// batched GEMM and solve for all the batch's slices), the filling, the inverse FFT, the crop and the coil
/// combination on the device, one download.
class Pipeline {
 public:
  /// slicesPerBatch = 0 picks the batch from memoryBudgetBytes (0: 40 % of a GPU's memory, 2 GiB on the
  /// CPU). A 3D volume whose partitions do not fit the budget at once is calibrated and filled in
  /// sub-batches of partitions.
  Pipeline(Backend& backend, const Dataset& geometry, const ReconSettings& settings, index_t slicesPerBatch = 0,
           std::size_t memoryBudgetBytes = 0);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  index_t slicesPerBatch() const;
  /// Problems (slices x pe2 partitions) calibrated together; fewer than a batch's when sub-batched.
  index_t problemsPerCalibration() const;
  /// Everything, all slices of d (same geometry as the constructor's).
  ImageSet run(const Dataset& d, Timings& timings, const Progress& progress = {});

  // Pieces of run() for benchmarks: upload slices [first, first + count) (count <= slicesPerBatch), process
  // them (host: coil compression matrices, and equation scales unless η = 1 and κ = 0; device: everything
  // else up to the combined images; works in place on the uploaded k-space, so each process() needs its
  // upload()), and download them into `out` (shaped by run's conventions). process reports its steps to
  // `progress` (calibration and fill per sub-batch of problems; cancellable between them).
  void upload(const Dataset& d, index_t first, index_t count);
  void process(const Dataset& d, index_t first, index_t count, Timings* timings = nullptr,
               const Progress& progress = {});
  void download(ImageSet& out, index_t first, index_t count);
  /// An ImageSet of the output shape for all of d's slices.
  ImageSet allocateOutput() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grappa
}  // namespace larmor::recon
