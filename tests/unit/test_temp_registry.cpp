// Temporaries (engine/include/larmor/util/temp_registry.hpp): Larmor removes only what this process, or a
// dead Larmor process that left a run record, created. A user's files named like temporaries, however old,
// survive; a killed run's leftovers are removed by the next run in that folder; a live run's are not.
// Killed runs are forked children that end with SIGKILL (no clean-up of their own).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "larmor/util/atomic_file.hpp"
#include "larmor/util/error.hpp"
#include "larmor/util/temp_registry.hpp"
#include "support/held_child.hpp"
#include "support/scratch_files.hpp"

namespace fs = std::filesystem;
using namespace larmor;

namespace {

using larmor::testing::bytes;
using larmor::testing::put;

std::string dir(const std::string& name) { return larmor::testing::scratchDir("temps", name); }

void age(const std::string& path, std::chrono::hours h) {
  fs::last_write_time(path, fs::file_time_type::clock::now() - h);
}

int records(const std::string& d) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(d))
    if (e.path().filename().string().rfind(kRunRecordPrefix, 0) == 0) ++n;
  return n;
}

// Runs `body` in a child that then dies by SIGKILL, as a killed larmor-cli would.
template <class F>
void killedRun(F&& body) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    try {
      body();
    } catch (...) {
      ::_exit(3);
    }
    ::raise(SIGKILL);
    ::_exit(4);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
}

// A user's folder of old files whose names look like an earlier version's temporaries.
void userFiles(const std::string& d) {
  fs::create_directories(d + "/study.tmp-201907");
  put(d + "/study.tmp-201907/IM_0001.dcm", "scanner");
  put(d + "/mydata.h5.tmp-copy01", "hdf5");
  put(d + "/atlas.nii.tmp-v2save", "nifti");
  put(d + "/results.json.tmp-final1", "{}");
  put(d + "/o.cfl.larmor.tmp-123-abcdef-1", "looks like ours, listed in no record");
  for (const char* p : {"/study.tmp-201907", "/mydata.h5.tmp-copy01", "/atlas.nii.tmp-v2save", "/results.json.tmp-final1",
                        "/o.cfl.larmor.tmp-123-abcdef-1"})
    age(d + p, std::chrono::hours(3));
}

void expectUserFiles(const std::string& d) {
  EXPECT_EQ(bytes(d + "/study.tmp-201907/IM_0001.dcm"), "scanner");
  EXPECT_EQ(bytes(d + "/mydata.h5.tmp-copy01"), "hdf5");
  EXPECT_EQ(bytes(d + "/atlas.nii.tmp-v2save"), "nifti");
  EXPECT_EQ(bytes(d + "/results.json.tmp-final1"), "{}");
  EXPECT_TRUE(fs::exists(d + "/o.cfl.larmor.tmp-123-abcdef-1"));
}

void writeAtomically(const std::string& path, const std::string& text) {
  AtomicFile f(path);
  put(f.tempPath(), text);
  f.commit();
}

}  // namespace

TEST(TempRegistry, UserFilesNamedLikeTemporariesSurviveAWrite) {
  const std::string d = dir("user");
  userFiles(d);
  writeAtomically(d + "/z.json", "{\"a\": 1}");
  EXPECT_EQ(removeDeadRunTemporaries(d), 0);
  expectUserFiles(d);
  EXPECT_EQ(bytes(d + "/z.json"), "{\"a\": 1}");
  EXPECT_EQ(records(d), 0) << "a finished write leaves no run record";
}

TEST(TempRegistry, TheRecordListsATemporaryBeforeItExists) {
  const std::string d = dir("record");
  Temporary t = reserveTemporary(d + "/o.nii", TempKind::File);
  EXPECT_FALSE(fs::exists(t.path));
  EXPECT_NE(fs::path(t.path).filename().string().find("o.nii.larmor.tmp-"), std::string::npos) << t.path;
  ASSERT_EQ(records(d), 1);
  for (const auto& e : fs::directory_iterator(d)) {
    const std::string text = bytes(e.path().string());
    EXPECT_EQ(text.rfind("larmor-run 1 pid=" + std::to_string(::getpid()), 0), 0u) << text;
    EXPECT_NE(text.find("F\t" + fs::path(t.path).filename().string() + "\n"), std::string::npos) << text;
  }
  EXPECT_EQ(removeDeadRunTemporaries(d), 0) << "a live run's record is not taken";
  releaseTemporary(t);
  EXPECT_EQ(records(d), 0);
}

