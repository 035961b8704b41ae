// Output safety (engine/include/larmor/io/output_safety.hpp, docs/reliability.md): outputs never destroy
// inputs or other people's files, the checks come before the work, .cfl pairs are published as a unit
// even with two writers, and a signal leaves no temporaries. Module-level cases first, then larmor-cli as a
// user runs it (LARMOR_CLI).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "larmor/io/cfl.hpp"
#ifdef LARMOR_HAVE_IO
#include "larmor/io/dicom.hpp"
#endif
#include "larmor/io/export.hpp"
#include "larmor/io/output_safety.hpp"
#include "larmor/util/error.hpp"
#include "larmor/util/temp_registry.hpp"

extern char** environ;

namespace fs = std::filesystem;
using namespace larmor;
using namespace larmor::io;

namespace {

std::string dir(const std::string& name) {
  const std::string d = std::string(LARMOR_TEST_TMP) + "/safety-" + std::to_string(::getpid()) + "/" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void put(const std::string& path, const std::string& content) { std::ofstream(path, std::ios::binary) << content; }

CArray filled(Shape s, float v) {
  CArray a(std::move(s));
  for (index_t i = 0; i < a.size(); ++i) a[i] = cfloat(v, -v);
  return a;
}

template <class F>
std::string errorOf(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A file that looks like DICOM (preamble, "DICM") but was not written by Larmor.
std::string foreignDicom(int n) { return std::string(128, '\0') + "DICM" + "scanner image " + std::to_string(n); }

struct RunResult {
  int exitCode;
  std::string err;
};

RunResult runCli(const std::string& args, const std::string& d) {
  static int calls = 0;
  const std::string stem = d + "/run-" + std::to_string(calls++);
  const std::string cmd = std::string(LARMOR_CLI) + " " + args + " >" + stem + ".out 2>" + stem + ".err";
  const int status = std::system(cmd.c_str());
  return {WEXITSTATUS(status), bytes(stem + ".err")};
}

bool hasTemporaries(const std::string& d) {
  for (const auto& e : fs::directory_iterator(d))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) return true;
  return false;
}

}  // namespace

// ---- module level ----

TEST(OutputSafety, HardLinkAndSymlinkToAnInputAreTheInput) {
  const std::string d = dir("links");
  writeCfl(d + "/k.cfl", filled({4, 4}, 1));
  fs::create_hard_link(d + "/k.cfl", d + "/hard.cfl");
  fs::create_symlink(d + "/k.hdr", d + "/sym.hdr");
  EXPECT_NE(errorOf([&] { requireNotAnInput(d + "/k.cfl", OutputRole::Image, {d + "/k.cfl"}); }).find("is the input"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { requireNotAnInput(d + "/hard.cfl", OutputRole::Image, {d + "/k.cfl"}); }).find("hard.cfl"),
            std::string::npos);
  // sym.cfl does not exist, but its .hdr member is a link to the input's header.
  EXPECT_NE(errorOf([&] { requireNotAnInput(d + "/sym.cfl", OutputRole::Image, {d + "/k.cfl"}); }).find("k.hdr"),
            std::string::npos);
  // "./k.cfl" and a path through ".." are the same file too.
  EXPECT_FALSE(errorOf([&] { requireNotAnInput(d + "/../links/./k.cfl", OutputRole::Image, {d + "/k.cfl"}); }).empty());
  EXPECT_TRUE(errorOf([&] { requireNotAnInput(d + "/other.cfl", OutputRole::Image, {d + "/k.cfl"}); }).empty());
}

TEST(OutputSafety, CflPairEitherWayRound) {
  const std::string d = dir("pair");
  writeCfl(d + "/k.cfl", filled({4, 4}, 1));
  // A JSON onto the input's header breaks the pair; an image .cfl onto an input named by its .hdr.
  EXPECT_FALSE(errorOf([&] { requireNotAnInput(d + "/k.hdr", OutputRole::Json, {d + "/k.cfl"}); }).empty());
  EXPECT_FALSE(errorOf([&] { requireNotAnInput(d + "/k.cfl", OutputRole::Image, {d + "/k.hdr"}); }).empty());
  EXPECT_FALSE(errorOf([&] { requireNotAnInput(d + "/k.cfl", OutputRole::Image, {d + "/k"}); }).empty());
  // Two outputs of one run may not share a pair either.
  PlannedOutput img{d + "/o.cfl", OutputRole::Image, {}, {}, 0};
  PlannedOutput json{d + "/o.hdr", OutputRole::Json, {}, {}, 0};
  EXPECT_NE(errorOf([&] { checkOutputs({img, json}, {}); }).find("is also the output"), std::string::npos);
}

TEST(OutputSafety, ForeignDicomFolderIsRefusedAndUntouched) {
  const std::string d = dir("foreign");
  const std::string scan = d + "/scanner_dicoms";
  fs::create_directories(scan);
  for (int i = 1; i <= 3; ++i) put(scan + "/IM_000" + std::to_string(i) + ".dcm", foreignDicom(i));
  const std::string e = errorOf([&] { (void)exportFolderState(scan + "/", scan + "/"); });
  EXPECT_NE(e.find("scanner_dicoms"), std::string::npos) << e;
  EXPECT_NE(e.find("Larmor did not write"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);
  EXPECT_FALSE(errorOf([&] { checkOutputPath(scan + "/"); }).empty());
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(bytes(scan + "/IM_000" + std::to_string(i) + ".dcm"), foreignDicom(i));
}

TEST(OutputSafety, PreviousExportIsRecognised) {
  const std::string d = dir("previous");
  // With the marker.
  fs::create_directories(d + "/a");
  put(d + "/a/" + kExportMarker, "Larmor\n");
  put(d + "/a/magnitude_0001.dcm", foreignDicom(1));
  EXPECT_EQ(exportFolderState(d + "/a", "a"), FolderState::PreviousExport);
  // The marker does not make someone's extra file ours.
  put(d + "/a/notes.txt", "mine");
  EXPECT_FALSE(errorOf([&] { (void)exportFolderState(d + "/a", "a"); }).empty());
  // An export made before the marker: every file carries (0019,0010) LO "LARMOR".
  fs::create_directories(d + "/b");
  const char sig[] = {0x19, 0x00, 0x10, 0x00, 'L', 'O', 0x06, 0x00, 'L', 'A', 'R', 'M', 'O', 'R'};
  put(d + "/b/magnitude_0001.dcm", std::string(128, '\0') + "DICM" + std::string(sig, sizeof sig));
  EXPECT_TRUE(isLarmorDicomFile(d + "/b/magnitude_0001.dcm"));
  EXPECT_EQ(exportFolderState(d + "/b", "b"), FolderState::PreviousExport);
  put(d + "/b/IM_0002.dcm", foreignDicom(2));
  EXPECT_FALSE(errorOf([&] { (void)exportFolderState(d + "/b", "b"); }).empty());
  EXPECT_EQ(exportFolderState(d + "/absent", "x"), FolderState::Absent);
  fs::create_directories(d + "/empty");
  EXPECT_EQ(exportFolderState(d + "/empty", "x"), FolderState::Empty);
}

TEST(OutputSafety, MissingOrReadOnlyParent) {
  const std::string d = dir("parent");
  EXPECT_NE(errorOf([&] { requireWritableFolder(d + "/nope", d + "/nope/x.cfl"); }).find("does not exist"),
            std::string::npos);
  PlannedOutput json{d + "/nope/r.json", OutputRole::Json, {}, {}, 0};
  EXPECT_FALSE(errorOf([&] { checkOutputs({json}, {}); }).empty());
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only folders; the permission case needs a user";
  fs::create_directories(d + "/ro");
  fs::permissions(d + "/ro", fs::perms::owner_read | fs::perms::owner_exec);
  const std::string e = errorOf([&] { requireWritableFolder(d + "/ro", d + "/ro/x.cfl"); });
  fs::permissions(d + "/ro", fs::perms::owner_all);
  EXPECT_NE(e.find("cannot write in"), std::string::npos) << e;
}

TEST(OutputSafety, FormatLimitsAndFreeSpace) {
  EXPECT_NE(errorOf([] { checkFormatLimits(OutputKind::Dicom, Shape{65536, 4, 1, 1, 1}, "d/"); }).find("65535"),
            std::string::npos);
  EXPECT_TRUE(errorOf([] { checkFormatLimits(OutputKind::Dicom, Shape{65535, 4, 1, 1, 1}, "d/"); }).empty());
  EXPECT_NE(errorOf([] { checkFormatLimits(OutputKind::Nifti, Shape{4, 4, 1, 1, 40000}, "x.nii"); }).find("32767"),
            std::string::npos);
  EXPECT_FALSE(errorOf([] { checkFormatLimits(OutputKind::Png, Shape{60000, 60000, 1, 1, 1}, "x.png"); }).empty());
  EXPECT_TRUE(errorOf([] { checkFormatLimits(OutputKind::Bart, Shape{65536, 4, 1, 1, 1}, "x.cfl"); }).empty());
  // The estimate drives the free-space check: an image of 2^60 voxels fits no disk.
  const std::string d = dir("space");
  PlannedOutput img{d + "/huge.cfl", OutputRole::Image, Shape{1 << 20, 1 << 20, 1 << 20, 1, 1}, {}, 0};
  EXPECT_NE(errorOf([&] { checkOutputs({img}, {}); }).find("free disk space"), std::string::npos);
}

TEST(OutputSafety, RegisteredTemporariesAreRemoved) {
  const std::string d = dir("registry");
  put(d + "/a.cfl.tmp-aaaaaa", "x");
  fs::create_directories(d + "/s.tmp-bbbbbb");
  put(d + "/s.tmp-bbbbbb/magnitude_0001.dcm", "x");
  put(d + "/keep.cfl", "x");
  const int a = registerTemporary(d + "/a.cfl.tmp-aaaaaa", TempKind::File);
  const int s = registerTemporary(d + "/s.tmp-bbbbbb", TempKind::Directory);
  ASSERT_GE(a, 0);
  ASSERT_GE(s, 0);
  removeRegisteredTemporaries();
  unregisterTemporary(a);
  unregisterTemporary(s);
  EXPECT_FALSE(fs::exists(d + "/a.cfl.tmp-aaaaaa"));
  EXPECT_FALSE(fs::exists(d + "/s.tmp-bbbbbb"));
  EXPECT_TRUE(fs::exists(d + "/keep.cfl"));
}

#ifdef LARMOR_HAVE_IO
TEST(OutputSafety, DicomExportWritesTheMarkerAndReplacesOnlyItsOwn) {
  const std::string d = dir("dicom");
  recon::ReconResult r;
  r.image = filled({8, 8, 1, 1, 1}, 1);
  Dataset ds;
  ds.source = "simulated";
  ds.header.encoded[0] = ds.header.encoded[1] = ds.header.recon[0] = ds.header.recon[1] = 8;
  ExportOptions o;
  o.printWarnings = false;
  (void)writeImageOutput(d + "/series/", r, ds, o);
  EXPECT_TRUE(fs::exists(d + "/series/" + std::string(kExportMarker)));
  EXPECT_NO_THROW((void)writeImageOutput(d + "/series/", r, ds, o));  // our earlier export: replaced
  fs::create_directories(d + "/scan");
  for (int i = 1; i <= 3; ++i) put(d + "/scan/IM_000" + std::to_string(i) + ".dcm", foreignDicom(i));
  EXPECT_THROW((void)writeImageOutput(d + "/scan/", r, ds, o), Error);
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(bytes(d + "/scan/IM_000" + std::to_string(i) + ".dcm"), foreignDicom(i));
  // The folder gets 0777 & ~umask like any new folder.
  const mode_t old = ::umask(077);
  (void)writeImageOutput(d + "/private/", r, ds, o);
  ::umask(old);
  EXPECT_EQ(static_cast<unsigned>(fs::status(d + "/private").permissions() & fs::perms::all), 0700u);
  // Values of 1e-21 (k-space scaled far down) used to give WindowWidth "0", which is invalid.
  recon::ReconResult tiny = r;
  for (index_t i = 0; i < tiny.image.size(); ++i) tiny.image[i] = cfloat(1e-21f * static_cast<float>(i % 7), 0);
  const auto rep = writeImageOutput(d + "/tiny/", tiny, ds, o);
  const DicomInstance inst = readDicomFile(rep.files.front());
  const std::string width = inst.get(0x0028, 0x1051);
  EXPECT_GT(std::strtod(width.c_str(), nullptr), 0.0) << "WindowWidth '" << width << "'";
  // A non-finite image is refused before anything is written.
  r.image[3] = cfloat(std::numeric_limits<float>::quiet_NaN(), 0);
  EXPECT_NE(errorOf([&] { (void)writeImageOutput(d + "/nan.nii", r, ds, o); }).find("non-finite"), std::string::npos);
  EXPECT_FALSE(fs::exists(d + "/nan.nii"));
}
#endif

// Two processes write one pair over and over with different shapes while this one reads it: every read
// sees a matching pair, and the last pair is whole and from one writer.
TEST(OutputSafety, ConcurrentWritersNeverMixAPair) {
  const std::string d = dir("concurrent");
  const std::string path = d + "/o.cfl";
  writeCfl(path, filled({16, 16}, 1));
  constexpr int kRounds = 300;
  pid_t kids[2];
  for (int k = 0; k < 2; ++k) {
    kids[k] = ::fork();
    ASSERT_GE(kids[k], 0);
    if (kids[k] == 0) {
      const CArray a = filled(k == 0 ? Shape{16, 16} : Shape{8, 64, 3}, k == 0 ? 1.f : 2.f);
      int rc = 0;
      for (int i = 0; i < kRounds; ++i) {
        try {
          writeCfl(path, a);
        } catch (const std::exception& e) {
          if (rc == 0) std::fprintf(stderr, "writer %d: %s\n", k, e.what());
          rc = 1;
        }
      }
      ::_exit(rc);
    }
  }
  int mixed = 0, reads = 0;
  std::string firstError;
  bool alive[2] = {true, true};
  int codes[2] = {-1, -1};
  while (alive[0] || alive[1]) {
    try {
      const CArray a = readCfl(path);
      ++reads;
      const float v = a[0].real();
      if (!((v == 1.f && a.size() == 256) || (v == 2.f && a.size() == 8 * 64 * 3))) ++mixed;
    } catch (const Error& e) {
      ++mixed;
      if (firstError.empty()) firstError = e.what();
    }
    for (int k = 0; k < 2; ++k) {
      int status = 0;
      if (alive[k] && ::waitpid(kids[k], &status, WNOHANG) == kids[k]) {
        alive[k] = false;
        codes[k] = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
      }
    }
  }
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 0);
  EXPECT_EQ(mixed, 0) << "of " << reads << " reads; first: " << firstError;
  const CArray last = readCfl(path);
  const float v = last[0].real();
  for (index_t i = 0; i < last.size(); ++i) ASSERT_EQ(last[i].real(), v);
  EXPECT_TRUE((v == 1.f && last.size() == 256) || (v == 2.f && last.size() == 8 * 64 * 3));
  EXPECT_FALSE(hasTemporaries(d));
}

// ---- larmor-cli ----

TEST(OutputSafetyCli, ReconOntoItsInputIsRefusedAndTheInputUnchanged) {
  const std::string d = dir("cli-input");
  ASSERT_EQ(runCli("simulate --matrix 16 --coils 2 --output " + d + "/k.cfl", d).exitCode, 0);
  const std::string cfl = bytes(d + "/k.cfl"), hdr = bytes(d + "/k.hdr");
  for (const std::string& out : {d + "/k.cfl", d + "/./k.cfl"}) {
    const RunResult r = runCli("recon " + d + "/k.cfl --method fft --output " + out, d);
    EXPECT_EQ(r.exitCode, 1);
    EXPECT_NE(r.err.find("is the input"), std::string::npos) << r.err;
  }
  // --json onto the input's header, or onto a raw file: refused before it is read.
  EXPECT_EQ(runCli("recon " + d + "/k.cfl --method fft --output " + d + "/o.cfl --json " + d + "/k.hdr", d).exitCode, 1);
  put(d + "/in.h5", "raw data");
  const RunResult j = runCli("recon " + d + "/in.h5 --output " + d + "/o.cfl --json " + d + "/in.h5", d);
  EXPECT_EQ(j.exitCode, 1);
  EXPECT_NE(j.err.find("in.h5: is the input"), std::string::npos) << j.err;
  EXPECT_EQ(bytes(d + "/in.h5"), "raw data");
  EXPECT_EQ(bytes(d + "/k.cfl"), cfl);
  EXPECT_EQ(bytes(d + "/k.hdr"), hdr);
  EXPECT_FALSE(fs::exists(d + "/o.cfl"));
  // A --json in a missing folder fails before the image is written.
  const RunResult m = runCli("recon " + d + "/k.cfl --method fft --output " + d + "/o.cfl --json " + d + "/no/r.json", d);
  EXPECT_EQ(m.exitCode, 1);
  EXPECT_FALSE(fs::exists(d + "/o.cfl"));
}

TEST(OutputSafetyCli, CompareMapOntoTheTestImageIsRefused) {
  const std::string d = dir("cli-compare");
  writeCfl(d + "/ref.cfl", filled({8, 8}, 1));
  writeCfl(d + "/img.cfl", filled({8, 8}, 2));
  const std::string before = bytes(d + "/img.cfl");
  const RunResult r = runCli("compare --ref " + d + "/ref.cfl --test " + d + "/img.cfl --map " + d + "/img.cfl", d);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("is the input"), std::string::npos) << r.err;
  EXPECT_EQ(bytes(d + "/img.cfl"), before);
}

