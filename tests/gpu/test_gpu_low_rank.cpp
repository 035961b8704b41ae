// The locally low-rank prior on the GPU (cuda/low_rank.cu, reached through makeLowRankOps as the program reaches
// it) against the CPU twin (engine/src/cpu/low_rank.cpp), the reference tested in tests/unit/test_low_rank.cpp,
// on the same inputs: llrProx at thresholds between the singular values (several shifts, partial edge blocks,
// one frame, fewer rows than frames, T = 64 whose 130 KiB of shared memory need the opt-in limit, a 128 x 128 x
// 32 series of 256 blocks), t = 0 (unchanged, bit for bit) and nuclearNorm. Both twins run the same Jacobi
// rotations in double in the same order and differ by FMA contraction only, so they agree to float rounding:
// the bound is 1e-5 relative for the prox; 1e-9 for nuclearNorm (1e-6 where blocks have fewer rows than frames:
// their zero singular values are square roots of rounding, ~1e-8 sigma_max). Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <string>

#include "larmor/backend/low_rank_ops.hpp"
#include "larmor/backend/registry.hpp"
#include "../support/device.hpp"
#include "../unit/test_sparsity_util.hpp"

using namespace larmor;
using namespace larmor::sparsitytest;

namespace {

struct Case {
  Shape shape;
  index_t block;
  std::array<index_t, 2> shift;
};

const Case kCases[] = {
    {Shape{16, 16, 10}, 8, {0, 0}}, {Shape{16, 16, 10}, 8, {3, 5}}, {Shape{13, 10, 6}, 4, {7, 9}},
    {Shape{9, 7, 1}, 4, {2, 6}},    {Shape{6, 5, 20}, 2, {1, 4}},   {Shape{40, 24, 64}, 8, {11, 3}},
    {Shape{128, 128, 32}, 8, {5, 6}},
};

std::string describe(const Case& c) {
  return c.shape.str() + " block " + std::to_string(c.block) + " shift (" + std::to_string(c.shift[0]) + ", " +
         std::to_string(c.shift[1]) + ")";
}

class GpuLowRank : public ::testing::Test {
 protected:
  void SetUp() override {
    test::selectOrSkip("cuda", gpu);
    if (IsSkipped() || HasFatalFailure()) return;
    cpu = test::backendNamed("cpu");
    gpuOps = makeLowRankOps(*gpu);
    cpuOps = makeLowRankOps(*cpu);
  }
  Image prox(Backend& be, LowRankOps& ops, const Image& x, const Case& c, double t) {
    auto b = toBackend(be, x);
    ops.llrProx(*b, c.shape, c.block, t, c.shift);
    return fromBackend(be, *b, x.size());
  }
  double nuclear(Backend& be, LowRankOps& ops, const Image& x, const Case& c) {
    auto b = toBackend(be, x);
    return ops.nuclearNorm(*b, c.shape, c.block, c.shift);
  }
  std::shared_ptr<Backend> gpu, cpu;
  std::unique_ptr<LowRankOps> gpuOps, cpuOps;
};

}  // namespace

TEST_F(GpuLowRank, ProxMatchesCpu) {
  for (const Case& c : kCases) {
    const Image x = randomImage(c.shape.size(), 17 + static_cast<unsigned>(c.shape[2]));
    // Thresholds around the typical singular value of a block of random N(0,1) entries: some kept, some cut.
    const double rows = static_cast<double>(std::min(c.block * c.block, c.shape[0] * c.shape[1]));
    const double typical = std::sqrt(2.0) * (std::sqrt(rows) + std::sqrt(static_cast<double>(c.shape[2])));
    for (double t : {0.2 * typical, 0.5 * typical, 0.9 * typical}) {
      const Image want = prox(*cpu, *cpuOps, x, c, t);
      const Image got = prox(*gpu, *gpuOps, x, c, t);
      EXPECT_LT(relL2Error(got, want), 1e-5) << describe(c) << " t " << t;
    }
  }
}

TEST_F(GpuLowRank, ZeroThresholdIsTheIdentity) {
  const Case c{Shape{13, 10, 6}, 4, {7, 9}};
  const Image x = randomImage(c.shape.size(), 4);
  EXPECT_EQ(prox(*gpu, *gpuOps, x, c, 0.0), x);
}

TEST_F(GpuLowRank, NuclearNormMatchesCpu) {
  for (const Case& c : kCases) {
    const Image x = randomImage(c.shape.size(), 3 + static_cast<unsigned>(c.shape[0]));
    const double want = nuclear(*cpu, *cpuOps, x, c);
    const double bound = c.block * c.block < c.shape[2] ? 1e-6 : 1e-9;
    EXPECT_NEAR(nuclear(*gpu, *gpuOps, x, c), want, bound * want) << describe(c);
  }
}

TEST_F(GpuLowRank, RejectsForeignBuffersAndBadArguments) {
  const Shape s{8, 8, 4};
  auto onCpu = toBackend(*cpu, randomImage(s.size(), 1));
  EXPECT_THROW(gpuOps->llrProx(*onCpu, s, 8, 1.0, {0, 0}), Error);
  auto onGpu = toBackend(*gpu, randomImage(s.size(), 1));
  EXPECT_THROW(gpuOps->llrProx(*onGpu, s, 8, 1.0, {8, 0}), Error);
  EXPECT_THROW(gpuOps->llrProx(*onGpu, Shape{8, 8, 8}, 8, 1.0, {0, 0}), Error);
}
