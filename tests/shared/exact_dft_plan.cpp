// Shared by the unit (cpu) and GPU (cuda) binaries: the exact non-uniform DFT plan (Stone et al.'s F d and
// F^H d) on one device, in its three trigonometry modes, against the float64 sum of support/exact_dft.hpp:
// errors printed (docs/nufft.md) and bounded, 2D and 3D, odd sizes, batches, phases of many cycles,
// adjointness, spreadInterpolate = forward(adjoint(.)). Each device states its own bounds below (the CPU's
// fast mode reduces 2 pi k.r in float, the GPU's reduces the phase in cycles exactly first, so their errors
// differ by design); the cases are the union of both devices' where their errors are comparable.
#include <gtest/gtest.h>

#include <cstdio>

#include "support/buffers.hpp"
#include "support/device.hpp"
#include "support/error_norms.hpp"
#include "support/exact_dft.hpp"
#include "support/nc_problem.hpp"
#include "support/random_data.hpp"

using namespace larmor;
using namespace larmor::test;

namespace {

class ExactDftPlan : public DeviceTest {
 protected:
  PlanRun run(const Problem& p, TrigMode m, const std::vector<cfloat>& img, const std::vector<cfloat>& data,
              index_t batch) {
    DftOptions o;
    o.trig = m;
    auto plan = be().makeDftPlan(p.geometry(), o);
    EXPECT_EQ(plan->samples(), p.m);
    EXPECT_EQ(plan->imageShape(), (Shape{p.n[0], p.n[1], p.n[2]}));
    return runPlan(be(), *plan, img, data, batch);
  }
};

constexpr TrigMode kModes[3] = {TrigMode::Accurate, TrigMode::Fast, TrigMode::Recurrence};

const char* modeName(TrigMode m) {
  return m == TrigMode::Accurate ? "accurate" : m == TrigMode::Fast ? "fast" : "recurrence";
}

struct Case {
  Problem p;
  index_t batch;
  const char* what;
  double bound[3];  ///< accurate, fast, recurrence
};

// CPU, measured (forward / adjoint): accurate 2.5e-8 at both sizes; fast 7.8e-7 (24^2), 3.8e-6 (128^2);
// recurrence 3.3e-7, 1.6e-6 (docs/nufft.md); bounds about 3x those. The fast mode's error grows with |k r|,
// the recurrence's with the row length.
// GPU, expected: accurate ~3e-7 (sincospif on a phase kept to ~3e-8 cycles), fast ~5e-7 (__sincosf within one
// turn), recurrence ~1e-6 (32 rotations in float); bounds 1e-5, 1e-5, 2e-5. Phases of many cycles (|k| to
// 4N) only on the GPU, whose fast mode reduces the phase exactly.
std::vector<Case> trigCases(bool gpu) {
  std::vector<Case> c;
  if (!gpu) {
    c.push_back({randomProblem(2, 24, 24, 1, 1500, 3), 2, "2D 24^2", {1e-7, 3e-6, 1e-6}});
    c.push_back({randomProblem(2, 128, 128, 1, 200, 3), 2, "2D 128^2", {1e-7, 1.2e-5, 5e-6}});
    return c;
  }
  c.push_back({randomProblem(2, 32, 32, 1, 2000, 1), 1, "2D 32^2", {1e-5, 1e-5, 2e-5}});
  c.push_back({randomProblem(2, 64, 48, 1, 1500, 2), 3, "2D 64x48 3 coils", {1e-5, 1e-5, 2e-5}});
  c.push_back({randomProblem(3, 16, 16, 16, 2000, 3), 1, "3D 16^3", {1e-5, 1e-5, 2e-5}});
  c.push_back({randomProblem(3, 15, 9, 5, 800, 4), 5, "3D 15x9x5 5 coils", {1e-5, 1e-5, 2e-5}});
  c.push_back({randomProblem(3, 24, 24, 24, 1000, 5, 8.0), 1, "3D 24^3, |k| to 4N", {1e-5, 1e-5, 2e-5}});
  return c;
}

}  // namespace

TEST_P(ExactDftPlan, EachTrigModeAgainstFloat64) {
  for (const Case& c : trigCases(onGpu())) {
    const auto img = randomComplex(c.p.voxels() * c.batch, 11), data = randomComplex(c.p.m * c.batch, 12);
    const ExactDft exact(c.p.geometry());
    const auto exF = exact.forward(img, c.batch), exA = exact.adjoint(data, c.batch);
    for (int i = 0; i < 3; ++i) {
      const PlanRun r = run(c.p, kModes[i], img, data, c.batch);
      const double ef = relL2Error(r.forward, exF), ea = relL2Error(r.adjoint, exA);
      std::printf("%s DFT %-20s %-10s error vs float64: forward %.2e adjoint %.2e\n", GetParam().c_str(), c.what,
                  modeName(kModes[i]), ef, ea);
      EXPECT_LE(ef, c.bound[i]) << c.what << " " << modeName(kModes[i]);
      EXPECT_LE(ea, c.bound[i]) << c.what << " " << modeName(kModes[i]);
    }
  }
}

