// Shared by the unit (cpu) and GPU (cuda) binaries: the joint reconstruction of a series' frames (recon/dynamic.hpp).
// On the dynamic phantom (phantom/dynamic.hpp, golden-angle frames of few spokes): every temporal prior gives less
// error than frame-by-frame CG-SENSE, the default prior 40 % less or better; a still object's frames approach the
// image of all their spokes; --frames-independent is run() on each frame, bit for bit; the frames' samples merge in
// order (the coil maps' source); frames that disagree are one error. CPU = GPU: tests/gpu/test_gpu_dynamic.cpp.
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>

#include "larmor/phantom/dynamic.hpp"
#include "larmor/recon/dynamic.hpp"
#include "larmor/recon/live_series.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/resources.hpp"
#include "larmor/recon/settings_table.hpp"
#include "support/device.hpp"
#include "support/expect_error.hpp"

using namespace larmor;

namespace {

class DynamicRecon : public larmor::test::DeviceTest {
 protected:
  /// 64^2, 4 coils, 8 golden-angle frames of 13 spokes, 1 % noise.
  static std::vector<Dataset> series(const phantom::DynamicModel& model = {}) {
    phantom::SimulateSettings s;
    s.matrix[0] = s.matrix[1] = 64;
    s.coils = 4;
    s.trajectory = TrajectoryKind::GoldenAngle;
    s.frames = 8;
    s.spokesPerFrame = 13;
    s.noiseSigma = 0.01f;
    s.seed = 3;
    return phantom::simulateSeries(s, model);
  }
  std::vector<recon::ReconResult> run(const std::vector<Dataset>& frames, const std::string& method,
                                      const std::vector<std::pair<std::string, std::string>>& set = {}) {
    namespace st = recon::settings;
    recon::ReconRequest r;
    r.backend = be_;
    st::set(r.settings, st::find("method"), method);
    recon::settings::applyMethodDefaults(r.settings);
    r.settings.iterative.iterations = 50;  // the claims hold at half the default; the suite stays quick
    for (const auto& [key, value] : set) st::set(r.settings, st::find(key), value);
    return recon::runFrames(frames, r);
  }
  static double meanError(const std::vector<recon::ReconResult>& rs) {
    double sum = 0;
    for (const auto& r : rs) sum += r.metrics["percent_error"].get<double>();
    return sum / static_cast<double>(rs.size());
  }
};

}  // namespace

TEST_P(DynamicRecon, EveryTemporalPriorBeatsFrameByFrameCgSense) {
  const std::vector<Dataset> frames = series();
  const double cg = meanError(run(frames, "cg"));
  const double joint = meanError(run(frames, "cs"));  // the default prior and lambda
  const double ttv = meanError(run(frames, "cs", {{"dynamic.temporal_prior", "ttv"}}));
  const double llr = meanError(run(frames, "cs", {{"dynamic.temporal_prior", "llr"}, {"dynamic.temporal_lambda", "0.03"}}));
  std::cout << "[ errors   ] cg " << cg << " %, joint default " << joint << " %, ttv " << ttv << " %, llr " << llr << " %\n";
  EXPECT_LT(joint, 0.6 * cg);
  EXPECT_LT(ttv, 0.8 * cg);
  EXPECT_LT(llr, 0.8 * cg);
}

// A still object under a strong temporal prior: the frames come out alike, and as good as CG-SENSE of all the
// frames' spokes together (what temporal TV tends to as lambda grows: one image that fits every frame's samples).
TEST_P(DynamicRecon, AStillObjectsFramesApproachTheImageOfAllSpokes) {
  phantom::DynamicModel still;
  still.beatAmplitude = 0, still.breathShiftPixels = 0, still.washInPeak = 0;
  const std::vector<Dataset> frames = series(still);
  const auto joint = run(frames, "cs", {{"dynamic.temporal_prior", "ttv"}, {"dynamic.temporal_lambda", "0.05"}});
  Dataset all = recon::mergeFrames(frames);
  all.reference = frames[0].reference;
  const auto together = run({all}, "cg");
  double spread = 0, energy = 0;
  for (std::size_t t = 1; t < joint.size(); ++t)
    for (index_t i = 0; i < joint[t].image.size(); ++i) {
      spread += std::norm(cdouble(joint[t].image[i]) - cdouble(joint[0].image[i]));
      energy += std::norm(cdouble(joint[0].image[i]));
    }
  EXPECT_LT(std::sqrt(spread / energy), 0.02);
  EXPECT_LT(meanError(joint), 1.1 * meanError(together));
}

