// larmor-cli as a user meets it: bad input gives one clear line on stderr, a non-zero exit, and no
// output file left behind.
#include <gtest/gtest.h>
#include <png.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include <unistd.h>

using namespace std::string_literals;
namespace fs = std::filesystem;

namespace {

struct RunResult {
  int exitCode;
  std::string err, out;
};

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::string dir() {
  const std::string d = std::string(LARMOR_TEST_TMP) + "/cli";
  fs::create_directories(d);
  return d;
}

RunResult runCli(const std::string& args) {
  // ctest runs tests in parallel processes: each needs its own stderr file.
  static int calls = 0;
  const std::string stem = dir() + "/run-" + std::to_string(::getpid()) + "-" + std::to_string(calls++);
  const std::string cmd = std::string(LARMOR_CLI) + " " + args + " >" + stem + ".out 2>" + stem + ".err";
  const int status = std::system(cmd.c_str());
  return {WEXITSTATUS(status), readFile(stem + ".err"), readFile(stem + ".out")};
}

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

void expectCleanFailure(const std::string& args, const std::string& mention, const std::string& output) {
  fs::remove(output);
  const RunResult r = runCli(args);
  EXPECT_NE(r.exitCode, 0) << args;
  EXPECT_EQ(lines(r.err), 1) << "stderr should be one line: " << r.err;
  EXPECT_NE(r.err.find(mention), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(output)) << output << " was left behind";
  const std::string stem = fs::path(output).stem().string();
  for (const auto& e : fs::directory_iterator(fs::path(output).parent_path())) {
    const std::string name = e.path().filename().string();
    EXPECT_FALSE(name.rfind(stem, 0) == 0 && name.find(".tmp") != std::string::npos) << "stray temporary " << e.path();
  }
}

}  // namespace

TEST(Cli, MissingFile) {
  const std::string out = dir() + "/missing.cfl";
  expectCleanFailure("recon " + dir() + "/does-not-exist.h5 --method fft --output " + out, "does-not-exist.h5", out);
}

TEST(Cli, UnknownMethodAndBadMatrix) {
  const std::string out = dir() + "/x.cfl";
  expectCleanFailure("recon " + dir() + "/whatever.h5 --method magic --output " + out, "magic", out);
  expectCleanFailure("simulate --matrix 0x12 --output " + dir() + "/sim.h5", "--matrix", dir() + "/sim.h5");
}

TEST(Cli, NotHdf5AndTruncatedHdf5) {
  const std::string bad = dir() + "/text.h5", out = dir() + "/text.cfl";
  std::ofstream(bad) << "this is not an HDF5 file\n";
  expectCleanFailure("recon " + bad + " --output " + out, "text.h5", out);
#ifdef LARMOR_HAVE_IO
  const std::string good = dir() + "/trunc.h5";
  fs::remove(good);
  ASSERT_EQ(runCli("simulate --matrix 32 --coils 2 --output " + good).exitCode, 0);
  fs::resize_file(good, fs::file_size(good) / 2);
  expectCleanFailure("recon " + good + " --output " + out, "trunc.h5", out);
#endif
}

TEST(Cli, HdrThatLiesAboutTheSize) {
  const std::string base = dir() + "/liar", out = dir() + "/liar-out.cfl";
  std::ofstream(base + ".hdr") << "# Dimensions\n64 64 1 4 1 1 1 1 1 1 1 1 1 1 1 1\n";
  std::ofstream(base + ".cfl", std::ios::binary) << std::string(100, '\0');
  expectCleanFailure("recon " + base + ".cfl --output " + out, "liar", out);
}

TEST(Cli, SimulateReconCompareRoundTrip) {
#ifndef LARMOR_HAVE_IO
  GTEST_SKIP() << "built without ISMRMRD";
#endif
  const std::string h5 = dir() + "/rt.h5", img = dir() + "/rt.cfl", png = dir() + "/rt.png", js = dir() + "/rt.json";
  fs::remove(h5);
  ASSERT_EQ(runCli("simulate --matrix 64 --coils 4 --output " + h5).exitCode, 0);
  ASSERT_EQ(runCli("info " + h5 + " --json " + dir() + "/info.json").exitCode, 0);
  RunResult r = runCli("recon " + h5 + " --method fft --device cpu --output " + img + " --json " + js);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir() + "/rt.hdr"));
  r = runCli("recon " + h5 + " --method fft --output " + png);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  {  // the whole 64 x 64 image, as an independent decoder (libpng's) reads it: grey, not blank
    png_image decoded{};
    decoded.version = PNG_IMAGE_VERSION;
    ASSERT_NE(png_image_begin_read_from_file(&decoded, png.c_str()), 0) << decoded.message;
    EXPECT_EQ(decoded.width, 64u);
    EXPECT_EQ(decoded.height, 64u);
    decoded.format = PNG_FORMAT_GRAY;
    std::vector<unsigned char> pixels(PNG_IMAGE_SIZE(decoded));
    ASSERT_NE(png_image_finish_read(&decoded, nullptr, pixels.data(), 0, nullptr), 0) << decoded.message;
    EXPECT_LT(*std::min_element(pixels.begin(), pixels.end()) + 100, *std::max_element(pixels.begin(), pixels.end()));
  }
  std::ifstream j(js);
  const std::string text((std::istreambuf_iterator<char>(j)), std::istreambuf_iterator<char>());
  for (const char* key : {"\"timings\"", "\"device\"", "\"settings\"", "\"metrics\"", "\"percent_error\"", "\"version\""})
    EXPECT_NE(text.find(key), std::string::npos) << key;
  r = runCli("compare --ref " + h5 + " --test " + img + " --map " + dir() + "/map.png");
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

// An iterative reconstruction says how it ended: a run stopped by the iteration limit far from convergence
// (the paper's 60 iterations at 128^3, docs/iterative.md) is visible without --json.
TEST(Cli, IterativeReconReportsHowTheSolveEnded) {
#ifndef LARMOR_HAVE_IO
  GTEST_SKIP() << "built without ISMRMRD";
#endif
  const std::string h5 = dir() + "/cg.h5", img = dir() + "/cg.cfl";
  ASSERT_EQ(runCli("simulate --matrix 32 --traj radial --spokes 40 --output " + h5).exitCode, 0);
  RunResult r = runCli("recon " + h5 + " --method cg --reg fd --lambda 0.01 --iters 4 --device cpu --output " + img);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("CG: 4 iterations, stopped by the iteration limit (--iters), relative residual "),
            std::string::npos) << r.out;
  r = runCli("recon " + h5 + " --method cg --reg fd --lambda 0.01 --iters 500 --tol 1e-2 --device cpu --output " + img);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("stopped by the tolerance (--tol)"), std::string::npos) << r.out;
  // Non-iterative methods print no such line.
  r = runCli("recon " + h5 + " --method gridding --device cpu --output " + img);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out.find("CG:"), std::string::npos) << r.out;
}

TEST(Cli, DeviceCudaWithoutGpuIsAClearError) {
  const RunResult r = runCli("devices");
  EXPECT_EQ(r.exitCode, 0);
  // Where a GPU exists this is covered by the gpu tests.
  if (std::system("nvidia-smi -L >/dev/null 2>&1") == 0) GTEST_SKIP() << "a GPU is present";
  const std::string out = dir() + "/nogpu.cfl";
  expectCleanFailure("recon " + dir() + "/none.h5 --device cuda --output " + out, "--device cuda", out);
}
