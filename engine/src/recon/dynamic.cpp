// The joint reconstruction of a series' frames with a temporal prior (recon/dynamic.hpp has the maths): one
// IterativeProblem per frame (its samples, trajectory and Toeplitz kernel), the coil maps of all frames' samples
// shared by views, and one FISTA over the frames stacked in one buffer [Nx, Ny, T].
#include "larmor/recon/dynamic.hpp"

#include <algorithm>
#include <cstring>
#include <random>

#include "larmor/backend/backend.hpp"
#include "larmor/backend/low_rank_ops.hpp"
#include "larmor/backend/sparsity_ops.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/coil_maps.hpp"
#include "larmor/recon/iterative.hpp"
#include "larmor/recon/lambda_cv.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/solve/fista.hpp"
#include "larmor/util/error.hpp"

namespace larmor::recon {
namespace {

std::size_t bytesOf(index_t n) { return static_cast<std::size_t>(n) * sizeof(cfloat); }

/// blockdiag(A_1, ..., A_T) on a buffer of T blocks of n elements: each block through its own operator.
class BlockDiagonal final : public solve::LinearOperator {
 public:
  BlockDiagonal(Backend& backend, std::vector<std::unique_ptr<solve::LinearOperator>> blocks, index_t n)
      : backend_(backend), blocks_(std::move(blocks)), n_(n) {}
  index_t size() const override { return n_ * static_cast<index_t>(blocks_.size()); }
  void apply(const Buffer& x, Buffer& y) override {
    for (std::size_t t = 0; t < blocks_.size(); ++t) {
      // A view of the read-only input: nothing is written through it.
      auto xt = backend_.view(const_cast<Buffer&>(x), offset(t), bytesOf(n_));
      auto yt = backend_.view(y, offset(t), bytesOf(n_));
      blocks_[t]->apply(*xt, *yt);
    }
  }

