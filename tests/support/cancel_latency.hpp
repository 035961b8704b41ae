#pragma once
// Cancel latency: how long a computation takes to stop (throw Cancelled) after Cancel is pressed. The work runs
// on the calling thread with a Progress on a fresh CancelToken; another thread cancels it after `after` seconds.
#include <gtest/gtest.h>

#include <chrono>
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

}  // namespace larmor::test
