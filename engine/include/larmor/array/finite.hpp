#pragma once
// Finiteness of float data, checked at memory speed: readers check every sample they load (a NaN or Inf
// in k-space spreads over the whole image), and gigabytes of them must not cost more than reading them.
#include <cstddef>

namespace larmor {

/// Index of the first NaN or Inf among p[0], ..., p[n - 1]; n when all are finite. (Complex data: pass
/// the interleaved floats, 2 per sample.)
std::size_t firstNonFinite(const float* p, std::size_t n);

}  // namespace larmor
