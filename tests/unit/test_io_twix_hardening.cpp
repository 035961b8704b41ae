// Hostile Siemens twix files (tests/support/twix_writer.hpp, then damaged): truncated anywhere, lying
// lengths and offsets, zero channels or samples, absurd counters, NaN samples, inconsistent VB channel
// headers, raid headers that list no or too many measurements. Each must give one Error line naming the
// file, never a crash or an allocation the file's size does not bound.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <limits>

#include "larmor/io/dataset_io.hpp"
#include "larmor/io/twix.hpp"
#include "support/random_data.hpp"
#include "support/twix_writer.hpp"
#include "test_io_export_util.hpp"

using namespace larmor;
using namespace larmor::testing;
using larmor::test::TwixScanSpec;
using larmor::test::TwixSpec;

namespace {

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TwixSpec small(bool vd) {
  TwixSpec spec;
  spec.vd = vd;
  spec.measYaps = test::twixProtocol(4, 4);
  spec.meas = test::twixXprot(2.0);
  for (std::uint16_t l = 0; l < 4; ++l) {
    TwixScanSpec s;
    s.lin = l, s.samples = 8, s.channels = 2, s.centreColumn = 4, s.centreLine = 2;
    s.data = test::randomComplex(16, l);
    spec.scans.push_back(s);
  }
  return spec;
}

// Byte offset of the first scan of the (last) measurement in a file written from `spec`.
std::size_t firstScan(const std::string& bytes, bool vd) {
  const std::size_t meas = vd ? 10240 : 0;
  std::uint32_t hdr;
  std::memcpy(&hdr, &bytes[meas], 4);
  return meas + hdr;
}

template <class T>
void poke(std::string& b, std::size_t at, T v) {
  std::memcpy(&b[at], &v, sizeof v);
}

}  // namespace

TEST(TwixHardening, EveryTruncationIsAnErrorOrAShorterRead) {
  const std::string dir = freshTestDir("twix");
  for (bool vd : {false, true}) {
    const std::string bytes = test::twixBytes(small(vd));
    const std::string path = dir + "/t.dat";
    // Cut at every 11th byte: each prefix either loads (cut after a whole scan: an aborted measurement)
    // or gives one Error line naming the file.
    for (std::size_t n = 0; n < bytes.size(); n += 11) {
      writeBytes(path, bytes.substr(0, n));
      try {
        (void)io::loadDataset(path);
      } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_EQ(what.rfind(path, 0), 0u) << what;
        EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      }
    }
    // Cut inside the last scan's samples: named precisely.
    writeBytes(path, bytes.substr(0, firstScan(bytes, vd) + 3 * 384 + 100));  // VB and VD: 384 bytes a scan
    expectError([&] { io::loadDataset(path); }, vd ? "claims 2560 bytes but the file ends" : "scan 3 at byte");
    writeBytes(path, "");
    expectError([&] { io::loadDataset(path); }, "only 0 bytes: not a twix file");
  }
}

TEST(TwixHardening, LyingLengthsAndOffsets) {
  const std::string dir = freshTestDir("twix");
  const std::string path = dir + "/t.dat";
  const std::string vd = test::twixBytes(small(true));
  std::string b = vd;
  poke<std::uint32_t>(b, 4, 0);
  writeBytes(path, b);
  expectError([&] { io::loadDataset(path); }, "lists 0 measurements");
  b = vd;
  poke<std::uint32_t>(b, 4, 65);
  writeBytes(path, b);
  expectError([&] { io::loadDataset(path); }, "lists 65 measurements");
  b = vd;
  poke<std::uint64_t>(b, 8 + 8, std::uint64_t{1} << 40);  // measurement offset far past the end
  writeBytes(path, b);
  expectError([&] { io::loadDataset(path); }, "outside the file");
  b = vd;
  poke<std::uint64_t>(b, 8 + 16, std::uint64_t{1} << 40);  // measurement length
  writeBytes(path, b);
  expectError([&] { io::loadDataset(path); }, "(truncated?)");
  b = vd;
  poke<std::uint32_t>(b, 10240, 0x7fffffff);  // measurement header length
  writeBytes(path, b);
  expectError([&] { io::loadDataset(path); }, "the measurement header at byte 10240 claims 2147483647 bytes");
  b = vd;
  poke<std::uint32_t>(b, 10244, 1000);  // buffer count
  writeBytes(path, b);
  expectError([&] { io::loadDataset(path); }, "1000 text buffers");
  b = vd;
  poke<std::uint32_t>(b, 10240 + 8 + 5, 0xfffffff0u);  // "Meas" buffer length
  writeBytes(path, b);
  expectError([&] { io::loadDataset(path); }, "header buffer 'Meas' claims 4294967280 bytes");
  // VB: the first word is the header length.
  std::string vb = test::twixBytes(small(false));
  poke<std::uint32_t>(vb, 0, static_cast<std::uint32_t>(vb.size() + 1));
  writeBytes(path, vb);
  expectError([&] { io::loadDataset(path); }, "the measurement header at byte 0 claims");
  // Not a twix file at all (text): said so, in one line.
  writeBytes(path, "hello, this is not a twix file");
  expectError([&] { io::loadDataset(path); }, "t.dat: not a Siemens twix file (the measurement header at byte 0 claims");
}

