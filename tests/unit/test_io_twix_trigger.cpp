// Twix trigger times (docs/data.md): each cardiac phase (Phs counter) gets the mean mdh ulPMUTimeStamp of
// its imaging readouts x 2.5 ms, in VB and VD files; a frame whose stamps are all 0 has none (NaN), nor does
// an ungated scan, whose stamps are the free-running PMU clock (the bundled real files, ~1e7 ticks). The
// stamps are written at byte 16 of the scan header by tests/support/twix_writer.hpp, independently of
// the reader.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "larmor/io/dataset_io.hpp"
#include "larmor/io/twix.hpp"
#include "support/random_data.hpp"
#include "support/twix_writer.hpp"
#include "test_io_export_util.hpp"

using namespace larmor;
using larmor::testing::freshTestDir;

namespace {

// 16 x 16, 3 cardiac phases; phase p's line l carries stamp `stamp(p, l)`; a noise readout with a large
// stamp that must not count.
std::string cineTwix(const std::string& dir, bool vd, bool stamped) {
  test::TwixSpec spec;
  spec.vd = vd;
  spec.measYaps = test::twixProtocol(16, 16);
  spec.meas = test::twixXprot(1.0);
  test::TwixScanSpec noise;
  noise.mask = 1ull << 25, noise.samples = 16, noise.channels = 2, noise.pmuStamp = 999999;
  spec.scans.push_back(noise);
  for (std::uint16_t p = 0; p < 3; ++p)
    for (std::uint16_t l = 0; l < 16; ++l) {
      test::TwixScanSpec s;
      s.lin = l, s.phs = p, s.samples = 16, s.channels = 2, s.centreColumn = 8, s.centreLine = 8;
      // phase p: 40 ms + p x 50 ms, jittered by +-1 tick (mean exact): ticks 16 + 20 p + (l odd ? 1 : -1)
      s.pmuStamp = stamped ? static_cast<std::uint32_t>(16 + 20 * p + (l % 2 ? 1 : -1)) : 0;
      s.data = test::randomComplex(32, 10 + 16 * p + l);
      spec.scans.push_back(s);
    }
  const std::string path = dir + "/cine" + (vd ? "vd" : "vb") + (stamped ? "" : "0") + ".dat";
  const std::string bytes = test::twixBytes(spec);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace

TEST(TwixTrigger, EachCardiacPhaseGetsItsMeanPmuStamp) {
  const std::string dir = freshTestDir("twix-trigger");
  for (bool vd : {true, false}) {
    SCOPED_TRACE(vd ? "VD" : "VB");
    const io::Series s = io::loadSeries(cineTwix(dir, vd, true));
    ASSERT_EQ(s.frames.size(), 3u);
    ASSERT_EQ(s.triggerTimeMs.size(), 3u);
    for (int p = 0; p < 3; ++p) {
      EXPECT_EQ(s.keys[static_cast<std::size_t>(p)].phase, p);
      EXPECT_NEAR(s.triggerTimeMs[static_cast<std::size_t>(p)], 40.0 + 50.0 * p, 1e-9);
    }
    io::TwixOptions o;
    const io::FrameKey k{0, 2, 0, 0};
    o.frame = &k;
    EXPECT_NEAR(io::readTwix(cineTwix(dir, vd, true), o).triggerTimeMs, 140.0, 1e-9);
  }
}

TEST(TwixTrigger, NoStampsNoTriggerTime) {
  const std::string dir = freshTestDir("twix-trigger");
  const io::Series s = io::loadSeries(cineTwix(dir, true, false));
  ASSERT_EQ(s.triggerTimeMs.size(), 3u);
  for (double t : s.triggerTimeMs) EXPECT_TRUE(std::isnan(t));
}

TEST(TwixTrigger, FreeRunningPmuClockIsNoTriggerTime) {
  const std::string dir = freshTestDir("twix-trigger");
  for (const char* f : {"gre.dat", "meas_MID00118_FID33075_sol24.dat"}) {  // ungated: stamps ~1e7 ticks
    const io::Series s = io::loadSeries(std::string(LARMOR_TEST_DATA) + "/twix/" + f);
    ASSERT_EQ(s.triggerTimeMs.size(), 1u) << f;
    EXPECT_TRUE(std::isnan(s.triggerTimeMs[0])) << f << ": " << s.triggerTimeMs[0];
  }
  // One synthetic stamp just over 10 s in a phase makes that phase's trigger time unknown.
  test::TwixSpec spec;
  spec.measYaps = test::twixProtocol(16, 16);
  spec.meas = test::twixXprot(1.0);
  for (std::uint16_t l = 0; l < 16; ++l) {
    test::TwixScanSpec sc;
    sc.lin = l, sc.samples = 16, sc.channels = 1, sc.centreColumn = 8, sc.centreLine = 8;
    sc.pmuStamp = l == 5 ? 4001 : 100;
    spec.scans.push_back(sc);
  }
  const std::string path = dir + "/late.dat";
  const std::string bytes = test::twixBytes(spec);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  EXPECT_TRUE(std::isnan(io::readTwix(path).triggerTimeMs));
}
