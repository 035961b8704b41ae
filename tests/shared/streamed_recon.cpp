// Shared by the unit (cpu) and GPU (cuda) binaries: multi-slice 2D data are streamed through a GPU backend
// in chunks of slices (recon/noncartesian.cpp and cartesian.cpp, streamBatch; the CPU takes them in one
// call). Three slices of at least 4 MiB k-space each go as three chunks; every slice's coil images must equal
// those of the same slice reconstructed alone (one chunk, the unstreamed path).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/recon.hpp"
#include "support/device.hpp"
#include "support/error_norms.hpp"

using namespace larmor;

namespace {
class StreamedRecon : public larmor::test::DeviceTest {
 protected:
  recon::ReconResult run(const Dataset& d, recon::Method method) {
    recon::ReconRequest r;
    r.dataset = &d;
    r.device = GetParam();
    r.settings.method = method;
    r.settings.keepCoilImages = true;
    return recon::run(r);
  }
  /// Each of the three slices of `d` reconstructed alone against its part of `all`; `all` streamed on a GPU.
  void expectEachSliceAlone(const Dataset& d, const recon::ReconResult& all, recon::Method method) {
    bool streamed = false;
    for (const auto& st : all.timings.stages())
      streamed = streamed || st.stage.find("3 chunks of 1 slices, streamed") != std::string::npos;
    EXPECT_EQ(streamed, onGpu()) << "streamed: " << streamed;
    const Shape& ks = d.kspace.shape();
    const Shape& is = all.coilImages.shape();
    ASSERT_EQ(ks[4], 3);
    ASSERT_EQ(is[4], 3);
    const index_t perSlice = ks.span(0, 4), imagePerSlice = is.span(0, 4);
    for (index_t slice = 0; slice < 3; ++slice) {
      Dataset one = d;
      one.header.slices = 1;
      one.kspace = CArray(Shape{ks[0], ks[1], ks[2], ks[3], 1});
      std::copy_n(d.kspace.data() + slice * perSlice, perSlice, one.kspace.data());
      if (d.sampled.size() > 0) {
        const Shape& ss = d.sampled.shape();
        one.sampled = Array<std::uint8_t>(Shape{ss[0], ss[1], 1}, 1);
        one.calibration = Array<std::uint8_t>(Shape{ss[0], ss[1], 1}, 0);
        std::copy_n(d.sampled.data() + slice * ss[0] * ss[1], ss[0] * ss[1], one.sampled.data());
        std::copy_n(d.calibration.data() + slice * ss[0] * ss[1], ss[0] * ss[1], one.calibration.data());
      }
      one.reference.reset();
      one.coilMaps.reset();
      const recon::ReconResult alone = run(one, method);
      CArray mine(Shape{is[0], is[1], is[2], is[3], 1});
      std::copy_n(all.coilImages.data() + slice * imagePerSlice, imagePerSlice, mine.data());
      EXPECT_LT(larmor::test::relL2Error(mine, alone.coilImages), 1e-6) << "slice " << slice;
    }
  }
};
}  // namespace

TEST_P(StreamedRecon, NonCartesianSlicesInChunksEqualEachSliceAlone) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 128;
  s.coils = 8;
  s.slices = 3;
  s.trajectory = TrajectoryKind::GoldenAngle;
  s.spokes = 256;
  s.readout = 256;
  const Dataset d = phantom::simulate(s);
  ASSERT_EQ(d.kspace.shape(), (Shape{256, 256, 1, 8, 3}));
  expectEachSliceAlone(d, run(d, recon::Method::Gridding), recon::Method::Gridding);
}

// Cartesian: 512 x 256 samples (readout 2x oversampled) x 8 coils, 8.4 MB a slice.
TEST_P(StreamedRecon, CartesianSlicesInChunksEqualEachSliceAlone) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 256;
  s.coils = 8;
  s.slices = 3;
  const Dataset d = phantom::simulate(s);
  ASSERT_EQ(d.kspace.shape(), (Shape{512, 256, 1, 8, 3}));
  expectEachSliceAlone(d, run(d, recon::Method::Fft), recon::Method::Fft);
}

LARMOR_INSTANTIATE_ON_TEST_DEVICE(StreamedRecon);
