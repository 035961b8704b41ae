// `larmor-cli batch` (batch.hpp): options, the progress line with ETA (redrawn in place on a terminal,
// one plain line per item otherwise), --status, and the Slurm submission (script in batch_slurm.cpp).
#include "batch.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "larmor/batch/journal.hpp"
#include "larmor/batch/ownership.hpp"
#include "larmor/batch/runner.hpp"
#include "larmor/util/error.hpp"

namespace larmor::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string clock(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

/// The progress of a batch on stderr: a bar redrawn in place on a terminal, else one line per item.
class ProgressLine {
 public:
  explicit ProgressLine(bool tty) : tty_(tty) {}

  void update(const batch::ProgressEvent& ev) {
    using K = batch::ProgressEvent::Kind;
    if (ev.name.empty()) {  // a message (the device fallback)
      clearLine();
      std::cerr << "note: " << ev.error << "\n";
      draw(ev);
      return;
    }
    if (ev.kind == K::Started && !started_) {
      started_ = true;
      t0_ = std::chrono::steady_clock::now();
    }
    total_ = ev.total;
    if (ev.kind == K::Started && !ev.note.empty()) {  // why an item done before is done again
      clearLine();
      std::cerr << "batch: " << ev.name << ": " << ev.note << "\n";
    }
    if (ev.kind == K::Started) {
      current_ = ev.name;
      if (tty_) draw(ev);
      return;
    }
    if (ev.kind == K::Failed) {
      clearLine();
      std::cerr << "failed: " << ev.name << ": " << ev.error << "\n";
    }
    if (!tty_) {
      const char* what = ev.kind == K::Done ? "done" : ev.kind == K::Failed ? "failed" : "already done";
      std::cerr << "batch: [" << (ev.done + ev.failed + ev.skipped) << "/" << ev.total << "] " << what << " "
                << ev.name;
      if (ev.kind != K::Skipped)
        std::cerr << " on " << ev.device << " (" << std::fixed << std::setprecision(2) << ev.itemSeconds << " s)"
                  << std::defaultfloat << ", ETA " << clock(eta(ev));
      std::cerr << "\n";
      return;
    }
    draw(ev);
  }

  void finish() {
    if (tty_ && drawn_) std::cerr << "\n";
  }

 private:
  double eta(const batch::ProgressEvent& ev) const {
    const int processed = ev.done + ev.failed;
    const int remaining = ev.total - ev.done - ev.failed - ev.skipped;
    if (processed == 0 || !started_) return -1;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    return elapsed / processed * remaining;
  }
  void clearLine() {
    if (tty_ && drawn_) std::cerr << "\r\033[K";
  }
  void draw(const batch::ProgressEvent& ev) {
    if (!tty_) return;
    const int finished = ev.done + ev.failed + ev.skipped, width = 24;
    const int fill = total_ > 0 ? finished * width / total_ : 0;
    std::ostringstream line;
    line << "[" << std::string(static_cast<std::size_t>(fill), '#') << std::string(static_cast<std::size_t>(width - fill), '-')
         << "] " << finished << "/" << total_;
    if (ev.failed) line << ", " << ev.failed << " failed";
    if (ev.skipped) line << ", " << ev.skipped << " already done";
    line << ", ETA " << clock(eta(ev));
    if (!current_.empty()) line << "  " << current_;
    std::string text = line.str();
    if (text.size() > 100) text = text.substr(0, 100);
    std::cerr << "\r\033[K" << text << std::flush;
    drawn_ = true;
  }

  bool tty_, started_ = false, drawn_ = false;
  int total_ = 0;
  std::string current_;
  std::chrono::steady_clock::time_point t0_;
};

std::string absolutePath(const std::string& p) { return fs::absolute(p).lexically_normal().string(); }

std::string shellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

int printStatus(const std::string& dir) {
  const json s = batch::status(dir);
  const int total = s["total"], done = s["done"], failed = s["failed"], pending = s["pending"],
            started = s["started_not_finished"];
  std::cout << dir << ": " << total << " items: " << done << " done, " << failed << " failed, " << pending
            << " pending, " << started << " started but not finished (running or interrupted)\n";
  for (const auto& it : s["items"]) {
    const std::string st = it["status"];
    if (st == "done") continue;
    std::cout << "  " << std::left << std::setw(12) << st << " " << it["name"].get<std::string>();
    if (it.contains("host")) std::cout << " (" << it["host"].get<std::string>() << ")";
    if (it.contains("reason")) std::cout << ": " << it["reason"].get<std::string>();
    if (it.contains("error")) std::cout << ": " << it["error"].get<std::string>();
    std::cout << "\n";
  }
  return done == total ? 0 : 1;
}

void parseShard(const std::string& text, int& index, int& count) {
  const auto slash = text.find('/');
  try {
    require(slash != std::string::npos, "");
    std::size_t a = 0, b = 0;
    index = std::stoi(text.substr(0, slash), &a);
    count = std::stoi(text.substr(slash + 1), &b);
    require(a == slash && b == text.size() - slash - 1 && count >= 1 && index >= 0 && index < count, "");
  } catch (const std::exception&) {
    throw Error("--shard " + text + ": expected K/N with 0 <= K < N (e.g. $SLURM_ARRAY_TASK_ID/8)");
  }
}

int submitSlurm(const BatchArgs& a, const batch::Plan& plan) {
  const std::string dir = absolutePath(a.outputDir);
  std::error_code ec;
  // Before anything is written: the files this writes may replace only the batch's own earlier ones.
  const char* own[] = {"manifest.txt", "settings.json", batch::kPlanFile, "larmor-batch.sbatch"};
  if (fs::is_directory(dir, ec)) {
    const std::string journalPath = (fs::path(dir) / batch::kJournalFile).string();
    batch::requireBatchJournal(journalPath);
    const auto records = batch::Journal::read(journalPath);
    for (const char* name : own) batch::requireBatchFile(dir, name, records);
  }
  fs::create_directories(fs::path(dir) / "slurm-logs", ec);
  require(!ec, dir + ": cannot create the output folder (" + ec.message() + ")");
  const auto writeText = [](const std::string& path, const std::string& text) { batch::writeBatchFile(path, text); };
  // The batch as every task will see it: the resolved manifest and the settings, in the shared folder.
  std::ostringstream manifest;
  manifest << "# Written by larmor-cli batch --slurm: one input per line, then its own settings.\n";
  for (const auto& it : plan.items) {
    manifest << shellQuote(it.input);
    for (const auto& o : it.overrides) manifest << " " << shellQuote(o);
    manifest << "\n";
  }
  writeText((fs::path(dir) / "manifest.txt").string(), manifest.str());
  nlohmann::json settings = batch::settingsFileJson(plan.settings.settings, plan.settings.trajectory);
  settings["larmor_batch_settings"] = 1;  // the batch's own copy (ownership.hpp), not a user's settings file
  writeText((fs::path(dir) / "settings.json").string(), settings.dump(2) + "\n");
  writeText((fs::path(dir) / batch::kPlanFile).string(), batch::toJson(plan).dump(2) + "\n");
  const int items = static_cast<int>(plan.items.size());
  const int shards = a.shards > 0 ? std::min(a.shards, items) : std::max(1, (items + 7) / 8);
  std::string cli = "larmor-cli";
  if (a.modules.empty()) cli = fs::canonical("/proc/self/exe", ec).string();
  if (ec || cli.empty()) cli = "larmor-cli";
  const std::string script = (fs::path(dir) / "larmor-batch.sbatch").string();
  writeText(script, slurmScript(a, cli, items, shards));
  fs::permissions(script, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec, fs::perm_options::add,
                  ec);
  std::cout << "wrote " << script << ": a job array of " << shards << " task" << (shards == 1 ? "" : "s") << " over "
            << items << " input" << (items == 1 ? "" : "s") << "\n";
  if (a.dryRun) {
    std::cout << "not submitted (--dry-run); submit with: sbatch " << script << "\n";
    return 0;
  }
  const std::string cmd = "sbatch --parsable " + shellQuote(script) + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  require(p != nullptr, "sbatch: cannot run it (is Slurm's client installed and on PATH?)");
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int rc = ::pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  for (auto& c : out)
    if (c == '\n') c = ' ';
  require(rc == 0, "sbatch " + script + " failed: " + (out.empty() ? "no output" : out));
  std::cout << "submitted Slurm job " << out << "; follow it with: larmor-cli batch --status " << dir << "\n";
  return 0;
}

}  // namespace

