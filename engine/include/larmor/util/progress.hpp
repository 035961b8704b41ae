#pragma once
// Progress reporting and cooperative cancellation. Long operations call Progress::report between
// steps (an iteration, a coil, a slice); the GUI worker and the CLI attach callbacks.
#include <atomic>
#include <functional>
#include <string>

#include "larmor/util/error.hpp"

namespace larmor {

class CancelToken {
 public:
  void cancel() { flag_.store(true); }
  void reset() { flag_.store(false); }
  bool cancelled() const { return flag_.load(); }

 private:
  std::atomic<bool> flag_{false};
};

class Progress {
 public:
  using Callback = std::function<void(double fraction, const std::string& stage)>;
  Progress() = default;
  explicit Progress(Callback cb, const CancelToken* token = nullptr) : cb_(std::move(cb)), token_(token) {}

  /// Reports (fraction in [0,1], stage text) and throws Cancelled when the token was cancelled.
  void report(double fraction, const std::string& stage) const {
    if (token_ && token_->cancelled()) throw Cancelled();
    if (cb_) cb_(fraction, stage);
  }
  void checkCancelled() const {
    if (token_ && token_->cancelled()) throw Cancelled();
  }

 private:
  Callback cb_;
  const CancelToken* token_ = nullptr;
};

}  // namespace larmor
