// larmor-cli's limits: options that do not apply to the method or the output format are
// one-line errors, and a reconstruction too large for the memory is refused up front, in well
// under a second, before the samples are read.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace {

struct CliRun {
  int exitCode;
  std::string err;
  double seconds;
};

std::string dir() {
  const std::string d = std::string(LARMOR_TEST_TMP) + "/cli-limits";
  fs::create_directories(d);
  return d;
}

CliRun cli(const std::string& args, const std::string& env = "") {
  static int calls = 0;
  const std::string err = dir() + "/run-" + std::to_string(::getpid()) + "-" + std::to_string(calls++) + ".err";
  const auto t0 = std::chrono::steady_clock::now();
  const int status = std::system((env + " " + LARMOR_CLI + " " + args + " >/dev/null 2>" + err).c_str());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ifstream f(err);
  return {WEXITSTATUS(status), std::string(std::istreambuf_iterator<char>(f), {}), s};
}

void expectOneLine(const CliRun& r, const std::string& mention) {
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(mention), std::string::npos) << r.err;
}

const std::string& phantom2d() {
  static const std::string path = [] {
    const std::string p = dir() + "/p2d-" + std::to_string(::getpid()) + ".cfl";
    EXPECT_EQ(cli("simulate --matrix 32 --coils 2 --output " + p).exitCode, 0);
    return p;
  }();
  return path;
}

}  // namespace

TEST(CliLimits, MethodOptionsThatDoNotApplyAreErrors) {
  const std::string out = dir() + "/o.cfl";
  expectOneLine(cli("recon " + phantom2d() + " --method fft --out-coils 4 --output " + out),
                "--out-coils 4: does not apply to --method fft");
  expectOneLine(cli("recon " + phantom2d() + " --iters 5 --output " + out), "--iters 5: does not apply");
  EXPECT_FALSE(fs::exists(out));
}

TEST(CliLimits, FormatOptionsThatDoNotApplyAreErrors) {
  expectOneLine(cli("recon " + phantom2d() + " --component phase --output " + dir() + "/o.png"),
                "--component: does not apply to");
  expectOneLine(cli("recon " + phantom2d() + " --nifti-complex --output " + dir() + "/o.png"), "--nifti-complex");
  expectOneLine(cli("recon " + phantom2d() + " --series-description x --output " + dir() + "/o.nii"),
                "--series-description");
  expectOneLine(cli("recon " + phantom2d() + " --window-width 3 --output " + dir() + "/o.cfl"), "--window-width");
  expectOneLine(cli("recon " + phantom2d() + " --matrix 32x32x4 --output " + dir() + "/o.cfl"), "2D data");
}

#ifdef LARMOR_HAVE_IO
// The case: 128x128x64 x 8 coils to 1024x1024x256 grew to 24 GB and was killed. Here a smaller
// file with the same request is refused by the estimate, from the header, quickly.
TEST(CliLimits, TooLargeAMatrixIsRefusedInWellUnderASecond) {
  const std::string in = dir() + "/in3d-" + std::to_string(::getpid()) + ".h5";
  ASSERT_EQ(cli("simulate --matrix 32x32x16 --coils 8 --output " + in).exitCode, 0);
  const CliRun r = cli("recon " + in + " --matrix 1024x1024x256 --output " + dir() + "/big.cfl");
  expectOneLine(r, "needs about");
  EXPECT_NE(r.err.find("available"), std::string::npos) << r.err;
#if !defined(__SANITIZE_ADDRESS__)  // a Debug + ASan build is several times slower (make asan-test)
  EXPECT_LT(r.seconds, 1.0) << r.err;
#endif
  // A limit below what the normal size needs is honoured too (LARMOR_MEMORY_LIMIT), and a normal size
  // passes without one.
  expectOneLine(cli("recon " + in + " --matrix 256x256x64 --output " + dir() + "/mid.cfl", "LARMOR_MEMORY_LIMIT=1000000"),
                "LARMOR_MEMORY_LIMIT");
  EXPECT_EQ(cli("recon " + in + " --output " + dir() + "/ok.cfl").exitCode, 0);
}
#endif
