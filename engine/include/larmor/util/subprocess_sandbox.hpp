#pragma once
// A crash sandbox for file readers: a helper program reads the file in a process of its own before the
// program reads it in-process, so that a crash inside a library Larmor cannot fix (libhdf5 1.10, Debian
// 12's, has several: docs/dicom.md) ends the helper and not the workstation, and becomes one Error line
// that names the file. Generic: the caller names the helper, the file and the words of the error; the
// ISMRMRD reader uses it with larmor-h5check (engine/tools/h5check_main.cpp).
//
// The helper runs as `HELPER FILE ARGS...`, its stdout and stderr both into a pipe. What runSandboxed
// makes of how it ended:
//   exit 0                                  -> SandboxOutcome::Passed (the caller then reads the file itself)
//   exit kSandboxErrorExit, output holding
//   job.errorMarker                         -> Error(the output after the last marker): the helper's own
//                                              one-line Error, passed on verbatim (reportSandboxError)
//   killed by a signal                      -> Error("FILE: VERDICT (CRASHER crashed reading it: SIGNAL)"),
//                                              e.g. "a.h5: damaged HDF5 file (libhdf5 crashed reading it:
//                                              Segmentation fault)"
//   any other exit                          -> Error("FILE: cannot be read (OUTPUT)"), the output on one
//                                              line, or "the reader stopped" when there was none
//   helper not startable (missing, not
//   executable, no pipe)                    -> SandboxOutcome::HelperUnavailable: the caller decides
// A cancelled Progress kills the helper and rethrows Cancelled. There is no time limit: a large file reads
// slowly, and the user can cancel.
//
// Limits: the helper is started with posix_spawn, which does not copy the page tables of a caller holding
// gigabytes of k-space (fork would) but cannot set resource limits either; so the limit travels in the
// helper's environment and the helper applies it first thing (applySandboxLimits).
#include <cstdint>
#include <string>
#include <vector>

#include "larmor/util/progress.hpp"

namespace larmor {

/// The exit status of a helper that caught an Error (reportSandboxError).
inline constexpr int kSandboxErrorExit = 3;

struct SandboxJob {
  std::string helper;                   ///< path of the executable
  std::string file;                     ///< the file it reads: its first argument, and how every error starts
  std::vector<std::string> args;        ///< further arguments, after the file
  std::string errorMarker;              ///< precedes the helper's Error text in its output ("" = none)
  std::string crashVerdict = "damaged file";  ///< what a crash says about the file
  std::string crasher;                  ///< what crashed, in the error ("" = the helper's file name)
  std::uint64_t addressSpaceBytes = 0;  ///< the helper's address-space limit (0 = none)
};

enum class SandboxOutcome { Passed, HelperUnavailable };

/// Runs `job` and waits for it; see the file comment for the outcomes and the errors.
SandboxOutcome runSandboxed(const SandboxJob& job, const Progress& progress = {});

/// The helper `name`: $`overrideVariable` when set, else next to the engine library (lib/larmor/ when
/// installed, ../bin/ in a build tree). "" when there is none, when LARMOR_NO_SANDBOX is set (not "0"),
/// and inside a helper (no helper starts another).
std::string findSandboxHelper(const std::string& name, const char* overrideVariable);

/// True in a process started by runSandboxed.
bool insideSandbox();

/// For a helper's main(): applies the limits of its SandboxJob. An allocation bomb in a damaged file then
/// fails in the helper rather than swapping the machine. Nothing in AddressSanitizer builds, which reserve
/// terabytes of shadow memory.
void applySandboxLimits();

/// For a helper's main(): prints `message` after `marker` on stdout (after whatever the libraries wrote)
/// and returns kSandboxErrorExit, for main() to return.
int reportSandboxError(const std::string& marker, const std::string& message);

}  // namespace larmor
