#pragma once
// The regularization weight of --method cs chosen by cross-validation on the data's own samples
// (LambdaRule::CrossValidation; docs/iterative.md "Choosing lambda").
//
// A tenth of the acquired lines (Cartesian: phase-encode lines outside the calibration region) or profiles
// (radial spokes; other trajectories' interleaves cut into eighths) is held out, drawn with a fixed seed. For each lambda of a half-decade
// grid 1e-5 ... 1e-2 the problem of the remaining samples is solved (FISTA from zero with the call's iterations
// and tolerance, as the call's own solve runs) and the solution predicts the held-out samples
// through the same coil maps; the prediction error ||E_out x_lambda - d_out|| / ||d_out|| is the lambda's score.
// The chosen lambda is the vertex of the parabola (in log lambda) through the best score and its neighbours,
// kept between them (the grid's end where the best is at an end). It sees what the data lack as well as their
// noise: undersampling artefacts and noise both make held-out samples mispredicted (Ward 2009, "Compressed
// sensing with cross validation", IEEE TIT 55:5773). Cost: seven solves of 90 % of the data before the solve.
#include <vector>

#include <nlohmann/json.hpp>

#include "larmor/data/dataset.hpp"
#include "larmor/util/progress.hpp"
#include "larmor/util/timer.hpp"

namespace larmor {
class Backend;
}

namespace larmor::recon {

struct ReconSettings;

struct LambdaChoice {
  double lambda = 0;
  nlohmann::json record;  ///< rule, held-out count, the grid's scores
};

/// The two parts of the data cross-validation uses: `train` without the held-out lines or profiles, `test` with
/// only them (the same draw every call).
struct CrossValidationSplit {
  Dataset train, test;
  index_t heldOut = 0, of = 0;
  bool lines = false;  ///< Cartesian lines (else profiles)
};
/// The split of slice `slice` of `d`; throws Error when nothing can be held out.
CrossValidationSplit crossValidationSplit(const Dataset& d, index_t slice);

/// The vertex (in log lambda) of the parabola through the best score and its neighbours on `grid` (half decades,
/// either order), kept between them; the best grid point where it is at an end or the curve is not convex.
double lambdaAtBestScore(const std::vector<double>& grid, const std::vector<double>& score);

/// The cross-validated relative lambda of slice `slice` of `d` under settings `s` (method cs). Throws Error when
/// the data have too few lines or profiles outside the calibration region to hold any out.
/// `progress`: the fraction of the grid's solves done; its Cancel stops them.
LambdaChoice crossValidatedLambda(Backend& backend, const Dataset& d, const ReconSettings& s, index_t slice,
                                  Timings& timings, const Progress& progress = {});

}  // namespace larmor::recon
