#pragma once
// One deadline over a whole DICOM network exchange (used by dicom_send.cpp; needs DCMTK's dcmnet).
// DCMTK's own timeouts (connection, ACSE, DIMSE) bound each wait for data, so a peer that sends one byte
// just inside every wait keeps an association open for as long as it likes. Here every read, write and
// wait on the association's socket is bounded by one point in time instead: DCMTK makes its TCP
// connection through a transport layer (DcmTransportLayer::createConnection, the hook that TLS uses), and
// ours hands out connections whose read, write and wait for data give up when the deadline has passed.
// DCMTK then reports a read timeout or a closed network; ExchangeDeadline::expired() says the deadline
// was the cause. The deadline is armed (from now) before each exchange: an association, a C-STORE. A stop
// request (a cancelled query or retrieve) ends a wait the same way within 100 ms.
#include <dcmtk/config/osconfig.h>  // must come first: DCMTK's build configuration
#include <dcmtk/dcmnet/dcmlayer.h>

#include <chrono>
#include <functional>
#include <memory>

namespace larmor::io::detail {

/// A point in time by which the current exchange must be over.
class ExchangeDeadline {
 public:
  /// The exchange starting now must end within `seconds`; clears expired().
  void arm(int seconds);
  /// Milliseconds left (0 once passed).
  int remainingMs() const;
  /// A read, write or wait was cut short by the deadline since arm().
  bool expired() const { return expired_; }
  void markExpired() { expired_ = true; }
  /// Asked every 100 ms while a read, write or wait goes on: true ends it as the deadline would (a user's
  /// Cancel while the peer is silent). Unset: never.
  void setStop(std::function<bool()> stop) { stop_ = std::move(stop); }
  bool stopRequested() const { return stop_ && stop_(); }
  bool hasStop() const { return static_cast<bool>(stop_); }

 private:
  std::chrono::steady_clock::time_point end_ = std::chrono::steady_clock::time_point::max();
  bool expired_ = false;
  std::function<bool()> stop_;
};

/// The transport layer to install in a DcmSCU (after initNetwork, before the association):
/// plain TCP whose every operation ends by the deadline. Must outlive the DcmSCU that uses it.
class DeadlineTransportLayer : public DcmTransportLayer {
 public:
  DeadlineTransportLayer() : deadline_(std::make_shared<ExchangeDeadline>()) {}
  DcmTransportConnection* createConnection(DcmNativeSocketType openSocket, OFBool useSecureLayer) override;
  ExchangeDeadline& deadline() { return *deadline_; }

 private:
  std::shared_ptr<ExchangeDeadline> deadline_;  // shared with the connections it made
};

}  // namespace larmor::io::detail
