// The ISMRMRD streaming codec (larmor/stream/protocol.hpp): every message round-trips, and every length or
// header field beyond the limits is one Error before anything is allocated; the slice assembler gives, for each
// slice of a streamed file, the Dataset the file reader gives for that slice.
#include <gtest/gtest.h>
#include <ismrmrd/waveform.h>

#include <cstring>
#include <filesystem>

#include "larmor/io/ismrmrd.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/stream/assembler.hpp"
#include "larmor/stream/images.hpp"
#include "larmor/stream/protocol.hpp"
#include "larmor/stream/replay.hpp"
#include "larmor/util/error.hpp"

namespace larmor::stream {
namespace {

Message roundTrip(const MemorySink& sink, const Limits& limits = {}) {
  MemorySource in(sink.bytes.data(), sink.bytes.size());
  Message m = readMessage(in, limits);
  EXPECT_TRUE(in.atEnd());
  return m;
}

// The error readMessage gives for these bytes ("" when it reads them).
std::string errorOf(const std::vector<unsigned char>& bytes, const Limits& limits = {}) {
  MemorySource in(bytes.data(), bytes.size());
  try {
    (void)readMessage(in, limits);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

template <class T>
void put(std::vector<unsigned char>& b, const T& v) {
  const auto* p = reinterpret_cast<const unsigned char*>(&v);
  b.insert(b.end(), p, p + sizeof v);
}

Acquisition smallAcquisition() {
  Acquisition a;
  a.head.version = 1;
  a.head.number_of_samples = 4;
  a.head.active_channels = 2;
  a.head.trajectory_dimensions = 2;
  a.head.idx.slice = 3;
  a.trajectory = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int i = 0; i < 8; ++i) a.data.push_back({float(i), -float(i)});
  return a;
}

std::vector<unsigned char> acquisitionBytes(const Acquisition& a) {
  MemorySink s;
  writeAcquisition(s, a);
  return s.bytes;
}

ISMRMRD::ISMRMRD_ImageHeader imageHead(std::uint16_t type, std::uint16_t nx, std::uint16_t ny) {
  ISMRMRD::ISMRMRD_ImageHeader h;
  std::memset(&h, 0, sizeof h);
  h.version = 1;
  h.data_type = type;
  h.matrix_size[0] = nx, h.matrix_size[1] = ny, h.matrix_size[2] = 1;
  h.channels = 1;
  return h;
}

TEST(StreamProtocol, TextMessagesRoundTrip) {
  MemorySink s;
  writeConfigFile(s, "default.xml");
  EXPECT_EQ(s.bytes.size(), 2u + kConfigNameBytes);
  Message m = roundTrip(s);
  EXPECT_EQ(m.id, kConfigFile);
  EXPECT_EQ(m.text, "default.xml");
  for (std::uint16_t id : {std::uint16_t{kConfigText}, std::uint16_t{kHeader}, std::uint16_t{kText}}) {
    MemorySink t;
    writeText(t, id, "<ismrmrdHeader/>");
    EXPECT_EQ(t.bytes.size(), 2u + 4u + 16u);
    m = roundTrip(t);
    EXPECT_EQ(m.id, id);
    EXPECT_EQ(m.text, "<ismrmrdHeader/>");
  }
  MemorySink c;
  writeClose(c);
  EXPECT_EQ(c.bytes.size(), 2u);
  EXPECT_EQ(roundTrip(c).id, kClose);
}

TEST(StreamProtocol, AcquisitionRoundTripsWithTheMrdLayout) {
  const Acquisition a = smallAcquisition();
  const std::vector<unsigned char> bytes = acquisitionBytes(a);
  EXPECT_EQ(bytes.size(), 2u + 340u + 8 * 4 + 8 * 8);
  EXPECT_EQ(bytes[0] + 256 * bytes[1], 1008);
  MemorySource in(bytes.data(), bytes.size());
  const Message m = readMessage(in);
  EXPECT_EQ(m.id, kAcquisition);
  EXPECT_EQ(m.acquisition.head.idx.slice, 3);
  EXPECT_EQ(m.acquisition.trajectory, a.trajectory);
  EXPECT_EQ(m.acquisition.data, a.data);
}

TEST(StreamProtocol, ImageRoundTripsWithTheMrdLayout) {
  Image image;
  image.head = imageHead(ISMRMRD::ISMRMRD_CXFLOAT, 3, 2);
  image.attributes = "<ismrmrdMeta/>";
  image.pixels.assign(3 * 2 * 8, 7);
  MemorySink s;
  writeImage(s, image);
  EXPECT_EQ(s.bytes.size(), 2u + 198u + 8u + image.attributes.size() + image.pixels.size());
  const Message m = roundTrip(s);
  EXPECT_EQ(m.id, kImage);
  EXPECT_EQ(m.image.attributes, image.attributes);
  EXPECT_EQ(m.image.pixels, image.pixels);
  EXPECT_EQ(imagePixels(m.image).shape(), (Shape{3, 2, 1, 1}));
}

TEST(StreamProtocol, WaveformIsReadAndDropped) {
  std::vector<unsigned char> b;
  put(b, std::uint16_t{kWaveform});
  ISMRMRD::ISMRMRD_WaveformHeader w;
  std::memset(&w, 0, sizeof w);
  w.channels = 2, w.number_of_samples = 3;
  put(b, w);
  b.resize(b.size() + 2 * 3 * 4, 1);
  put(b, std::uint16_t{kClose});
  MemorySource in(b.data(), b.size());
  EXPECT_EQ(readMessage(in).id, kWaveform);
  EXPECT_EQ(readMessage(in).id, kClose);
}

TEST(StreamProtocol, UnknownIdAndTruncationAreErrors) {
  std::vector<unsigned char> b;
  put(b, std::uint16_t{77});
  EXPECT_NE(errorOf(b).find("unknown message id 77"), std::string::npos);
  EXPECT_NE(errorOf({}).find("ended"), std::string::npos);
  std::vector<unsigned char> acq = acquisitionBytes(smallAcquisition());
  acq.pop_back();
  EXPECT_NE(errorOf(acq).find("ended inside a message"), std::string::npos);
  std::vector<unsigned char> name;
  put(name, std::uint16_t{kConfigFile});
  name.resize(2 + kConfigNameBytes, 'a');  // no NUL in the 1024 bytes
  EXPECT_NE(errorOf(name).find("no terminating NUL"), std::string::npos);
}

TEST(StreamProtocol, LyingTextLengthsAreRefusedBeforeAllocation) {
  Limits limits;
  limits.maxTextBytes = 100;
  for (std::uint16_t id : {std::uint16_t{kConfigText}, std::uint16_t{kHeader}, std::uint16_t{kText}}) {
    std::vector<unsigned char> b;
    put(b, id);
    put(b, std::uint32_t{0xffffffffu});  // 4 GiB claimed, nothing sent
    EXPECT_NE(errorOf(b, limits).find("exceeds the limit of 100 bytes"), std::string::npos) << id;
  }
}

TEST(StreamProtocol, AcquisitionFieldsAreChecked) {
  const auto withHead = [](auto edit) {
    Acquisition a = smallAcquisition();
    edit(a.head);
    std::vector<unsigned char> b;
    put(b, std::uint16_t{kAcquisition});
    put(b, a.head);  // the header alone: what it claims must be refused before the payload is read
    return b;
  };
  EXPECT_NE(errorOf(withHead([](auto& h) { h.version = 99; })).find("version 99"), std::string::npos);
  EXPECT_NE(errorOf(withHead([](auto& h) { h.trajectory_dimensions = 4; })).find("trajectory_dimensions 4"),
            std::string::npos);
  EXPECT_NE(errorOf(withHead([](auto& h) { h.active_channels = 1025; })).find("active_channels 1025"),
            std::string::npos);
  Limits limits;
  limits.maxAcquisitionBytes = 1000;
  EXPECT_NE(errorOf(withHead([](auto& h) { h.number_of_samples = 65535, h.active_channels = 1024; }), limits)
                .find("beyond the limit of 1000"),
            std::string::npos);
}

TEST(StreamProtocol, ImageFieldsAreChecked) {
  const auto withHead = [](ISMRMRD::ISMRMRD_ImageHeader h, std::uint64_t attributes) {
    std::vector<unsigned char> b;
    put(b, std::uint16_t{kImage});
    put(b, h);
    put(b, attributes);
    return b;
  };
  EXPECT_NE(errorOf(withHead(imageHead(0, 2, 2), 0)).find("data_type 0"), std::string::npos);
  EXPECT_NE(errorOf(withHead(imageHead(9, 2, 2), 0)).find("data_type 9"), std::string::npos);
  EXPECT_NE(errorOf(withHead(imageHead(7, 0, 2), 0)).find("empty image"), std::string::npos);
  ISMRMRD::ISMRMRD_ImageHeader huge = imageHead(8, 65535, 65535);
  huge.matrix_size[2] = 65535, huge.channels = 65535;
  EXPECT_NE(errorOf(withHead(huge, 0)).find("exceed the limit"), std::string::npos);
  ISMRMRD::ISMRMRD_ImageHeader old = imageHead(7, 2, 2);
  old.version = 99;
  EXPECT_NE(errorOf(withHead(old, 0)).find("version 99"), std::string::npos);
  EXPECT_NE(errorOf(withHead(imageHead(7, 2, 2), ~std::uint64_t{0})).find("attribute length"), std::string::npos);
}

TEST(StreamProtocol, WaveformSizeIsChecked) {
  std::vector<unsigned char> b;
  put(b, std::uint16_t{kWaveform});
  ISMRMRD::ISMRMRD_WaveformHeader w;
  std::memset(&w, 0, sizeof w);
  w.channels = 65535, w.number_of_samples = 65535;
  put(b, w);
  Limits limits;
  limits.maxWaveformBytes = 1 << 20;
  EXPECT_NE(errorOf(b, limits).find("WAVEFORM"), std::string::npos);
}

// Each slice of a streamed two-slice scan is the file reader's Dataset of that slice.
TEST(StreamAssembler, StreamedSlicesAreTheFileReadersSlices) {
  phantom::SimulateSettings ss;
  ss.matrix[0] = ss.matrix[1] = 32;
  ss.coils = 2;
  ss.slices = 2;
  const std::string path = std::string(LARMOR_TEST_TMP) + "/stream_assembler.h5";
  std::filesystem::create_directories(LARMOR_TEST_TMP);
  std::filesystem::remove(path);
  io::writeIsmrmrd(phantom::simulate(ss), path);
  const Dataset file = io::readIsmrmrd(path);
  std::optional<SliceAssembler> assembler;
  std::vector<FinishedSlice> slices;
  replayIsmrmrd(
      path, [&](const std::string& xml) { assembler.emplace(xml, "stream"); },
      [&](const Acquisition& a) {
        for (auto& s : assembler->add(a)) slices.push_back(std::move(s));
      });
  EXPECT_EQ(slices.size(), 2u) << "ACQ_LAST_IN_SLICE finishes each slice before the end";
  for (auto& s : assembler->finish()) slices.push_back(std::move(s));
  ASSERT_EQ(slices.size(), 2u);
  const index_t perSlice = file.kspace.size() / 2;
  for (const FinishedSlice& s : slices) {
    ASSERT_EQ(s.dataset.kspace.size(), perSlice);
    EXPECT_EQ(std::memcmp(s.dataset.kspace.data(), file.kspace.data() + perSlice * s.slice, perSlice * sizeof(cfloat)), 0)
        << "slice " << s.slice;
    EXPECT_EQ(s.dataset.header.coils, file.header.coils);
  }
  EXPECT_EQ(assembler->pending(), 0u);
}

// A stream that never finishes a slice cannot hold more than the assembler's limit.
TEST(StreamAssembler, UnfinishedSlicesAreBounded) {
  phantom::SimulateSettings ss;
  ss.matrix[0] = ss.matrix[1] = 16;
  ss.coils = 1;
  const std::string path = std::string(LARMOR_TEST_TMP) + "/stream_assembler_pending.h5";
  std::filesystem::create_directories(LARMOR_TEST_TMP);
  std::filesystem::remove(path);
  io::writeIsmrmrd(phantom::simulate(ss), path);
  std::optional<SliceAssembler> assembler;
  std::string error;
  std::size_t taken = 0;
  replayIsmrmrd(
      path, [&](const std::string& xml) { assembler.emplace(xml, "stream", 4096); },
      [&](const Acquisition& a) {
        Acquisition held = a;
        held.head.flags = 0;  // never the last in its slice
        try {
          (void)assembler->add(held);
          ++taken;
        } catch (const Error& e) {
          if (error.empty()) error = e.what();
        }
      });
  EXPECT_NE(error.find("more than 4096 bytes"), std::string::npos) << error;
  EXPECT_GT(taken, 0u);
  EXPECT_LE(assembler->pendingBytes(), 4096u);
}

TEST(StreamAssembler, SliceBeyondTheHeaderIsRefused) {
  phantom::SimulateSettings ss;
  ss.matrix[0] = ss.matrix[1] = 16;
  ss.coils = 1;
  const std::string path = std::string(LARMOR_TEST_TMP) + "/stream_assembler_limit.h5";
  std::filesystem::create_directories(LARMOR_TEST_TMP);
  std::filesystem::remove(path);
  io::writeIsmrmrd(phantom::simulate(ss), path);
  std::optional<SliceAssembler> assembler;
  std::string error;
  replayIsmrmrd(
      path, [&](const std::string& xml) { assembler.emplace(xml, "stream"); },
      [&](const Acquisition& a) {
        Acquisition bad = a;
        bad.head.idx.slice = 7;
        try {
          (void)assembler->add(bad);
        } catch (const Error& e) {
          error = e.what();
        }
      });
  EXPECT_NE(error.find("slice index 7"), std::string::npos) << error;
}

}  // namespace
}  // namespace larmor::stream