TEST(OutputSafetyCli, ForeignDicomFolderUntouched) {
  const std::string d = dir("cli-dicom");
  ASSERT_EQ(runCli("simulate --matrix 16 --coils 2 --output " + d + "/k.cfl", d).exitCode, 0);
  fs::create_directories(d + "/scanner_dicoms");
  for (int i = 1; i <= 3; ++i) put(d + "/scanner_dicoms/IM_000" + std::to_string(i) + ".dcm", foreignDicom(i));
  const RunResult r = runCli("recon " + d + "/k.cfl --method fft --output " + d + "/scanner_dicoms/", d);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("scanner_dicoms"), std::string::npos) << r.err;
  int n = 0;
  for (const auto& e : fs::directory_iterator(d + "/scanner_dicoms")) {
    (void)e;
    ++n;
  }
  EXPECT_EQ(n, 3);
  for (int i = 1; i <= 3; ++i)
    EXPECT_EQ(bytes(d + "/scanner_dicoms/IM_000" + std::to_string(i) + ".dcm"), foreignDicom(i));
}

TEST(OutputSafetyCli, MatrixBeyondTheFormatIsRefusedBeforeTheWork) {
  const std::string d = dir("cli-limits");
  put(d + "/in.h5", "not even read");  // the limit is known from --matrix alone, before loading
  const RunResult r = runCli("recon " + d + "/in.h5 --matrix 40000x4 --output " + d + "/o.nii", d);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("32767"), std::string::npos) << r.err;
