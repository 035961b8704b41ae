// The centred unitary FFT (backend.hpp) against a float64 direct DFT of the same definition.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "larmor/backend/registry.hpp"

using namespace larmor;

namespace {

CArray randomArray(const Shape& s, unsigned seed) {
  CArray a(s);
  std::mt19937 rng(seed);
  std::normal_distribution<float> n;
  for (index_t i = 0; i < a.size(); ++i) a[i] = {n(rng), n(rng)};
  return a;
}

/// X[k] = N^-1/2 sum_n x[n] exp(-+2 pi i (k - c)(n - c) / N), c = floor(N/2), over dims [0, rank).
std::vector<cdouble> directDft(const CArray& x, int rank, bool inverse) {
  const Shape& s = x.shape();
  std::vector<cdouble> cur(x.vec().begin(), x.vec().end());
  for (int d = 0; d < rank; ++d) {
    const index_t n = s[d], stride = s.stride(d), c = n / 2;
    std::vector<cdouble> next(cur.size());
    const double sign = inverse ? 1.0 : -1.0;
    for (index_t i = 0; i < x.size(); ++i) {
      const index_t k = (i / stride) % n, base = i - k * stride;
      cdouble acc = 0;
      for (index_t m = 0; m < n; ++m) {
        const double ph = sign * 2 * M_PI * double((k - c) * (m - c)) / double(n);
        acc += cur[base + m * stride] * cdouble(std::cos(ph), std::sin(ph));
      }
      next[i] = acc / std::sqrt(double(n));
    }
    cur.swap(next);
  }
  return cur;
}

double relErr(const CArray& a, const std::vector<cdouble>& ref) {
  double e = 0, r = 0;
  for (index_t i = 0; i < a.size(); ++i) {
    e += std::norm(cdouble(a[i]) - ref[i]);
    r += std::norm(ref[i]);
  }
  return std::sqrt(e / r);
}

struct FftCase {
  Shape shape;
  int rank;
};

}  // namespace

class CpuFft : public ::testing::TestWithParam<FftCase> {};

TEST_P(CpuFft, MatchesDirectDftInDoublePrecision) {
  auto be = makeCpuBackend();
  const auto& p = GetParam();
  const CArray x = randomArray(p.shape, 7);
  for (bool inverse : {false, true}) {
    CDeviceArray d = CDeviceArray::upload(*be, x);
    be->fft(d.buffer(), p.shape, p.rank, inverse ? FftDirection::Inverse : FftDirection::Forward);
    const CArray y = d.download();
    // float32 FFT: error ~ eps * log2(N) = 1e-7 * ~10; 1e-5 leaves room and still catches any
    // convention slip (a wrong shift or sign gives O(1)).
    EXPECT_LT(relErr(y, directDft(x, p.rank, inverse)), 1e-5) << p.shape.str() << " rank " << p.rank;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CpuFft,
                         ::testing::Values(FftCase{Shape{16}, 1}, FftCase{Shape{15}, 1}, FftCase{Shape{8, 6}, 2},
                                           FftCase{Shape{9, 7}, 2}, FftCase{Shape{8, 4, 3}, 2},
                                           FftCase{Shape{6, 5, 4}, 3}, FftCase{Shape{8, 8, 8, 2}, 3},
                                           FftCase{Shape{32, 3}, 1}));

TEST(CpuFft, RoundTripIsIdentityAndUnitary) {
  auto be = makeCpuBackend();
  const Shape s{64, 48, 4};
  const CArray x = randomArray(s, 3);
  CDeviceArray d = CDeviceArray::upload(*be, x);
  const double n0 = be->norm2(d.buffer(), d.size());
  be->fft(d.buffer(), s, 2, FftDirection::Forward);
  EXPECT_NEAR(be->norm2(d.buffer(), d.size()) / n0, 1.0, 1e-6);  // Parseval: unitary
  be->fft(d.buffer(), s, 2, FftDirection::Inverse);
  const CArray y = d.download();
  double e = 0;
  for (index_t i = 0; i < x.size(); ++i) e += std::norm(cdouble(y[i]) - cdouble(x[i]));
  EXPECT_LT(std::sqrt(e) / n0, 1e-6);
}

TEST(CpuFft, CentreHoldsZeroFrequency) {
  // A constant image transforms to a single peak at index floor(N/2) in every dimension.
  auto be = makeCpuBackend();
  const Shape s{8, 7};
  CDeviceArray d = CDeviceArray::upload(*be, CArray(s, cfloat(1.f)));
  be->fft(d.buffer(), s, 2, FftDirection::Forward);
  const CArray y = d.download();
  EXPECT_NEAR(std::abs(y(4, 3)), std::sqrt(56.0), 1e-4);
  EXPECT_NEAR(std::abs(y(0, 0)), 0.0, 1e-5);
}

TEST(CpuFft, RejectsBadRank) {
  auto be = makeCpuBackend();
  CDeviceArray d(*be, Shape{4, 4});
  EXPECT_THROW(be->fft(d.buffer(), Shape{4, 4}, 4, FftDirection::Forward), Error);
  EXPECT_THROW(be->fft(d.buffer(), Shape{4, 4, 4}, 2, FftDirection::Forward), Error);  // buffer too small
}
