// The crash sandbox (larmor/util/subprocess_sandbox.hpp) with small shell-script helpers: each way a
// helper can end gives its documented outcome or error line.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "larmor/util/subprocess_sandbox.hpp"
#include "support/expect_error.hpp"
#include "test_io_export_util.hpp"

using namespace larmor;
using larmor::test::expectError;
using larmor::testing::freshTestDir;

namespace {

// An executable /bin/sh script `name` in `dir` with `body`; its path.
std::string script(const std::string& dir, const std::string& name, const std::string& body) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

SandboxJob job(const std::string& helper, const std::string& file) {
  SandboxJob j;
  j.helper = helper;
  j.file = file;
  return j;
}

}  // namespace

TEST(Sandbox, HelperThatExitsZeroPasses) {
  const std::string dir = freshTestDir("sandbox");
  // The file comes first, then the further arguments.
  const std::string helper = script(dir, "ok.sh", "[ \"$1\" = data.bin ] && [ \"$2\" = a ] && [ \"$3\" = 'b c' ]");
  SandboxJob j = job(helper, "data.bin");
  j.args = {"a", "b c"};
  EXPECT_EQ(runSandboxed(j), SandboxOutcome::Passed);
}

TEST(Sandbox, HelperKilledBySignalIsACrashOfTheFile) {
  const std::string dir = freshTestDir("sandbox");
  const std::string helper = script(dir, "crash.sh", "echo partial output; kill -SEGV $$");
  SandboxJob j = job(helper, "scan.h5");
  const std::string what = expectError([&] { runSandboxed(j); }, "");
  EXPECT_EQ(what, "scan.h5: damaged file (crash.sh crashed reading it: Segmentation fault)");
  j.crashVerdict = "damaged HDF5 file";
  j.crasher = "libhdf5";
  const std::string named = expectError([&] { runSandboxed(j); }, "");
  EXPECT_EQ(named, "scan.h5: damaged HDF5 file (libhdf5 crashed reading it: Segmentation fault)");
}

TEST(Sandbox, HelperThatFailsGivesItsOutputOnOneLine) {
  const std::string dir = freshTestDir("sandbox");
  const std::string helper = script(dir, "fail.sh", "echo 'first line' >&2; echo '  second line'; exit 5");
  const std::string what = expectError([&] { runSandboxed(job(helper, "scan.h5")); }, "");
  EXPECT_EQ(what, "scan.h5: cannot be read (first line   second line)");
  const std::string silent = script(dir, "silent.sh", "exit 1");
  EXPECT_EQ(expectError([&] { runSandboxed(job(silent, "scan.h5")); }, ""),
            "scan.h5: cannot be read (the reader stopped)");
}

TEST(Sandbox, HelperErrorAfterTheMarkerIsPassedOnVerbatim) {
  const std::string dir = freshTestDir("sandbox");
  const std::string body = "echo 'HDF5-DIAG: noise from a library' >&2\n"
                           "printf '\\nMARK: scan.h5: no ISMRMRD group'; exit " + std::to_string(kSandboxErrorExit);
  SandboxJob j = job(script(dir, "error.sh", body), "scan.h5");
  j.errorMarker = "MARK: ";
  EXPECT_EQ(expectError([&] { runSandboxed(j); }, ""), "scan.h5: no ISMRMRD group");
  // Without the marker in its output (or with another exit status) it is an ordinary failure.
  j.errorMarker = "OTHER: ";
  expectError([&] { runSandboxed(j); }, "scan.h5: cannot be read (HDF5-DIAG: noise from a library");
}

TEST(Sandbox, MissingHelperIsUnavailable) {
  const std::string dir = freshTestDir("sandbox");
  EXPECT_EQ(runSandboxed(job(dir + "/no-such-helper", "scan.h5")), SandboxOutcome::HelperUnavailable);
  std::ofstream(dir + "/not-executable") << "#!/bin/sh\n";
  EXPECT_EQ(runSandboxed(job(dir + "/not-executable", "scan.h5")), SandboxOutcome::HelperUnavailable);
}

TEST(Sandbox, HelperSeesItsLimitAndKnowsItIsSandboxed) {
  const std::string dir = freshTestDir("sandbox");
  const std::string helper = script(dir, "env.sh",
                                    "[ \"$LARMOR_SANDBOX_CHILD\" = 1 ] || exit 1\n"
                                    "[ \"$LARMOR_SANDBOX_ADDRESS_SPACE\" = 123456789 ] || exit 2");
  SandboxJob j = job(helper, "scan.h5");
  j.addressSpaceBytes = 123456789;
  EXPECT_EQ(runSandboxed(j), SandboxOutcome::Passed);
  j.addressSpaceBytes = 0;  // no limit: not even one left over in the caller's environment
  ::setenv("LARMOR_SANDBOX_ADDRESS_SPACE", "123456789", 1);
  expectError([&] { runSandboxed(j); }, "scan.h5: cannot be read (the reader stopped)");
  ::unsetenv("LARMOR_SANDBOX_ADDRESS_SPACE");
  EXPECT_FALSE(insideSandbox());
}

TEST(Sandbox, CancelKillsTheHelper) {
  const std::string dir = freshTestDir("sandbox");
  const std::string helper = script(dir, "slow.sh", "exec sleep 30");
  CancelToken token;
  const Progress progress([](double, const std::string&) {}, &token);
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    token.cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(runSandboxed(job(helper, "scan.h5"), progress), Cancelled);
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(Sandbox, FindHelperHonoursOverrideAndOptOut) {
  ::setenv("LARMOR_TEST_SANDBOX_HELPER", "/opt/helper", 1);
  EXPECT_EQ(findSandboxHelper("larmor-none", "LARMOR_TEST_SANDBOX_HELPER"), "/opt/helper");
  EXPECT_EQ(findSandboxHelper("larmor-none", nullptr), "");  // nothing of that name next to the engine
  ::setenv("LARMOR_NO_SANDBOX", "1", 1);
  EXPECT_EQ(findSandboxHelper("larmor-none", "LARMOR_TEST_SANDBOX_HELPER"), "");
  ::unsetenv("LARMOR_NO_SANDBOX");
  ::unsetenv("LARMOR_TEST_SANDBOX_HELPER");
}

TEST(SandboxDeathTest, LimitsApplyInTheHelper) {
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer reserves terabytes of shadow address space: the sandbox sets no RLIMIT_AS in such a
  // build (subprocess_sandbox.cpp), so there is no limit to test (make asan-test).
  GTEST_SKIP() << "no address-space limit under AddressSanitizer";
#endif
  // In a child process: with a 1 GiB limit, a 4 GiB allocation fails there.
  EXPECT_EXIT(
      {
        ::setenv("LARMOR_SANDBOX_ADDRESS_SPACE", "1073741824", 1);
        applySandboxLimits();
        void* p = std::malloc(std::size_t{4} << 30);
        std::_Exit(p ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "");
}
