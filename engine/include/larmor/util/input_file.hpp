#pragma once
// Inputs must be regular files: a FIFO blocks the reader's open() until a writer
// appears, so `recon fifo.cfl` used to hang; a device or a socket is no data file either. Checked with
// stat(2), which does not open the file and so never blocks.
#include <string>

namespace larmor {

/// Throws Error("PATH: not a regular file (a FIFO); Larmor reads data files only") for a path that
/// exists and is not a regular file (after symlinks); a missing path is left to the reader's own message.
void requireRegularInput(const std::string& path);

}  // namespace larmor
