#pragma once
// Output files appear whole or not at all: the writer fills a temporary file in the target's directory
// (same file system, so the final rename is atomic) and commit() renames it over the target. If the
// writer throws before commit(), the destructor removes the temporary, so a failed or cancelled write
// never leaves a half-written FILE behind, nor a stray temporary. The temporary, FILE.larmor.tmp-TOKEN-N,
// is reserved through temp_registry.hpp: listed in this process's run record in the folder before it
// exists and registered with the signal clean-up while it lives, so SIGINT/SIGTERM remove it, and after a
// SIGKILL the next Larmor run in that folder removes it (and only what the dead run's record lists).
#include <string>

#include "larmor/util/temp_registry.hpp"

namespace larmor {

class AtomicFile {
 public:
  /// Picks an unused temporary name next to `target`. Throws Error when the directory is missing.
  explicit AtomicFile(std::string target);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// Where the writer writes. The file does not exist yet (some libraries refuse to open an
  /// existing non-empty file as new).
  const std::string& tempPath() const { return temp_; }
  const std::string& target() const { return target_; }
  /// Renames the temporary onto the target. Throws Error (and removes the temporary) on failure.
  void commit();
  bool committed() const { return committed_; }

 private:
  std::string target_;
  std::string temp_;
  bool committed_ = false;
  Temporary reserved_;  ///< the registry's handle of temp_
};

/// The temporary-name pattern of Larmor versions before the run records: TARGET + ".tmp-" + 6 letters/
/// digits. No longer written, and never removed on its pattern: a user's file may look like it.
inline constexpr const char* kTempInfix = ".tmp-";
inline constexpr std::size_t kTempSuffixLength = 6;
/// A random suffix (letters and digits, kTempSuffixLength of them).
std::string randomTempSuffix();

}  // namespace larmor
