// The joint reconstruction of a series (recon/dynamic.hpp) on the GPU against the CPU, every temporal prior: the
// same frames within 1e-4 (relative l2; float kernels that sum in other orders, FISTA's 100 iterations), and the
// same error against each frame's truth within 1e-3 %.
#include <gtest/gtest.h>

#include <cmath>

#include "larmor/phantom/dynamic.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/settings_table.hpp"
#include "../support/device.hpp"

using namespace larmor;

namespace {

class GpuDynamic : public test::GpuTest {
 protected:
  std::vector<recon::ReconResult> run(std::shared_ptr<Backend> be, const std::vector<Dataset>& frames,
                                      const std::string& prior) {
    recon::ReconRequest r;
    r.backend = std::move(be);
    r.settings.method = recon::Method::Cs;
    recon::settings::applyMethodDefaults(r.settings);
    recon::settings::set(r.settings, recon::settings::find("dynamic.temporal_prior"), prior);
    return recon::runFrames(frames, r);
  }
};

double relativeDifference(const CArray& a, const CArray& b) {
  double d = 0, e = 0;
  for (index_t i = 0; i < a.size(); ++i) {
    d += std::norm(cdouble(a[i]) - cdouble(b[i]));
    e += std::norm(cdouble(b[i]));
  }
  return std::sqrt(d / e);
}

}  // namespace

TEST_F(GpuDynamic, JointFramesMatchTheCpu) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 96;
  s.coils = 6;
  s.trajectory = TrajectoryKind::GoldenAngle;
  s.frames = 10;
  s.spokesPerFrame = 17;
  s.noiseSigma = 0.01f;
  const std::vector<Dataset> frames = phantom::simulateSeries(s);
  for (const std::string prior : {"ttv", "sttv", "llr"}) {
    const auto c = run(cpu_, frames, prior), g = run(gpu_, frames, prior);
    ASSERT_EQ(c.size(), g.size());
    for (std::size_t t = 0; t < c.size(); ++t) {
      EXPECT_LT(relativeDifference(g[t].image, c[t].image), 1e-4) << prior << " frame " << t;
      EXPECT_NEAR(g[t].metrics["percent_error"].get<double>(), c[t].metrics["percent_error"].get<double>(), 1e-3)
          << prior << " frame " << t;
    }
    EXPECT_EQ(g[0].device.rfind("cuda", 0), 0u) << g[0].device;
  }
}
