// POSIX TCP for the streaming server and client (larmor/stream/socket.hpp). Reads and writes wait with poll()
// for at most the stream's timeout; SIGPIPE is avoided per call (MSG_NOSIGNAL), so a vanished peer is an Error.
#include "larmor/stream/socket.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "larmor/util/error.hpp"

namespace larmor::stream {

namespace {

std::string errnoText() { return std::strerror(errno); }

// Waits until `fd` is ready for `events` or the timeout passes (false).
bool waitFor(int fd, short events, int timeoutMs) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int r = ::poll(&p, 1, timeoutMs);
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

std::string addressText(const sockaddr_in& a) {
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
  return std::string(buf) + ":" + std::to_string(ntohs(a.sin_port));
}

}  // namespace

SocketStream::SocketStream(int fd, std::string peer, int timeoutMs)
    : fd_(fd), peer_(std::move(peer)), timeoutMs_(timeoutMs) {
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // an image goes out as soon as it is written
}

SocketStream::~SocketStream() {
  if (fd_ >= 0) ::close(fd_);
}

void SocketStream::read(void* into, std::size_t n) {
  auto* p = static_cast<char*>(into);
  std::size_t got = 0;
  while (got < n) {
    if (!waitFor(fd_, POLLIN, timeoutMs_))
      throw Error(peer_ + ": nothing received for " + std::to_string(timeoutMs_ / 1000) + " s (idle timeout)");
    const ssize_t r = ::recv(fd_, p + got, n - got, 0);
    if (r == 0) {
      endedCleanly_ = got == 0;
      throw Error(peer_ + ": the connection was closed" + (got == 0 ? "" : " inside a message"));
    }
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw Error(peer_ + ": read failed (" + errnoText() + ")");
    }
    got += static_cast<std::size_t>(r);
  }
}

void SocketStream::write(const void* from, std::size_t n) {
  const auto* p = static_cast<const char*>(from);
  std::size_t sent = 0;
  while (sent < n) {
    if (!waitFor(fd_, POLLOUT, timeoutMs_))
      throw Error(peer_ + ": could not send for " + std::to_string(timeoutMs_ / 1000) + " s (the peer reads nothing)");
    const ssize_t r = ::send(fd_, p + sent, n - sent, MSG_NOSIGNAL);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw Error(peer_ + ": send failed (" + errnoText() + ")");
    }
    sent += static_cast<std::size_t>(r);
  }
}

void SocketStream::shutdownWrite() { ::shutdown(fd_, SHUT_WR); }
void SocketStream::shutdownRead() { ::shutdown(fd_, SHUT_RD); }

Listener::Listener(const std::string& address, int port) {
  require(port >= 0 && port <= 65535, "--port " + std::to_string(port) + ": not a TCP port (0..65535)");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  const std::string host = address == "localhost" ? "127.0.0.1" : address;
  require(::inet_pton(AF_INET, host.c_str(), &a.sin_addr) == 1,
          "--listen " + address + ": not an IPv4 address (e.g. 127.0.0.1 or 0.0.0.0)");
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  require(fd_ >= 0, [&] { return "cannot create a socket (" + errnoText() + ")"; });
  const int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 64) != 0) {
    const std::string why = errnoText();
    ::close(fd_);
    throw Error(host + ":" + std::to_string(port) + ": cannot listen (" + why + ")");
  }
  socklen_t len = sizeof a;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
}

Listener::~Listener() {
  if (fd_ >= 0) ::close(fd_);
}

void Listener::shutdown() { ::shutdown(fd_, SHUT_RDWR); }

int Listener::accept(std::string& peer) {
  for (;;) {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    const int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&a), &len, SOCK_CLOEXEC);
    if (fd >= 0) {
      peer = addressText(a);
      return fd;
    }
    if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) {
      if (errno == EMFILE || errno == ENFILE) ::usleep(100000);  // out of descriptors: wait for one to close
      continue;
    }
    throw Error("accept failed (" + errnoText() + ")");
  }
}

void splitHostPort(const std::string& text, std::string& host, int& port, const std::string& what) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw Error(what + " " + text + ": expected host:port");
  host = text.substr(0, colon);
  const std::string p = text.substr(colon + 1);
  if (p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos || std::stoi(p) < 1 || std::stoi(p) > 65535)
    throw Error(what + " " + text + ": the port must be 1..65535");
  port = std::stoi(p);
}

int connectTcp(const std::string& host, int port) {
  const std::string where = host + ":" + std::to_string(port);
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0)
    throw Error(where + ": cannot resolve (" + ::gai_strerror(rc) + ")");
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    ::freeaddrinfo(res);
    throw Error(where + ": cannot create a socket (" + errnoText() + ")");
  }
  const int rc = ::connect(fd, res->ai_addr, res->ai_addrlen);
  const std::string why = rc != 0 ? errnoText() : std::string();
  ::freeaddrinfo(res);
  if (rc != 0) {
    ::close(fd);
    throw Error(where + ": cannot connect (" + why + ")");
  }
  return fd;
}

}  // namespace larmor::stream
