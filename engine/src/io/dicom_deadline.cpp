// Deadline-bounded TCP for DCMTK (dicom_deadline.hpp). Every socket operation first waits with poll(2)
// for at most the time left: reads wait for data, writes for room (and then send what fits without
// blocking, MSG_NOSIGNAL: a vanished peer is an error, not SIGPIPE), DCMTK's own "data available within
// t seconds" waits min(t, time left). A wait that runs into the deadline marks it expired and fails the
// operation with ETIMEDOUT, so DCMTK gives up on the association however slowly the peer trickles. With a
// stop request set, waits are cut into 100 ms slices and a requested stop fails the operation (ECANCELED).
#include "dicom_deadline.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include <dcmtk/dcmnet/dcmtrans.h>

namespace larmor::io::detail {

void ExchangeDeadline::arm(int seconds) {
  end_ = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  expired_ = false;
}

int ExchangeDeadline::remainingMs() const {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(end_ - std::chrono::steady_clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 24LL * 3600 * 1000));
}

namespace {

class DeadlineConnection : public DcmTCPConnection {
 public:
  DeadlineConnection(DcmNativeSocketType s, std::shared_ptr<ExchangeDeadline> d)
      : DcmTCPConnection(s), deadline_(std::move(d)) {}

  ssize_t read(void* buf, size_t nbyte) override {
    for (;;) {
      if (!waitFor(POLLIN, deadline_->remainingMs(), true)) return -1;
      const ssize_t k = ::recv(getSocket(), buf, nbyte, MSG_DONTWAIT);
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;  // woken without data
      return k;
    }
  }

  ssize_t write(void* buf, size_t nbyte) override {
    const char* p = static_cast<const char*>(buf);
    size_t done = 0;
    while (done < nbyte) {
      if (!waitFor(POLLOUT, deadline_->remainingMs(), true)) return -1;
      const ssize_t k = ::send(getSocket(), p + done, nbyte - done, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (k < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
        return -1;
      }
      done += static_cast<size_t>(k);
    }
    return static_cast<ssize_t>(nbyte);
  }

  /// DCMTK's "will data arrive within `timeout` seconds?" (its per-wait ACSE/DIMSE timeout), never past
  /// the deadline. A peer that closed or failed counts as "available": the read then says what happened.
  OFBool networkDataAvailable(int timeout) override {
    const int left = deadline_->remainingMs();
    const bool deadlineFirst = timeout < 0 || static_cast<long long>(timeout) * 1000 >= left;
    return waitFor(POLLIN, deadlineFirst ? left : timeout * 1000, deadlineFirst) ? OFTrue : OFFalse;
  }

 private:
  /// Waits up to `ms` for `events`; false when the time ran out (then expired is marked if
  /// `isDeadline`, and errno is ETIMEDOUT).
  bool waitFor(short events, int ms, bool isDeadline) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    const bool sliced = deadline_->hasStop();  // then wake every 100 ms to ask
    for (;;) {
      pollfd p{getSocket(), events, 0};
      const int n = ::poll(&p, 1, sliced ? std::min(ms, 100) : ms);
      if (n > 0) return true;  // ready, or an error/hang-up the next call reports
      if (n < 0 && errno != EINTR) return true;
      if (deadline_->stopRequested()) {
        deadline_->markExpired();
        errno = ECANCELED;
        return false;
      }
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
      if ((n < 0 || sliced) && left > 0) {  // interrupted, or one slice over: wait the rest
        ms = static_cast<int>(left);
        continue;
      }
      if (isDeadline) deadline_->markExpired();
      errno = ETIMEDOUT;
      return false;
    }
  }

  std::shared_ptr<ExchangeDeadline> deadline_;
};

}  // namespace

DcmTransportConnection* DeadlineTransportLayer::createConnection(DcmNativeSocketType openSocket, OFBool) {
  // Plain TCP whatever the flag says: it is set because DcmSCU installs a layer only through its TLS
  // hook (useSecureConnection), and DCMTK uses it for nothing else.
  return new DeadlineConnection(openSocket, deadline_);
}

}  // namespace larmor::io::detail
