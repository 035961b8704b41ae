// recon::warmUp (recon/warm_up.hpp): the tiny reconstruction runs for every method on the CPU backend
// without an error (a warm-up that fails silently would leave every first run cold), and a method whose
// tiny problem cannot run reports why instead of throwing.
#include <gtest/gtest.h>

#include "larmor/backend/registry.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/recon/warm_up.hpp"

using namespace larmor;

TEST(WarmUp, EveryMethodRunsItsTinyProblem) {
  const auto cpu = makeCpuBackend();
  for (const auto method : {recon::Method::Fft, recon::Method::Grappa, recon::Method::Gridding, recon::Method::Tron,
                            recon::Method::Dft, recon::Method::Cg, recon::Method::Cs}) {
    recon::ReconSettings s;
    s.method = method;
    recon::settings::applyMethodDefaults(s);  // as the CLI and the GUI do (cs: total variation)
    recon::WarmUpHint hint;
    hint.nonCartesian = method != recon::Method::Fft && method != recon::Method::Grappa;
    std::string why;
    const double ms = recon::warmUp(cpu, s, hint, &why);
    EXPECT_TRUE(why.empty()) << recon::toString(method) << ": " << why;
    EXPECT_GT(ms, 0.0);
  }
}

TEST(WarmUp, CoilMapsFromAFileAreReplacedAndAFailureIsReportedNotThrown) {
  const auto cpu = makeCpuBackend();
  recon::ReconSettings s;
  s.method = recon::Method::Cg;
  s.iterative.coilMaps = recon::CoilMapSource::File;
  s.iterative.coilMapsPath = "/nonexistent/maps.cfl";  // the user's maps do not fit the tiny problem
  std::string why;
  recon::warmUp(cpu, s, {true, false}, &why);
  EXPECT_TRUE(why.empty()) << why;
  s.method = recon::Method::Grappa;  // GRAPPA on radial data cannot run: reported, not thrown
  s.grappa.kernelPe = 1000;
  EXPECT_NO_THROW(recon::warmUp(cpu, s, {false, false}, &why));
  EXPECT_FALSE(why.empty());
}
