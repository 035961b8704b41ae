// Shared by the unit (cpu) and GPU (cuda) binaries: the centred unitary FFT (backend.hpp) on one device against
// the float64 definition (support/centred_dft.hpp): forward and inverse on even, odd, batched shapes of rank
// 1-3, Parseval and the round trip, the centre convention, bad ranks; fftGram (F^H diag F) likewise. (CUDA against the CPU backend on many
// more shapes: tests/gpu/test_cuda_backend.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <tuple>

#include "support/centred_dft.hpp"
#include "support/device.hpp"
#include "support/error_norms.hpp"
#include "support/random_data.hpp"

using namespace larmor;
using namespace larmor::test;

namespace {

struct FftCase {
  std::vector<index_t> dims;
  int rank;
};

void PrintTo(const FftCase& c, std::ostream* os) { *os << Shape(c.dims).str() << " rank " << c.rank; }

class FftDefinition : public ::testing::TestWithParam<std::tuple<std::string, FftCase>> {
 protected:
  void SetUp() override { selectOrSkip(std::get<0>(GetParam()), be_); }
  std::shared_ptr<Backend> be_;
};

class Fft : public DeviceTest {};

}  // namespace

TEST_P(FftDefinition, FftMatchesTheDefinitionEvaluatedInDouble) {
  const FftCase& p = std::get<1>(GetParam());
  const Shape shape(p.dims);
  const CArray x = randomArray(shape, 7);
  for (FftDirection dir : {FftDirection::Forward, FftDirection::Inverse}) {
    CDeviceArray d = CDeviceArray::upload(*be_, x);
    be_->fft(d.buffer(), shape, p.rank, dir);
    // float32 FFT: error ~ eps * log2(N) = 1e-7 * ~10; 1e-5 leaves room and still catches any
    // convention slip (a wrong shift or sign gives O(1)).
    EXPECT_LT(relL2Error(d.download(), centredDft(x, p.rank, dir)), 1e-5)
        << shape.str() << " rank " << p.rank << (dir == FftDirection::Forward ? " forward" : " inverse");
  }
}

// fftGram = F^H diag(d) F (ToeplitzOps::fftGram; the GPU, for even lengths, reads d half a period away between two
// plain cuFFTs, else drops the two inner modulations): against the definition
// (the float64 DFT, d applied to every batch, the float64 inverse; the middle rounded to float once).
TEST_P(FftDefinition, GramMatchesTheDefinition) {
  const FftCase& p = std::get<1>(GetParam());
  const Shape shape(p.dims);
  const index_t plane = shape.span(0, static_cast<std::size_t>(p.rank));
  const CArray x = randomArray(shape, 8), d = randomArray(Shape{plane}, 9);
  const std::vector<cdouble> fx = centredDft(x, p.rank, FftDirection::Forward);
  CArray masked(shape);
  for (index_t i = 0; i < x.size(); ++i) masked[i] = cfloat(fx[static_cast<std::size_t>(i)] * cdouble(d[i % plane]));
  const std::vector<cdouble> want = centredDft(masked, p.rank, FftDirection::Inverse);
  CDeviceArray dx = CDeviceArray::upload(*be_, x), dd = CDeviceArray::upload(*be_, d);
  be_->toeplitzOps().fftGram(dx.buffer(), shape, p.rank, dd.buffer());
  EXPECT_LT(relL2Error(dx.download(), want), 1e-5) << shape.str() << " rank " << p.rank;
}

