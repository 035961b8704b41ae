// Query/retrieve without a PACS (larmor/io/dicom_query.hpp) and the pairing of two DICOM series by geometry and
// frame (io::matchDicomSeries, dicom.hpp): the filters' checks; a retrieve refuses a folder that is not new or
// empty before it connects, and against a silent server or a closed port fails within its timeout leaving no
// folder; the matcher reorders the reference by position, tells echoes apart, refuses a shifted or resized
// series with one line, falls back to order without positions. The query and retrieve against a real PACS
// (Orthanc) are e2e.pacs_query and gui.query*.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "larmor/io/dicom.hpp"
#include "larmor/io/dicom_query.hpp"
#include "support/expect_error.hpp"
#include "support/silent_server.hpp"
#include "support/test_dir.hpp"

using namespace larmor;
using larmor::test::expectError;
namespace fs = std::filesystem;

TEST(DicomQuery, ChecksTheFilters) {
  io::QueryFilters f;
  for (const char* ok : {"20240131", "20240101-20241231", "-20241231", "20240101-", ""}) {
    f.studyDate = ok;
    EXPECT_NO_THROW(io::checkQueryFilters(f)) << ok;
  }
  for (const char* bad : {"2024-01-31", "2024013", "20240101-2024", "-", "x20240101"}) {
    f.studyDate = bad;
    expectError([&] { io::checkQueryFilters(f); }, "give YYYYMMDD");
  }
  f.studyDate.clear();
  f.patientId = "A\\B";
  expectError([&] { io::checkQueryFilters(f); }, "--patient-id \"A\\B\": no backslash");
  f.patientId = std::string(65, 'x');
  expectError([&] { io::checkQueryFilters(f); }, "at most 64 characters");
}

#ifdef LARMOR_HAVE_IO

namespace {

io::DicomNode nodeAt(int port, int timeout) {
  io::DicomNode n;
  n.aeTitle = "ORTHANC";
  n.host = "127.0.0.1";
  n.port = port;
  n.timeoutSeconds = timeout;
  return n;
}

io::DicomImageKey key(double z, const std::string& echo = "") {
  io::DicomImageKey k;
  k.file = "img" + std::to_string(static_cast<int>(z)) + "e" + echo + ".dcm";
  k.rows = 2, k.columns = 2;
  k.position = {-1, -1, z};
  k.orientation = {1, 0, 0, 0, 1, 0};
  k.spacing = {1, 1};
  k.echo = echo;
  return k;
}

/// A series of 2x2 images, image i filled with values[i], keyed by keys[i].
io::DicomSeries series(const std::vector<io::DicomImageKey>& keys, const std::vector<float>& values) {
  io::DicomSeries s;
  s.image = CArray(Shape{2, 2, static_cast<index_t>(keys.size())});
  for (std::size_t i = 0; i < keys.size(); ++i)
    for (index_t p = 0; p < 4; ++p) s.image[static_cast<index_t>(i) * 4 + p] = cfloat(values[i], 0.f);
  s.images = keys;
  return s;
}

}  // namespace

TEST(DicomQuery, RetrieveRefusesAFolderThatIsNotNewOrEmptyBeforeConnecting) {
  const std::string dir = larmor::testing::freshTestDir("retrieve");
  const std::string full = dir + "/full", file = dir + "/file";
  fs::create_directory(full);
  std::ofstream(full + "/mine.txt") << "user data";
  std::ofstream(file) << "user data";
  larmor::test::SilentServer silent;  // would time out if it were asked
  const auto t0 = std::chrono::steady_clock::now();
  expectError([&] { io::retrieve(nodeAt(silent.port, 5), "1.2.3", full); }, "exists and is not empty");
  expectError([&] { io::retrieve(nodeAt(silent.port, 5), "1.2.3", file); }, "exists and is not a folder");
  expectError([&] { io::retrieve(nodeAt(silent.port, 5), "1.2..3", dir + "/new"); }, "is not a series UID");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  std::ifstream in(full + "/mine.txt");
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "user data");
  EXPECT_EQ(std::distance(fs::directory_iterator(full), fs::directory_iterator()), 1);
}

TEST(DicomQuery, SilentServerOrClosedPortFailsWithinTheTimeoutAndLeavesNothing) {
  const std::string dir = larmor::testing::freshTestDir("retrieve");
  larmor::test::SilentServer silent;
  const auto t0 = std::chrono::steady_clock::now();
  expectError([&] { io::query(nodeAt(silent.port, 1), {}); }, "did not answer C-FIND within 1 s");
  expectError([&] { io::retrieve(nodeAt(silent.port, 1), "1.2.3", dir + "/got"); }, "did not answer C-GET within 1 s");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));
  int closed = 0;
  {
    larmor::test::SilentServer s;
    closed = s.port;
  }
  expectError([&] { io::retrieve(nodeAt(closed, 2), "1.2.3", dir + "/got"); }, "cannot connect for C-GET");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 0) << "something left in " << dir;
}

