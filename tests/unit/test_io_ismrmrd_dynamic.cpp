// A dynamic series written as one ISMRMRD file (io::writeIsmrmrdSeries) reads back as a Series of repetitions:
// each frame's k-space, sampling and trajectory as written, and each its own reference (the NDArray "reference"
// holds one array per repetition); the coil maps in every frame. Golden-angle and Cartesian series, one frame, a
// selected repetition, the structure-only read, and frames that do not share one header.
#include <gtest/gtest.h>

#include <filesystem>

#include "larmor/io/dataset_io.hpp"
#include "larmor/io/ismrmrd.hpp"
#include "larmor/phantom/dynamic.hpp"
#include "support/expect_error.hpp"
#include "support/test_dir.hpp"

using namespace larmor;
using larmor::test::expectError;

namespace {

phantom::SimulateSettings settings(TrajectoryKind kind, index_t frames) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 32;
  s.coils = 2;
  s.trajectory = kind;
  s.frames = frames;
  s.spokesPerFrame = 6;
  s.accel = 3;
  s.acs = 4;
  s.noiseSigma = 0.01f;
  return s;
}

template <class T>
void expectSameArray(const Array<T>& a, const Array<T>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (index_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << what << " element " << i;
}

void expectRoundTrip(const std::vector<Dataset>& frames, const io::Series& s) {
  ASSERT_EQ(s.frames.size(), frames.size());
  ASSERT_EQ(s.repetitions.size(), frames.size());
  for (std::size_t f = 0; f < frames.size(); ++f) {
    const Dataset& a = frames[f];
    const Dataset& b = s.frames[f];
    EXPECT_EQ(s.keys[f].repetition, static_cast<int>(f));
    EXPECT_EQ(b.kspace.shape(), a.kspace.shape());
    expectSameArray(a.kspace, b.kspace, "k-space of frame " + std::to_string(f));
    expectSameArray(a.trajectory, b.trajectory, "trajectory of frame " + std::to_string(f));
    if (!a.sampled.empty()) expectSameArray(a.sampled, b.sampled, "sampling of frame " + std::to_string(f));
    ASSERT_TRUE(b.reference.has_value()) << "frame " << f;
    expectSameArray(*a.reference, *b.reference, "reference of frame " + std::to_string(f));
    ASSERT_TRUE(b.coilMaps.has_value());
    expectSameArray(*a.coilMaps, *b.coilMaps, "coil maps of frame " + std::to_string(f));
    EXPECT_TRUE(b.warnings.empty()) << b.warnings.front();
  }
}

}  // namespace

TEST(IoIsmrmrdDynamic, GoldenSeriesRoundTripWithReferences) {
  const std::string path = larmor::testing::freshTestDir("io-dynamic") + "/golden.h5";
  const auto frames = phantom::simulateSeries(settings(TrajectoryKind::GoldenAngle, 4));
  io::writeIsmrmrdSeries(frames, path, phantom::toJson(settings(TrajectoryKind::GoldenAngle, 4)));
  const io::Series s = io::loadSeries(path);
  expectRoundTrip(frames, s);
  // The references differ from frame to frame (the object moves).
  EXPECT_NE((*s.frames[0].reference)[32 * 16 + 16], (*s.frames[2].reference)[32 * 16 + 16]);
  EXPECT_NE(io::readIsmrmrdSimulatorSettings(path).find("\"frames\":4"), std::string::npos);
}

TEST(IoIsmrmrdDynamic, CartesianSeriesRoundTrip) {
  const std::string path = larmor::testing::freshTestDir("io-dynamic") + "/cart.h5";
  const auto frames = phantom::simulateSeries(settings(TrajectoryKind::Cartesian, 3));
  io::writeIsmrmrdSeries(frames, path);
  expectRoundTrip(frames, io::loadSeries(path));
}

// One repetition selected: its own reference, not frame 0's.
TEST(IoIsmrmrdDynamic, SelectedRepetitionKeepsItsReference) {
  const std::string path = larmor::testing::freshTestDir("io-dynamic") + "/golden.h5";
  const auto frames = phantom::simulateSeries(settings(TrajectoryKind::GoldenAngle, 3));
  io::writeIsmrmrdSeries(frames, path);
  io::LoadOptions lo;
  lo.repetition = 2;
  const Dataset d = io::loadDataset(path, lo);
  ASSERT_TRUE(d.reference.has_value());
  expectSameArray(*frames[2].reference, *d.reference, "reference of repetition 2");
}

// `info`'s read of a Cartesian series (structure only): the references described, not read.
TEST(IoIsmrmrdDynamic, StructureOnlyReadDescribesTheReferences) {
  const std::string path = larmor::testing::freshTestDir("io-dynamic") + "/cart.h5";
  io::writeIsmrmrdSeries(phantom::simulateSeries(settings(TrajectoryKind::Cartesian, 3)), path);
  io::LoadOptions lo;
  lo.structureOnly = true;
  const io::Series s = io::loadSeries(path, lo);
  EXPECT_EQ(s.frames.size(), 3u);
  ASSERT_TRUE(s.referenceShape.has_value());
  EXPECT_EQ(*s.referenceShape, (Shape{32, 32, 1, 1, 1}));
  for (const Dataset& d : s.frames) EXPECT_TRUE(d.warnings.empty()) << d.warnings.front();
}

TEST(IoIsmrmrdDynamic, OneFrameIsAPlainFile) {
  const std::string path = larmor::testing::freshTestDir("io-dynamic") + "/one.h5";
  const auto frames = phantom::simulateSeries(settings(TrajectoryKind::GoldenAngle, 1));
  io::writeIsmrmrdSeries(frames, path);
  const io::Series s = io::loadSeries(path);
  expectRoundTrip(frames, s);
  EXPECT_EQ(s.describeDims(), "1 frame");
}

TEST(IoIsmrmrdDynamic, FramesMustShareOneHeader) {
  const std::string dir = larmor::testing::freshTestDir("io-dynamic");
  auto frames = phantom::simulateSeries(settings(TrajectoryKind::GoldenAngle, 2));
  frames[1].reference.reset();
  expectError([&] { io::writeIsmrmrdSeries(frames, dir + "/x.h5"); },
              dir + "/x.h5: frame 1 (golden [64, 6, 1, 2, 1]) does not share frame 0's acquisition");
  expectError([&] { io::writeIsmrmrdSeries({}, dir + "/x.h5"); }, "cannot write a series of no frames");
  EXPECT_FALSE(std::filesystem::exists(dir + "/x.h5"));
}