TEST(TwixHardening, ZeroChannelsSamplesAndBadScans) {
  const std::string dir = freshTestDir("twix");
  const std::string path = dir + "/t.dat";
  for (bool vd : {false, true}) {
    const std::string good = test::twixBytes(small(vd));
    const std::size_t s0 = firstScan(good, vd), mask = vd ? 40 : 20;
    std::string b = good;
    poke<std::uint16_t>(b, s0 + mask + 10, 0);
    writeBytes(path, b);
    expectError([&] { io::loadDataset(path); }, "scan 0 at byte " + std::to_string(s0) + " has no channels");
    b = good;
    poke<std::uint16_t>(b, s0 + mask + 8, 0);
    writeBytes(path, b);
    expectError([&] { io::loadDataset(path); }, "has no samples");
    b = good;
    poke<std::uint16_t>(b, s0 + mask + 10, 60000);  // channels the file cannot hold
    writeBytes(path, b);
    expectError([&] { io::loadDataset(path); }, "(60000 channels x 8 samples) but the measurement ends");
    b = good;
    poke<std::uint32_t>(b, s0 + (vd ? 192 + 32 : 128), 0x7fc00000u);  // NaN in the first sample
    writeBytes(path, b);
    expectError([&] { io::loadDataset(path); }, "sample 0 of channel 0 is NaN");
    b = good;
    poke<std::uint16_t>(b, s0 + (vd ? 52 : 32), 65535);  // line counter 65535: raw placement, refused by size
    if (!vd) poke<std::uint16_t>(b, s0 + 128 + 64 + 32, 65535);  // VB: channel 1's header too
    writeBytes(path, b);
    expectError([&] { io::loadDataset(path); }, "the counters or the protocol's matrix are wrong");
    b = good;
    poke<std::uint32_t>(b, s0 + mask, 1u << 5);  // a sync block claiming more than the file
    poke<std::uint32_t>(b, s0, 0x01ffffffu);
    writeBytes(path, b);
    expectError([&] { io::loadDataset(path); }, "(sync data) claims 33554431 bytes");
  }
  // VB: the channels' repeated headers must agree.
  std::string vb = test::twixBytes(small(false));
  poke<std::uint16_t>(vb, firstScan(vb, false) + 128 + 64 + 28, 9);  // channel 1 says 9 samples
  writeBytes(path, vb);
  expectError([&] { io::loadDataset(path); }, "the header of channel 1");
}

TEST(TwixHardening, ImagingReadoutsMustAgreeAndExist) {
  const std::string dir = freshTestDir("twix");
  const std::string path = dir + "/t.dat";
  TwixSpec spec = small(true);
  spec.scans[2].channels = 3;
  spec.scans[2].data = test::randomComplex(24, 9);
  writeBytes(path, test::twixBytes(spec));
  expectError([&] { io::loadDataset(path); }, "has 3 channels x 8 samples, the first imaging readout 2 x 8");
  spec = small(true);
  for (auto& s : spec.scans) s.mask = 1ull << 25;  // all noise
  writeBytes(path, test::twixBytes(spec));
  expectError([&] { io::loadDataset(path); }, "4 scans but no imaging readouts");
  spec = small(true);
  spec.scans.erase(spec.scans.begin() + 1);  // radial: profile 1 missing
  writeBytes(path, test::twixBytes(spec));
  io::LoadOptions o;
  o.trajectoryPath = "radial:360";
  expectError([&] { io::loadDataset(path, o); }, "profile (line) 1 of slice 0 was not acquired");
  // The protocol is text: absurd or unreadable numbers are ignored, not trusted.
  spec = small(true);
  spec.measYaps = "sKSpace.lBaseResolution = 99999999999999999999\nsKSpace.lPhaseEncodingLines = -3\n"
                  "sKSpace.ucDimension = 0xZZ\nsSliceArray.asSlice[0].dReadoutFOV = nan\n";
  writeBytes(path, test::twixBytes(spec));
  const Dataset d = io::loadDataset(path);
  EXPECT_EQ(d.kspace.shape(), (Shape{8, 4, 1, 2, 1}));  // from the counters
}