TEST_P(DynamicRecon, FramesIndependentIsRunOnEachFrame) {
  const std::vector<Dataset> frames = series();
  const std::vector<Dataset> two(frames.begin(), frames.begin() + 2);
  const auto all = run(two, "cs", {{"dynamic.frames_independent", "true"}, {"iterative.iterations", "20"}});
  recon::ReconRequest r;
  r.backend = be_;
  r.settings.method = recon::Method::Cs;
  recon::settings::applyMethodDefaults(r.settings);
  r.settings.iterative.iterations = 20;
  for (std::size_t t = 0; t < two.size(); ++t) {
    r.dataset = &two[t];
    const recon::ReconResult one = recon::run(r);
    ASSERT_EQ(one.image.size(), all[t].image.size());
    EXPECT_TRUE(std::equal(one.image.data(), one.image.data() + one.image.size(), all[t].image.data())) << "frame " << t;
  }
  EXPECT_FALSE(all[0].provenance.contains("dynamic"));
}

TEST_P(DynamicRecon, WhoIsJoint) {
  const std::vector<Dataset> frames = series();
  recon::ReconSettings s;
  s.method = recon::Method::Cs;
  EXPECT_TRUE(recon::jointOverFrames(frames, s));
  EXPECT_FALSE(recon::jointOverFrames({frames.front()}, s));
  s.dynamic.framesIndependent = true;
  EXPECT_FALSE(recon::jointOverFrames(frames, s));
  s.dynamic.framesIndependent = false;
  s.method = recon::Method::Cg;
  EXPECT_FALSE(recon::jointOverFrames(frames, s));
}

TEST_P(DynamicRecon, MergedFramesHoldEverySpokeInOrder) {
  const std::vector<Dataset> frames = series();
  const Dataset m = recon::mergeFrames(frames);
  const index_t readout = frames[0].kspace.shape()[0], k = frames[0].kspace.shape()[1], coils = 4;
  ASSERT_EQ(m.kspace.shape(), (Shape{readout, k * 8, 1, coils, 1}));
  ASSERT_EQ(m.trajectory.shape(), (Shape{3, readout, k * 8}));
  for (index_t t = 0; t < 8; ++t)
    for (index_t c = 0; c < coils; ++c) {
      const cfloat* from = frames[static_cast<std::size_t>(t)].kspace.data() + c * readout * k;
      const cfloat* to = m.kspace.data() + (c * 8 * k + t * k) * readout;
      EXPECT_TRUE(std::equal(from, from + readout * k, to)) << "frame " << t << " coil " << c;
    }
  EXPECT_FALSE(m.reference.has_value());
}

TEST_P(DynamicRecon, FramesThatDisagreeAreOneError) {
  std::vector<Dataset> frames = series();
  frames[3].header.coils = 3;
  larmor::test::expectError([&] { recon::mergeFrames(frames); }, "frame 3 differs from frame 0");
}

LARMOR_INSTANTIATE_ON_TEST_DEVICE(DynamicRecon);

// The memory planner counts every frame: each frame adds the same (its problem), and a series that cannot fit is
// refused up front with one line, before any work: 256^2 x 32 coils x 100 frames of 21 golden-angle spokes, the host
// capped by LARMOR_MEMORY_LIMIT.
TEST_P(DynamicRecon, ASeriesThatCannotFitIsRefusedUpFront) {
  phantom::SimulateSettings one;
  one.matrix[0] = one.matrix[1] = 256;
  one.coils = 32;
  one.trajectory = TrajectoryKind::GoldenAngle;
  one.spokes = 21;
  const Dataset frame = phantom::simulate(one);
  recon::ReconSettings s;
  s.method = recon::Method::Cs;
  const DeviceInfo dev = be().info();
  const auto bytes = [&](std::size_t n) {
    return recon::estimateDynamicMemory(std::vector<Dataset>(n, frame), s, dev).hostBytes() +
           recon::estimateDynamicMemory(std::vector<Dataset>(n, frame), s, dev).deviceBytes();
  };
  EXPECT_NEAR(bytes(10) - bytes(2), 4 * (bytes(4) - bytes(2)), 1e-6 * bytes(10));
  const std::vector<Dataset> frames(100, frame);
  const recon::MemoryEstimate e = recon::estimateDynamicMemory(frames, s, dev);
  EXPECT_NE(e.rule.find("100 frames jointly"), std::string::npos) << e.rule;
  ::setenv("LARMOR_MEMORY_LIMIT", "100000000", 1);
  const std::string why = larmor::test::expectError([&] { run(frames, "cs"); }, "cs over 100 frames jointly");
  ::unsetenv("LARMOR_MEMORY_LIMIT");
  EXPECT_NE(why.find("LARMOR_MEMORY_LIMIT"), std::string::npos) << why;
}

