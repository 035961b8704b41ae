#pragma once
// A fresh, empty directory per test under LARMOR_TEST_TMP (the build's test-tmp), named after the test.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace larmor::testing {

/// LARMOR_TEST_TMP/PREFIX-SUITE-NAME for the running test, removed and made again.
inline std::string freshTestDir(const std::string& prefix) {
  namespace fs = std::filesystem;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::path(LARMOR_TEST_TMP) / (prefix + "-" + info->test_suite_name() + "-" + info->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

}  // namespace larmor::testing