INSTANTIATE_TEST_SUITE_P(
    OnDevice, FftDefinition,
    ::testing::Combine(::testing::Values(std::string(LARMOR_TEST_DEVICE)),
                       ::testing::Values(FftCase{{16}, 1}, FftCase{{15}, 1}, FftCase{{8, 6}, 2}, FftCase{{9, 7}, 2},
                                         FftCase{{8, 4, 3}, 2}, FftCase{{6, 5, 4}, 3}, FftCase{{8, 8, 8, 2}, 3},
                                         FftCase{{32, 3}, 1}, FftCase{{8}, 1}, FftCase{{7}, 1}, FftCase{{8, 3}, 1},
                                         FftCase{{6, 5}, 2}, FftCase{{5, 4, 3}, 3}, FftCase{{4, 6, 2, 2}, 3},
                                         FftCase{{9, 1, 7}, 3}, FftCase{{5, 3, 4, 2}, 3}, FftCase{{3, 8, 2}, 2},
                                         FftCase{{6, 1, 10, 2}, 3},
                                         // the GPU's fused last-dimension passes (cuda/fft_last.cu)
                                         FftCase{{32, 2, 32}, 3}, FftCase{{64, 32, 2}, 2}, FftCase{{64, 3}, 1})),
    [](const auto& info) {
      std::string s = deviceParamName({std::get<0>(info.param), info.index}) + "_r" +
                      std::to_string(std::get<1>(info.param).rank) + "_";
      for (std::size_t i = 0; i < std::get<1>(info.param).dims.size(); ++i)
        s += (i ? "x" : "") + std::to_string(std::get<1>(info.param).dims[i]);
      return s;
    });

TEST_P(Fft, RoundTripIsIdentityAndUnitary) {
  const Shape s{64, 48, 4};
  const CArray x = randomArray(s, 3);
  CDeviceArray d = CDeviceArray::upload(be(), x);
  const double n0 = be().norm2(d.buffer(), d.size());
  be().fft(d.buffer(), s, 2, FftDirection::Forward);
  EXPECT_NEAR(be().norm2(d.buffer(), d.size()) / n0, 1.0, 1e-6);  // Parseval: unitary
  be().fft(d.buffer(), s, 2, FftDirection::Inverse);
  const CArray y = d.download();
  double e = 0;
  for (index_t i = 0; i < x.size(); ++i) e += std::norm(cdouble(y[i]) - cdouble(x[i]));
  EXPECT_LT(std::sqrt(e) / n0, 1e-6);
}

TEST_P(Fft, CentreHoldsZeroFrequency) {
  // A constant image transforms to a single peak at index floor(N/2) in every dimension.
  const Shape s{8, 7};
  CDeviceArray d = CDeviceArray::upload(be(), CArray(s, cfloat(1.f)));
  be().fft(d.buffer(), s, 2, FftDirection::Forward);
  const CArray y = d.download();
  EXPECT_NEAR(std::abs(y(4, 3)), std::sqrt(56.0), 1e-4);
  EXPECT_NEAR(std::abs(y(0, 0)), 0.0, 1e-5);
}

TEST_P(Fft, FftCentreConventionOnAnImpulse) {
  // An impulse at the centre c = floor(N/2) transforms to a constant N^{-1/2} (no phase ramp), for even
  // and odd lengths: the convention that puts k = 0 and the image centre at index c.
  for (index_t n : {index_t{8}, index_t{9}}) {
    CArray in(Shape{n, n}, cfloat(0.f));
    in(n / 2, n / 2) = 1.f;
    CDeviceArray x = CDeviceArray::upload(be(), in);
    be().fft(x.buffer(), x.shape(), 2, FftDirection::Forward);
    const CArray g = x.download();
    for (index_t i = 0; i < g.size(); ++i) {
      ASSERT_NEAR(g[i].real(), 1.0 / n, 1e-6) << n << " at " << i;
      ASSERT_NEAR(g[i].imag(), 0.0, 1e-6) << n << " at " << i;
    }
  }
}

TEST_P(Fft, RejectsBadRank) {
  CDeviceArray d(be(), Shape{4, 4});
  EXPECT_THROW(be().fft(d.buffer(), Shape{4, 4}, 4, FftDirection::Forward), Error);
  EXPECT_THROW(be().fft(d.buffer(), Shape{4, 4, 4}, 2, FftDirection::Forward), Error);  // buffer too small
}

LARMOR_INSTANTIATE_ON_TEST_DEVICE(Fft);
