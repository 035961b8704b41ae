// The releasing thread of large frees (larmor/util/background_release.hpp).
#include "larmor/util/background_release.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace larmor {

namespace {
struct Releaser {
  std::mutex mutex;
  std::condition_variable work, idle;
  std::deque<std::pair<void*, void (*)(void*)>> pending;
  bool busy = false;   ///< the thread is freeing one it took off the queue
  bool started = false;

  void run() {
    std::unique_lock lock(mutex);
    for (;;) {
      work.wait(lock, [&] { return !pending.empty(); });
      const auto [p, free] = pending.front();
      pending.pop_front();
      busy = true;
      lock.unlock();
      free(p);
      lock.lock();
      busy = false;
      if (pending.empty()) idle.notify_all();
    }
  }
};

Releaser& releaser() {
  static Releaser* r = new Releaser;  // never destroyed: blocks freed during static destruction still find it
  return *r;
}
}  // namespace

void releaseLater(void* p, std::size_t bytes, void (*free)(void*)) noexcept {
  if (!p) return;
  if (bytes < kBackgroundRelease) {
    free(p);
    return;
  }
  Releaser& r = releaser();
  {
    std::lock_guard lock(r.mutex);
    if (!r.started) {
      try {
        std::thread([&r] { r.run(); }).detach();  // lives as long as the process
        r.started = true;
      } catch (...) {  // no thread to be had: freed here, as before
      }
    }
    if (r.started) {
      r.pending.emplace_back(p, free);
      r.work.notify_one();
      return;
    }
  }
  free(p);
}

void waitForReleases() noexcept {
  Releaser& r = releaser();
  std::unique_lock lock(r.mutex);
  r.idle.wait(lock, [&] { return r.pending.empty() && !r.busy; });
}

}  // namespace larmor
