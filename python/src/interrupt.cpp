// Ctrl-C cancels the engine's call at its next check (interrupt.hpp).
#include "interrupt.hpp"

#include <pybind11/pybind11.h>

#include <atomic>
#include <csignal>

namespace py = pybind11;

namespace larmor::python {

namespace {
CancelToken* g_token = nullptr;            // the call's token while a handler is installed (main thread only)
volatile std::sig_atomic_t g_interrupted = 0;
struct sigaction g_previous;               // Python's handler, chained to and restored

void onInterrupt(int sig, siginfo_t* info, void* context) {
  if (g_token) g_token->cancel();
  g_interrupted = 1;
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN && g_previous.sa_handler) {
    g_previous.sa_handler(sig);
  }
}

/// On the main thread, with SIGINT left to Python's default handler (which raises KeyboardInterrupt)?
bool pythonsDefault() {
  py::module_ threading = py::module_::import("threading"), signal = py::module_::import("signal");
  if (!threading.attr("current_thread")().is(threading.attr("main_thread")())) return false;
  return signal.attr("getsignal")(signal.attr("SIGINT")).is(signal.attr("default_int_handler"));
}
static_assert(std::atomic<bool>::is_always_lock_free, "CancelToken::cancel must be async-signal-safe");
}  // namespace

InterruptCancels::InterruptCancels(CancelToken& token) {
  if (g_token || !pythonsDefault()) return;  // nested calls keep the outer handler
  struct sigaction ours {};
  ours.sa_sigaction = onInterrupt;
  ours.sa_flags = SA_SIGINFO;
  sigemptyset(&ours.sa_mask);
  g_interrupted = 0;
  g_token = &token;
  if (sigaction(SIGINT, &ours, &g_previous) != 0) {
    g_token = nullptr;
    return;
  }
  installed_ = true;
}

InterruptCancels::~InterruptCancels() {
  if (!installed_) return;
  sigaction(SIGINT, &g_previous, nullptr);
  g_token = nullptr;
}

bool InterruptCancels::interrupted() const { return installed_ && g_interrupted != 0; }

}  // namespace larmor::python
