#pragma once
// Temporaries that a signal must not leave behind. Every temporary output (AtomicFile's FILE.tmp-XXXXXX,
// the DICOM writer's DIR.tmp-XXXXXX) is registered here while it is live; a SIGINT/SIGTERM handler
// (installed by the CLI with installTempCleanupOnSignals) removes the registered paths and then lets the
// signal end the process as it would have. The registry is a fixed table of path buffers with an atomic
// state per slot, so the handler touches no heap and calls only async-signal-safe functions (unlink,
// open, getdents64 through syscall, unlinkat, rmdir, close, sigaction, raise). A full table means the
// temporary is simply not registered (the next run's stale clean-up still finds it).
#include <string>

namespace larmor {

enum class TempKind { File, Directory };

/// Registers a live temporary; returns a slot handle (-1 when the table is full or the path too long).
int registerTemporary(const std::string& path, TempKind kind);
/// Forgets a slot (after the temporary was renamed into place or removed). -1 is ignored.
void unregisterTemporary(int slot);

/// Removes every registered temporary now (a directory: its files, flat, then itself). Async-signal-safe.
void removeRegisteredTemporaries() noexcept;

/// Installs the SIGINT/SIGTERM/SIGHUP handler that calls removeRegisteredTemporaries() and then re-raises
/// the signal with its default action (the exit status still says "killed by SIGTERM"). Idempotent.
void installTempCleanupOnSignals();

}  // namespace larmor