 private:
  std::size_t offset(std::size_t t) const { return t * bytesOf(n_); }
  Backend& backend_;
  std::vector<std::unique_ptr<solve::LinearOperator>> blocks_;
  index_t n_;
};

void requireFramesAgree(const std::vector<Dataset>& frames) {
  require(!frames.empty(), "dynamic: no frames");
  const Header& a = frames.front().header;
  for (std::size_t t = 1; t < frames.size(); ++t) {
    const Header& b = frames[t].header;
    const bool same = a.trajectory == b.trajectory && a.coils == b.coils && a.slices == b.slices &&
                      std::equal(a.recon, a.recon + 3, b.recon) && std::equal(a.encoded, a.encoded + 3, b.encoded);
    require(same, frames[t].source + ": frame " + std::to_string(t) +
                      " differs from frame 0 in matrix, coils, slices or trajectory kind; a series' frames must agree");
  }
}

/// The frames' samples side by side along the profiles: [readout, sum of profiles, 1, coils, slices].
Dataset concatenateProfiles(const std::vector<Dataset>& frames) {
  Dataset m = frames.front();
  const Shape k0 = m.kspace.shape();
  const index_t readout = k0[0], coils = k0[3], slices = k0[4];
  index_t profiles = 0;
  for (const Dataset& f : frames) profiles += f.kspace.shape()[1];
  m.kspace = CArray(Shape{readout, profiles, 1, coils, slices});
  m.trajectory = RArray(Shape{3, readout, profiles});
  index_t at = 0;
  for (const Dataset& f : frames) {
    const index_t p = f.kspace.shape()[1];
    for (index_t sc = 0; sc < coils * slices; ++sc)
      std::copy_n(f.kspace.data() + sc * readout * p, readout * p, m.kspace.data() + (sc * profiles + at) * readout);
    std::copy_n(f.trajectory.data(), 3 * readout * p, m.trajectory.data() + 3 * readout * at);
    at += p;
  }
  return m;
}

/// The mean over the frames that sampled each Cartesian line; masks their union.
Dataset averageCartesian(const std::vector<Dataset>& frames) {
  Dataset m = frames.front();
  const Shape ks = m.kspace.shape();
  const index_t readout = ks[0], lines = ks[1] * ks[2], coils = ks[3], slices = ks[4];
  std::vector<int> count(static_cast<std::size_t>(lines * slices), 0);
  std::fill(m.kspace.data(), m.kspace.data() + m.kspace.size(), cfloat(0.f));
  for (const Dataset& f : frames)
    for (index_t sl = 0; sl < slices; ++sl)
      for (index_t l = 0; l < lines; ++l) {
        if (!f.sampled[l + lines * sl]) continue;
        ++count[static_cast<std::size_t>(l + lines * sl)];
        m.sampled[l + lines * sl] = 1;
        if (f.calibration[l + lines * sl]) m.calibration[l + lines * sl] = 1;
        for (index_t c = 0; c < coils; ++c) {
          const index_t base = ((sl * coils + c) * lines + l) * readout;
          for (index_t r = 0; r < readout; ++r) m.kspace[base + r] += f.kspace[base + r];
        }
      }
  for (index_t sl = 0; sl < slices; ++sl)
    for (index_t l = 0; l < lines; ++l) {
      const int n = count[static_cast<std::size_t>(l + lines * sl)];
      if (n < 2) continue;
      for (index_t c = 0; c < coils; ++c) {
        const index_t base = ((sl * coils + c) * lines + l) * readout;
        for (index_t r = 0; r < readout; ++r) m.kspace[base + r] /= static_cast<float>(n);
      }
    }
  return m;
}

SparsityOps::TvWeights tvWeights(const ReconSettings& s) {
  const DynamicSettings& d = s.dynamic;
  if (d.prior == TemporalPrior::TemporalTv) return {0.f, 0.f, 1.f};
  // sttv: space weighted 1, time lambda_t / lambda_s (lambda_s = 0: time alone).
  if (!(s.iterative.lambda > 0)) return {0.f, 0.f, 1.f};
  return {1.f, 1.f, static_cast<float>(d.temporalLambda / s.iterative.lambda)};
}

/// The relative weight mu / max|E^H d| of the prior: lambda_t (ttv, llr), lambda_s (sttv with lambda_s > 0).
double relativeWeight(const ReconSettings& s) {
  const DynamicSettings& d = s.dynamic;
  if (d.prior == TemporalPrior::SpatioTemporalTv && s.iterative.lambda > 0) return s.iterative.lambda;
  return d.temporalLambda;
}

/// One slice of every frame: the frames' problems, the joint FISTA, each frame's combined image.
class JointSlice {
 public:
  /// sharedMaps (optional): another JointSlice's maps (maps()) to see instead of estimating them from `merged`.
  JointSlice(Backend& backend, const std::vector<Dataset>& frames, const Dataset& merged, const ReconSettings& s,
             index_t slice, Timings& timings, const Progress& progress, const Buffer* sharedMaps = nullptr)
      : backend_(backend), s_(s) {
    IterativeProblem::CoilMapsSource maps = [&](index_t sl, const index_t dims[3],
                                                std::shared_ptr<const CalibrationGridding>&, nlohmann::json& info) {
      mapBytes_ = bytesOf(dims[0] * dims[1] * dims[2] * std::max<index_t>(1, merged.header.coils));
      if (sharedMaps) return backend.view(const_cast<Buffer&>(*sharedMaps), 0, mapBytes_);  // read only
      if (!maps_) {
        maps_ = coilMapsForSliceOnBackend(backend, merged, sl, dims, s, &info, nullptr,
                                          Progress::Sub(progress, 0.0, 0.1, "dynamic: coil maps: "), &gridding_);
      }
      return backend.view(*maps_, 0, mapBytes_);
    };
    for (std::size_t t = 0; t < frames.size(); ++t) {
      const double f0 = 0.1 + 0.3 * static_cast<double>(t) / static_cast<double>(frames.size());
      problems_.push_back(std::make_unique<IterativeProblem>(
          backend, frames[t], s, slice, timings, Progress::Sub(progress, f0, f0 + 0.3 / frames.size(), "dynamic: "),
          nullptr, &maps));
    }
    n_ = problems_.front()->voxels();
  }

