#pragma once
// Large frees off the calling thread. Unmapping gigabytes of touched pages takes time (2.7 GB: 0.22 s on the
// build machine), which a cancelled 3D reconstruction used to pay while it unwound, after the user had pressed
// Cancel (3D GRAPPA's plan at 128^3: 0.34-0.42 s from the throw to the catch, measured). releaseLater hands a
// block of at least kBackgroundRelease bytes to one releasing thread and returns at once (smaller blocks are
// freed there and then). waitForReleases, called before every large allocation (hostAllocate, the CPU backend's
// buffers, GRAPPA's index tables), waits until nothing is pending, so that the process's peak memory is what it
// was when blocks were freed in place.
#include <cstddef>

namespace larmor {

inline constexpr std::size_t kBackgroundRelease = std::size_t{64} << 20;

/// free(p) of a block of `bytes`, on the releasing thread when it is large (free must be thread-safe).
void releaseLater(void* p, std::size_t bytes, void (*free)(void*)) noexcept;
/// Returns when every block handed to releaseLater has been freed.
void waitForReleases() noexcept;

}  // namespace larmor
