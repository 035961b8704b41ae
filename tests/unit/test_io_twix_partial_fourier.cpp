// Siemens twix partial Fourier (docs/data.md "Partial Fourier"): the reader places 5/8 of the lines by their
// centre counter, the acquired fraction is found from the data, the protocol's sKSpace.ucPhasePartialFourier
// appears in the summary, and a protocol claim the data do not show is one warning (the data decide).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "larmor/io/dataset_io.hpp"
#include "larmor/io/twix.hpp"
#include "support/random_data.hpp"
#include "support/twix_writer.hpp"
#include "test_io_export_util.hpp"

using namespace larmor;
using larmor::testing::freshTestDir;

namespace {

// 32 x 32, lines 12..31 (20 = 5/8) with the centre line 16, 2 coils, protocol partial Fourier `code`.
std::string partialTwix(const std::string& dir, const std::string& code) {
  test::TwixSpec spec;
  spec.measYaps = test::twixProtocol(32, 32) + "sKSpace.ucPhasePartialFourier = " + code + "\n";
  spec.meas = test::twixXprot(1.0);
  for (std::uint16_t l = 12; l < 32; ++l) {
    test::TwixScanSpec s;
    s.lin = l, s.samples = 32, s.channels = 2, s.centreColumn = 16, s.centreLine = 16;
    s.data = test::randomComplex(64, 100 + l);
    spec.scans.push_back(s);
  }
  const std::string path = dir + "/pf" + code + ".dat";
  const std::string bytes = test::twixBytes(spec);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

bool mentions(const std::vector<std::string>& lines, const std::string& needle) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(needle) != std::string::npos; });
}

}  // namespace

TEST(TwixPartialFourier, FractionFromTheDataAndTheProtocolInTheSummary) {
  const std::string dir = freshTestDir("twix-pf");
  const std::string file = partialTwix(dir, "0x2");
  const Dataset d = io::loadDataset(file);
  EXPECT_FLOAT_EQ(d.header.acquiredFraction[1], 20.f / 32.f);
  EXPECT_FLOAT_EQ(d.header.acquiredFraction[0], 1.f);
  EXPECT_TRUE(d.sampled(12, 0, 0) && !d.sampled(11, 0, 0));
  EXPECT_FALSE(mentions(d.warnings, "partial Fourier")) << (d.warnings.empty() ? "" : d.warnings[0]);
  const std::vector<std::string> summary = io::describeTwix(io::inspectTwix(file));
  EXPECT_TRUE(mentions(summary, "partial Fourier (protocol): phase 5/8, slice off, readout off"));
}

TEST(TwixPartialFourier, AProtocolClaimTheDataDoNotShowIsAWarning) {
  const std::string dir = freshTestDir("twix-pf");
  const Dataset d = io::loadDataset(partialTwix(dir, "0x1"));  // claims 4/8, holds 5/8
  ASSERT_TRUE(mentions(d.warnings, "the protocol says phase partial Fourier 4/8 but the data fill 0.625"))
      << (d.warnings.empty() ? "no warnings" : d.warnings[0]);
  EXPECT_FLOAT_EQ(d.header.acquiredFraction[1], 20.f / 32.f);  // the data decide
}
