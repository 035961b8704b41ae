// Shared by the unit (cpu) and GPU (cuda) binaries: the Toeplitz operator split over devices by the parity of the
// frequencies (ops/toeplitz_split.hpp) against the one-device operator (ops/toeplitz.hpp), and its fold of Q against
// the plain transform of the 2N grid in float64. On the CPU the devices are further CPU backends; on a GPU the other
// GPUs, and with one GPU further backends of the same one (support/device.hpp: splitDevices), so the copies and the
// sums are checked on any machine.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <complex>
#include <string>
#include <thread>

#include "larmor/ops/toeplitz.hpp"
#include "larmor/ops/toeplitz_split.hpp"
#include "support/device.hpp"
#include "support/nc_problem.hpp"
#include "support/random_data.hpp"

using namespace larmor;

namespace {

class SplitToeplitz : public larmor::test::DeviceTest {
 protected:
  std::vector<Backend*> devices(int count) { return larmor::test::splitDevices(be(), count, owned_); }
  std::vector<std::shared_ptr<Backend>> owned_;
};

double relativeError(const std::vector<cfloat>& got, const std::vector<cfloat>& want) {
  double e = 0, r = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    e += std::norm(std::complex<double>(got[i]) - std::complex<double>(want[i]));
    r += std::norm(std::complex<double>(want[i]));
  }
  return std::sqrt(e / r);
}

NufftGeometry geometry(int dims, index_t n0, index_t n1, index_t n2, index_t m, unsigned seed) {
  NufftGeometry g;
  g.dims = dims;
  g.image[0] = n0, g.image[1] = n1, g.image[2] = dims == 3 ? n2 : 1;
  const index_t d[3] = {n0, n1, g.image[2]};
  g.trajectory = larmor::test::randomTrajectory(m, d, dims, seed);
  return g;
}

/// T x by the split over `count` devices against the one-device operator, for a batch of two images, x and y
/// distinct and the same buffer.
void expectSameOperator(Backend& b0, const std::vector<Backend*>& all, const NufftGeometry& g, int expectClasses) {
  ops::PsfOptions po;
  po.method = ops::PsfMethod::Nufft;
  const CArray psf = ops::computePsf(b0, g, nullptr, po);
  const index_t voxels = g.image[0] * g.image[1] * (g.dims == 3 ? g.image[2] : 1), batch = 2;
  ops::ToeplitzOperator one(b0, g, psf, 1.0 / static_cast<double>(voxels));
  ops::SplitToeplitzOperator split(all, g, psf, 1.0 / static_cast<double>(voxels));
  ASSERT_EQ(split.devices(), expectClasses);
  EXPECT_EQ(split.classes(g, static_cast<int>(all.size())), expectClasses);
  EXPECT_DOUBLE_EQ(split.diagonal(), one.diagonal());
  const auto x = larmor::test::randomComplex(voxels * batch, 31);
  const std::size_t bytes = x.size() * sizeof(cfloat);
  auto xb = b0.allocate(bytes), y1 = b0.allocate(bytes), y2 = b0.allocate(bytes), inPlace = b0.allocate(bytes);
  b0.upload(*xb, x.data(), bytes);
  b0.upload(*inPlace, x.data(), bytes);
  one.apply(*xb, *y1, batch);
  split.apply(*xb, *y2, batch);
  split.apply(*inPlace, *inPlace, batch);  // y may be x
  std::vector<cfloat> want(x.size()), got(x.size()), got2(x.size());
  b0.download(want.data(), *y1, bytes);
  b0.download(got.data(), *y2, bytes);
  b0.download(got2.data(), *inPlace, bytes);
  // Float FFTs of other lengths: the same operator to float rounding.
  EXPECT_LT(relativeError(got, want), 2e-6) << g.dims << "D over " << expectClasses;
  EXPECT_EQ(got, got2) << "in place: other bits";
  // Each image of the batch is its own: the second against a batch of one.
  std::vector<cfloat> second(x.begin() + voxels, x.end()), alone(static_cast<std::size_t>(voxels));
  auto sb = b0.allocate(bytes / 2);
  b0.upload(*sb, second.data(), bytes / 2);
  split.apply(*sb, *sb, 1);
  b0.download(alone.data(), *sb, bytes / 2);
  EXPECT_EQ(alone, std::vector<cfloat>(got.begin() + voxels, got.end()));
}

TEST_P(SplitToeplitz, MatchesTheOneDeviceOperator3D) {
  const NufftGeometry g = geometry(3, 16, 12, 8, 4000, 3);
  for (int count : {2, 4, 8}) expectSameOperator(be(), devices(count), g, count);
  // Five devices: four classes (a power of two); an odd axis stops the split there.
  expectSameOperator(be(), devices(5), g, 4);
  expectSameOperator(be(), devices(8), geometry(3, 16, 9, 8, 3000, 4), 2);
  expectSameOperator(be(), devices(2), geometry(3, 15, 8, 8, 3000, 5), 1);
}

TEST_P(SplitToeplitz, MatchesTheOneDeviceOperator2D) {
  const NufftGeometry g = geometry(2, 32, 24, 1, 2000, 6);
  for (int count : {2, 4}) expectSameOperator(be(), devices(count), g, count);
  expectSameOperator(be(), devices(8), g, 4);  // two axes in 2D
}

