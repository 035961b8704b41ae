#pragma once
// Ctrl-C during a long engine call. Python's own SIGINT handler only marks the signal; Python raises
// KeyboardInterrupt when the main thread next runs Python code, which during larmor.recon is the engine's next
// progress report (the GIL is released in between): seconds apart in some stages (3D GRAPPA's planning at 128^3:
// 2-10 s, measured). While an InterruptCancels lives (on the main thread, SIGINT left to Python's default handler),
// SIGINT's handler is one that cancels the call's token at once (an atomic store: async-signal-safe), so the
// engine stops at its next cancellation check, and then calls Python's handler, so the KeyboardInterrupt is pending
// as before. The previous handler is restored when it ends. Elsewhere (another thread, a handler of the user's,
// SIGINT ignored) it does nothing and Ctrl-C reaches the engine at its reports as before.
#include "larmor/util/progress.hpp"

namespace larmor::python {

class InterruptCancels {
 public:
  /// Needs the GIL (it asks Python's signal module which handler is installed).
  explicit InterruptCancels(CancelToken& token);
  ~InterruptCancels();
  InterruptCancels(const InterruptCancels&) = delete;
  InterruptCancels& operator=(const InterruptCancels&) = delete;

  /// Whether SIGINT arrived while this lived (its KeyboardInterrupt is then pending).
  bool interrupted() const;

 private:
  bool installed_ = false;
};

}  // namespace larmor::python
