#pragma once
// Cancellation inside one long call that takes no Progress (the exact DFT's forward and adjoint, whose
// NufftPlan interface has none): while a CancelScope lives on a thread, CancelScope::current() there is its
// Progress, which such calls poll at their loop boundaries and answer with Cancelled. Scopes nest (the
// innermost wins until it ends); a thread without one is never cancelled inside such calls, so threads that
// do a caller's work carry its scope over (CancelScope(CancelScope::current() read on the caller)).
//   { const CancelScope cancel(progress); plan.adjoint(d, image, coils); }   // Cancelled within a block
// ParallelCancel is the poll of an OpenMP loop: made on the calling thread (thread-locals are per thread),
// stop() at a block's start on any thread, rethrow() after the parallel region (Cancelled must not leave it).
#include <atomic>

#include "larmor/util/progress.hpp"

namespace larmor {

class CancelScope {
 public:
  explicit CancelScope(const Progress& progress) : CancelScope(&progress) {}
  /// Another thread's scope carried over (CancelScope::current() read there); null: none.
  explicit CancelScope(const Progress* progress) : previous_(current_) { current_ = progress; }
  ~CancelScope() { current_ = previous_; }
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

  /// This thread's innermost scope's Progress, or null.
  static const Progress* current() { return current_; }
  /// Throws Cancelled when this thread's scope was cancelled: the cancellation point of a serial loop with no
  /// Progress at hand (in an OpenMP loop, ParallelCancel).
  static void check() {
    if (current_) current_->checkCancelled();
  }
  /// Whether `progress` (null: never) was cancelled, without throwing.
  static bool requested(const Progress* progress) {
    if (!progress) return false;
    try {
      progress->checkCancelled();
      return false;
    } catch (const Cancelled&) {
      return true;
    }
  }

 private:
  const Progress* previous_;
  static inline thread_local const Progress* current_ = nullptr;
};

class ParallelCancel {
 public:
  ParallelCancel() : progress_(CancelScope::current()) {}
  /// True once any thread saw the request: skip the rest of the block (and the blocks after it).
  bool stop() {
    if (stopped_.load(std::memory_order_relaxed)) return true;
    if (!CancelScope::requested(progress_)) return false;
    stopped_.store(true, std::memory_order_relaxed);
    return true;
  }
  /// After the parallel region: Cancelled when the loop stopped early.
  void rethrow() const {
    if (stopped_.load()) throw Cancelled();
  }
  /// Whether the caller can be cancelled at all (a scope with a Progress is active).
  bool active() const { return progress_ != nullptr; }

 private:
  const Progress* progress_;
  std::atomic<bool> stopped_{false};
};

}  // namespace larmor
