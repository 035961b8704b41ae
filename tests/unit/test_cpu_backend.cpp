// The backend registry: the CPU backend is always there, "auto" falls back to it with a notice. (The CPU
// backend's ops against plain loops: tests/shared/backend_vector_ops.cpp, run here on "cpu".)
#include <gtest/gtest.h>

#include "larmor/backend/registry.hpp"

using namespace larmor;

TEST(Registry, CpuIsAlwaysThereAndAutoFallsBack) {
  auto& reg = BackendRegistry::instance();
  const auto devs = reg.devices();
  ASSERT_FALSE(devs.empty());
  EXPECT_EQ(devs[0].id, "cpu");
  EXPECT_EQ(reg.select("cpu").backend->info().id, "cpu");
  const Selection a = reg.select("auto");
  if (reg.whyNoGpu().empty()) {
    EXPECT_TRUE(a.backend->isGpu());
  } else {
    EXPECT_EQ(a.backend->info().id, "cpu");
    EXPECT_NE(a.notice.find("running on the CPU"), std::string::npos) << a.notice;
  }
  EXPECT_THROW(reg.select("tpu"), Error);
  EXPECT_THROW(reg.select("cuda:x"), Error);
  EXPECT_THROW(reg.select("cuda:99"), Error);
}
