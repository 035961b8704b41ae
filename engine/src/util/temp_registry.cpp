// Temporaries, their run records and the signal handler that removes them (see temp_registry.hpp).
// Signal-table slot states: 0 free, 1 being filled or emptied by normal code (the handler skips it),
// 2 live. A record line is "F|D|O<TAB>name<LF>" (name escaped: % TAB LF as %25 %09 %0A), appended with one
// write(2) before the temporary is made; a record starts with the line "larmor-run 1 pid=PID".
#include "larmor/util/temp_registry.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <system_error>
#include <vector>

#include "larmor/util/error.hpp"

namespace fs = std::filesystem;

namespace larmor {

namespace {

constexpr int kSlots = 128;
constexpr std::size_t kMaxPath = 4096;
enum SlotKind : int { kFile = 0, kDirectory = 1, kRecord = 2 };

struct Slot {
  std::atomic<int> state{0};
  int kind = kFile;
  pid_t owner = 0;
  char path[kMaxPath] = {};
};
Slot g_slots[kSlots];

static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free atomics");

// A flat directory (the DICOM writer's): unlink its entries, then remove it. getdents64 is a plain
// system call, safe in a handler (opendir/readdir may allocate).
void removeFlatDirectory(const char* path) noexcept {
  const int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    alignas(8) char buf[4096];
    for (;;) {
      const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        struct Dirent64 {
          unsigned long long ino;
          long long off;
          unsigned short reclen;
          unsigned char type;
          char name[1];
        };
        const auto* e = reinterpret_cast<const Dirent64*>(buf + off);
        const char* name = buf + off + offsetof(Dirent64, name);
        if (!(name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))))
          ::unlinkat(fd, name, 0);
        off += e->reclen;
      }
    }
    ::close(fd);
  }
  ::rmdir(path);
}

void onSignal(int sig) {
  removeRegisteredTemporaries();
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);
}

int registerSlot(const std::string& path, int kind) {
  if (path.empty() || path.size() >= kMaxPath) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (!g_slots[i].state.compare_exchange_strong(expected, 1)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].kind = kind;
    g_slots[i].owner = ::getpid();
    g_slots[i].state.store(2);
    return i;
  }
  return -1;
}

// ---- run records (normal code, under g_mutex) ----

struct Record {
  std::string dir;    ///< canonical folder
  std::string path;   ///< DIR/.larmor-run-TOKEN.lock
  std::string token;
  int fd = -1;
  int live = 0;       ///< temporaries reserved and not yet released
  int slot = -1;      ///< signal table slot of the record file
  pid_t pid = 0;      ///< the process that made it (a forked child makes its own)
};

std::mutex g_mutex;
std::vector<Record> g_records;
std::set<std::string> g_cleaned;  ///< folders whose dead runs this process has cleaned up
std::atomic<unsigned long> g_counter{0};

std::string canonicalDir(const std::string& dir) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(fs::absolute(dir.empty() ? "." : dir, ec), ec);
  return ec ? fs::absolute(dir.empty() ? "." : dir).lexically_normal().string() : c.string();
}

}  // namespace

std::string randomLettersAndDigits(std::size_t n) {
  static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  // Seeded per process: a forked child inherits its parent's generator state, and two children drawing the
  // same names would rename each other's temporaries away (seen in the concurrent-writers test).
  thread_local std::mt19937_64 rng;
  thread_local pid_t seededFor = 0;
  if (seededFor != ::getpid()) {
    seededFor = ::getpid();
    rng.seed(std::random_device{}() ^ (static_cast<std::uint64_t>(seededFor) << 32));
  }
  std::uniform_int_distribution<std::size_t> pick(0, sizeof(alphabet) - 2);
  std::string s(n, 'x');
  for (auto& c : s) c = alphabet[pick(rng)];
  return s;
}

namespace {

std::string escape(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c == '%') out += "%25";
    else if (c == '\t') out += "%09";
    else if (c == '\n') out += "%0A";
    else out += c;
  }
  return out;
}

std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const std::string code = s[i] == '%' ? s.substr(i, 3) : std::string();
    if (code == "%25") out += '%', i += 2;
    else if (code == "%09") out += '\t', i += 2;
    else if (code == "%0A") out += '\n', i += 2;
    else out += s[i];
  }
  return out;
}

bool writeAll(int fd, const std::string& text) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

