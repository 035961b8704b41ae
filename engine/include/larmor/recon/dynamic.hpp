#pragma once
// Dynamic imaging: the frames of a time series reconstructed jointly, with a prior along time.
//
// The frames t = 1..T of a series (ISMRMRD repetitions/phases, twix repetitions, BART's TIME dimension, or a
// continuous golden-angle acquisition cut into frames: data/frames.hpp) share the coil sensitivities S and the
// image grid; each has its own samples d_t and its own trajectory, so its own encoding E_t = F_t S. The series
// x = (x_1, ..., x_T) is the minimiser of
//   1/2 sum_t ||E_t x_t - d_t||^2 + mu R(x),     mu = lambda_t max|E^H d| (relative, as --method cs's lambda),
// by FISTA (solve/fista.hpp) on the block-diagonal normal operator blockdiag(E_t^H E_t) (each block the
// frame's Toeplitz embedding, recon/iterative.hpp) with step 1/L, L >= max_t ||E_t^H E_t||. The priors:
//   ttv   temporal total variation, R(x) = sum_v sum_t |x_{t+1}(v) - x_t(v)|: TV along time alone (Adluru et al.,
//         MRM 57:1027, 2007; Feng et al., GRASP, MRM 72:707, 2014; BART's pics -R T:1024:0:lambda);
//   sttv  spatio-temporal TV: sqrt(|D_x x|^2 + |D_y x|^2 + a^2 |D_t x|^2) summed over voxels and frames, one
//         isotropic term whose time axis is weighted a = lambda_t / lambda_s against space (mu = lambda_s max|E^H d|);
//   llr   locally low-rank: the nuclear norm of the Casorati matrices (block^2 voxels x T frames) of the blocks of
//         a grid shifted at random each iteration (Trzasko & Manduca, ISMRM 2011; Zhang et al., MRM 73:655, 2015;
//         BART's pics -R L), backend/low_rank_ops.hpp.
// The TV priors are the weighted TV of backend/sparsity_ops.hpp on the series laid out [Nx, Ny, T] (time on the
// third axis, which 2D frames leave free), so both backends run them with the kernels spatial TV uses.
//
// The coil maps are estimated once, from all frames together (the time average: every frame's samples in one
// dataset), and every frame's problem sees them through a view (Backend::view): one copy whatever T is.
// A cold start begins at a few CG steps of each frame's least-squares problem (IterativeProblem::startLeastSquares).
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "larmor/data/dataset.hpp"
#include "larmor/solve/fista.hpp"
#include "larmor/util/progress.hpp"
#include "larmor/util/timer.hpp"

namespace larmor {
class Backend;
}

namespace larmor::recon {

struct ReconSettings;

enum class TemporalPrior { TemporalTv, SpatioTemporalTv, LowRank };

/// Settings of the joint reconstruction (the settings table's dynamic.* entries).
struct DynamicSettings {
  /// Frames reconstructed one by one, as any single image (no temporal prior).
  bool framesIndependent = false;
  /// sttv by default: on the tuning series of docs/dynamic.md, 9.1 % error against ttv's 12.9 % at its best lambda_t.
  TemporalPrior prior = TemporalPrior::SpatioTemporalTv;
  /// lambda_t, relative to max|E^H d| of the whole series (chosen on that tuning series, not on the data the
  /// claims of docs/dynamic.md are measured on).
  double temporalLambda = 4e-3;
  /// llr: the blocks' side in voxels.
  int lowRankBlock = 8;
};

/// Whether recon::runFrames reconstructs `frames` jointly with `s`: --method cs, more than one frame, 2D frames
/// and not --frames-independent.
bool jointOverFrames(const std::vector<Dataset>& frames, const ReconSettings& s);

/// The frames' joint images: combined[t] is frame t's [x, y, 1, 1, slices] (as recon::run's ReconResult::image),
/// convergence the solver's record (per slice).
struct SeriesImages {
  std::vector<CArray> combined;
  nlohmann::json convergence;
};

/// Frame t's image of slice `slice` (c, [x, y, 1]) into series.combined[t] ([x, y, 1, 1, slices]); slice 0 makes the
/// frames' arrays (frame t must then be the next one).
void placeSlice(SeriesImages& series, std::size_t t, index_t slice, index_t slices, const CArray& c);

/// The joint reconstruction of `frames` (validated: the same matrix, coils, slices and trajectory kind) on
/// `backend`. Throws one-line Errors; Cancelled when progress asks.
SeriesImages reconstructDynamic(Backend& backend, const std::vector<Dataset>& frames, const ReconSettings& s,
                                Timings& timings, const Progress& progress = {});

/// One slice of a series' joint problem, kept between solves (the workstation's live temporal lambda): the frames'
/// problems, the coil maps of the time average, E^H d of the series, its peak and the step bound L are built once;
/// each solve() then runs FISTA alone, from the last solution where asked, so that a new temporal lambda costs its
/// iterations only. The settings' other weights (spatial lambda, prior, iterations' TV inner steps) are the
/// constructor's.
class DynamicProblem {
 public:
  /// `frames` as reconstructDynamic's (--method cs, two or more 2D frames); slice: which slice of the series.
  DynamicProblem(Backend& backend, const std::vector<Dataset>& frames, const ReconSettings& s, index_t slice,
                 Timings& timings, const Progress& progress = {});
  ~DynamicProblem();
  DynamicProblem(const DynamicProblem&) = delete;
  DynamicProblem& operator=(const DynamicProblem&) = delete;

  /// `iterations` of FISTA with this temporal lambda; warm: from the last solve's series (the first solve, or
  /// warm = false, starts from each frame's least-squares start).
  solve::FistaResult solve(double temporalLambda, int iterations, bool warm, Timings& timings,
                           const Progress& progress = {});
  std::size_t frames() const;
  /// Frame t's combined image [x, y, 1] (as IterativeProblem::combined).
  CArray combined(std::size_t t) const;
  double lipschitz() const;  ///< the step bound L
  double weight() const;     ///< the last solve's absolute weight mu

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Every frame's samples in one dataset (the time average that the coil maps are estimated from): non-Cartesian
/// profiles concatenated in frame order; Cartesian k-space averaged over the frames that sampled each line, the
/// sampled and calibration masks their union. The frames must agree in everything but their samples.
Dataset mergeFrames(const std::vector<Dataset>& frames);

}  // namespace larmor::recon
