#pragma once
// A forked child that holds something (a lock, a live temporary) while the test looks at it from outside:
// the child sets it up, tells the parent through a pipe, and waits on a second pipe until release(); then it
// ends by _exit(0) or, as a killed run would, by SIGKILL, its destructors not run either way.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace larmor::testing {

enum class ChildEnd { Exit, Kill };

class HeldChild {
 public:
  HeldChild() = default;
  HeldChild(const HeldChild&) = delete;
  HeldChild& operator=(const HeldChild&) = delete;
  ~HeldChild() {
    release();
    for (int fd : {ready_[0], ready_[1], hold_[0], hold_[1]})
      if (fd >= 0) ::close(fd);
  }

  /// Forks; the child runs setUp(hold), and setUp calls hold() while it holds what it made (hold() does not
  /// return: the child ends as `end` says once released). Returns when the child has called hold(); a
  /// failed pipe, fork or handshake is a fatal failure (wrap the call in ASSERT_NO_FATAL_FAILURE).
  template <class F>
  void start(F&& setUp, ChildEnd end) {
    ASSERT_EQ(::pipe(ready_), 0);
    ASSERT_EQ(::pipe(hold_), 0);
    pid_ = ::fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      setUp([&] {
        char c = 1;
        (void)!::write(ready_[1], &c, 1);
        (void)!::read(hold_[0], &c, 1);  // until the parent releases it
        if (end == ChildEnd::Kill) ::raise(SIGKILL);
        ::_exit(end == ChildEnd::Kill ? 4 : 0);
      });
      ::_exit(5);  // setUp returned without holding
    }
    char c = 0;
    ASSERT_EQ(::read(ready_[0], &c, 1), 1);
  }

  /// Lets the child end and waits for it. Idempotent.
  void release() {
    if (pid_ <= 0) return;
    char c = 0;
    (void)!::write(hold_[1], &c, 1);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int ready_[2] = {-1, -1};
  int hold_[2] = {-1, -1};
};

}  // namespace larmor::testing
