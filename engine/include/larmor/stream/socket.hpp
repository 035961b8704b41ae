#pragma once
// TCP sockets for the streaming server and client (POSIX): a listening socket, an accepted or connected
// stream with a timeout on every read and write (an idle or stalled peer is an Error, not a hung thread).
#include <cstdint>
#include <string>

#include "larmor/stream/protocol.hpp"

namespace larmor::stream {

/// A connected TCP stream; closes its descriptor when destroyed.
class SocketStream : public ByteSource, public ByteSink {
 public:
  SocketStream(int fd, std::string peer, int timeoutMs);
  ~SocketStream() override;
  SocketStream(const SocketStream&) = delete;
  SocketStream& operator=(const SocketStream&) = delete;

  /// Fills `n` bytes; Error("PEER: ...") when the peer closes, a read fails or nothing comes for the timeout.
  void read(void* into, std::size_t n) override;
  void write(const void* from, std::size_t n) override;
  /// No more writes (the peer reads the end of the stream after what was sent).
  void shutdownWrite();
  /// No more reads: a read blocked in another thread returns (the connection closed); writes still go out.
  void shutdownRead();
  const std::string& peer() const { return peer_; }
  /// True when the peer closed before sending the first byte of the next read (an orderly end).
  bool endedCleanly() const { return endedCleanly_; }

 private:
  int fd_;
  std::string peer_;
  int timeoutMs_;
  bool endedCleanly_ = false;
};

/// A listening TCP socket bound to `address` (an IPv4 literal, "localhost" = 127.0.0.1) and `port` (0: any free
/// port; port() says which).
class Listener {
 public:
  Listener(const std::string& address, int port);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  int port() const { return port_; }
  /// The next connection's descriptor and its "address:port"; blocks. Error after shutdown().
  int accept(std::string& peer);
  /// No more connections: an accept() blocked in another thread returns (an Error).
  void shutdown();

 private:
  int fd_ = -1, port_ = 0;
};

/// "host:port" split; Error naming `what` when it is not that.
void splitHostPort(const std::string& text, std::string& host, int& port, const std::string& what);

/// A connection to host:port (a name or an IPv4 literal); Error("host:port: reason") when it fails.
int connectTcp(const std::string& host, int port);

}  // namespace larmor::stream
