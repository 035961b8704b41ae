// Shared by the unit (cpu) and GPU (cuda) binaries: the backend's vector ops, resize and sum of squares on
// one device against plain loops in double (the GPU tests also compare CUDA with the CPU backend directly:
// tests/gpu/test_cuda_backend.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

#include "support/device.hpp"
#include "support/random_data.hpp"

using namespace larmor;
using larmor::test::randomArray;

namespace {
class BackendOps : public larmor::test::DeviceTest {};
}  // namespace

TEST_P(BackendOps, ElementwiseOps) {
  const index_t n = 1000;
  const CArray x = randomArray(Shape{n}, 1), y = randomArray(Shape{n}, 2);
  CDeviceArray dx = CDeviceArray::upload(be(), x), dy = CDeviceArray::upload(be(), y);
  const cfloat a(0.5f, -1.f), b(2.f, 0.25f);
  be().axpby(dy.buffer(), a, dx.buffer(), b, n);
  CArray r = dy.download();
  for (index_t i = 0; i < n; ++i) EXPECT_NEAR(std::abs(r[i] - (a * x[i] + b * y[i])), 0.f, 1e-5f);

  be().scale(dx.buffer(), a, n);
  r = dx.download();
  for (index_t i = 0; i < n; ++i) EXPECT_NEAR(std::abs(r[i] - a * x[i]), 0.f, 1e-5f);

  be().fill(dx.buffer(), b, n);
  r = dx.download();
  for (index_t i = 0; i < n; ++i) EXPECT_EQ(r[i], b);
}

TEST_P(BackendOps, MultiplyBroadcastsAndConjugates) {
  const index_t na = 10, nb = 30;
  const CArray a = randomArray(Shape{na}, 3), b = randomArray(Shape{nb}, 4);
  CDeviceArray da = CDeviceArray::upload(be(), a), db = CDeviceArray::upload(be(), b), out(be(), Shape{nb});
  be().multiply(out.buffer(), da.buffer(), na, db.buffer(), nb, true);
  const CArray r = out.download();
  for (index_t i = 0; i < nb; ++i) EXPECT_NEAR(std::abs(r[i] - std::conj(a[i % na]) * b[i]), 0.f, 1e-5f);
  EXPECT_THROW(be().multiply(out.buffer(), da.buffer(), 7, db.buffer(), nb, false), Error);
}

TEST_P(BackendOps, ReductionsInDouble) {
  const index_t n = 4097;
  const CArray a = randomArray(Shape{n}, 5), b = randomArray(Shape{n}, 6);
  CDeviceArray da = CDeviceArray::upload(be(), a), db = CDeviceArray::upload(be(), b);
  cdouble dot = 0;
  double nn = 0;
  for (index_t i = 0; i < n; ++i) {
    dot += std::conj(cdouble(a[i])) * cdouble(b[i]);
    nn += std::norm(cdouble(a[i]));
  }
  const cdouble got = be().dot(da.buffer(), db.buffer(), n);
  EXPECT_NEAR(std::abs(got - dot) / std::abs(dot), 0, 1e-12);
  EXPECT_NEAR(be().norm2(da.buffer(), n), std::sqrt(nn), 1e-9 * std::sqrt(nn));
}

TEST_P(BackendOps, ResizeCentredCropsAndPads) {
  // 1D along x, batch in dim 4: centre floor(N/2) stays the centre.
  CArray src(Shape{6, 1, 1, 1, 2});
  for (index_t i = 0; i < src.size(); ++i) src[i] = cfloat(float(i), 0);
  CDeviceArray ds = CDeviceArray::upload(be(), src);
  const Shape crop{3, 1, 1, 1, 2}, pad{9, 1, 1, 1, 2};
  CDeviceArray dc(be(), crop), dp(be(), pad);
  be().resizeCentred(dc.buffer(), crop, ds.buffer(), src.shape());
  be().resizeCentred(dp.buffer(), pad, ds.buffer(), src.shape());
  const CArray c = dc.download(), p = dp.download();
  // src centre index 3 -> crop centre index 1: crop = src[2..4]
  EXPECT_EQ(c[0].real(), 2.f);
  EXPECT_EQ(c[2].real(), 4.f);
  EXPECT_EQ(c[3].real(), 8.f);  // second batch
  // pad centre index 4 <- src 3: pad[1..6] = src[0..5], zeros at 0, 7, 8
  EXPECT_EQ(p[0], cfloat(0));
  EXPECT_EQ(p[1].real(), 0.f);
  EXPECT_EQ(p[6].real(), 5.f);
  EXPECT_EQ(p[7], cfloat(0));
  EXPECT_EQ(p[9 + 1].real(), 6.f);
  EXPECT_THROW(be().resizeCentred(dc.buffer(), Shape{3, 1, 1, 1, 1}, ds.buffer(), src.shape()), Error);
}

