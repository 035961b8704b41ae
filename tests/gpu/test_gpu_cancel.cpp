// Cancel inside the CUDA exact DFT (cuda/dft.cu): where the caller can cancel (a CancelScope) a call of more than
// ~6e10 voxel-sample-coil products runs in chunks of its streamed operand, the host polling between them. Checked:
// the chunked result is bit for bit the one launch's, in each trig mode, adjoint and forward (and a 128^2 image, never
// chunked, is the same in a scope); a transform of seconds stops within 0.5 s of Cancel. The times of both are
// printed, not asserted: a timing on a GPU that ctest shares with other tests is not a test (the measured costs of
// chunking are in docs/benchmarks.md, from a run of this binary alone).
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "larmor/util/cancel_scope.hpp"
#include "support/cancel_latency.hpp"
#include "support/device.hpp"
#include "support/nc_problem.hpp"
#include "support/random_data.hpp"

using namespace larmor;
using namespace larmor::test;

namespace {

class CancelGpu : public GpuTest {
 protected:
  /// A plan and its buffers on the GPU: `coils` coils of random samples and images.
  struct Run {
    std::unique_ptr<NufftPlan> plan;
    std::unique_ptr<Buffer> samples, image;
    index_t coils = 1;
  };
  Run make(const Problem& p, TrigMode mode, index_t coils) {
    DftOptions o;
    o.trig = mode;
    Run r;
    r.plan = gpu_->makeDftPlan(p.geometry(), o);
    r.coils = coils;
    const auto d = randomComplex(p.m * coils, 11), img = randomComplex(p.voxels() * coils, 12);
    r.samples = gpu_->allocate(d.size() * sizeof(cfloat));
    r.image = gpu_->allocate(img.size() * sizeof(cfloat));
    gpu_->upload(*r.samples, d.data(), d.size() * sizeof(cfloat));
    gpu_->upload(*r.image, img.data(), img.size() * sizeof(cfloat));
    return r;
  }
  /// The adjoint's image and the forward's samples (both transforms of the same inputs), in a CancelScope or not.
  std::vector<cfloat> transforms(Run& r, const Problem& p, bool scoped) {
    CancelToken token;
    const Progress progress({}, &token);
    std::vector<cfloat> out(static_cast<std::size_t>((p.voxels() + p.m) * r.coils));
    auto img = gpu_->allocate(static_cast<std::size_t>(p.voxels() * r.coils) * sizeof(cfloat));
    auto smp = gpu_->allocate(static_cast<std::size_t>(p.m * r.coils) * sizeof(cfloat));
    {
      const CancelScope cancel(scoped ? &progress : nullptr);
      r.plan->adjoint(*r.samples, *img, r.coils);
      r.plan->forward(*r.image, *smp, r.coils);
    }
    gpu_->download(out.data(), *img, static_cast<std::size_t>(p.voxels() * r.coils) * sizeof(cfloat));
    gpu_->download(out.data() + p.voxels() * r.coils, *smp, static_cast<std::size_t>(p.m * r.coils) * sizeof(cfloat));
    return out;
  }
  /// Best of three: seconds of adjoint + forward.
  double seconds(Run& r, const Problem& p, bool scoped) {
    double best = 1e30;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      transforms(r, p, scoped);
      gpu_->synchronize();
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  }
};

/// Stone's 128^3 problem size with random samples: 2.1e6 voxels x 284,592 samples = 6e11 products a coil.
Problem stone128() { return randomProblem(3, 128, 128, 128, 284592, 21); }

}  // namespace

TEST_F(CancelGpu, ChunkedIsBitIdentical) {
  const Problem p = stone128();
  for (TrigMode mode : {TrigMode::Accurate, TrigMode::Fast, TrigMode::Recurrence}) {
    Run r = make(p, mode, 1);
    EXPECT_EQ(transforms(r, p, false), transforms(r, p, true)) << "trig mode " << static_cast<int>(mode);
    const double one = seconds(r, p, false), chunked = seconds(r, p, true);
    std::printf("128^3 x 284592, trig %d: one launch %.1f ms, chunked %.1f ms (%+.1f %%)\n", static_cast<int>(mode),
                1e3 * one, 1e3 * chunked, 100 * (chunked / one - 1));
  }
}

TEST_F(CancelGpu, Image128InAScopeIsTheSame) {
  const Problem p = radialProblem(128, 256, 201, traj::RadialOrder::Linear180);
  Run r = make(p, TrigMode::Accurate, 8);
  EXPECT_EQ(transforms(r, p, false), transforms(r, p, true));
  const double one = seconds(r, p, false), scoped = seconds(r, p, true);
  std::printf("128^2, 8 coils: without a scope %.2f ms, in one %.2f ms (%+.1f %%)\n", 1e3 * one, 1e3 * scoped,
              100 * (scoped / one - 1));
}

TEST_F(CancelGpu, AdjointStopsWithinHalfASecond) {
  const Problem p = stone128();
  Run r = make(p, TrigMode::Accurate, 8);  // 4.8e12 products: seconds on an H100
  auto img = gpu_->allocate(static_cast<std::size_t>(p.voxels() * 8) * sizeof(cfloat));
  const CancelOutcome o = cancelAfter([&](const Progress& progress) {
    const CancelScope cancel(progress);
    r.plan->adjoint(*r.samples, *img, 8);
    gpu_->synchronize();
  });
  std::printf("128^3 x 284592, 8 coils: %s after %.3f s\n", o.cancelled ? "cancelled" : "NOT cancelled", o.seconds);
  EXPECT_TRUE(o.cancelled);
  EXPECT_LT(o.seconds, 0.5);
}
