// A batch's own files and outputs, proven by content hashes in the journal or provenance inside the file,
// and the one-batch-per-folder lock (larmor/batch/ownership.hpp).
#include "larmor/batch/ownership.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <system_error>

#include "larmor/batch/journal.hpp"
#include "larmor/util/atomic_file.hpp"
#include "larmor/util/error.hpp"

namespace larmor::batch {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::uint64_t hashFile(const std::string& path, std::uint64_t h, bool* ok) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *ok = false;
    return h;
  }
  std::string buf(1 << 20, '\0');
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) *ok = false;
    if (n <= 0) break;
    h = fnv1a(std::string_view(buf.data(), static_cast<std::size_t>(n)), h);
  }
  ::close(fd);
  return h;
}

std::string readHead(const std::string& path, std::size_t limit) {
  std::ifstream in(path, std::ios::binary);
  std::string s(limit, '\0');
  in.read(s.data(), static_cast<std::streamsize>(limit));
  s.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
  return s;
}

json smallJson(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec || size > (64u << 20)) return nullptr;
  const json j = json::parse(readHead(path, static_cast<std::size_t>(size)), nullptr, false);
  return j.is_discarded() ? json() : j;
}

std::string firstLines(const std::string& path, int n) {
  std::istringstream in(readHead(path, 4096));
  std::string line, out;
  for (int i = 0; i < n && std::getline(in, line); ++i) out += line + "\n";
  return out;
}

// The provenance a batch writes inside each of its files.
bool hasBatchProvenance(const std::string& path, const std::string& name) {
  if (name == "batch-plan.json" || name == "summary.json" || name == "settings.json") {
    const json j = smallJson(path);
    const char* key = name == "batch-plan.json" ? "larmor_batch_plan"
                      : name == "summary.json"  ? "larmor_batch_summary"
                                                : "larmor_batch_settings";
    return j.is_object() && j.contains(key);
  }
  if (name == "manifest.txt") return firstLines(path, 1).rfind("# Written by larmor-cli batch --slurm", 0) == 0;
  if (name == "larmor-batch.sbatch") {
    const std::string head = firstLines(path, 2);
    return head.find("\n# Written by larmor-cli ") != std::string::npos && head.find("(batch --slurm)") != std::string::npos;
  }
  return false;
}

}  // namespace

std::string contentHash(const std::string& path) {
  std::error_code ec;
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const auto st = fs::status(p, ec);
  bool ok = true;
  std::uint64_t h = 14695981039346656037ull;
  if (fs::is_regular_file(st)) {
    h = hashFile(p, h, &ok);
  } else if (fs::is_directory(st)) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(p, ec)) names.push_back(e.path().filename().string());
    if (ec) return {};
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      h = fnv1a(n + '\0', h);
      h = hashFile((fs::path(p) / n).string(), h, &ok);
    }
  } else {
    return {};
  }
  return ok ? hex64(h) : std::string();
}

void requireBatchJournal(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return;
  if (!fs::is_regular_file(fs::symlink_status(path, ec)))
    throw Error(path + ": exists and is not a file; a batch keeps its journal there, choose another --output-dir");
  std::istringstream in(readHead(path, 64 * 1024));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("event")) return;
    break;
  }
  if (fs::file_size(path, ec) == 0) return;
  throw Error(path + ": exists and is not a Larmor batch journal; not appended to (move it or use another --output-dir)");
}

void requireBatchFile(const std::string& dir, const std::string& name, const std::vector<json>& records) {
  const std::string path = (fs::path(dir) / name).string();
  std::error_code ec;
  const auto st = fs::symlink_status(path, ec);
  if (!fs::exists(st)) return;
  if (!fs::is_regular_file(st))
    throw Error(path + ": exists and is not a file written by a Larmor batch; not replaced (move it or use another "
                       "--output-dir)");
  if (hasBatchProvenance(path, name)) return;
  const std::string now = contentHash(path);
  bool anyFileRecord = false;
  const auto recorded = [&](const std::vector<json>& rs) {
    for (const auto& r : rs) {
      if (r.value("event", "") != "file") continue;
      anyFileRecord = true;
      if (r.value("file", "") == name && r.value("content_hash", "") == now) return true;
    }
    return false;
  };
  // Once more from the file: a shard of this batch may have recorded and renamed it since `records` was read.
  if (recorded(records) || recorded(Journal::read((fs::path(dir) / "journal.jsonl").string()))) return;
  // A batch folder from before the "file" records: its contact sheet is the batch's when its summary is.
  if (name == "contact-sheet.png" && !anyFileRecord && !records.empty() &&
      hasBatchProvenance((fs::path(dir) / "summary.json").string(), "summary.json"))
    return;
  throw Error(path + ": exists and is not a file written by a Larmor batch (neither recorded in its journal nor "
                     "marked inside); not replaced (move it or use another --output-dir)");
}