TEST_P(BackendOps, SumOfSquares) {
  const index_t voxels = 5, coils = 3, batch = 2;
  const CArray in = randomArray(Shape{voxels * coils * batch}, 9);
  CDeviceArray din = CDeviceArray::upload(be(), in), dout(be(), Shape{voxels * batch});
  be().sumOfSquares(dout.buffer(), din.buffer(), voxels, coils, batch);
  const CArray out = dout.download();
  for (index_t b = 0; b < batch; ++b)
    for (index_t v = 0; v < voxels; ++v) {
      double s = 0;
      for (index_t c = 0; c < coils; ++c) s += std::norm(in[(b * coils + c) * voxels + v]);
      EXPECT_NEAR(out[b * voxels + v].real(), std::sqrt(s), 1e-5);
      EXPECT_EQ(out[b * voxels + v].imag(), 0.f);
    }
}

TEST_P(BackendOps, TransposeSwapsEachPlanesFirstTwoDimensions) {
  // Sizes off the 32-element tiles (partial tiles on both sides), square and wide planes, several planes.
  for (const auto& [n0, n1, batch] : {std::tuple<index_t, index_t, index_t>{33, 70, 3}, {64, 64, 2}, {1, 5, 4}, {300, 7, 1}}) {
    const CArray in = randomArray(Shape{n0 * n1 * batch}, 11);
    CDeviceArray din = CDeviceArray::upload(be(), in), dout(be(), Shape{n0 * n1 * batch});
    be().grappaOps().transpose(dout.buffer(), din.buffer(), n0, n1, batch);
    const CArray out = dout.download();
    index_t bad = 0;
    for (index_t b = 0; b < batch; ++b)
      for (index_t j = 0; j < n1; ++j)
        for (index_t i = 0; i < n0; ++i)
          if (out[j + n1 * (i + n0 * b)] != in[i + n0 * (j + n1 * b)]) ++bad;
    EXPECT_EQ(bad, 0) << n0 << " x " << n1 << " x " << batch;
  }
  CDeviceArray a(be(), Shape{12}), c(be(), Shape{12});
  EXPECT_THROW(be().grappaOps().transpose(a.buffer(), a.buffer(), 3, 4, 1), Error);  // not in place
  EXPECT_THROW(be().grappaOps().transpose(a.buffer(), c.buffer(), 3, 4, 2), Error);  // past the end
}

TEST_P(BackendOps, BoundsAreChecked) {
  CDeviceArray d(be(), Shape{4});
  EXPECT_THROW(be().fill(d.buffer(), 1.f, 5), Error);
  std::vector<cfloat> host(8);
  EXPECT_THROW(be().upload(d.buffer(), host.data(), 8 * sizeof(cfloat)), Error);
}

// A batch of grids gathered and scattered through one shared index (Cartesian SENSE's coils): element
// i + n b uses index[i] + stride b, negative indices give 0 (gather) or are skipped (scatter).
TEST_P(BackendOps, BatchedGatherAndScatterShareOneIndex) {
  const index_t n = 5, batch = 3, stride = 10;
  const std::vector<std::int64_t> idx = {7, -1, 0, 9, 4};
  const CArray src = randomArray(Shape{stride * batch}, 5), vals = randomArray(Shape{n * batch}, 6);
  auto I = be().allocate(idx.size() * sizeof(std::int64_t));
  be().upload(*I, idx.data(), idx.size() * sizeof(std::int64_t));
  CDeviceArray ds = CDeviceArray::upload(be(), src), dv = CDeviceArray::upload(be(), vals), out(be(), Shape{n * batch});
  be().gather(out.buffer(), ds.buffer(), *I, n, batch, stride);
  const CArray g = out.download();
  for (index_t b = 0; b < batch; ++b)
    for (index_t i = 0; i < n; ++i) {
      const std::int64_t j = idx[static_cast<std::size_t>(i)];
      EXPECT_EQ(g[i + n * b], j >= 0 ? src[j + stride * b] : cfloat(0)) << i << " " << b;
    }
  CArray base(Shape{stride * batch});
  for (index_t e = 0; e < base.size(); ++e) base[e] = cfloat(5, 5);
  CDeviceArray dout = CDeviceArray::upload(be(), base);
  be().scatter(dout.buffer(), dv.buffer(), *I, n, batch, stride);
  CArray expect = base;
  for (index_t b = 0; b < batch; ++b)
    for (index_t i = 0; i < n; ++i)
      if (const std::int64_t j = idx[static_cast<std::size_t>(i)]; j >= 0) expect[j + stride * b] = vals[i + n * b];
  const CArray s = dout.download();
  for (index_t e = 0; e < s.size(); ++e) EXPECT_EQ(s[e], expect[e]) << e;

  EXPECT_THROW(be().gather(out.buffer(), ds.buffer(), *I, n, 0, stride), Error);     // batch < 1
  EXPECT_THROW(be().gather(out.buffer(), ds.buffer(), *I, n, batch + 1, stride), Error);  // output of n * batch
  EXPECT_THROW(be().scatter(dout.buffer(), dv.buffer(), *I, n, batch + 1, stride), Error);  // source of n * batch
}

LARMOR_INSTANTIATE_ON_TEST_DEVICE(BackendOps);
