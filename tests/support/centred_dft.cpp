// The float64 centred DFT of centred_dft.hpp.
#include "support/centred_dft.hpp"

#include <cmath>
#include <numbers>

namespace larmor::test {

std::vector<cdouble> centredDft(const CArray& x, int rank, FftDirection dir) {
  const Shape& s = x.shape();
  std::vector<cdouble> cur(x.data(), x.data() + x.size());
  const double sign = dir == FftDirection::Inverse ? 1.0 : -1.0;
  for (int d = 0; d < rank; ++d) {
    const index_t n = s[d], stride = s.stride(d), c = n / 2;
    std::vector<cdouble> next(cur.size());
    for (index_t i = 0; i < x.size(); ++i) {
      const index_t k = (i / stride) % n, base = i - k * stride;
      cdouble acc = 0;
      for (index_t m = 0; m < n; ++m)
        acc += cur[base + m * stride] *
               std::polar(1.0, sign * 2 * std::numbers::pi * static_cast<double>((k - c) * (m - c)) / static_cast<double>(n));
      next[i] = acc / std::sqrt(static_cast<double>(n));
    }
    cur.swap(next);
  }
  return cur;
}

}  // namespace larmor::test