void writeBytes(const std::string& path, const std::string& bytes, const std::string& forMessages) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(forMessages + ": cannot write (" + std::strerror(errno) + ")");
  const char* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "nothing written";
      ::close(fd);
      throw Error(forMessages + ": cannot write (" + why + ")");
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) throw Error(forMessages + ": cannot write (" + std::strerror(errno) + ")");
}

void writeBatchFile(const std::string& path, const std::string& bytes) {
  AtomicFile file(path);
  writeBytes(file.tempPath(), bytes, path);
  file.commit();
}

void writeBatchPng(Journal& journal, const std::vector<json>& known, const std::string& path, const io::Image8& image) {
  AtomicFile file(path);
  try {
    io::writePng(file.tempPath(), image);  // itself atomic onto our temporary
  } catch (const Error& e) {  // name the contact sheet, not our temporary
    std::string why = e.what();
    if (const auto at = why.find(file.tempPath()); at != std::string::npos) why.replace(at, file.tempPath().size(), path);
    throw Error(why);
  }
  const std::string name = fs::path(path).filename().string(), hash = contentHash(file.tempPath());
  require(!hash.empty(), path + ": cannot read back what was written");
  const bool recorded = std::any_of(known.begin(), known.end(), [&](const json& r) {
    return r.value("event", "") == "file" && r.value("file", "") == name && r.value("content_hash", "") == hash;
  });
  if (!recorded) journal.append({{"event", "file"}, {"file", name}, {"content_hash", hash}});
  file.commit();
}

BatchLock::BatchLock(const std::string& dir, const std::string& planHash) {
  const std::string gatePath = (fs::path(dir) / ".larmor-batch-gate.lock").string();
  const std::string lockPath = (fs::path(dir) / ".larmor-batch.lock").string();
  const int gate = ::open(gatePath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (gate < 0) throw Error(gatePath + ": cannot write (" + std::strerror(errno) + ")");
  int rc;
  while ((rc = ::flock(gate, LOCK_EX)) != 0 && errno == EINTR) {
  }
  if (rc != 0) {
    ::close(gate);
    static std::once_flag warned;
    std::call_once(warned, [&] {
      std::fprintf(stderr, "warning: %s: the file system supports no file locks; two batches of different settings "
                           "into this folder would not be kept apart\n", dir.c_str());
    });
    return;
  }
  fd_ = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const std::string why = std::strerror(errno);
    ::close(gate);
    throw Error(lockPath + ": cannot write (" + why + ")");
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string mine = planHash + " pid " + std::to_string(::getpid()) + " on " + host + "\n";
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) {  // nobody runs here: the folder is ours, for this plan
    const bool written = ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, mine.data(), mine.size(), 0) == static_cast<ssize_t>(mine.size());
    ::flock(fd_, LOCK_SH);  // converted under the gate: no other process can come between
    ::close(gate);
    if (!written) {
      const std::string why = std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
      throw Error(lockPath + ": cannot write (" + why + ")");
    }
    return;
  }
  char buf[512] = {};
  const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
  std::string holder(buf, static_cast<std::size_t>(std::max<ssize_t>(0, n)));
  while (!holder.empty() && holder.back() == '\n') holder.pop_back();
  if (holder.rfind(planHash + " ", 0) == 0) {  // a shard of the same plan
    while ((rc = ::flock(fd_, LOCK_SH)) != 0 && errno == EINTR) {
    }
    ::close(gate);
    return;
  }
  ::close(gate);
  ::close(fd_);
  fd_ = -1;
  const std::size_t sp = holder.find(' ');
  throw Error(dir + ": another batch with other settings, inputs or formats is running into this folder (" +
              (sp == std::string::npos ? std::string("unknown process") : holder.substr(sp + 1)) +
              "); its outputs would mix with this one's: wait for it to finish or use another --output-dir");
}

void BatchLock::removeIfUnused(const std::string& dir) {
  const std::string gatePath = (fs::path(dir) / ".larmor-batch-gate.lock").string();
  const std::string lockPath = (fs::path(dir) / ".larmor-batch.lock").string();
  const int gate = ::open(gatePath.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  const int lock = ::open(lockPath.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (gate >= 0 && lock >= 0 && ::flock(gate, LOCK_EX | LOCK_NB) == 0 && ::flock(lock, LOCK_EX | LOCK_NB) == 0) {
    ::unlink(lockPath.c_str());
    ::unlink(gatePath.c_str());
  }
  for (int fd : {gate, lock})
    if (fd >= 0) ::close(fd);
  std::error_code ec;
  fs::remove(dir, ec);  // only when empty
}

BatchLock::~BatchLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace larmor::batch
