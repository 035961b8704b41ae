#pragma once
// Output files appear whole or not at all: the writer fills a temporary file in the target's directory
// (same file system, so the final rename is atomic) and commit() renames it over the target. If the
// writer throws before commit(), the destructor removes the temporary, so a failed or cancelled write
// never leaves a half-written FILE behind, nor a stray FILE.tmp-XXXXXX.
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
};

}  // namespace larmor
