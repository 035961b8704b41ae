#pragma once
// One error type for the whole engine. Its text is a single line that names the thing (file, setting,
// array) and the problem, so the CLI can print it as it is and exit non-zero.
#include <stdexcept>
#include <string>

namespace larmor {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// Thrown by a cancelled operation (CancelToken); not an error the user needs to see as a failure.
class Cancelled : public Error {
 public:
  Cancelled() : Error("cancelled") {}
};

/// Throws Error(message) when cond is false.
inline void require(bool cond, const std::string& message) {
  if (!cond) throw Error(message);
}

}  // namespace larmor
