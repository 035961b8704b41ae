// Finiteness checks (larmor/array/finite.hpp). A float is NaN or Inf exactly when its 8 exponent bits
// are all ones (IEEE 754 binary32). Blocks are tested without branches, so the loop vectorises (a
// per-element std::isfinite with an early exit did not: 40 % of the ISMRMRD read of a 3.3 GB file); only
// a block that holds a bad value is searched again for its position.
#include "larmor/array/finite.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace larmor {

std::size_t firstNonFinite(const float* p, std::size_t n) {
  constexpr std::size_t kBlock = 1024;
  for (std::size_t at = 0; at < n; at += kBlock) {
    const std::size_t m = std::min(kBlock, n - at);
    const float* q = p + at;
    std::uint32_t bad = 0;
#pragma omp simd reduction(| : bad)
    for (std::size_t i = 0; i < m; ++i) {
      std::uint32_t bits;
      std::memcpy(&bits, q + i, sizeof bits);
      bad |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
    }
    if (bad == 0) continue;
    for (std::size_t i = 0; i < m; ++i)
      if (!std::isfinite(q[i])) return at + i;
  }
  return n;
}

}  // namespace larmor
