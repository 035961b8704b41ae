#pragma once
// The batch journal: DIR/journal.jsonl, append-only JSON lines, one record per event of an item
// ("started", "done", "failed"). Several processes (the shards of a Slurm job array, on several hosts
// of a shared file system) append to the one file: each record is one write() of one line on a
// descriptor opened with O_APPEND, under an exclusive flock() (Linux maps flock onto NFS's byte-range
// locks), followed by fsync(), so a record is either wholly in the file or not at all, and a `kill -9`
// loses at most the record being written. A torn last line (a crash inside write) is skipped when
// reading, and the next append starts on a fresh line.
//
// What "done" means: the latest record of an item's key (its name, a hash of its input's path, size and
// modification time, and a hash of its settings and output formats) is "done", and the disk agrees: each
// output the record lists exists, no later "done" record of another key wrote it, and its content hash is
// the one the record holds (runner.cpp). Changing an input or the settings changes the key, so the item
// is reconstructed again; "failed" and "started" (interrupted) are retried. "file" records hold the
// content hash of the batch's contact sheet as written (ownership.hpp).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace larmor::batch {

class Journal {
 public:
  /// Opens (creates) the journal file for appending. Throws Error naming the file.
  explicit Journal(std::string path);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  /// Appends `record` (a JSON object) as one line, durably. Thread-safe and process-safe.
  void append(const nlohmann::json& record);
  const std::string& path() const { return path_; }

  /// Every whole, parsable record of the file in order (none when it does not exist); *skipped counts the
  /// lines that were not (a torn last line).
  static std::vector<nlohmann::json> read(const std::string& path, int* skipped = nullptr);

 private:
  void writeLine(std::string line);  ///< under both locks: after a torn line, starts a fresh one
  std::string path_;
  int fd_ = -1;
};

/// 64-bit FNV-1a of bytes (Fowler, Noll, Vo): journal keys, not security.
std::uint64_t fnv1a(std::string_view bytes, std::uint64_t h = 14695981039346656037ull);
std::string hex64(std::uint64_t v);

/// Hash of an input file's identity: its absolute path, size and modification time (ns). Empty when the
/// file does not exist. For a .cfl path the .hdr and .cfl both count.
std::string inputHash(const std::string& path);

/// The journal key of an item: name + input hash + settings hash.
std::string itemKey(const std::string& name, const std::string& inputHash, const std::string& settingsHash);

/// The latest record of each key.
std::map<std::string, nlohmann::json> latestByKey(const std::vector<nlohmann::json>& records);

}  // namespace larmor::batch
