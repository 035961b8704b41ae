#pragma once
// SignalsBlocked: SIGINT, SIGTERM and SIGHUP held back in this thread for the object's lifetime (delivered when it
// ends), so that a signal cannot land between two steps that must happen together (an output's two renames when
// the previous one and the new one swap places).
#include <csignal>

#include <pthread.h>

namespace larmor {

class SignalsBlocked {
 public:
  SignalsBlocked() {
    sigset_t s;
    sigemptyset(&s);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&s, sig);
    ::pthread_sigmask(SIG_BLOCK, &s, &old_);
  }
  ~SignalsBlocked() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  SignalsBlocked(const SignalsBlocked&) = delete;
  SignalsBlocked& operator=(const SignalsBlocked&) = delete;

 private:
  sigset_t old_;
};

}  // namespace larmor
