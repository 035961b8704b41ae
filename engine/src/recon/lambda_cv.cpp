// Lambda by cross-validation on held-out samples (recon/lambda_cv.hpp): the split, the grid, the vertex.
#include "larmor/recon/lambda_cv.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "larmor/backend/backend.hpp"
#include "larmor/recon/calibration.hpp"
#include "larmor/recon/coil_maps.hpp"
#include "larmor/recon/iterative.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/traj/trajectory.hpp"
#include "larmor/util/error.hpp"

namespace larmor::recon {

namespace {
constexpr double kHeldOut = 0.1;          ///< the fraction of lines or profiles held out
constexpr std::uint32_t kSeed = 7;        ///< the draw's seed: the same split, the same lambda, every run
constexpr index_t kCentre = 12;           ///< Cartesian: lines within this of the centre are never held out
constexpr double kGrid[] = {1e-2, 3.16227766e-3, 1e-3, 3.16227766e-4, 1e-4, 3.16227766e-5, 1e-5};

using Split = CrossValidationSplit;

/// Cartesian: the sampled (pe1, pe2) lines outside the centre and the calibration lines, a tenth of them drawn;
/// where every line outside the centre is a calibration line (a fully sampled acquisition), those.
Split splitCartesian(const Dataset& d, index_t slice) {
  const Shape& ks = d.kspace.shape();
  const index_t n0 = ks[0], n1 = ks[1], n2 = ks[2], coils = ks[3], slices = ks[4];
  Split s{d, d};
  std::vector<std::uint8_t> held(static_cast<std::size_t>(n1 * n2), 0);
  for (bool skipAcs : {true, false}) {
    std::mt19937 draw(kSeed);
    std::uniform_real_distribution<double> u(0, 1);
    for (index_t z = 0; z < n2; ++z)
      for (index_t y = 0; y < n1; ++y) {
        if (!d.sampled(y, z, slice)) continue;
        const bool centre = std::abs(y - n1 / 2) < kCentre && (n2 == 1 || std::abs(z - n2 / 2) < kCentre);
        const bool acs = skipAcs && !d.calibration.empty() && d.calibration(y, z, slice);
        if (centre || acs) continue;
        ++s.of;
        if (u(draw) < kHeldOut) {
          held[static_cast<std::size_t>(y + n1 * z)] = 1;
          ++s.heldOut;
        }
      }
    if (s.of > 0) break;
  }
  for (index_t sl = 0; sl < slices; ++sl)
    for (index_t z = 0; z < n2; ++z)
      for (index_t y = 0; y < n1; ++y) {
        const bool out = held[static_cast<std::size_t>(y + n1 * z)] != 0;
        Dataset& drop = out ? s.train : s.test;  // the half that does not get this line
        if (!d.sampled(y, z, sl)) continue;
        drop.sampled(y, z, sl) = 0;
        if (!drop.calibration.empty()) drop.calibration(y, z, sl) = 0;
        for (index_t c = 0; c < coils; ++c)
          std::fill_n(drop.kspace.data() + n0 * (y + n1 * (z + n2 * (c + coils * sl))), n0, cfloat(0.f));
      }
  return s;
}

/// Spirals and other non-radial profiles: each cut into pieces of about an eighth of its length (the largest
/// divisor of the readout up to readout / 8), so that what is held out is spread over every interleave instead of
/// being whole interleaves (a held-out interleave is a wide structured gap that only the largest lambda bridges).
/// [readout, profiles] -> [piece, profiles readout / piece] is a reshape: the samples keep their order.
Dataset cutIntoPieces(const Dataset& d) {
  const Shape& ks = d.kspace.shape();
  const index_t readout = ks[0], profiles = ks[1];
  index_t piece = 1;
  for (index_t l = readout / 8; l >= 1; --l)
    if (readout % l == 0) {
      piece = l;
      break;
    }
  Dataset cut = d;
  const index_t m = profiles * (readout / piece);
  cut.kspace.reshape(Shape{piece, m, 1, ks[3], ks[4]});
  cut.trajectory.reshape(Shape{3, piece, m});
  return cut;
}

/// Non-Cartesian: a tenth of the profiles (spokes; pieces of other profiles: cutIntoPieces), at least one, drawn.
Split splitProfiles(const Dataset& whole) {
  const Dataset d = traj::detectRadial(whole.trajectory) ? whole : cutIntoPieces(whole);
  const Shape& ks = d.kspace.shape();
  const index_t readout = ks[0], profiles = ks[1], coils = ks[3], slices = ks[4];
  std::mt19937 draw(kSeed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<index_t> in, out;
  for (index_t p = 0; p < profiles; ++p) (u(draw) < kHeldOut ? out : in).push_back(p);
  if (out.empty() && profiles > 1) {
    out.push_back(in.back());
    in.pop_back();
  }
  auto take = [&](const std::vector<index_t>& keep) {
    Dataset part = d;
    const index_t m = static_cast<index_t>(keep.size());
    part.kspace = CArray(Shape{readout, m, 1, coils, slices});
    part.trajectory = RArray(Shape{3, readout, m});
    for (index_t i = 0; i < m; ++i) {
      const index_t p = keep[static_cast<std::size_t>(i)];
      std::copy_n(d.trajectory.data() + 3 * readout * p, 3 * readout, part.trajectory.data() + 3 * readout * i);
      for (index_t cs = 0; cs < coils * slices; ++cs)
        std::copy_n(d.kspace.data() + readout * (p + profiles * cs), readout,
                    part.kspace.data() + readout * (i + m * cs));
    }
    part.header.encoded[1] = m;
    return part;
  };
  Split s{take(in), take(out)};
  s.heldOut = static_cast<index_t>(out.size());
  s.of = profiles;
  return s;
}
}  // namespace

CrossValidationSplit crossValidationSplit(const Dataset& d, index_t slice) {
  const bool cartesian = d.header.trajectory == TrajectoryKind::Cartesian;
  require(cartesian || d.kspace.shape()[1] > 1, d.source + ": --lambda-rule cv needs more than one profile");
  Split split = cartesian ? splitCartesian(d, slice) : splitProfiles(d);
  require(split.heldOut >= 1 && split.heldOut < split.of,
          d.source + ": --lambda-rule cv: too few lines outside the calibration region to hold any out (" +
              std::to_string(split.of) + ")");
  split.lines = cartesian;
  return split;
}

double lambdaAtBestScore(const std::vector<double>& grid, const std::vector<double>& score) {
  const std::size_t n = score.size();
  const std::size_t best = static_cast<std::size_t>(std::min_element(score.begin(), score.end()) - score.begin());
  double logLambda = std::log10(grid[best]);
  if (best > 0 && best + 1 < n) {
    // The parabola through (log lambda, score) at best - 1, best, best + 1 (equal spacing h): its vertex.
    const double a = score[best - 1], b = score[best], c = score[best + 1];
    const double h = std::log10(grid[best + 1]) - std::log10(grid[best]);
    const double curvature = a - 2 * b + c;
    if (curvature > 0) logLambda += std::clamp(0.5 * h * (a - c) / curvature, -std::abs(h), std::abs(h));
  }
  return std::pow(10.0, logLambda);
}

LambdaChoice crossValidatedLambda(Backend& backend, const Dataset& d, const ReconSettings& s, index_t slice,
                                  Timings& timings, const Progress& progress) {
  const bool cartesian = d.header.trajectory == TrajectoryKind::Cartesian;
  Split split = crossValidationSplit(d, slice);

  // One set of coil maps, from the training half, for both halves: the held-out samples are predicted through
  // the maps the solution was made with.
  // Estimated once (the first half's call); the second half gets a device copy of them.
  std::shared_ptr<const CalibrationGridding> gridding;
  std::unique_ptr<Buffer> second;
  nlohmann::json secondInfo;
  const IterativeProblem::CoilMapsSource maps = [&](index_t sl, const index_t dims[3],
                                                    std::shared_ptr<const CalibrationGridding>&, nlohmann::json& info) {
    if (second) {
      info = secondInfo;
      return std::move(second);
    }
    auto made = coilMapsForSliceOnBackend(backend, split.train, sl, dims, s, &info, nullptr, {}, &gridding);
    second = backend.allocate(made->bytes());
    backend.copy(*second, *made, made->bytes());
    secondInfo = info;
    return made;
  };
  Timings quiet;  // the halves' set-up stages are not the call's
  IterativeProblem train(backend, split.train, s, slice, quiet, {}, nullptr, &maps);
  IterativeProblem test(backend, split.test, s, slice, quiet, {}, nullptr, &maps);
  const double norm = std::sqrt(test.dataNormSquared());
  require(norm > 0, d.source + ": --lambda-rule cv: the held-out samples are all zero");

  ScopedStage stage(timings, "lambda by cross-validation", &backend);
  std::vector<double> score;
  nlohmann::json curve = nlohmann::json::array();
  const double points = static_cast<double>(std::size(kGrid));
  for (double lambda : kGrid) {
    const double at = static_cast<double>(score.size());
    const Progress::Sub part(progress, at / points, (at + 1) / points, "λ by cross-validation: ");
    // From zero, as the call's own solve starts: a warm start stops at once by the tolerance at small lambdas.
    train.solveSparse(lambda, s.iterative.iterations, s.iterative.tolerance, false, nullptr, part);
    score.push_back(test.residualNormOf(train.solution()) / norm);
    curve.push_back({lambda, score.back()});
  }
  LambdaChoice choice;
  choice.lambda = lambdaAtBestScore(std::vector<double>(std::begin(kGrid), std::end(kGrid)), score);
  choice.record = {{"rule", "cv"},       {"held_out", split.heldOut}, {"of", split.of},
                   {"held_out_kind", cartesian ? "lines" : "profiles"}, {"scores", curve},
                   {"lambda_from_cv", choice.lambda}};
  return choice;
}

}  // namespace larmor::recon
