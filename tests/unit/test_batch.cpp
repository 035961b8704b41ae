// The batch engine's parts (larmor/batch/): manifest words and files, per-item settings through the
// settings table, both settings-file forms (the CLI's and the GUI session's), the journal under
// concurrent writers from several processes and after a torn write, the contact sheet's font and grid,
// the device plan, content hashes, the batch's own files and the one-batch-per-folder lock. The end-to-end behaviour (bad input in the middle, kill -9 and resume, Slurm) is in
// tests/e2e/batch_*.sh and tests/cluster/slurm_array.sh.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "larmor/batch/contact_sheet.hpp"
#include "larmor/batch/journal.hpp"
#include "larmor/batch/manifest.hpp"
#include "larmor/batch/ownership.hpp"
#include "larmor/batch/runner.hpp"
#include "larmor/batch/settings_file.hpp"
#include "larmor/io/raster_text.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/util/error.hpp"
#include "support/held_child.hpp"

namespace fs = std::filesystem;
using namespace larmor;
using namespace larmor::batch;

namespace {

fs::path freshDir(const std::string& name) {
  const fs::path dir = fs::path(LARMOR_TEST_TMP) / ("batch-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void touch(const fs::path& p, const std::string& text = "x") { std::ofstream(p) << text; }

}  // namespace

TEST(BatchManifest, SplitsWordsWithQuotesAndComments) {
  EXPECT_EQ(splitWords("a.h5 --lambda 0.01  # note"), (std::vector<std::string>{"a.h5", "--lambda", "0.01"}));
  EXPECT_EQ(splitWords("'my scan.h5' --method \"cg\""), (std::vector<std::string>{"my scan.h5", "--method", "cg"}));
  EXPECT_EQ(splitWords("   # only a comment"), std::vector<std::string>{});
  EXPECT_EQ(splitWords("'a#b.h5'"), std::vector<std::string>{"a#b.h5"});
  EXPECT_THROW(splitWords("'open.h5"), Error);
}

TEST(BatchManifest, ReadsPathsRelativeToTheManifestWithOverrides) {
  const fs::path dir = freshDir("manifest");
  fs::create_directories(dir / "sub");
  touch(dir / "sub" / "a.h5");
  touch(dir / "b.cfl");
  std::ofstream(dir / "list.txt") << "# cohort\nsub/a.h5 --lambda 0.01 --method cg\n\n" << (dir / "b.cfl").string() << "\n";
  const auto items = readManifest((dir / "list.txt").string());
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].input, (dir / "sub" / "a.h5").lexically_normal().string());
  EXPECT_EQ(items[0].overrides, (std::vector<std::string>{"--lambda", "0.01", "--method", "cg"}));
  EXPECT_EQ(items[0].origin, (dir / "list.txt").string() + ":2");
  EXPECT_TRUE(items[1].overrides.empty());
}

