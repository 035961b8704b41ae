#pragma once
// One error type for the whole engine. Its text is a single line that names the thing (file, setting,
// array) and the problem, so the CLI can print it as it is and exit non-zero.
#include <stdexcept>
#include <string>
#include <type_traits>

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

/// The same with the message built only on failure: for checks inside loops over samples or voxels, where
/// building the string every time cost more than the work (a Cartesian plan of 1 M samples: ~1 s).
template <class F, class = std::enable_if_t<std::is_invocable_r_v<std::string, F&>>>
inline void require(bool cond, F&& message) {
  if (!cond) throw Error(message());
}

}  // namespace larmor
