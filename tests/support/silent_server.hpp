#pragma once
// A listening TCP socket on 127.0.0.1 that never accepts: connect() succeeds (the kernel's backlog), then
// silence. The DICOM network tests' "PACS that never answers" (timeouts must end the wait, never a hang).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace larmor::test {

struct SilentServer {
  int fd = -1, port = 0;
  SilentServer() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 8) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("cannot listen on 127.0.0.1");
    port = ntohs(a.sin_port);
  }
  ~SilentServer() { ::close(fd); }
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;
};

}  // namespace larmor::test