CLI::App* addBatchCommand(CLI::App& app, BatchArgs& a) {
  auto* c = app.add_subcommand("batch", "Reconstruct many inputs with one settings file (several GPUs, resumable, Slurm)");
  c->add_option("INPUTS", a.inputs, "Files, folders (every loadable file inside) or @list.txt manifests");
  c->add_option("--manifest", a.manifests, "Manifest: one path per line, then optional settings (scan.h5 --lambda 0.01)");
  c->add_option("--settings", a.settings, "Settings: `recon --save-settings` JSON or the GUI's saved session");
  c->add_option("--output-dir", a.outputDir, "Output folder (also holds journal.jsonl, summary.json, contact-sheet.png)");
  c->add_option("--format", a.formats, "cfl|nii|dcm|png, repeatable or comma-separated (default cfl)")->delimiter(',');
  c->add_option("--devices", a.devices, "all (every GPU, else the CPU) | cpu | cuda:0,cuda:1,...");
  c->add_option("--server", a.server, "host:port of a running `larmor-cli serve`: reconstruct there (docs/streaming.md)");
  c->add_option("--jobs", a.jobs, "CPU workers when on the CPU (they share the OpenMP threads); with --server: items in flight (default 4)")->check(CLI::Range(1, 1024));
  c->add_option("--shard", a.shard, "K/N: only items i with i mod N = K (what each Slurm array task runs)");
  c->add_option("--status", a.status, "Report done/failed/pending of the batch in DIR (all shards); exit 0 when all done")
      ->type_name("DIR");
  c->add_flag("--slurm", a.slurm, "Write DIR/larmor-batch.sbatch (a job array) and submit it with sbatch");
  c->add_option("--partition", a.partition, "Slurm partition");
  c->add_option("--gpus-per-task", a.gpusPerTask, "Slurm: GPUs per array task (0: CPU tasks)")->check(CLI::Range(0, 64));
  c->add_option("--cpus-per-task", a.cpusPerTask, "Slurm: CPUs per array task")->check(CLI::Range(0, 4096));
  c->add_option("--max-parallel", a.maxParallel, "Slurm: at most K array tasks at once (--array=...%K)")
      ->check(CLI::Range(0, 100000));
  c->add_option("--shards", a.shards, "Slurm: array tasks (default: one per 8 inputs)")->check(CLI::Range(0, 100000));
  c->add_option("--time", a.time, "Slurm: time limit per task (as sbatch --time)");
  c->add_option("--module", a.modules, "Slurm: `module load` this first (repeatable); then larmor-cli from PATH");
  c->add_flag("--dry-run", a.dryRun, "Slurm: write the script but do not submit it");
  return c;
}