// Odd sizes and 3D: CPU bounds 1e-6 (accurate) and 2e-5; the GPU's 1e-5, 1e-5, 2e-5 (as above).
TEST_P(ExactDftPlan, OddSizesAnd3D) {
  const double bound[3] = {onGpu() ? 1e-5 : 1e-6, onGpu() ? 1e-5 : 2e-5, 2e-5};
  for (int dims : {2, 3}) {
    const Problem p = dims == 2 ? randomProblem(2, 13, 20, 1, 400, 5) : randomProblem(3, 7, 10, 9, 300, 6);
    const auto img = randomComplex(p.voxels(), 3), data = randomComplex(p.m, 4);
    const ExactDft exact(p.geometry());
    const auto exF = exact.forward(img, 1), exA = exact.adjoint(data, 1);
    for (int i = 0; i < 3; ++i) {
      const PlanRun r = run(p, kModes[i], img, data, 1);
      EXPECT_LE(relL2Error(r.forward, exF), bound[i]) << modeName(kModes[i]) << " dims " << dims;
      EXPECT_LE(relL2Error(r.adjoint, exA), bound[i]) << modeName(kModes[i]) << " dims " << dims;
    }
  }
}

// The recurrence at every step angle theta = 2 pi k_x / N_x, in the trajectory's order one sample of each kind:
// near 0 and near pi (where the GPU rotates) and away from them (where it takes the three-term recurrence, its
// samples first: the forward results must still land on their samples), around the GPU's switch at
// |sin theta| = 0.1, an odd count (a single sample after the pairs), one coil and a batch of three. Bound 2e-5
// against float64 on both devices (the recurrence's bound above).
TEST_P(ExactDftPlan, RecurrenceAtEveryStepAngle) {
  const double angles[] = {1e-5, 0.5, -3e-3, 3.1415, 0.0999, -1.6, 0.1002, 2.9, -3.14159, 0.101, -0.0998, 1.0};
  Problem p = randomProblem(2, 64, 24, 1, 1201, 41);
  for (index_t j = 0; j < p.m; ++j) {
    const double theta = angles[static_cast<std::size_t>(j) % std::size(angles)] * (1.0 + 1e-3 * static_cast<double>(j % 7));
    p.k[3 * j] = static_cast<float>(theta / (2 * 3.141592653589793) * static_cast<double>(p.n[0]));
  }
  for (index_t batch : {index_t{1}, index_t{3}}) {
    const auto img = randomComplex(p.voxels() * batch, 21), data = randomComplex(p.m * batch, 22);
    const ExactDft exact(p.geometry());
    const PlanRun r = run(p, TrigMode::Recurrence, img, data, batch);
    const double ef = relL2Error(r.forward, exact.forward(img, batch)), ea = relL2Error(r.adjoint, exact.adjoint(data, batch));
    std::printf("%s DFT recurrence at every step angle, batch %lld: forward %.2e adjoint %.2e\n", GetParam().c_str(),
                static_cast<long long>(batch), ef, ea);
    EXPECT_LE(ef, 2e-5) << "batch " << batch;
    EXPECT_LE(ea, 2e-5) << "batch " << batch;
  }
}

// <F x, y> = <x, F^H y>: normalised by |F x| |y| (2e-5 on both devices), and on the CPU's own case also by
// |<F x, y>| (1e-6 accurate, 2e-5 the others; the CPU bound of that measure).
TEST_P(ExactDftPlan, Adjointness) {
  const Problem cases[] = {randomProblem(2, 20, 16, 1, 700, 8), randomProblem(2, 40, 24, 1, 1000, 31),
                           randomProblem(3, 12, 10, 9, 800, 32)};
  for (std::size_t c = 0; c < 3; ++c) {
    const Problem& p = cases[c];
    const auto x = randomComplex(p.voxels(), c == 0 ? 5 : 15), y = randomComplex(p.m, c == 0 ? 6 : 16);
    for (TrigMode m : kModes) {
      const PlanRun r = run(p, m, x, y, 1);
      EXPECT_LE(adjointMismatch(x, r.forward, y, r.adjoint), 2e-5) << p.dims << "D case " << c << " " << modeName(m);
      if (c == 0 && !onGpu())
        EXPECT_LE(adjointMismatchRelative(x, r.forward, y, r.adjoint), m == TrigMode::Accurate ? 1e-6 : 2e-5)
            << modeName(m);
    }
  }
}

TEST_P(ExactDftPlan, SpreadInterpolateIsForwardOfAdjoint) {
  const Problem p = randomProblem(2, 24, 20, 1, 500, 51);
  const auto w = randomComplex(p.m, 19);
  const ExactDft exact(p.geometry());
  const auto img = exact.adjoint(w, 1);
  const auto ref = exact.forward(std::vector<cfloat>(img.begin(), img.end()), 1);
  DftOptions o;
  o.trig = TrigMode::Accurate;
  auto plan = be().makeDftPlan(p.geometry(), o);
  auto in = toBuffer(be(), w);
  auto out = poisoned(be(), p.m);
  plan->spreadInterpolate(*in, *out);
  EXPECT_LE(relL2Error(fromBuffer(be(), *out, p.m), ref), 1e-5);
}

LARMOR_INSTANTIATE_ON_TEST_DEVICE(ExactDftPlan);