TEST(TempRegistry, AKilledRunsLeftoversAreRemovedAndNothingElse) {
  const std::string d = dir("killed");
  userFiles(d);
  std::string file, series;
  killedRun([&] {
    Temporary f = reserveTemporary(d + "/o.cfl", TempKind::File);
    put(f.path, "half written");
    Temporary s = reserveTemporary(d + "/series", TempKind::Directory);
    fs::create_directories(s.path);
    put(s.path + "/magnitude_0001.dcm", "x");
    put(d + "/names", f.path + "\n" + s.path + "\n");
  });
  std::ifstream names(d + "/names");
  std::getline(names, file);
  std::getline(names, series);
  ASSERT_TRUE(fs::exists(file));
  ASSERT_TRUE(fs::exists(series + "/magnitude_0001.dcm"));
  EXPECT_EQ(records(d), 1);
  // The next write into the folder cleans up the dead run, once per process and folder.
  writeAtomically(d + "/next.json", "{}");
  EXPECT_FALSE(fs::exists(file));
  EXPECT_FALSE(fs::exists(series));
  EXPECT_EQ(records(d), 0);
  expectUserFiles(d);
}

TEST(TempRegistry, APreviousExportMovedAsideIsPutBackWhenTheNewOneNeverArrived) {
  const std::string d = dir("swap");
  killedRun([&] {
    Temporary old = reserveTemporary(d + "/series", TempKind::Directory, "old");
    fs::create_directories(old.path);  // the previous export, moved aside; the run died before the new one
    put(old.path + "/magnitude_0001.dcm", "previous");
    put(old.path + "/.larmor-export", "marker");
  });
  EXPECT_EQ(removeDeadRunTemporaries(d), 1);
  EXPECT_EQ(bytes(d + "/series/magnitude_0001.dcm"), "previous");
  EXPECT_EQ(records(d), 0);
}

TEST(TempRegistry, ALiveRunIsLeftAlone) {
  const std::string d = dir("live");
  larmor::testing::HeldChild run;  // killed once the parent has tried
  ASSERT_NO_FATAL_FAILURE(run.start(
      [&](const auto& hold) {
        Temporary f = reserveTemporary(d + "/o.cfl", TempKind::File);
        put(f.path, "being written");
        hold();
      },
      larmor::testing::ChildEnd::Kill));
  EXPECT_EQ(removeDeadRunTemporaries(d), 0);
  int temps = 0;
  for (const auto& e : fs::directory_iterator(d))
    if (e.path().filename().string().find(".larmor.tmp-") != std::string::npos) ++temps;
  EXPECT_EQ(temps, 1);
  run.release();
  EXPECT_EQ(removeDeadRunTemporaries(d), 1);
  for (const auto& e : fs::directory_iterator(d)) ADD_FAILURE() << "left: " << e.path();
}

TEST(TempRegistry, ASignalRemovesTheTemporariesAndTheRecord) {
  const std::string d = dir("signal");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    installTempCleanupOnSignals();
    Temporary f = reserveTemporary(d + "/o.cfl", TempKind::File);
    put(f.path, "x");
    Temporary s = reserveTemporary(d + "/series", TempKind::Directory);
    fs::create_directories(s.path);
    put(s.path + "/magnitude_0001.dcm", "x");
    ::raise(SIGTERM);
    ::_exit(4);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << "status " << status;
  for (const auto& e : fs::directory_iterator(d)) ADD_FAILURE() << "left: " << e.path();
}

TEST(TempRegistry, AFolderThatCannotTakeTheRecordIsAnErrorWithTheReason) {
  const std::string missing = std::string(LARMOR_TEST_TMP) + "/temps-no-such-folder/x/o.cfl";
  try {
    (void)reserveTemporary(missing, TempKind::File);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind(missing, 0), 0u) << e.what();
  }
}