TEST(DicomMatch, PairsByPositionAndFrameNotByOrder) {
  // The reference holds the slices in another order, two echoes each, and one slice more.
  const io::DicomSeries ref = series({key(3, "1"), key(1, "2"), key(1, "1"), key(2, "1"), key(2, "2"), key(3, "2")},
                                     {31, 12, 11, 21, 22, 32});
  const io::DicomSeries test = series({key(1, "1"), key(2, "1"), key(1, "2")}, {0, 0, 0});
  const io::DicomMatch m = io::matchDicomSeries(test, ref, "test", "ref");
  EXPECT_FALSE(m.byOrder);
  EXPECT_EQ(m.referenceImages, 6u);
  ASSERT_EQ(m.reference.shape()[2], 3);
  EXPECT_EQ(m.reference[0].real(), 11.f);
  EXPECT_EQ(m.reference[4].real(), 21.f);
  EXPECT_EQ(m.reference[8].real(), 12.f);
}

TEST(DicomMatch, RefusesAShiftedResizedOrOtherFrameWithOneLine) {
  const io::DicomSeries ref = series({key(1, "1"), key(2, "1")}, {1, 2});
  expectError([&] { io::matchDicomSeries(series({key(1.2), key(2)}, {0, 0}), ref, "test", "ref"); },
              "img1e.dcm: no image of the reference ref matches it by geometry and frame (nothing at its position (-1, -1, 1.2) mm");
  EXPECT_NO_THROW(io::matchDicomSeries(series({key(1.04), key(2)}, {0, 0}), ref, "test", "ref"));  // within 0.05 mm
  expectError([&] { io::matchDicomSeries(series({key(1, "2")}, {0}), ref, "test", "ref"); }, "(echo 2;");
  io::DicomImageKey rotated = key(1);
  rotated.orientation = {0, 1, 0, 1, 0, 0};
  expectError([&] { io::matchDicomSeries(series({rotated}, {0}), ref, "test", "ref"); }, "(orientation (0, 1, 0, 1, 0, 0)");
  io::DicomSeries big;
  big.image = CArray(Shape{4, 4, 1});
  big.images = {key(1)};
  expectError([&] { io::matchDicomSeries(big, ref, "test", "ref"); }, "not the same matrix");
}

TEST(DicomMatch, WithoutPositionsPairsByOrderAndNeedsAsMany) {
  io::DicomImageKey a = key(1), b = key(2);
  a.position.clear(), b.position.clear();
  const io::DicomSeries ref = series({key(7), key(5)}, {7, 5});
  const io::DicomMatch m = io::matchDicomSeries(series({a, b}, {0, 0}), ref, "test", "ref");
  EXPECT_TRUE(m.byOrder);
  EXPECT_EQ(m.reference[0].real(), 7.f);
  expectError([&] { io::matchDicomSeries(series({a}, {0}), ref, "test", "ref"); }, "can only be matched by order");
}

#endif  // LARMOR_HAVE_IO

#ifdef LARMOR_HAVE_IO
// Cancel while the PACS is silent: the wait ends within about 100 ms of the cancel, as Cancelled, not after the
// node's 10 s timeout, and a retrieve leaves no folder.
TEST(DicomQuery, CancelEndsASilentWaitAtOnce) {
  const std::string dir = larmor::testing::freshTestDir("retrieve");
  larmor::test::SilentServer silent;
  for (int retrieve = 0; retrieve < 2; ++retrieve) {
    CancelToken token;
    const Progress progress([](double, const std::string&) {}, &token);
    std::thread canceller([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      token.cancel();
    });
    const auto t0 = std::chrono::steady_clock::now();
    if (retrieve)
      EXPECT_THROW(io::retrieve(nodeAt(silent.port, 10), "1.2.3", dir + "/got", {}, progress), Cancelled);
    else
      EXPECT_THROW(io::query(nodeAt(silent.port, 10), {}, progress), Cancelled);
    const auto took = std::chrono::steady_clock::now() - t0;
    canceller.join();
    EXPECT_LT(took, std::chrono::milliseconds(800)) << (retrieve ? "retrieve" : "query");
  }
  EXPECT_FALSE(fs::exists(dir + "/got"));
}
#endif  // LARMOR_HAVE_IO