bool sameInode(int fd, const std::string& path) {
  struct stat a {}, b {};
  return ::fstat(fd, &a) == 0 && ::lstat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Creates this process's record in `dir` and takes its lock. A cleaner of another process may open the
// new file before we lock it and remove it as a dead run's: then our descriptor no longer names the
// path, and we make another.
Record createRecord(const std::string& dir, const std::string& target) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    Record r;
    r.dir = dir;
    r.pid = ::getpid();
    r.token = std::to_string(r.pid) + "-" + randomLettersAndDigits(6);
    r.path = (fs::path(dir) / (std::string(kRunRecordPrefix) + r.token + kRunRecordSuffix)).string();
    r.fd = ::open(r.path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (r.fd < 0) {
      if (errno == EEXIST) continue;
      throw Error(target + ": cannot write in " + dir + " (" + std::strerror(errno) + ")");
    }
    const int rc = ::flock(r.fd, LOCK_EX | LOCK_NB);
    if (rc != 0 && errno == EWOULDBLOCK) {  // a cleaner holds it and will remove it
      ::close(r.fd);
      continue;
    }
    // rc != 0 otherwise: no flock on this file system; the record still serves the signal clean-up.
    if (!sameInode(r.fd, r.path)) {
      ::close(r.fd);
      continue;
    }
    if (!writeAll(r.fd, "larmor-run 1 pid=" + std::to_string(r.pid) + "\n")) {
      const std::string why = std::strerror(errno);
      ::unlink(r.path.c_str());
      ::close(r.fd);
      throw Error(target + ": cannot write in " + dir + " (" + why + ")");
    }
    r.slot = registerSlot(r.path, kRecord);
    return r;
  }
  throw Error(target + ": cannot create a run record in " + dir);
}

void dropRecord(Record& r) {
  if (r.fd < 0) return;
  ::unlink(r.path.c_str());
  unregisterTemporary(r.slot);
  ::close(r.fd);  // releases the lock after the name is gone
  r.fd = -1;
  r.slot = -1;
}

// The index of this process's live record in `dir`, made when missing.
int recordFor(const std::string& dir, const std::string& target) {
  const pid_t self = ::getpid();
  for (std::size_t i = 0; i < g_records.size(); ++i)
    if (g_records[i].fd >= 0 && g_records[i].pid == self && g_records[i].dir == dir) return static_cast<int>(i);
  Record r = createRecord(dir, target);
  for (std::size_t i = 0; i < g_records.size(); ++i)
    if (g_records[i].fd < 0 || g_records[i].pid != self) {
      g_records[i] = std::move(r);  // a forked parent's entry is simply forgotten in the child
      return static_cast<int>(i);
    }
  g_records.push_back(std::move(r));
  return static_cast<int>(g_records.size() - 1);
}

bool endsWithDigits(const std::string& s, std::size_t from) {
  if (from >= s.size()) return false;
  for (std::size_t i = from; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

// The target of a listed name when it is a temporary of role `role` of the record `token`; else empty.
std::string targetOf(const std::string& name, const std::string& role, const std::string& token) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") return {};
  const std::string infix = ".larmor." + role + "-" + token + "-";
  const std::size_t at = name.rfind(infix);
  if (at == std::string::npos || at == 0 || !endsWithDigits(name, at + infix.size())) return {};
  return name.substr(0, at);
}

// Removes what one dead run listed in `dir`.
void cleanRecord(const fs::path& dir, const std::string& token, const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  std::vector<std::pair<char, std::string>> entries;
  while (std::getline(lines, line)) {
    if (line.size() < 3 || line[1] != '\t') continue;
    entries.emplace_back(line[0], unescape(line.substr(2)));
  }
  std::error_code ec;
  // A previous export moved aside: back in place when the new one never got there, else removed.
  for (const auto& [kind, name] : entries) {
    if (kind != 'O') continue;
    const std::string target = targetOf(name, "old", token);
    const fs::path p = dir / name;
    if (target.empty() || !fs::is_directory(fs::symlink_status(p, ec))) continue;
    if (!fs::exists(fs::symlink_status(dir / target, ec)) && std::rename(p.c_str(), (dir / target).c_str()) == 0)
      continue;
    removeFlatDirectory(p.c_str());
  }
  for (const auto& [kind, name] : entries) {
    if (kind != 'F' && kind != 'D') continue;
    if (targetOf(name, "tmp", token).empty()) continue;
    const fs::path p = dir / name;
    const auto st = fs::symlink_status(p, ec);
    if (kind == 'F' && fs::is_regular_file(st)) ::unlink(p.c_str());
    if (kind == 'D' && fs::is_directory(st)) removeFlatDirectory(p.c_str());
  }
}

bool isRecordName(const std::string& name, std::string& token) {
  const std::string pre = kRunRecordPrefix, suf = kRunRecordSuffix;
  if (name.size() <= pre.size() + suf.size() || name.compare(0, pre.size(), pre) != 0 ||
      name.compare(name.size() - suf.size(), suf.size(), suf) != 0)
    return false;
  token = name.substr(pre.size(), name.size() - pre.size() - suf.size());
  return token.find('/') == std::string::npos;
}

}  // namespace

