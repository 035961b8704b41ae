// The registry of live temporaries and the signal handler that removes them (see temp_registry.hpp).
// Slot states: 0 free, 1 being filled or emptied by normal code (the handler skips it), 2 live.
#include "larmor/util/temp_registry.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace larmor {

namespace {

constexpr int kSlots = 64;
constexpr std::size_t kMaxPath = 4096;

struct Slot {
  std::atomic<int> state{0};
  bool directory = false;
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

}  // namespace

int registerTemporary(const std::string& path, TempKind kind) {
  if (path.empty() || path.size() >= kMaxPath) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (!g_slots[i].state.compare_exchange_strong(expected, 1)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].directory = kind == TempKind::Directory;
    g_slots[i].state.store(2);
    return i;
  }
  return -1;
}

void unregisterTemporary(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  g_slots[slot].state.store(1);
  g_slots[slot].path[0] = '\0';
  g_slots[slot].state.store(0);
}

void removeRegisteredTemporaries() noexcept {
  for (auto& s : g_slots) {
    if (s.state.load() != 2) continue;
    if (s.directory) removeFlatDirectory(s.path);
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
