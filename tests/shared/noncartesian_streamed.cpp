// Shared by the unit (cpu) and GPU (cuda) binaries: multi-slice 2D non-Cartesian data are streamed through
// the backend in chunks of slices (recon/noncartesian.cpp, streamBatch). Three golden-angle slices of 4 MiB
// k-space each (256 x 256 samples, 8 coils) go as three chunks; every slice's coil images must equal those
// of the same slice reconstructed alone (one chunk, the unstreamed path).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/recon.hpp"
#include "support/device.hpp"
#include "support/error_norms.hpp"

using namespace larmor;

namespace {
class NoncartesianStreamed : public larmor::test::DeviceTest {
 protected:
  recon::ReconResult run(const Dataset& d) {
    recon::ReconRequest r;
    r.dataset = &d;
    r.device = GetParam();
    r.settings.method = recon::Method::Gridding;
    r.settings.keepCoilImages = true;
    return recon::run(r);
  }
};
}  // namespace

TEST_P(NoncartesianStreamed, SlicesStreamedInChunksEqualEachSliceAlone) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 128;
  s.coils = 8;
  s.slices = 3;
  s.trajectory = TrajectoryKind::GoldenAngle;
  s.spokes = 256;
  s.readout = 256;
  const Dataset d = phantom::simulate(s);
  ASSERT_EQ(d.kspace.shape(), (Shape{256, 256, 1, 8, 3}));
  const recon::ReconResult all = run(d);
  bool streamed = false;
  for (const auto& st : all.timings.stages())
    streamed = streamed || st.stage.find("3 chunks of 1 slices, streamed") != std::string::npos;
  EXPECT_TRUE(streamed) << "the three slices were not streamed";
  ASSERT_EQ(all.coilImages.shape(), (Shape{128, 128, 1, 8, 3}));
  const index_t perSlice = 256 * 256 * 8, imagePerSlice = 128 * 128 * 8;
  for (index_t slice = 0; slice < 3; ++slice) {
    Dataset one = d;
    one.header.slices = 1;
    one.kspace = CArray(Shape{256, 256, 1, 8, 1});
    std::copy_n(d.kspace.data() + slice * perSlice, perSlice, one.kspace.data());
    one.reference.reset();
    one.coilMaps.reset();
    const recon::ReconResult alone = run(one);
    CArray mine(Shape{128, 128, 1, 8, 1});
    std::copy_n(all.coilImages.data() + slice * imagePerSlice, imagePerSlice, mine.data());
    EXPECT_LT(larmor::test::relL2Error(mine, alone.coilImages), 1e-6) << "slice " << slice;
  }
}

LARMOR_INSTANTIATE_ON_TEST_DEVICE(NoncartesianStreamed);
