// Shared by the unit (cpu) and GPU (cuda) binaries: ExecutionOps::memoryStats (execution_ops.hpp), which `larmor-cli bench`
// reports as each workload's peak device memory. Live bytes rise by a buffer's size (CUDA: its allocator size
// class, at most 25 % more) and fall back when it is freed; the peak keeps the most live since resetPeakMemory;
// reserved (live + the allocator's cache) is never below live.
#include <gtest/gtest.h>

#include "support/device.hpp"

using namespace larmor;

namespace {
class BackendMemoryStats : public larmor::test::DeviceTest {};
}  // namespace

TEST_P(BackendMemoryStats, LiveAndPeakFollowTheBuffers) {
  be().synchronize();
  const MemoryStats start = be().executionOps().memoryStats();
  ASSERT_TRUE(start.tracked);
  be().executionOps().resetPeakMemory();
  EXPECT_EQ(be().executionOps().memoryStats().peakLiveBytes, start.liveBytes);
  const std::size_t a = 3u << 20, b = (1u << 20) + 12345;
  {
    auto bufA = be().allocate(a);
    const MemoryStats withA = be().executionOps().memoryStats();
    EXPECT_GE(withA.liveBytes, start.liveBytes + a);
    EXPECT_LE(withA.liveBytes, start.liveBytes + a + a / 4);
    EXPECT_GE(withA.reservedBytes, withA.liveBytes);
    auto bufB = be().allocate(b);
    const MemoryStats withBoth = be().executionOps().memoryStats();
    EXPECT_GE(withBoth.liveBytes, withA.liveBytes + b);
    EXPECT_EQ(withBoth.peakLiveBytes, withBoth.liveBytes);
    EXPECT_GE(withBoth.peakReservedBytes, withBoth.reservedBytes);
  }
  const MemoryStats after = be().executionOps().memoryStats();
  EXPECT_EQ(after.liveBytes, start.liveBytes);  // both buffers gone
  EXPECT_GE(after.peakLiveBytes, start.liveBytes + a + b);
  EXPECT_GE(after.reservedBytes, after.liveBytes);
  be().executionOps().resetPeakMemory();
  EXPECT_EQ(be().executionOps().memoryStats().peakLiveBytes, start.liveBytes);
}

LARMOR_INSTANTIATE_ON_TEST_DEVICE(BackendMemoryStats);