int batch(const BatchArgs& a) {
  if (!a.status.empty()) return printStatus(a.status);
  require(!a.settings.empty(), "batch: --settings S.json is required (from `recon --save-settings` or a GUI session)");
  require(!a.outputDir.empty(), "batch: --output-dir DIR is required");
  batch::Plan plan;
  plan.settings = batch::readSettingsFile(a.settings);
  plan.settingsPath = absolutePath(a.settings);
  if (!a.formats.empty()) plan.formats = a.formats;
  for (const auto& f : plan.formats) batch::checkFormat(f);
  plan.items = batch::collectItems(a.inputs, a.manifests);
  if (plan.settings.kind == "larmor_session")
    std::cerr << "note: settings from the GUI session " << a.settings << " (its device is not used; --devices is)\n";
  const bool slurmOnly = a.slurm || a.dryRun || !a.partition.empty() || a.gpusPerTask || a.maxParallel || a.shards ||
                         !a.time.empty() || !a.modules.empty() || a.cpusPerTask;
  if (a.slurm) return submitSlurm(a, plan);
  require(!slurmOnly, "batch: --partition, --gpus-per-task, --cpus-per-task, --max-parallel, --shards, --time, --module "
                      "and --dry-run apply with --slurm");

  batch::RunOptions ro;
  ro.outputDir = a.outputDir;
  ro.devices = a.devices;
  ro.jobs = a.jobs;
  if (!a.server.empty()) {  // this process only loads, streams and writes: CPU workers, one connection each
    require(a.devices == "all", "batch: --devices applies without --server (the server's own --devices choose)");
    ro.devices = "cpu";
    ro.jobs = a.jobs > 0 ? a.jobs : 4;
    ro.reconstruct = serverReconstruction(a.server, 600);
    ro.reconstructedOn = "server " + a.server;
  }
  if (!a.shard.empty()) parseShard(a.shard, ro.shardIndex, ro.shardCount);
  ProgressLine bar(::isatty(2) == 1);
  const batch::RunResult r = batch::run(plan, ro, [&](const batch::ProgressEvent& ev) { bar.update(ev); });
  bar.finish();
  std::cout << "batch: " << r.done << " done, " << r.failed << " failed, " << r.skipped << " already done, of " << r.total
            << (ro.shardCount > 1 ? " (shard " + a.shard + ")" : "") << " in " << std::fixed << std::setprecision(1)
            << r.wallSeconds << " s\n"
            << "summary: " << (fs::path(a.outputDir) / "summary.json").string() << ", contact sheet: "
            << (fs::path(a.outputDir) / "contact-sheet.png").string() << "\n";
  if (r.failed > 0) std::cerr << "larmor-cli: batch: " << r.failed << " item" << (r.failed == 1 ? "" : "s") << " failed (see above and summary.json)\n";
  return r.failed > 0 ? 2 : 0;
}

}  // namespace larmor::cli
