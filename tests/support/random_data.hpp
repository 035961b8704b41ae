#pragma once
// The tests' seeded random inputs: complex normal values (real and imaginary parts N(0, 1), drawn in that
// order) as a vector or an array of a given shape. One generator, so a seed means the same data everywhere.
#include <random>
#include <vector>

#include "larmor/array/array.hpp"

namespace larmor::test {

inline std::vector<cfloat> randomComplex(index_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<cfloat> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = {nd(rng), nd(rng)};
  return v;
}

inline CArray randomArray(const Shape& s, unsigned seed) {
  CArray a(s);
  const auto v = randomComplex(s.size(), seed);
  std::copy(v.begin(), v.end(), a.data());
  return a;
}

}  // namespace larmor::test
