#pragma once
// What a batch's output folder may hold of Larmor's, and how a batch proves it.
//  - The batch's own files (batch-plan.json, summary.json, contact-sheet.png, journal.jsonl; with --slurm
//    manifest.txt, settings.json, larmor-batch.sbatch) are replaced only when they are Larmor's earlier
//    output: the file carries the batch's provenance inside (the keys larmor_batch_plan /
//    larmor_batch_summary / larmor_batch_settings, the first comment line of the manifest and the Slurm
//    script), or, for the contact sheet (a PNG), the content hash of the file as it is now was recorded in
//    the journal when a batch wrote it (a "file" record, appended before the file is renamed into place).
//    Else the batch refuses before any work.
//  - Each item's outputs get a content hash (contentHash: the file's bytes; a DICOM folder's sorted names
//    and bytes) recorded in its "done" record; resume compares it with the disk (runner.cpp).
//  - One batch at a time per folder, except shards of the same plan: BatchLock.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "larmor/io/png.hpp"

namespace larmor::batch {

class Journal;

/// 64-bit FNV-1a of a file's bytes as 16 hex digits; of a folder (a DICOM series), of its sorted file
/// names and their bytes. Empty when the path does not exist or cannot be read.
std::string contentHash(const std::string& path);

/// Throws Error("DIR/NAME: exists and is not ...; not replaced ...") unless `name` in `dir` is absent or
/// the batch's own earlier output (see above). `records`: the journal's records.
void requireBatchFile(const std::string& dir, const std::string& name, const std::vector<nlohmann::json>& records);

/// Throws unless DIR/journal.jsonl is absent, empty or a Larmor batch journal (its first record is a
/// JSON object with an "event").
void requireBatchJournal(const std::string& path);

/// Writes `bytes` to `path` atomically. Errors name the file and errno's text (a full disk: "No space
/// left on device").
void writeBatchFile(const std::string& path, const std::string& bytes);
/// Writes a PNG image (the contact sheet) atomically, recording its content hash in `journal` first unless
/// `known` (the journal's records) already holds that file with that hash.
void writeBatchPng(Journal& journal, const std::vector<nlohmann::json>& known, const std::string& path,
                   const io::Image8& image);

/// Writes `bytes` to an existing temporary `path` with write(2); throws Error naming `forMessages` and
/// errno's text.
void writeBytes(const std::string& path, const std::string& bytes, const std::string& forMessages);

/// One batch per output folder at a time: a shared flock on DIR/.larmor-batch.lock, which names the plan
/// (its hash) of the batch holding it. Another process of the same plan (a shard) shares it; a batch of
/// another plan (other settings, inputs or formats) is refused while one runs, naming the running one.
/// Decided under a brief exclusive flock on DIR/.larmor-batch-gate.lock. A file system without flock: no
/// lock (said once on stderr).
class BatchLock {
 public:
  BatchLock(const std::string& dir, const std::string& planHash);
  ~BatchLock();
  BatchLock(const BatchLock&) = delete;
  BatchLock& operator=(const BatchLock&) = delete;
  /// Removes the two lock files from `dir` when no process holds or waits at them (both taken at once
  /// without waiting), then `dir` itself when it is empty: for a folder a failed batch made a moment ago.
  static void removeIfUnused(const std::string& dir);

 private:
  int fd_ = -1;
};

}  // namespace larmor::batch