#ifdef LARMOR_HAVE_IO
  const RunResult s = runCli("recon " + d + "/in.h5 --matrix 65536x4 --output " + d + "/series/", d);
  EXPECT_EQ(s.exitCode, 1);
  EXPECT_NE(s.err.find("65535"), std::string::npos) << s.err;
#endif
}

// SIGTERM while the k-space is being written: the handler removes the temporary, nothing else is left.
TEST(OutputSafetyCli, SigtermDuringAWriteLeavesNoTemporaries) {
  const std::string d = dir("cli-sigterm");
  const std::string out = d + "/big.cfl";
  std::vector<std::string> args = {LARMOR_CLI, "simulate", "--matrix", "1024", "--coils", "16", "--output", out};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  ASSERT_EQ(::posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  bool sawTemp = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    if (hasTemporaries(d)) {
      sawTemp = true;
      ::kill(pid, SIGTERM);
      break;
    }
    if (::waitpid(pid, nullptr, WNOHANG) == pid) {
      pid = 0;
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  int status = 0;
  if (pid > 0) ::waitpid(pid, &status, 0);
  if (!sawTemp) GTEST_SKIP() << "the write finished before a temporary was seen";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << "status " << status;
  EXPECT_FALSE(hasTemporaries(d));
  EXPECT_FALSE(fs::exists(out) && !fs::exists(d + "/big.hdr")) << "a .cfl without its header";
}

// Messages name the right thing, on one line.
TEST(OutputSafetyCli, MessagesNameTheRightThingOnOneLine) {
  const std::string d = dir("cli-messages");
  const RunResult parse = runCli("recon --no-such-option", d);
  EXPECT_EQ(parse.exitCode, 1);
  EXPECT_EQ(std::count(parse.err.begin(), parse.err.end(), '\n'), 1) << parse.err;
  writeCfl(d + "/k.cfl", filled({1, 8, 4, 2}, 1));
  const RunResult centre = runCli("recon " + d + "/k.cfl --output " + d + "/o.nii --window-center nan", d);
  EXPECT_EQ(centre.exitCode, 1);
  EXPECT_NE(centre.err.find("window centre"), std::string::npos) << centre.err;
  // An all-zero BART trajectory is named as such (it used to be "k = (0.75, 0, 0) beyond the 1x1 matrix").
  writeCfl(d + "/t.cfl", CArray(Shape{3, 8, 4}));
  const RunResult zero = runCli("recon " + d + "/k.cfl --traj " + d + "/t.cfl --output " + d + "/o.cfl", d);
  EXPECT_EQ(zero.exitCode, 1);
  EXPECT_NE(zero.err.find("all zeros"), std::string::npos) << zero.err;
}
