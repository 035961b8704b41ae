// Large frees off the calling thread (larmor/util/background_release.hpp): a CPU backend buffer of 2 GB, touched,
// goes in microseconds (unmapping it in place took ~0.15 s here, paid by a cancelled 3D plan as it unwound), the next
// large allocation waits for it (the same peak), and small blocks are freed at once.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "larmor/backend/registry.hpp"
#include "larmor/util/background_release.hpp"

using namespace larmor;

namespace {
double secondsOf(const auto& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

TEST(BackgroundRelease, ALargeBufferGoesAtOnceAndTheNextLargeOneWaitsForIt) {
  std::shared_ptr<Backend> be = makeCpuBackend();
  constexpr std::size_t bytes = std::size_t{2} << 30;
  auto buffer = be->allocate(bytes);
  std::memset(buffer->ptr(), 1, bytes);  // every page touched, as a built table is
  const double freeing = secondsOf([&] { buffer.reset(); });
  EXPECT_LT(freeing, 0.05) << "a 2 GB buffer's destructor took " << freeing << " s";
  waitForReleases();  // returns once it is gone
  auto next = be->allocate(bytes);  // allocates after the release (waitForReleases inside)
  ASSERT_TRUE(next && next->ptr());
  static_cast<char*>(next->ptr())[bytes - 1] = 2;
}

TEST(BackgroundRelease, SmallBlocksAreFreedInPlace) {
  static int freed = 0;
  void* p = std::malloc(64);
  releaseLater(p, 64, [](void* q) { ++freed, std::free(q); });
  EXPECT_EQ(freed, 1);  // no thread involved below kBackgroundRelease
  releaseLater(nullptr, kBackgroundRelease, [](void*) { ++freed; });
  EXPECT_EQ(freed, 1);  // nothing to free
  waitForReleases();    // nothing pending: returns
}
