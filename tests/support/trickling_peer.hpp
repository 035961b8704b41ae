#pragma once
// A hostile DICOM peer on 127.0.0.1, on a thread of its own: it reads the A-ASSOCIATE-RQ, answers with a
// valid A-ASSOCIATE-AC header (PDU type 02, length 256, PS3.8 9.3.3) and then sends one byte every
// `interval`, for at most `lasting` (then it closes). Every read of the client gets data well within any
// per-read timeout, so only a deadline over the whole exchange ends the client's wait in time. It serves
// one connection after another until it is destroyed.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>

#include "support/silent_server.hpp"

namespace larmor::test {

class TricklingPeer {
 public:
  explicit TricklingPeer(std::chrono::milliseconds interval = std::chrono::milliseconds(500),
                         std::chrono::seconds lasting = std::chrono::seconds(20))
      : interval_(interval), lasting_(lasting), thread_([this] { run(); }) {}
  ~TricklingPeer() {
    stop_ = true;
    thread_.join();
  }
  TricklingPeer(const TricklingPeer&) = delete;
  TricklingPeer& operator=(const TricklingPeer&) = delete;
  int port() const { return listener_.port; }

 private:
  void run() {
    while (!stop_) {
      pollfd p{listener_.fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const int c = ::accept(listener_.fd, nullptr, nullptr);
      if (c < 0) continue;
      serve(c);
      ::close(c);
    }
  }
  /// Reads what the client sends for up to `ms`; false when it closed the connection.
  static bool drain(int c, int ms) {
    pollfd p{c, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) return true;
    char buf[4096];
    return ::recv(c, buf, sizeof buf, MSG_DONTWAIT) != 0;
  }
  void serve(int c) {
    if (!drain(c, 2000)) return;  // the A-ASSOCIATE-RQ (not parsed: any request gets the same answer)
    const unsigned char header[6] = {0x02, 0, 0, 0, 0x01, 0x00};  // A-ASSOCIATE-AC, 256 bytes follow
    if (::send(c, header, sizeof header, MSG_NOSIGNAL) != 6) return;
    const auto end = std::chrono::steady_clock::now() + lasting_;
    while (!stop_ && std::chrono::steady_clock::now() < end) {
      const char zero = 0;
      if (::send(c, &zero, 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN) return;
      if (!drain(c, static_cast<int>(interval_.count()))) return;  // the client gave up
    }
  }

  SilentServer listener_;
  std::chrono::milliseconds interval_;
  std::chrono::seconds lasting_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace larmor::test