int removeDeadRunTemporaries(const std::string& dirPath) {
  const fs::path dir(dirPath.empty() ? "." : dirPath);
  std::error_code ec;
  std::vector<std::pair<fs::path, std::string>> records;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string token;
    if (isRecordName(e.path().filename().string(), token) && e.is_regular_file(ec) && !e.is_symlink(ec))
      records.emplace_back(e.path(), token);
  }
  int cleaned = 0;
  for (const auto& [path, token] : records) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    // Taken: its process has ended (or it is ours from another descriptor: never, we never open ours twice).
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0 || !sameInode(fd, path.string())) {
      ::close(fd);
      continue;
    }
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
    if (text.rfind("larmor-run ", 0) == 0) {
      cleanRecord(dir, token, text);
      ::unlink(path.c_str());
      ++cleaned;
    }
    ::close(fd);
  }
  return cleaned;
}

Temporary reserveTemporary(const std::string& target, TempKind kind, const char* role) {
  require(!target.empty(), "output path is empty");
  const fs::path t(target);
  const fs::path parent = t.has_parent_path() ? t.parent_path() : fs::path(".");
  const std::string dir = canonicalDir(parent.string());
  std::lock_guard lock(g_mutex);
  if (g_cleaned.insert(std::to_string(::getpid()) + dir).second) (void)removeDeadRunTemporaries(parent.string());
  const int ri = recordFor(dir, target);
  Record& r = g_records[static_cast<std::size_t>(ri)];
  Temporary tmp;
  std::error_code ec;
  for (int attempt = 0; attempt < 100 && tmp.path.empty(); ++attempt) {
    std::string candidate = target + ".larmor." + role + "-" + r.token + "-" + std::to_string(++g_counter);
    if (!fs::exists(fs::symlink_status(candidate, ec))) tmp.path = std::move(candidate);
  }
  require(!tmp.path.empty(), target + ": cannot find an unused temporary name");
  const char code = std::string(role) == "old" ? 'O' : kind == TempKind::Directory ? 'D' : 'F';
  if (!writeAll(r.fd, std::string(1, code) + "\t" + escape(fs::path(tmp.path).filename().string()) + "\n")) {
    const std::string why = std::strerror(errno);
    if (r.live == 0) dropRecord(r);
    throw Error(target + ": cannot write (" + why + ")");
  }
  ++r.live;
  tmp.record = ri;
  tmp.slot = registerSlot(tmp.path, kind == TempKind::Directory ? kDirectory : kFile);
  return tmp;
}

void releaseTemporary(Temporary& t) {
  unregisterTemporary(t.slot);
  t.slot = -1;
  if (t.record < 0) return;
  std::lock_guard lock(g_mutex);
  Record& r = g_records[static_cast<std::size_t>(t.record)];
  t.record = -1;
  if (r.fd < 0 || r.pid != ::getpid()) return;
  if (--r.live <= 0) dropRecord(r);
}

int registerTemporary(const std::string& path, TempKind kind) {
  return registerSlot(path, kind == TempKind::Directory ? kDirectory : kFile);
}

void unregisterTemporary(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  g_slots[slot].state.store(1);
  g_slots[slot].path[0] = '\0';
  g_slots[slot].state.store(0);
}

void removeRegisteredTemporaries() noexcept {
  const pid_t self = ::getpid();
  for (int pass = 0; pass < 2; ++pass)  // the temporaries, then the records that list them
    for (auto& s : g_slots) {
      if (s.state.load() != 2 || s.owner != self || (s.kind == kRecord) != (pass == 1)) continue;
      if (s.kind == kDirectory) removeFlatDirectory(s.path);
      else ::unlink(s.path);
    }
}

void installTempCleanupOnSignals() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  sigaddset(&sa.sa_mask, SIGHUP);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    ::sigaction(sig, nullptr, &old);
    if (old.sa_handler == SIG_IGN) continue;  // e.g. nohup: keep ignoring it
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace larmor
