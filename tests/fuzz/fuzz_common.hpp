#pragma once
// Shared by the libFuzzer targets: each input becomes one or more files in a private scratch directory
// (in /dev/shm when it exists: these are written thousands of times a second), then a loader runs on
// them. larmor::Error is the expected outcome for bad input; any other exception, a crash, a sanitizer
// report or a leak is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace larmor::fuzz {

/// The separator between the files packed into one fuzz input (a k-space .hdr, its .cfl, ...).
inline constexpr std::string_view kSplit = "|SPLIT|";

inline const std::string& scratchDir() {
  // Removed when the process exits normally; a crashed run leaves it behind, which helps reproducing.
  struct Scratch {
    std::string dir;
    Scratch() {
      const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
      dir = std::string(base) + "/larmor-fuzz-XXXXXX";
      if (!mkdtemp(dir.data())) std::abort();
    }
    ~Scratch() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  };
  static const Scratch scratch;
  return scratch.dir;
}

inline void writeFile(const std::string& path, std::string_view bytes) {
  // Unlink first: a fresh inode each time, so no library can mistake it for a file it still has open.
  ::unlink(path.c_str());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// The parts of `data` between separators (at most `maxParts`; the last part keeps the rest).
inline std::vector<std::string_view> splitInput(const std::uint8_t* data, std::size_t size, std::size_t maxParts) {
  std::string_view all(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < maxParts) {
    const auto at = all.find(kSplit);
    if (at == std::string_view::npos) break;
    parts.push_back(all.substr(0, at));
    all.remove_prefix(at + kSplit.size());
  }
  parts.push_back(all);
  return parts;
}

}  // namespace larmor::fuzz
