// The batch journal (larmor/batch/journal.hpp): O_APPEND + flock + one write per record + fsync, so
// several processes on a shared file system append whole lines, and a kill loses at most one record.
#include "larmor/batch/journal.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "larmor/util/error.hpp"

namespace larmor::batch {
namespace fs = std::filesystem;

namespace {

std::mutex& appendMutex() {  // flock is per open file description: threads of one process share it
  static std::mutex m;
  return m;
}

/// An exclusive lock on the journal file between processes: flock(); where the file system refuses it
/// (Lustre mounted without `flock`, some FUSE file systems: ENOSYS, EOPNOTSUPP, ENOLCK) a POSIX record
/// lock (fcntl F_SETLKW); where that is refused too, none, said once on stderr: one O_APPEND write() per
/// record is then all that keeps records apart, which holds on local file systems but not across NFS
/// clients.
class FileLock {
 public:
  explicit FileLock(int fd) : fd_(fd) {
    int rc;
    while ((rc = ::flock(fd_, LOCK_EX)) != 0 && errno == EINTR) {
    }
    if (rc == 0) {
      kind_ = Kind::Flock;
      return;
    }
    if (errno != ENOSYS && errno != EOPNOTSUPP && errno != ENOLCK && errno != EINVAL)
      throw Error(std::string("journal: flock failed: ") + std::strerror(errno));
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    while ((rc = ::fcntl(fd_, F_SETLKW, &fl)) != 0 && errno == EINTR) {
    }
    if (rc == 0) {
      kind_ = Kind::Posix;
      return;
    }
    static std::once_flag warned;
    std::call_once(warned, [] {
      std::fprintf(stderr, "warning: the batch journal's file system supports no file locks; records from several "
                           "hosts may interleave (docs/cluster.md)\n");
    });
  }
  ~FileLock() {
    if (kind_ == Kind::Flock) ::flock(fd_, LOCK_UN);
    if (kind_ == Kind::Posix) {
      struct flock fl {};
      fl.l_type = F_UNLCK;
      fl.l_whence = SEEK_SET;
      ::fcntl(fd_, F_SETLK, &fl);
    }
  }

 private:
  enum class Kind { None, Flock, Posix } kind_ = Kind::None;
  int fd_;
};

}  // namespace

Journal::Journal(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  require(fd_ >= 0, path_ + ": cannot open the journal (" + std::strerror(errno) + ")");
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

void Journal::append(const nlohmann::json& record) {
  std::string line = record.dump() + "\n";  // dump() escapes control characters: no newline inside
  {
    // The write under the locks; the fsync after them, so that the workers' fsyncs overlap (the kernel
    // commits them together) instead of queueing behind one lock.
    std::lock_guard guard(appendMutex());
    FileLock lock(fd_);
    writeLine(line);
  }
  require(::fsync(fd_) == 0, path_ + ": fsync failed (" + std::strerror(errno) + ")");
}

void Journal::writeLine(std::string line) {
  // A torn last line (a writer killed inside write()) must not swallow this record.
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && st.st_size > 0) {
    const int rfd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    char last = '\n';
    if (rfd >= 0) {
      if (::pread(rfd, &last, 1, st.st_size - 1) != 1) last = '\n';
      ::close(rfd);
    }
    if (last != '\n') line.insert(line.begin(), '\n');
  }
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    require(n > 0, path_ + ": cannot append to the journal (" + std::strerror(errno) + ")");
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

std::vector<nlohmann::json> Journal::read(const std::string& path, int* skipped) {
  std::vector<nlohmann::json> out;
  if (skipped) *skipped = 0;
  std::ifstream in(path);
  if (!in) return out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      if (skipped) ++*skipped;
      continue;
    }
    out.push_back(std::move(j));
  }
  return out;
}

std::uint64_t fnv1a(std::string_view bytes, std::uint64_t h) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex64(std::uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 15];
  return s;
}

std::string inputHash(const std::string& path) {
  std::vector<std::string> members = {path};
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".cfl" || ext == ".hdr") {
    const std::string base = path.substr(0, path.size() - ext.size());
    members = {base + ".hdr", base + ".cfl"};
  }
  std::string id;
  for (const auto& m : members) {
    struct stat st {};
    if (::stat(m.c_str(), &st) != 0) return {};
    id += m + '\0' + std::to_string(st.st_size) + '\0' +
          std::to_string(static_cast<long long>(st.st_mtim.tv_sec) * 1000000000ll + st.st_mtim.tv_nsec) + '\0';
  }
  return hex64(fnv1a(id));
}

std::string itemKey(const std::string& name, const std::string& inHash, const std::string& settingsHash) {
  return name + "|" + inHash + "|" + settingsHash;
}

std::map<std::string, nlohmann::json> latestByKey(const std::vector<nlohmann::json>& records) {
  std::map<std::string, nlohmann::json> latest;
  for (const auto& r : records)
    if (r.contains("key") && r["key"].is_string()) latest[r["key"].get<std::string>()] = r;
  return latest;
}

}  // namespace larmor::batch