  /// FISTA for `iterations` iterations with the settings' weights, from the last solution where `warm` and one
  /// exists, else from each frame's least-squares start.
  solve::FistaResult solve(int iterations, bool warm, Timings& timings, const Progress& progress) {
    const auto frames = static_cast<index_t>(problems_.size());
    std::vector<std::unique_ptr<solve::LinearOperator>> blocks;
    for (auto& p : problems_) blocks.push_back(p->normalOperator());
    BlockDiagonal A(backend_, std::move(blocks), n_);
    // E^H d of the series, its peak and the step bound do not depend on lambda: made at the first solve and kept
    // (cross-validation solves the same series for every lambda of its grid).
    const bool first = !b_;
    if (first) {
      b_ = backend_.allocate(bytesOf(n_ * frames));
      for (index_t t = 0; t < frames; ++t)
        backend_.copy(*b_, problems_[static_cast<std::size_t>(t)]->rhsBuffer(), bytesOf(n_), bytesOf(n_ * t));
    }
    if (!x_ || !warm) {
      x_ = backend_.allocate(bytesOf(n_ * frames));
      ScopedStage st(timings, "dynamic: start", &backend_);
      for (index_t t = 0; t < frames; ++t) {
        IterativeProblem& p = *problems_[static_cast<std::size_t>(t)];
        p.startLeastSquares();
        backend_.copy(*x_, p.solutionBuffer(), bytesOf(n_), bytesOf(n_ * t));
      }
    }
    if (first) {
      ScopedStage st(timings, "dynamic: step bound", &backend_);
      lipschitz_ = 1.1 * solve::largestEigenvalue(backend_, A, *b_, 30);
      if (!(lipschitz_ > 0)) lipschitz_ = 1;
      rhsMax_ = maxAbs(*b_, n_ * frames);
    }
    mu_ = relativeWeight(s_) * rhsMax_;
    solve::FistaOptions o;
    o.maxIterations = iterations;
    o.tolerance = s_.iterative.tolerance;
    o.warmStart = true;
    o.stage = "dynamic";
    const Prox prox = makeProx(frames);
    solve::FistaResult r;
    {
      ScopedStage st(timings, "dynamic: FISTA", &backend_);
      r = solve::fista(backend_, A, *b_, *x_, lipschitz_, mu_, prox, o, progress);
    }
    for (index_t t = 0; t < frames; ++t)
      backend_.copy(problems_[static_cast<std::size_t>(t)]->solutionBuffer(), *x_, bytesOf(n_), 0, bytesOf(n_ * t));
    return r;
  }

  CArray combined(std::size_t t) const { return problems_[t]->combined(); }
  IterativeProblem& problem(std::size_t t) { return *problems_[t]; }
  std::size_t frames() const { return problems_.size(); }
  const Buffer& maps() const {
    require(maps_ != nullptr, "dynamic: no coil maps (one coil)");
    return *maps_;
  }
  void setTemporalLambda(double lambda) { s_.dynamic.temporalLambda = lambda; }
  const ReconSettings& settings() const { return s_; }
  double lipschitz() const { return lipschitz_; }
  double weight() const { return mu_; }

 private:
  using Prox = std::function<void(Buffer&, double)>;

  Prox makeProx(index_t frames) {
    const Shape grid = problems_.front()->gridShape();
    series_ = Shape{grid[0], grid[1], frames};
    if (s_.dynamic.prior == TemporalPrior::LowRank) {
      lowRank_ = makeLowRankOps(backend_);
      return [this](Buffer& v, double threshold) {
        std::array<index_t, 2> shift{0, 0};
        const auto block = static_cast<index_t>(s_.dynamic.lowRankBlock);
        for (int a = 0; a < 2; ++a) shift[static_cast<std::size_t>(a)] = static_cast<index_t>(shifts_() % static_cast<std::uint32_t>(block));
        lowRank_->llrProx(v, series_, block, threshold, shift);
      };
    }
    dual_ = backend_.allocate(bytesOf(SparsityOps::tvDualElements(series_)));
    backend_.fill(*dual_, cfloat(0.f), SparsityOps::tvDualElements(series_));
    const SparsityOps::TvWeights w = tvWeights(s_);
    return [this, w](Buffer& v, double threshold) {
      backend_.sparsityOps().tvProx(v, series_, threshold, s_.iterative.tvIterations, *dual_, w);
    };
  }

  double maxAbs(const Buffer& b, index_t n) const {
    std::vector<cfloat> h(static_cast<std::size_t>(n));
    backend_.download(h.data(), b, bytesOf(n));
    double m = 0;
    for (const cfloat& v : h) m = std::max(m, static_cast<double>(std::abs(v)));
    return m;
  }