TEST_P(DynamicRecon, LowRankTakesAtMost64Frames) {
  std::vector<Dataset> frames = series();
  while (frames.size() <= 64) frames.push_back(frames[frames.size() % 8]);
  larmor::test::expectError([&] { run(frames, "cs", {{"dynamic.temporal_prior", "llr"}}); }, "at most 64 frames");
}

// --lambda-rule cv on a series chooses the temporal lambda from held-out spokes: a lambda of its grid's range, recorded
// with the scores, and an image far better than frame-by-frame CG-SENSE. (Near the best of a sweep: on the GPU, at
// the size, tests/gpu/test_gpu_dynamic.cpp; here at 64^2 the choice is 5.9 % above the sweep's best.)
TEST_P(DynamicRecon, TemporalLambdaByCrossValidationIsRecorded) {
  const std::vector<Dataset> frames = series();
  const auto cv = run(frames, "cs", {{"iterative.lambda_rule", "cv"}});
  const nlohmann::json& c = cv[0].convergence[0];
  EXPECT_EQ(c["lambda_choice"]["rule"], "cv");
  EXPECT_EQ(c["lambda_choice"]["scores"].size(), 7u);
  const double lambda = c["temporal_lambda"].get<double>();
  EXPECT_GE(lambda, 1e-4);
  EXPECT_LE(lambda, 1e-1);
  EXPECT_LT(meanError(cv), 0.6 * meanError(run(frames, "cg")));
}

