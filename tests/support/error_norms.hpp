#pragma once
// The tests' one measure of closeness between a result and a reference (tests/support, docs/testing.md).
// relL2Error(got, ref) = ||got - ref||_2 / ||ref||_2 over complex elements, summed in double, with no fitted
// gain or phase: a wrongly scaled or phase-shifted result counts in full. Where the reference is all zero it is
// the absolute ||got||_2; where the sizes differ it is +infinity (so any bound fails). meanRelError is the
// mean of the elementwise |got - ref| / |ref| (the GRAPPA thesis's eq. 5.1). Both accept std::vector<cfloat>,
// std::vector<cdouble>, CArray and Array<cdouble> in any pairing.
#include <cmath>
#include <complex>
#include <cstddef>
#include <limits>

namespace larmor::test {

template <class A, class B>
double relL2Error(const A& got, const B& ref) {
  const auto n = static_cast<std::size_t>(ref.size());
  if (static_cast<std::size_t>(got.size()) != n) return std::numeric_limits<double>::infinity();
  const auto* g = got.data();
  const auto* r = ref.data();
  double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::complex<double> gi(g[i]), ri(r[i]);
    num += std::norm(gi - ri);
    den += std::norm(ri);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

template <class A, class B>
double meanRelError(const A& got, const B& ref) {
  const auto n = static_cast<std::size_t>(ref.size());
  if (static_cast<std::size_t>(got.size()) != n || n == 0) return std::numeric_limits<double>::infinity();
  double mean = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::complex<double> gi(got.data()[i]), ri(ref.data()[i]);
    mean += std::abs(gi - ri) / std::abs(ri);
  }
  return mean / static_cast<double>(n);
}

}  // namespace larmor::test
