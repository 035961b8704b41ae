#pragma once
// Scratch folders and whole-file reads and writes for tests that put files in a folder and check what is
// left: LARMOR_TEST_TMP/PREFIX-PID/NAME (the pid keeps parallel test processes apart), made fresh.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace larmor::testing {

/// LARMOR_TEST_TMP/PREFIX-PID/NAME, removed and made again, empty.
inline std::string scratchDir(const std::string& prefix, const std::string& name) {
  namespace fs = std::filesystem;
  const std::string d = std::string(LARMOR_TEST_TMP) + "/" + prefix + "-" + std::to_string(::getpid()) + "/" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

/// Writes `content` to `path` (made or truncated), bytes as given.
inline void put(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

/// The bytes of `path`; empty when it cannot be read.
inline std::string bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

}  // namespace larmor::testing