  Backend& backend_;
  ReconSettings s_;
  std::vector<std::unique_ptr<IterativeProblem>> problems_;
  std::unique_ptr<Buffer> maps_, dual_;
  std::size_t mapBytes_ = 0;
  std::shared_ptr<const CalibrationGridding> gridding_;
  std::unique_ptr<LowRankOps> lowRank_;
  std::mt19937 shifts_{20070101u};  // fixed seed: the same series for the same inputs
  Shape series_;  ///< the series as one image [N0, N1, T] (2D frames leave the solve grid's third axis free)
  index_t n_ = 0;
  std::unique_ptr<Buffer> b_;  ///< E^H d of the series [N0, N1, T]
  std::unique_ptr<Buffer> x_;  ///< the series' last solution [N0, N1, T]
  double lipschitz_ = 0, mu_ = 0, rhsMax_ = 0;
};

/// The temporal lambda by cross-validation (--lambda-rule cv on a series; recon/lambda_cv.hpp): every frame's
/// held-out tenth of its spokes predicted by the joint solution of the rest, on a half-decade grid, the vertex of the
/// parabola at the best score. The spatial weight (sttv) stays as set.
double crossValidatedTemporalLambda(Backend& backend, const std::vector<Dataset>& frames, const ReconSettings& s,
                                    index_t slice, Timings& timings, nlohmann::json& record) {
  static const std::vector<double> kGrid{1e-1, 3.16227766e-2, 1e-2, 3.16227766e-3, 1e-3, 3.16227766e-4, 1e-4};
  std::vector<Dataset> train, test;
  index_t heldOut = 0;
  for (const Dataset& f : frames) {
    CrossValidationSplit split = crossValidationSplit(f, slice);
    heldOut += split.heldOut;
    train.push_back(std::move(split.train));
    test.push_back(std::move(split.test));
  }
  Timings quiet;  // the halves' set-up is not the call's
  const Dataset merged = mergeFrames(train);
  JointSlice fit(backend, train, merged, s, slice, quiet, {});
  JointSlice held(backend, test, merged, s, slice, quiet, {}, frames.front().header.coils > 1 ? &fit.maps() : nullptr);
  double norm2 = 0;
  for (std::size_t t = 0; t < held.frames(); ++t) norm2 += held.problem(t).dataNormSquared();
  require(norm2 > 0, frames.front().source + ": --lambda-rule cv: the held-out samples are all zero");
  ScopedStage stage(timings, "dynamic: temporal lambda by cross-validation", &backend);
  std::vector<double> score;
  nlohmann::json curve = nlohmann::json::array();
  for (double lambda : kGrid) {
    fit.setTemporalLambda(lambda);
    fit.solve(s.iterative.iterations, false, quiet, {});
    double r2 = 0;
    for (std::size_t t = 0; t < held.frames(); ++t) {
      const double r = held.problem(t).residualNormOf(fit.problem(t).solution());
      r2 += r * r;
    }
    score.push_back(std::sqrt(r2 / norm2));
    curve.push_back({lambda, score.back()});
  }
  const double chosen = lambdaAtBestScore(kGrid, score);
  record = {{"rule", "cv"}, {"held_out", heldOut}, {"held_out_kind", "profiles"}, {"scores", curve},
            {"temporal_lambda_from_cv", chosen}};
  return chosen;
}

}  // namespace

void placeSlice(SeriesImages& series, std::size_t t, index_t slice, index_t slices, const CArray& c) {
  if (slice == 0) series.combined.emplace_back(Shape{c.shape()[0], c.shape()[1], c.shape()[2], 1, slices});
  std::copy_n(c.data(), c.size(), series.combined[t].data() + slice * c.size());
}

bool jointOverFrames(const std::vector<Dataset>& frames, const ReconSettings& s) {
  if (s.method != Method::Cs || frames.size() < 2 || s.dynamic.framesIndependent) return false;
  return !frames.front().header.is3D();
}

Dataset mergeFrames(const std::vector<Dataset>& frames) {
  requireFramesAgree(frames);
  Dataset m = frames.front().header.trajectory == TrajectoryKind::Cartesian ? averageCartesian(frames)
                                                                            : concatenateProfiles(frames);
  m.reference.reset();
  return m;
}

SeriesImages reconstructDynamic(Backend& backend, const std::vector<Dataset>& frames, const ReconSettings& s,
                                Timings& timings, const Progress& progress) {
  requireFramesAgree(frames);
  require(!frames.front().header.is3D(), frames.front().source + ": joint reconstruction over frames needs 2D frames "
                                         "(single- or multi-slice); use --frames-independent for 3D");
  if (s.dynamic.prior == TemporalPrior::LowRank)
    require(static_cast<index_t>(frames.size()) <= LowRankOps::kMaxFrames,
            frames.front().source + ": --temporal-prior llr takes at most " + std::to_string(LowRankOps::kMaxFrames) +
                " frames, the series has " + std::to_string(frames.size()) + "; use ttv or sttv");
  Dataset merged;
  {
    ScopedStage st(timings, "dynamic: merge frames");
    merged = mergeFrames(frames);
  }
  const index_t slices = frames.front().header.slices;
  SeriesImages out;
  out.convergence = nlohmann::json::array();
  for (index_t sl = 0; sl < slices; ++sl) {
    const double f0 = static_cast<double>(sl) / static_cast<double>(slices), f1 = (sl + 1.0) / static_cast<double>(slices);
    ReconSettings used = s;
    nlohmann::json choice;
    if (s.iterative.lambdaRule == LambdaRule::CrossValidation)
      used.dynamic.temporalLambda = crossValidatedTemporalLambda(backend, frames, s, sl, timings, choice);
    JointSlice joint(backend, frames, merged, used, sl, timings, Progress::Sub(progress, f0, f0 + 0.4 * (f1 - f0), ""));
    const solve::FistaResult r =
        joint.solve(used.iterative.iterations, false, timings, Progress::Sub(progress, f0 + 0.4 * (f1 - f0), f1, ""));
    nlohmann::json j = r.toJson();
    j["slice"] = sl;
    j["lipschitz"] = joint.lipschitz();
    j["weight"] = joint.weight();
    j["temporal_lambda"] = used.dynamic.temporalLambda;
    if (!choice.is_null()) j["lambda_choice"] = choice;
    out.convergence.push_back(std::move(j));
    for (std::size_t t = 0; t < frames.size(); ++t) placeSlice(out, t, sl, slices, joint.combined(t));
  }
  return out;
}

// The frames and their merge are read while the frames' problems are made (the coil maps too), not kept.
struct DynamicProblem::Impl {
  Impl(Backend& backend, const std::vector<Dataset>& frames, const ReconSettings& s, index_t slice, Timings& timings,
       const Progress& progress)
      : joint(backend, frames, mergeFrames(frames), s, slice, timings, progress) {}
  JointSlice joint;
};

DynamicProblem::DynamicProblem(Backend& backend, const std::vector<Dataset>& frames, const ReconSettings& s, index_t slice,
                               Timings& timings, const Progress& progress) {
  requireFramesAgree(frames);
  require(s.method == Method::Cs && frames.size() > 1 && !frames.front().header.is3D(),
          frames.front().source + ": a joint problem over frames needs --method cs and two or more 2D frames");
  require(slice >= 0 && slice < frames.front().header.slices,
          frames.front().source + ": slice " + std::to_string(slice) + " is not in the series");
  impl_ = std::make_unique<Impl>(backend, frames, s, slice, timings, progress);
}

DynamicProblem::~DynamicProblem() = default;

solve::FistaResult DynamicProblem::solve(double temporalLambda, int iterations, bool warm, Timings& timings,
                                         const Progress& progress) {
  require(temporalLambda >= 0 && iterations >= 1, "dynamic: a solve needs temporal lambda >= 0 and iterations >= 1");
  impl_->joint.setTemporalLambda(temporalLambda);
  return impl_->joint.solve(iterations, warm, timings, progress);
}

std::size_t DynamicProblem::frames() const { return impl_->joint.frames(); }
CArray DynamicProblem::combined(std::size_t t) const { return impl_->joint.combined(t); }
double DynamicProblem::lipschitz() const { return impl_->joint.lipschitz(); }
double DynamicProblem::weight() const { return impl_->joint.weight(); }

}  // namespace larmor::recon