/// The replicated use: D threads apply their replicas together (three rounds, x changing), each on its own copy of
/// x; every replica returns the split operator's result, bit for bit, on its own device. An abort releases a thread
/// that waits for the others.
TEST_P(SplitToeplitz, ReplicasReturnTheWholeOperatorOnEveryDevice) {
  for (int count : {2, 4}) {
    const NufftGeometry g = geometry(3, 16, 12, 8, 3000, 9);
    ops::PsfOptions po;
    po.method = ops::PsfMethod::Nufft;
    const CArray psf = ops::computePsf(be(), g, nullptr, po);
    const index_t voxels = 16 * 12 * 8;
    const std::vector<Backend*> all = devices(count);
    ops::SplitToeplitzOperator split(all, g, psf, 1.0 / static_cast<double>(voxels));
    ASSERT_EQ(split.devices(), count);
    const std::size_t bytes = static_cast<std::size_t>(voxels) * sizeof(cfloat);
    for (int round = 0; round < 3; ++round) {
      const auto x = larmor::test::randomComplex(voxels, 50 + round);
      auto xb = be().allocate(bytes), yb = be().allocate(bytes);
      be().upload(*xb, x.data(), bytes);
      split.apply(*xb, *yb);
      std::vector<cfloat> want(x.size());
      be().download(want.data(), *yb, bytes);
      std::vector<std::vector<cfloat>> got(static_cast<std::size_t>(count));
      std::vector<std::string> failures(static_cast<std::size_t>(count));
      split.resetReplicas();
      {
        std::vector<std::jthread> threads;
        for (int d = 0; d < count; ++d)
          threads.emplace_back([&, d] {
            try {
              Backend& b = *all[static_cast<std::size_t>(d)];
              auto xd = b.allocate(bytes), yd = b.allocate(bytes);
              b.upload(*xd, x.data(), bytes);
              split.replica(d).apply(*xd, *yd, 1);
              got[static_cast<std::size_t>(d)].resize(x.size());
              b.download(got[static_cast<std::size_t>(d)].data(), *yd, bytes);
            } catch (const std::exception& e) {
              failures[static_cast<std::size_t>(d)] = e.what();
              split.abortReplicas();
            }
          });
      }
      for (int d = 0; d < count; ++d) {
        EXPECT_EQ(failures[static_cast<std::size_t>(d)], "") << "device " << d;
        EXPECT_EQ(got[static_cast<std::size_t>(d)], want) << count << " devices, device " << d << ", round " << round;
      }
    }
    // One device alone: no partner comes; an abort releases it with an error.
    split.resetReplicas();
    std::string error;
    {
      std::jthread lone([&] {
        try {
          auto xd = be().allocate(bytes), yd = be().allocate(bytes);
          be().upload(*xd, larmor::test::randomComplex(voxels, 7).data(), bytes);
          split.replica(0).apply(*xd, *yd, 1);
        } catch (const std::exception& e) {
          error = e.what();
        }
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      split.abortReplicas();
    }
    EXPECT_NE(error.find("another device's solve stopped"), std::string::npos) << error;
  }
}

/// The fold against its definition: qhat_c(m) = qhat(2m + c) / 2 per split axis, qhat the plain DFT of Q over the
/// 2N grid, here in double on the host for a small 2D grid split along both axes.
TEST_P(SplitToeplitz, TheFoldedKernelIsTheParityClassOfTheTransform) {
  const index_t n0 = 8, n1 = 6, g0 = 16, g1 = 12;
  CArray q(Shape{g0, g1, 1});
  const auto r = larmor::test::randomComplex(q.size(), 41);
  for (index_t i = 0; i < q.size(); ++i) q[i] = r[static_cast<std::size_t>(i)];
  const Shape image{n0, n1, 1};
  auto dft = [](const CArray& a, index_t l0, index_t l1, index_t k0, index_t k1) {
    // sum_u a(u) exp(-2 pi i (k - c)(u - c) / L) per axis, c = L/2.
    std::complex<double> s = 0;
    for (index_t y = 0; y < l1; ++y)
      for (index_t x = 0; x < l0; ++x) {
        const double ph = -2 * M_PI * (static_cast<double>((k0 - l0 / 2) * (x - l0 / 2)) / l0 +
                                       static_cast<double>((k1 - l1 / 2) * (y - l1 / 2)) / l1);
        s += std::complex<double>(a[x + l0 * y]) * std::polar(1.0, ph);
      }
    return s;
  };
  for (int c = 0; c < 4; ++c) {
    const CArray f = ops::SplitToeplitzOperator::foldedPsf(q, image, 2, c);
    ASSERT_EQ(f.shape(), (Shape{n0, n1, 1}));
    for (index_t m1 = 0; m1 < n1; ++m1)
      for (index_t m0 = 0; m0 < n0; ++m0) {
        const std::complex<double> want = dft(q, g0, g1, 2 * m0 + (c & 1), 2 * m1 + (c >> 1)),
                                   got = dft(f, n0, n1, m0, m1);
        EXPECT_LT(std::abs(got - want), 1e-4 * (1 + std::abs(want))) << "class " << c << " at " << m0 << "," << m1;
      }
  }
}

}  // namespace

LARMOR_INSTANTIATE_ON_TEST_DEVICE(SplitToeplitz);
