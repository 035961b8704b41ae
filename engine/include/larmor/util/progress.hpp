#pragma once
// Progress reporting and cooperative cancellation. Long operations call Progress::report between
// steps (an iteration, a coil, a slice); the GUI worker and the CLI attach callbacks.
// Progress::Sub maps a stage's own 0..1 onto a slice [from, to] of the run's bar (every stage
// longer than ~0.5 s reports fractions, so the bar never stalls: F^H d, Q, the Pipe-Menon DCF, GRAPPA calibration, export).
#include <algorithm>
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
  class Sub;
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

/// A stage's progress as a part of its caller's: report(f, text) reaches `parent` as
/// (from + (to - from) * f, prefix + text), f clamped to [0, 1]; cancellation is the parent's (report and
/// checkCancelled throw Cancelled as the parent's do). `parent` must outlive the Sub.
///   Progress::Sub q(progress, 0.05, 0.3, "cg: ");  computeQ(..., q);   // q.report(0.5, "Q") -> 0.175
class Progress::Sub : public Progress {
 public:
  Sub(const Progress& parent, double from, double to, std::string prefix = {})
      : Progress(
            [&parent, from, to, prefix = std::move(prefix)](double f, const std::string& stage) {
              parent.report(from + (to - from) * std::clamp(f, 0.0, 1.0), prefix + stage);
            },
            parent.token_) {}
};

}  // namespace larmor
