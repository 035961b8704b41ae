#pragma once
// The tests' one way to reach a backend by name ("cpu", "cuda", "cuda:N"), as the program does (registry and
// plugin), and the fixtures built on it. A test on "cuda" is SKIPPED only when this machine has no GPU at all:
// no /dev/nvidia0 and no GPU in the registry's device list. Where a GPU exists (either sign) but the backend
// cannot be selected (plugin not built or not loading, driver error), the test FAILS with the reason: on the
// GPU machine a skip would hide exactly that (tests/gpu/run-on-device.sh also fails on any skip there).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "larmor/backend/backend.hpp"

namespace larmor::test {

/// True where this machine has a GPU: /dev/nvidia0 exists or the registry lists a GPU device. `evidence`
/// (optional) receives what was found, or why there is none.
bool machineHasGpu(std::string* evidence = nullptr);

/// The backend named `name`, shared by all tests of the process (one CUDA stream and cuFFT handle, not one
/// per test). Throws larmor::Error with the registry's reason where it cannot be selected.
std::shared_ptr<Backend> backendNamed(const std::string& name);

/// Sets `be` to the backend named `name`; GTEST_SKIPs only for a GPU name on a machine without any GPU, and
/// fails (fatally) with the reason where the backend cannot be selected otherwise. Call through
/// ASSERT_NO_FATAL_FAILURE or from SetUp (whose fatal failure or skip stops the test).
void selectOrSkip(const std::string& name, std::shared_ptr<Backend>& be);

/// A test run once per device name: INSTANTIATE_TEST_SUITE_P(Cpu, Suite, ::testing::Values("cpu")) in the
/// unit binary and (Cuda, Suite, Values("cuda")) in the GPU binary share one body (tests/shared/).
class DeviceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { selectOrSkip(GetParam(), be_); }
  Backend& be() { return *be_; }
  bool onGpu() const { return be_->isGpu(); }
  std::shared_ptr<Backend> be_;
};

/// The GPU-only tests (tests/gpu): gpu_ is the CUDA backend, cpu_ the CPU one for comparisons.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    selectOrSkip("cuda", gpu_);
    cpu_ = backendNamed("cpu");
  }
  std::shared_ptr<Backend> gpu_, cpu_;
};

/// `count` backends, `first` first, for the tests of work split over devices (IterativeSlices): further
/// CPU backends after a CPU one; after a GPU one the GPUs in turn (the same one again where there is only one:
/// separate streams, caches and plans, so a split runs on any machine). The further ones are kept in `owned`.
std::vector<Backend*> splitDevices(Backend& first, int count, std::vector<std::shared_ptr<Backend>>& owned);

/// "cpu" -> "Cpu", "cuda" -> "Cuda": the instance names of INSTANTIATE_TEST_SUITE_P.
std::string deviceParamName(const ::testing::TestParamInfo<std::string>& info);

}  // namespace larmor::test

/// Instantiates a DeviceTest suite on the device the binary is built for: LARMOR_TEST_DEVICE is "cpu" in
/// larmor_unit_tests and "cuda" in larmor_gpu_tests (tests/CMakeLists.txt), so a body in tests/shared/ runs once
/// in each binary.
#define LARMOR_INSTANTIATE_ON_TEST_DEVICE(Suite)                                                          \
  INSTANTIATE_TEST_SUITE_P(OnDevice, Suite, ::testing::Values(std::string(LARMOR_TEST_DEVICE)), \
                           ::larmor::test::deviceParamName)
