#pragma once
// Temporaries: Larmor removes only what this process, or a dead Larmor process it can identify by the
// record it left, created; never a file chosen by its name pattern or its age.
//
// Names. A temporary for TARGET is TARGET.larmor.tmp-TOKEN-N (a file, or a DICOM series folder being
// written); a previous DICOM export moved aside during the swap is TARGET.larmor.old-TOKEN-N. TOKEN names
// this process's run record in that folder; N counts the process's temporaries.
//
// Run record. Before a process makes its first temporary in a folder it creates the hidden file
// .larmor-run-TOKEN.lock there (TOKEN = pid-XXXXXX, 6 random letters/digits), holds an exclusive flock(2) on
// it for as long as it has temporaries there, and appends each temporary's kind and name to it BEFORE the
// temporary exists. When its last temporary there is renamed into place or removed, it removes the record.
//
// Clean-up of dead runs. The first temporary a process makes in a folder first calls
// removeDeadRunTemporaries on that folder: for each record whose flock can be taken (the kernel drops a
// flock when its process ends, by SIGKILL or a power cut too), it removes exactly the entries the record
// lists that carry the record's own TOKEN, puts a moved-aside previous export back when its target is
// missing (the run died between the swap's two renames), then the record. A record that is still locked
// belongs to a live run and is left alone; nothing else in the folder is looked at. A file system without
// flock: the record is written but never taken, so a killed run's leftovers stay (named, never guessed).
//
// Signals. Every live temporary and record is also in a fixed table of path buffers with an atomic state
// per slot; the SIGINT/SIGTERM/SIGHUP handler (installTempCleanupOnSignals) removes the temporaries and
// then the records with async-signal-safe calls only (unlink, open, getdents64 through syscall, unlinkat,
// rmdir, close, sigaction, raise), then re-raises the signal. A full table means a temporary is not
// removed by the handler (the record still lets the next run remove it).
#include <cstddef>
#include <string>

namespace larmor {

enum class TempKind { File, Directory };

/// A temporary reserved by reserveTemporary: its path (nothing exists there yet) and its registrations.
struct Temporary {
  std::string path;
  int slot = -1;    ///< signal table slot
  int record = -1;  ///< run record index
};

/// Reserves a temporary next to `target` (role "tmp": the output being written; "old": a previous export
/// moved aside): picks the name, records it in this process's run record in the target's folder (creating
/// the record, and first removing the folder's dead runs' leftovers, on first use) and registers it for the
/// signal clean-up. The caller creates it (open O_EXCL, mkdir). Throws Error naming `target` and the
/// reason (errno's text) when the folder cannot take the record (missing, read-only, full).
Temporary reserveTemporary(const std::string& target, TempKind kind, const char* role = "tmp");
/// Forgets a temporary after it was renamed into place or removed; the last one of a folder removes the
/// record. Idempotent (the handle is reset).
void releaseTemporary(Temporary& t);

/// Removes from `dir` the temporaries of dead Larmor runs (see above). Returns how many runs' records were
/// cleaned up.
int removeDeadRunTemporaries(const std::string& dir);

/// Registers a live temporary with the signal clean-up only (no record); returns a slot handle (-1 when
/// the table is full or the path too long).
int registerTemporary(const std::string& path, TempKind kind);
/// Forgets a slot (after the temporary was renamed into place or removed). -1 is ignored.
void unregisterTemporary(int slot);

/// Removes every registered temporary of this process now (a directory: its files, flat, then itself),
/// then the run records. Async-signal-safe.
void removeRegisteredTemporaries() noexcept;

/// Installs the SIGINT/SIGTERM/SIGHUP handler that calls removeRegisteredTemporaries() and then re-raises
/// the signal with its default action (the exit status still says "killed by SIGTERM"). Idempotent.
void installTempCleanupOnSignals();

/// `n` random letters and digits from a generator seeded per process (run-record tokens, temporary suffixes).
std::string randomLettersAndDigits(std::size_t n);

/// The record-file and temporary-name markers (for tests and documentation).
inline constexpr const char* kRunRecordPrefix = ".larmor-run-";
inline constexpr const char* kRunRecordSuffix = ".lock";

}  // namespace larmor
