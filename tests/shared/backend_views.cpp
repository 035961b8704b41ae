// Shared by the unit (cpu) and GPU (cuda) binaries: Backend::view (backend.hpp), a buffer that is a part of another
// with no copy. Reads and writes through the view are the parent's elements at the offset; a view adds no live
// memory and frees nothing; a view past the parent's end is one error. SENSE's coil maps are views into their coil
// groups (ops/sense.hpp): the maps are held once, each coil's map is its group's part.
#include <gtest/gtest.h>

#include <vector>

#include "larmor/ops/sense.hpp"
#include "support/device.hpp"
#include "support/expect_error.hpp"

using namespace larmor;

namespace {
class BackendViews : public larmor::test::DeviceTest {};

std::size_t bytesOf(index_t n) { return static_cast<std::size_t>(n) * sizeof(cfloat); }

std::vector<cfloat> ramp(index_t n, float base) {
  std::vector<cfloat> v(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = cfloat(base + static_cast<float>(i), -static_cast<float>(i));
  return v;
}
}  // namespace

TEST_P(BackendViews, AViewIsItsParentsElements) {
  const index_t n = 10;
  auto parent = be().allocate(bytesOf(n));
  const std::vector<cfloat> x = ramp(n, 1);
  be().upload(*parent, x.data(), bytesOf(n));
  const std::size_t live = be().executionOps().memoryStats().liveBytes;
  {
    auto part = be().view(*parent, bytesOf(3), bytesOf(4));
    EXPECT_EQ(part->bytes(), bytesOf(4));
    EXPECT_EQ(be().executionOps().memoryStats().liveBytes, live);
    std::vector<cfloat> got(4);
    be().download(got.data(), *part, bytesOf(4));
    for (int i = 0; i < 4; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)], x[static_cast<std::size_t>(3 + i)]);
    be().fill(*part, cfloat(7, 7), 4);  // through the view: the parent's elements 3..6
  }
  EXPECT_EQ(be().executionOps().memoryStats().liveBytes, live);  // the view freed nothing
  std::vector<cfloat> all(static_cast<std::size_t>(n));
  be().download(all.data(), *parent, bytesOf(n));
  for (index_t i = 0; i < n; ++i)
    EXPECT_EQ(all[static_cast<std::size_t>(i)], i >= 3 && i < 7 ? cfloat(7, 7) : x[static_cast<std::size_t>(i)]) << i;
  test::expectError([&] { be().view(*parent, bytesOf(8), bytesOf(3)); }, "past the end");
}

TEST_P(BackendViews, SenseHoldsTheCoilMapsOnce) {
  const index_t voxels = 64, coils = 5;
  CArray maps(Shape{voxels, 1, 1, coils});
  const std::vector<cfloat> values = ramp(voxels * coils, 0.5f);
  std::copy(values.begin(), values.end(), maps.data());
  be().synchronize();
  const std::size_t before = be().executionOps().memoryStats().liveBytes;
  ops::CoilSensitivities s(be(), maps, voxels, coils);
  const std::size_t held = be().executionOps().memoryStats().liveBytes - before;
  // The maps once and the root sum of squares (CUDA: each allocation's size class, at most 25 % more).
  EXPECT_GE(held, bytesOf(voxels * coils + voxels));
  EXPECT_LE(held, bytesOf(voxels * coils + voxels) * 5 / 4 + 1024);
  for (index_t c = 0; c < coils; ++c) {
    std::vector<cfloat> got(static_cast<std::size_t>(voxels));
    be().download(got.data(), s.map(c), bytesOf(voxels));
    for (index_t v = 0; v < voxels; ++v) EXPECT_EQ(got[static_cast<std::size_t>(v)], maps[v + voxels * c]) << c << " " << v;
  }
}

LARMOR_INSTANTIATE_ON_TEST_DEVICE(BackendViews);