TEST(BatchManifest, AMalformedLineFailsNamingTheLine) {
  const fs::path dir = freshDir("manifest-bad");
  std::ofstream(dir / "list.txt") << "a.h5\nb.h5 --lamda 0.01\n";
  try {
    readManifest((dir / "list.txt").string());
    FAIL() << "a misspelt flag was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("list.txt:2: --lamda"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "list2.txt") << "a.h5 --lambda -3\n";
  EXPECT_THROW(readManifest((dir / "list2.txt").string()), Error);  // out of the table's range
  EXPECT_THROW(readManifest((dir / "missing.txt").string()), Error);
}

TEST(BatchManifest, FoldersListTheirLoadableFilesSortedAndNamesAreUnique) {
  const fs::path dir = freshDir("folders");
  fs::create_directories(dir / "one");
  fs::create_directories(dir / "two");
  for (const char* f : {"one/z.h5", "one/a.cfl", "one/a.hdr", "one/notes.txt", "one/b.dat", "two/z.h5"})
    touch(dir / f);
  auto items = collectItems({(dir / "one").string(), (dir / "two" / "z.h5").string()});
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(fs::path(items[0].input).filename(), "a.cfl");
  EXPECT_EQ(fs::path(items[1].input).filename(), "b.dat");
  EXPECT_EQ(fs::path(items[2].input).filename(), "z.h5");
  EXPECT_EQ(items[0].name, "a");
  std::set<std::string> names;
  for (const auto& it : items) names.insert(it.name);
  EXPECT_EQ(names.size(), items.size()) << "two z.h5 must get different output names";
  EXPECT_NE(items[2].name, "z");
  EXPECT_EQ(items[2].name.rfind("z-", 0), 0u);
  // The same list gives the same names (every Slurm shard must agree).
  auto again = collectItems({(dir / "one").string(), (dir / "two" / "z.h5").string()});
  for (std::size_t i = 0; i < items.size(); ++i) EXPECT_EQ(again[i].name, items[i].name);
  // The same file listed twice (a folder and by name) is one item.
  EXPECT_EQ(collectItems({(dir / "one").string(), (dir / "one" / "b.dat").string()}).size(), 3u);
  fs::create_directories(dir / "empty");
  EXPECT_THROW(collectItems({(dir / "empty").string()}), Error);
}

TEST(BatchManifest, OverridesFollowTheCommandLineRules) {
  recon::ReconSettings s;
  s.method = recon::Method::Cg;
  std::string traj;
  applyOverrides(s, traj, {"--lambda", "0.05", "--iters=12", "--traj", "t.cfl"}, "here");
  EXPECT_DOUBLE_EQ(s.iterative.lambda, 0.05);
  EXPECT_EQ(s.iterative.iterations, 12);
  EXPECT_EQ(traj, "t.cfl");
  // --method first and its defaults, then the other flags whatever their order.
  recon::ReconSettings t;
  applyOverrides(t, traj, {"--lambda", "0.002", "--method", "cs"}, "here");
  EXPECT_EQ(t.method, recon::Method::Cs);
  EXPECT_DOUBLE_EQ(t.iterative.lambda, 0.002);
  // A setting the method does not read is an error, as in `recon`.
  recon::ReconSettings f;
  try {
    applyOverrides(f, traj, {"--lambda", "0.1"}, "list.txt:4");
    FAIL() << "--lambda with --method fft was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("list.txt:4: --lambda"), std::string::npos) << e.what();
  }
}

TEST(BatchSettingsFile, CliFileAndGuiSessionGiveTheSameSettings) {
  const fs::path dir = freshDir("settings");
  recon::ReconSettings s;
  s.method = recon::Method::Cg;
  recon::settings::applyMethodDefaults(s);
  s.iterative.lambda = 0.03;
  s.iterative.iterations = 17;
  std::ofstream(dir / "cli.json") << settingsFileJson(s, "/data/traj.cfl").dump(2);
  // The GUI's saved session, as ui/session.cpp writes it (toJson(SessionState)).
  const nlohmann::json session = {
      {"larmor_session", 1}, {"settings", recon::toJson(s)}, {"device", "cuda:0"}, {"trajectory", "/data/traj.cfl"}};
  std::ofstream(dir / "scan.h5.larmor.json") << session.dump(2);
  const SettingsFile a = readSettingsFile((dir / "cli.json").string());
  const SettingsFile b = readSettingsFile((dir / "scan.h5.larmor.json").string());
  EXPECT_EQ(a.kind, "larmor_settings");
  EXPECT_EQ(b.kind, "larmor_session");
  EXPECT_EQ(recon::settings::toJson(a.settings), recon::settings::toJson(s));
  EXPECT_EQ(recon::settings::toJson(b.settings), recon::settings::toJson(s));
  EXPECT_EQ(a.trajectory, "/data/traj.cfl");
  EXPECT_EQ(b.trajectory, "/data/traj.cfl");
}

TEST(BatchSettingsFile, RejectsOtherFilesAndBadValuesNamingThem) {
  const fs::path dir = freshDir("settings-bad");
  std::ofstream(dir / "other.json") << R"({"settings": {"method": "cg"}})";
  std::ofstream(dir / "bad.json") << R"({"larmor_settings": 1, "settings": {"iterative": {"lambda": -1}}})";
  std::ofstream(dir / "text.json") << "not json";
  for (const char* f : {"other.json", "bad.json", "text.json", "missing.json"}) {
    try {
      readSettingsFile((dir / f).string());
      ADD_FAILURE() << f << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
  }
}

TEST(BatchJournal, ConcurrentWritersFromSeveralProcessesLoseNoRecord) {
  const fs::path dir = freshDir("journal");
  const std::string path = (dir / "journal.jsonl").string();
  constexpr int kProcesses = 4, kRecords = 150;
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        Journal j(path);
        // Long records (over PIPE_BUF) so that interleaving would show.
        for (int r = 0; r < kRecords; ++r) j.append({{"p", p}, {"r", r}, {"pad", std::string(6000, 'a' + p)}});
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  int skipped = -1;
  const auto records = Journal::read(path, &skipped);
  EXPECT_EQ(skipped, 0);
  ASSERT_EQ(records.size(), static_cast<std::size_t>(kProcesses * kRecords));
  std::vector<int> next(kProcesses, 0);
  for (const auto& r : records) {  // each writer's records whole and in its order
    const int p = r["p"];
    EXPECT_EQ(r["r"].get<int>(), next[static_cast<std::size_t>(p)]++);
    EXPECT_EQ(r["pad"].get<std::string>(), std::string(6000, 'a' + p));
  }
}

TEST(BatchJournal, ATornLastLineIsSkippedAndTheNextRecordStartsAFreshLine) {
  const fs::path dir = freshDir("journal-torn");
  const std::string path = (dir / "journal.jsonl").string();
  {
    Journal j(path);
    j.append({{"key", "a"}, {"event", "done"}});
  }
  std::ofstream(path, std::ios::app) << R"({"key": "b", "event": "sta)";  // killed inside write()
  {
    Journal j(path);
    j.append({{"key", "b"}, {"event", "failed"}});
  }
  int skipped = 0;
  const auto records = Journal::read(path, &skipped);
  EXPECT_EQ(skipped, 1);
  ASSERT_EQ(records.size(), 2u);
  const auto latest = latestByKey(records);
  EXPECT_EQ(latest.at("a")["event"], "done");
  EXPECT_EQ(latest.at("b")["event"], "failed");
  EXPECT_TRUE(Journal::read((dir / "none.jsonl").string()).empty());
}

TEST(BatchJournal, InputHashFollowsSizeAndModificationTime) {
  const fs::path dir = freshDir("hash");
  touch(dir / "a.h5", "abc");
  const std::string h1 = inputHash((dir / "a.h5").string());
  EXPECT_EQ(h1, inputHash((dir / "a.h5").string()));
  touch(dir / "a.h5", "abcd");
  EXPECT_NE(h1, inputHash((dir / "a.h5").string()));
  EXPECT_EQ(inputHash((dir / "missing.h5").string()), "");
  EXPECT_EQ(hex64(fnv1a("")), "cbf29ce484222325");  // FNV-1a's offset basis
  EXPECT_EQ(hex64(fnv1a("a")), "af63dc4c8601ec8c");  // the published test vector
}

TEST(BatchContactSheet, FontDrawsTheGlyphsAndTheGridHoldsEveryTile) {
  io::Image8 img;
  img.width = 7, img.height = 9;
  img.pixels.assign(63, 0);
  io::drawText(img, 1, 1, "l", io::greyInk(255));  // lower case drawn as the capital L: a column and a bottom row
  for (int y = 1; y <= 7; ++y) EXPECT_EQ(img.pixels[static_cast<std::size_t>(y * 7 + 1)], 255) << y;
  for (int x = 1; x <= 5; ++x) EXPECT_EQ(img.pixels[static_cast<std::size_t>(7 * 7 + x)], 255) << x;
  EXPECT_EQ(img.pixels[static_cast<std::size_t>(1 * 7 + 3)], 0);
  int lit = 0;
  for (auto p : img.pixels) lit += p == 255;
  EXPECT_EQ(lit, 7 + 4);

  io::Image8 full;
  full.width = 200, full.height = 100;
  full.pixels.assign(20000, 100);
  const io::Image8 t = thumbnail(full, 50);
  EXPECT_EQ(t.width, 50);
  EXPECT_EQ(t.height, 25);
  EXPECT_EQ(t.pixels[0], 100);
  std::vector<Tile> tiles(5, Tile{"scan", t});
  tiles[2].thumbnail = {};
  const io::Image8 sheet = contactSheet(tiles, 64);
  EXPECT_EQ(sheet.width, 3 * (64 + 8));   // ceil(sqrt(5)) columns
  EXPECT_EQ(sheet.height, 2 * (64 + 8 + 11));

  const fs::path dir = freshDir("pgm");
  writePgm((dir / "t.pgm").string(), t);
  const io::Image8 back = readPgm((dir / "t.pgm").string());
  EXPECT_EQ(back.width, t.width);
  EXPECT_EQ(back.pixels, t.pixels);
  touch(dir / "bad.pgm", "P5\n10 10\n255\nabc");
  EXPECT_THROW(readPgm((dir / "bad.pgm").string()), Error);
}

TEST(BatchDevices, CpuWorkersShareTheThreadsAndListsAreChecked) {
  std::string notice;
  const auto cpu = resolveDevices("cpu", 3, &notice);
  ASSERT_EQ(cpu.size(), 3u);
  for (const auto& w : cpu) {
    EXPECT_EQ(w.spec, "cpu");
    EXPECT_GE(w.ompThreads, 1);
  }
  EXPECT_THROW(resolveDevices("cuda:0,cuda:0", 0, &notice), Error);
  EXPECT_THROW(resolveDevices(",", 0, &notice), Error);
  EXPECT_EQ(outputPath("/o", "scan", "dcm"), "/o/scan/");
  EXPECT_EQ(outputPath("/o", "scan", "nii"), "/o/scan.nii");
  EXPECT_THROW(outputPath("/o", "scan", "jpg"), Error);
}

TEST(BatchOwnership, ContentHashFollowsTheBytesOfAFileAndOfAFolder) {
  const fs::path dir = freshDir("hash");
  touch(dir / "a.cfl", "one");
  const std::string h1 = contentHash((dir / "a.cfl").string());
  EXPECT_EQ(h1.size(), 16u);
  touch(dir / "a.cfl", "two");
  EXPECT_NE(contentHash((dir / "a.cfl").string()), h1);
  EXPECT_EQ(contentHash((dir / "missing").string()), "");
  fs::create_directories(dir / "s");
  touch(dir / "s" / "m_0001.dcm", "x");
  const std::string f1 = contentHash((dir / "s/").string());
  touch(dir / "s" / "m_0002.dcm", "y");
  EXPECT_NE(contentHash((dir / "s").string()), f1);
}

TEST(BatchOwnership, OwnFilesByProvenanceOrRecordedHashOthersRefused) {
  const fs::path dir = freshDir("own");
  const std::vector<nlohmann::json> none;
  touch(dir / "summary.json", "{\"larmor_batch_summary\": 1}");
  EXPECT_NO_THROW(requireBatchFile(dir.string(), "summary.json", none));
  touch(dir / "summary.json", "{\"mine\": 1}");
  EXPECT_THROW(requireBatchFile(dir.string(), "summary.json", none), Error);
  touch(dir / "contact-sheet.png", "pixels");
  EXPECT_THROW(requireBatchFile(dir.string(), "contact-sheet.png", none), Error);
  const std::vector<nlohmann::json> recorded = {
      {{"event", "file"}, {"file", "contact-sheet.png"}, {"content_hash", contentHash((dir / "contact-sheet.png").string())}}};
  EXPECT_NO_THROW(requireBatchFile(dir.string(), "contact-sheet.png", recorded));
  touch(dir / "manifest.txt", "scan.h5\n");
  EXPECT_THROW(requireBatchFile(dir.string(), "manifest.txt", none), Error);
  touch(dir / "journal.jsonl", "my diary\n");
  EXPECT_THROW(requireBatchJournal((dir / "journal.jsonl").string()), Error);
  touch(dir / "journal.jsonl", "{\"event\": \"started\"}\n");
  EXPECT_NO_THROW(requireBatchJournal((dir / "journal.jsonl").string()));
}

TEST(BatchOwnership, OneBatchPerFolderExceptShardsOfOnePlan) {
  const fs::path dir = freshDir("lock");
  larmor::testing::HeldChild first;
  ASSERT_NO_FATAL_FAILURE(first.start(
      [&](const auto& hold) {
        BatchLock lock(dir.string(), "plan-a");
        hold();
      },
      larmor::testing::ChildEnd::Exit));
  EXPECT_NO_THROW(BatchLock(dir.string(), "plan-a"));  // a shard of the running plan
  try {
    BatchLock other(dir.string(), "plan-b");
    ADD_FAILURE() << "a batch of another plan ran beside the first";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another batch"), std::string::npos) << e.what();
  }
  first.release();
  EXPECT_NO_THROW(BatchLock(dir.string(), "plan-b"));  // after it ended
}