namespace {

/// a's and b's frames as the two slices of one multi-slice 2D series (the same trajectory, other samples).
std::vector<Dataset> stackSlices(const std::vector<Dataset>& a, const std::vector<Dataset>& b) {
  const auto stack = [](const auto& x, const auto& y, Shape s) {
    std::remove_cvref_t<decltype(x)> out(s);
    std::copy_n(x.data(), x.size(), out.data());
    std::copy_n(y.data(), y.size(), out.data() + x.size());
    return out;
  };
  std::vector<Dataset> out;
  for (std::size_t t = 0; t < a.size(); ++t) {
    Dataset d = a[t];
    const auto two = [](Shape s) {
      s = Shape{s[0], s.rank() > 1 ? s[1] : 1, s.rank() > 2 ? s[2] : 1, s.rank() > 3 ? s[3] : 1, 2};
      return s;
    };
    d.kspace = stack(a[t].kspace, b[t].kspace, two(a[t].kspace.shape()));
    d.reference = stack(*a[t].reference, *b[t].reference, two(a[t].reference->shape()));
    if (a[t].coilMaps) d.coilMaps = stack(*a[t].coilMaps, *b[t].coilMaps, two(a[t].coilMaps->shape()));
    if (a[t].sampled.size() > 0) {
      const Shape m = a[t].sampled.shape();
      d.sampled = stack(a[t].sampled, b[t].sampled, Shape{m[0], m[1], 2});
      d.calibration = stack(a[t].calibration, b[t].calibration, Shape{m[0], m[1], 2});
    }
    d.header.slices = 2;
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

// Multi-slice 2D+t: each slice of the series is its own joint problem (its own coil maps, E^H d and step bound), so
// a two-slice series gives, slice by slice, the images of each slice's series alone.
TEST_P(DynamicRecon, MultiSliceSeriesIsEachSlicesSeries) {
  phantom::DynamicModel still;
  still.beatAmplitude = 0, still.breathShiftPixels = 0;
  const std::vector<Dataset> a = series(), b = series(still);
  const std::vector<Dataset> both = stackSlices(a, b);
  const std::vector<std::pair<std::string, std::string>> set{{"iterative.iterations", "20"}};
  const auto joint = run(both, "cs", set), alone0 = run(a, "cs", set), alone1 = run(b, "cs", set);
  ASSERT_EQ(joint.size(), a.size());
  for (std::size_t t = 0; t < a.size(); ++t) {
    const index_t n = alone0[t].image.size();
    ASSERT_EQ(joint[t].image.size(), 2 * n) << "frame " << t;
    const cfloat* j = joint[t].image.data();
    EXPECT_TRUE(std::equal(j, j + n, alone0[t].image.data())) << "frame " << t << ", slice 0";
    EXPECT_TRUE(std::equal(j + n, j + 2 * n, alone1[t].image.data())) << "frame " << t << ", slice 1";
  }
  EXPECT_EQ(joint[0].convergence.size(), 2u);  // one FISTA record per slice
}

// The kept problem (the workstation's live temporal lambda): a solve at a new lambda warm-started from the last series
// reaches the cold solve's error at that lambda in half its iterations. (A cold solve is reconstructDynamic's, bit for
// bit: LiveSeriesFollowsTheTemporalLambda.)
TEST_P(DynamicRecon, KeptProblemSolvesAgainWarm) {
  const std::vector<Dataset> frames = series();
  recon::ReconSettings s;
  s.method = recon::Method::Cs;
  recon::settings::applyMethodDefaults(s);
  s.iterative.iterations = 40;
  Timings timings;
  recon::DynamicProblem kept(be(), frames, s, 0, timings);
  const auto errorOf = [&](const recon::DynamicProblem& p) {
    double e = 0, r = 0;
    for (std::size_t t = 0; t < p.frames(); ++t) {
      const CArray c = p.combined(t);
      const CArray& truth = *frames[t].reference;
      for (index_t i = 0; i < c.size(); ++i) {
        e += std::norm(std::abs(cdouble(c[i])) - std::abs(cdouble(truth[i])));
        r += std::norm(cdouble(truth[i]));
      }
    }
    return std::sqrt(e / r);
  };
  kept.solve(s.dynamic.temporalLambda, 40, false, timings);
  const double lambda = 4 * s.dynamic.temporalLambda;
  kept.solve(lambda, 20, true, timings);  // warm, from the series of the first lambda
  const double warm = errorOf(kept);
  recon::DynamicProblem cold(be(), frames, s, 0, timings);
  cold.solve(lambda, 40, false, timings);
  const double coldError = errorOf(cold);
  std::cout << "[ errors   ] new lambda: warm 20 iterations " << warm << ", cold 40 iterations " << coldError << "\n";
  EXPECT_LT(warm, 1.02 * coldError);
  larmor::test::expectError([&] { recon::DynamicProblem(be(), {frames[0]}, s, 0, timings); }, "two or more 2D frames");
}

// The workstation's live temporal lambda (recon/live_series.hpp): a first solve in one run is runFrames' bit for bit;
// a new lambda is solved from the last series in published chunks of 2, 4, 8, ... iterations and ends as good as a
// whole cold run at that lambda.
TEST_P(DynamicRecon, LiveSeriesFollowsTheTemporalLambda) {
  const std::vector<Dataset> frames = series();
  recon::ReconRequest r;
  r.backend = be_;
  r.settings.method = recon::Method::Cs;
  recon::settings::applyMethodDefaults(r.settings);
  r.settings.iterative.iterations = 40;
  recon::LiveSeries live(frames, r);
  const auto first = live.solve(r.settings.dynamic.temporalLambda);
  const auto whole = recon::runFrames(frames, r);
  ASSERT_EQ(first.size(), whole.size());
  for (std::size_t t = 0; t < whole.size(); ++t) {
    ASSERT_EQ(first[t].image.size(), whole[t].image.size());
    EXPECT_TRUE(std::equal(first[t].image.data(), first[t].image.data() + first[t].image.size(), whole[t].image.data()))
        << "frame " << t;
  }
  std::vector<int> published;
  const double lambda = 4 * r.settings.dynamic.temporalLambda;
  const auto moved = live.solve(lambda, [&](const std::vector<CArray>& images, int done, int total) {
    EXPECT_EQ(images.size(), frames.size());
    EXPECT_EQ(total, 40);
    published.push_back(done);
  });
  EXPECT_EQ(published, (std::vector<int>{2, 6, 14, 30}));
  r.settings.dynamic.temporalLambda = lambda;
  const auto cold = recon::runFrames(frames, r);
  std::cout << "[ errors   ] new lambda: live " << meanError(moved) << " %, cold " << meanError(cold) << " %\n";
  EXPECT_LT(meanError(moved), 1.02 * meanError(cold));
  EXPECT_EQ(moved[0].convergence[0]["temporal_lambda"].get<double>(), lambda);
  larmor::test::expectError([&] { recon::LiveSeries({frames[0]}, r); }, "needs a joint reconstruction");
}

// Cartesian dynamics (an R 4 lattice shifted from frame to frame, phantom/dynamic.hpp): the frames jointly under cs
// (SENSE frames sharing the time-averaged maps) beat each frame alone, by GRAPPA and by CG-SENSE.
TEST_P(DynamicRecon, CartesianFramesJointlyBeatEachFrameAlone) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 64;
  s.coils = 4;
  s.trajectory = TrajectoryKind::Cartesian;
  s.accel = 4;
  s.acs = 16;
  s.frames = 8;
  s.noiseSigma = 0.01f;
  s.seed = 5;
  const std::vector<Dataset> frames = phantom::simulateSeries(s);
  const double joint = meanError(run(frames, "cs"));
  const double grappa = meanError(run(frames, "grappa"));
  const double cg = meanError(run(frames, "cg"));
  std::cout << "[ errors   ] Cartesian R 4: joint " << joint << " %, grappa " << grappa << " %, cg " << cg << " %\n";
  EXPECT_LT(joint, 0.8 * std::min(grappa, cg));
}
