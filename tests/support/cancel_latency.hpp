#pragma once
// Cancel latency: how long a computation takes to stop (throw Cancelled) after Cancel is pressed. The work runs
// on the calling thread with a Progress on a fresh CancelToken; another thread cancels it after `after` seconds.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>

#include "larmor/util/progress.hpp"

namespace larmor::test {

struct CancelOutcome {
  bool cancelled = false;  ///< the work threw Cancelled (false: it ran to its end, or the request came after it)
  double seconds = -1;     ///< from the request to the throw (or to the end of the work)
};

/// Runs work(progress) and cancels its token `after` seconds after the start.
inline CancelOutcome cancelAfter(const std::function<void(const Progress&)>& work, double after = 0.1) {
  using Clock = std::chrono::steady_clock;
  CancelToken token;
  const Progress progress({}, &token);
  Clock::time_point requested{};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::duration<double>(after));
    requested = Clock::now();
    token.cancel();
  });
  CancelOutcome out;
  try {
    work(progress);
  } catch (const Cancelled&) {
    out.cancelled = true;
  }
  const Clock::time_point end = Clock::now();
  canceller.join();
  out.seconds = std::chrono::duration<double>(end - requested).count();
  return out;
}

/// Says how it went and expects a cancel within `bound` seconds (the workstation's promise: 0.5 s).
inline void expectPrompt(const CancelOutcome& o, const char* what, double bound = 0.5) {
  std::printf("%s: %s after %.3f s\n", what, o.cancelled ? "cancelled" : "NOT cancelled (ran to its end)", o.seconds);
  EXPECT_TRUE(o.cancelled) << what << " was not cancelled";
  EXPECT_LT(o.seconds, bound) << what;
}

}  // namespace larmor::test
