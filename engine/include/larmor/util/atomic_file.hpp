#pragma once
// Output files appear whole or not at all: the writer fills a temporary file in the target's directory
// (same file system, so the final rename is atomic) and commit() renames it over the target. If the
// writer throws before commit(), the destructor removes the temporary, so a failed or cancelled write
// never leaves a half-written FILE behind, nor a stray FILE.tmp-XXXXXX. The temporary is registered with
// the signal clean-up (temp_registry.hpp) while it lives, so SIGINT/SIGTERM remove it too; and the first
// AtomicFile of a process in a folder removes that folder's stale temporaries of ours from killed runs
// (output_safety.hpp, removeStaleTemporaries).
#include <string>

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
  int slot_ = -1;  ///< temp_registry slot
};

/// The temporary-name pattern of every Larmor writer: TARGET + ".tmp-" + 6 letters/digits.
inline constexpr const char* kTempInfix = ".tmp-";
inline constexpr std::size_t kTempSuffixLength = 6;
/// A random suffix for a temporary name (letters and digits, kTempSuffixLength of them).
std::string randomTempSuffix();

}  // namespace larmor
