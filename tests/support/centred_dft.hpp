#pragma once
// The tests' float64 reference of the backends' centred unitary FFT (backend.hpp, docs/conventions.md):
// X[k] = N^-1/2 sum_n x[n] exp(-+2 pi i (k - c)(n - c) / N), c = floor(N/2), over dims [0, rank) of `x`'s
// shape (the rest is the batch), evaluated directly (one dimension at a time) in double.
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/backend/backend.hpp"

namespace larmor::test {

std::vector<cdouble> centredDft(const CArray& x, int rank, FftDirection dir);

}  // namespace larmor::test
