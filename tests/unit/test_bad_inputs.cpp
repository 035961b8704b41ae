// A regression corpus of bad inputs: a small generator of bad inputs for each loader (BART .cfl/.hdr and
// ISMRMRD .h5; twix has its own), each run through larmor-cli in a process of its own, asserting the one
// rule: a one-line error (exit 1, nothing written) or a valid output (exit 0, an image of finite values
// that is not all zero), never a crash, a hang (a 30 s limit) or exit 0 with a wrong image.
//
// Kinds of bad input: truncations (the file cut at several lengths), header lies (dimensions or XML
// sizes that do not describe the data: too large, zero, negative, non-numeric, wrapped), value mutants
// (NaN, Inf, 3e38, all zero) and byte mutants (seeded random flips anywhere in the file). The seed is
// fixed, so every run tries the same files; a failure names the case. Runs in well under 60 s.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "larmor/io/cfl.hpp"

namespace fs = std::filesystem;
using Bytes = std::string;

namespace {

std::string dir() {
  const std::string d = std::string(LARMOR_TEST_TMP) + "/bad-inputs-" + std::to_string(::getpid());
  fs::create_directories(d);
  return d;
}

Bytes slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

void spit(const std::string& path, const Bytes& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(b.data(), static_cast<std::streamsize>(b.size()));
}

struct Outcome {
  int status = 0;  ///< as from system(): exit code or signal
  std::string err;
};

Outcome runCli(const std::string& args, const std::string& errFile) {
  // timeout -s KILL: a hang shows as 137 and fails the case; the CLI's own exit status otherwise.
  const std::string cmd = "timeout -s KILL 30 " + std::string(LARMOR_CLI) + " " + args + " >/dev/null 2>" + errFile;
  const int st = std::system(cmd.c_str());
  return {st, slurp(errFile)};
}

// The rule, for one input. `output` is a .cfl the CLI is asked to write.
void expectErrorOrValidImage(const std::string& name, const std::string& args, const std::string& output,
                             bool zeroInput) {
  const std::string base = output.substr(0, output.size() - 4);
  fs::remove(base + ".cfl");
  fs::remove(base + ".hdr");
  const Outcome o = runCli(args + " --output " + output, base + ".err");
  SCOPED_TRACE(name + ": larmor-cli " + args);
  ASSERT_TRUE(WIFEXITED(o.status)) << "killed by a signal";
  const int code = WEXITSTATUS(o.status);
  ASSERT_NE(code, 137) << "hang (killed after 30 s)";
  ASSERT_TRUE(code == 0 || code == 1) << "exit " << code << ": " << o.err;
  if (code == 1) {
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << "not one line: " << o.err;
    EXPECT_NE(o.err.find("larmor-cli: "), std::string::npos) << o.err;
    EXPECT_FALSE(fs::exists(base + ".cfl")) << "an output was left by a failed run";
    return;
  }
  // exit 0: the image must be there, finite, and not all zero.
  ASSERT_TRUE(fs::exists(base + ".cfl") && fs::exists(base + ".hdr")) << "exit 0 without an output";
  const larmor::CArray img = larmor::io::readCfl(output);
  ASSERT_GT(img.size(), 0);
  double energy = 0;
  for (larmor::index_t i = 0; i < img.size(); ++i) {
    ASSERT_TRUE(std::isfinite(img[i].real()) && std::isfinite(img[i].imag())) << "exit 0 with a non-finite voxel " << i;
    energy += std::norm(img[i]);
  }
  if (!zeroInput) EXPECT_GT(energy, 0) << "exit 0 with an all-zero image";
}

// One bad input: a name, the files to write (path -> bytes), and the CLI arguments before --output.
struct Case {
  std::string name;
  std::vector<std::pair<std::string, Bytes>> files;
  std::string args;
  bool zeroInput = false;  ///< the data are all zero: so may the image be
};

void runCases(const std::vector<Case>& cases) {
  int i = 0;
  for (const Case& c : cases) {
    for (const auto& [path, bytes] : c.files) spit(path, bytes);
    expectErrorOrValidImage(c.name, c.args, dir() + "/out-" + std::to_string(i++) + ".cfl", c.zeroInput);
    for (const auto& f : c.files) fs::remove(f.first);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Seeded byte flips: `count` mutants of `good`, each with 1..8 random bytes set to random values.
std::vector<Bytes> byteMutants(const Bytes& good, int count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Bytes> out;
  for (int m = 0; m < count; ++m) {
    Bytes b = good;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < flips; ++k) b[rng() % b.size()] = static_cast<char>(rng() & 0xff);
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<std::size_t> truncations(std::size_t size) {
  return {0, 1, 7, 64, 512, size / 8, size / 3, size / 2, size - size / 10, size - 1};
}

}  // namespace

// BART .cfl/.hdr: a 24x20 2-coil phantom as the seed.
TEST(BadInputs, BartCflCorpus) {
  const std::string d = dir();
  const std::string seed = d + "/seed.cfl";
  ASSERT_EQ(std::system((std::string(LARMOR_CLI) + " simulate --matrix 24x20 --coils 2 --output " + seed + " >/dev/null").c_str()), 0);
  const Bytes hdr = slurp(d + "/seed.hdr"), cfl = slurp(seed);
  ASSERT_FALSE(hdr.empty());
  ASSERT_FALSE(cfl.empty());
  const std::string h = d + "/k.hdr", c = d + "/k.cfl", args = "recon " + c;
  std::vector<Case> cases;
  cases.push_back({"seed", {{h, hdr}, {c, cfl}}, args});
  for (std::size_t n : truncations(cfl.size())) cases.push_back({"cfl cut to " + std::to_string(n), {{h, hdr}, {c, cfl.substr(0, n)}}, args});
  for (std::size_t n : {std::size_t{0}, std::size_t{5}, std::size_t{13}, hdr.size() - 1})
    cases.push_back({"hdr cut to " + std::to_string(n), {{h, hdr.substr(0, n)}, {c, cfl}}, args});
  // Header lies.
  const std::vector<std::string> lies = {"48 20 1 2", "24 20 1 1", "24 20 1 4", "0 20 1 2", "-24 20 1 2",
                                         "24 x 1 2", "1000000000000 20 1 2", "99999999999999999999999 1 1 1",
                                         "24 20 2 2", "24", "24 20 1 2 1 1 1 1 1 1 1 1 1 1 1 1 1 1",
                                         "24 20 1 2 0", "4294967297 1 1 1", ""};
  for (const auto& lie : lies) cases.push_back({"hdr says '" + lie + "'", {{h, "# Dimensions\n" + lie + "\n"}, {c, cfl}}, args});
  cases.push_back({"no # Dimensions", {{h, "24 20 1 2\n"}, {c, cfl}}, args});
  // Value mutants: every sample NaN, Inf, 3e38, 0; one NaN.
  for (const float v : {std::nanf(""), INFINITY, 3e38f, 0.f}) {
    Bytes b = cfl;
    for (std::size_t i = 0; i + 4 <= b.size(); i += 4) std::memcpy(&b[i], &v, 4);
    cases.push_back({"all samples " + std::to_string(v), {{h, hdr}, {c, b}}, args, v == 0.f});
  }
  {
    Bytes b = cfl;
    const float nan = std::nanf("");
    std::memcpy(&b[8 * 100], &nan, 4);
    cases.push_back({"one NaN sample", {{h, hdr}, {c, b}}, args});
  }
  // Byte mutants of the header text.
  int m = 0;
  for (const Bytes& b : byteMutants(hdr, 12, 1501)) cases.push_back({"hdr mutant " + std::to_string(m++), {{h, b}, {c, cfl}}, args});
  // A trajectory that lies: non-Cartesian reading of the same k-space.
  cases.push_back({"traj is the k-space", {{h, hdr}, {c, cfl}, {d + "/t.hdr", hdr}, {d + "/t.cfl", cfl}}, args + " --traj " + d + "/t.cfl"});
  runCases(cases);
}

#ifdef LARMOR_HAVE_IO
namespace {

// Replaces the first `from` after `anchor` by `to` of the same length (the XML lives in the file as text).
bool patchAfter(Bytes& b, const std::string& anchor, const std::string& from, const std::string& to) {
  const std::size_t a = b.find(anchor);
  if (a == Bytes::npos) return false;
  const std::size_t p = b.find(from, a);
  if (p == Bytes::npos || from.size() != to.size()) return false;
  b.replace(p, from.size(), to);
  return true;
}

}  // namespace

// ISMRMRD .h5: a Cartesian and a radial phantom as seeds.
TEST(BadInputs, IsmrmrdCorpus) {
  const std::string d = dir();
  const std::string cart = d + "/seed-cart.h5", radial = d + "/seed-radial.h5";
  const std::string cli = std::string(LARMOR_CLI) + " simulate --coils 2 ";
  ASSERT_EQ(std::system((cli + "--matrix 16 --output " + cart + " >/dev/null").c_str()), 0);
  ASSERT_EQ(std::system((cli + "--matrix 16 --traj radial --spokes 24 --output " + radial + " >/dev/null").c_str()), 0);
  std::vector<Case> cases;
  const std::string f = d + "/bad.h5";
  for (const auto& [seedName, seedPath, method] :
       std::vector<std::tuple<std::string, std::string, std::string>>{{"cartesian", cart, "fft"}, {"radial", radial, "gridding"}}) {
    const Bytes good = slurp(seedPath);
    ASSERT_GT(good.size(), 1000u);
    const std::string args = "recon " + f + " --method " + method;
    cases.push_back({seedName + " seed", {{f, good}}, args});
    for (std::size_t n : truncations(good.size()))
      cases.push_back({seedName + " cut to " + std::to_string(n), {{f, good.substr(0, n)}}, args});
    // Header lies, same length as the truth ("16" in the XML's matrix sizes and limits).
    for (const auto& [anchor, from, to] : std::vector<std::tuple<std::string, std::string, std::string>>{
             {"<encodedSpace>", "<x>", "<y>"}, {"<reconSpace>", "<x>16</x>", "<x>-5</x>"},
             {"<reconSpace>", "<x>16</x>", "<x>00</x>"}, {"<reconSpace>", "<x>16</x>", "<x>9e9</x"},
             {"<encodingLimits>", "<maximum>", "<maximun>"}, {"<trajectory>", "<trajectory>", "<trajectorx>"},
             {"<ismrmrdHeader", "<ismrmrdHeader", "<ismrmrdHeadex"}, {"<slice>", "<maximum>0<", "<maximum>9<"}}) {
      Bytes b = good;
      if (patchAfter(b, anchor, from, to)) cases.push_back({seedName + " XML " + anchor + " " + from + " -> " + to, {{f, b}}, args});
    }
    // Byte mutants anywhere in the file (20 per seed), and in the first 4 KiB (superblock, object headers).
    int m = 0;
    for (const Bytes& b : byteMutants(good, 20, seedName == "radial" ? 77u : 15u))
      cases.push_back({seedName + " mutant " + std::to_string(m++), {{f, b}}, args});
    for (const Bytes& b : byteMutants(good.substr(0, 4096), 10, 4096))
      cases.push_back({seedName + " head mutant " + std::to_string(m++), {{f, b + good.substr(4096)}}, args});
  }
  runCases(cases);
}
#endif
