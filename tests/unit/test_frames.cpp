// Frame binning (data/frames.hpp): frame counts, shapes and contents of consecutive and sliding windows, the
// dropped remainder's warning, --frames N, the errors; and binning the simulator's continuous golden-angle
// acquisition gives the dynamic simulator's frame trajectories.
#include <gtest/gtest.h>

#include "larmor/data/frames.hpp"
#include "larmor/phantom/dynamic.hpp"
#include "larmor/phantom/simulate.hpp"
#include "support/expect_error.hpp"

using namespace larmor;
using larmor::test::expectError;

namespace {

// A continuous golden-angle acquisition of `spokes` spokes, 16 x 16, two coils.
Dataset continuous(index_t spokes) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 16;
  s.coils = 2;
  s.trajectory = TrajectoryKind::GoldenAngle;
  s.spokes = spokes;
  Dataset d = phantom::simulate(s);
  d.source = "cont.h5";
  return d;
}

// Frame `f` holds profiles first .. first + K - 1 of `d` (k-space of every coil, trajectory).
void expectWindow(const Dataset& d, const Dataset& f, index_t first, index_t k) {
  const index_t readout = d.kspace.shape()[0], profiles = d.kspace.shape()[1];
  ASSERT_EQ(f.kspace.shape(), (Shape{readout, k, 1, 2, 1}));
  ASSERT_EQ(f.trajectory.shape(), (Shape{3, readout, k}));
  for (index_t c = 0; c < 2; ++c)
    for (index_t i = 0; i < readout * k; ++i)
      ASSERT_EQ(f.kspace[i + readout * k * c], d.kspace[i + readout * (first + profiles * c)]);
  for (index_t i = 0; i < 3 * readout * k; ++i) ASSERT_EQ(f.trajectory[i], d.trajectory[i + 3 * readout * first]);
  EXPECT_NO_THROW(f.validate());
  EXPECT_FALSE(f.reference.has_value());  // the continuous truth is no frame's truth
  EXPECT_TRUE(f.coilMaps.has_value());    // the coils do not move
  EXPECT_EQ(f.header.trajectory, TrajectoryKind::GoldenAngle);
}

}  // namespace

TEST(Frames, FramesFor) {
  EXPECT_EQ(framesFor(100, 10), 10);
  EXPECT_EQ(framesFor(105, 10), 10);
  EXPECT_EQ(framesFor(100, 10, 5), 19);
  EXPECT_EQ(framesFor(10, 10, 9), 1);
  EXPECT_EQ(framesFor(9, 10), 0);
  expectError([] { (void)framesFor(100, 0); }, "frames of 0 profiles");
  expectError([] { (void)framesFor(100, 10, 10); }, "overlap of 10 profiles must be 0 to 9");
  expectError([] { (void)framesFor(100, 10, -1); }, "overlap of -1 profiles");
}

TEST(Frames, ConsecutiveFrames) {
  const Dataset d = continuous(30);
  const auto frames = binFrames(d, 10);
  ASSERT_EQ(frames.size(), 3u);
  for (index_t i = 0; i < 3; ++i) {
    expectWindow(d, frames[static_cast<std::size_t>(i)], 10 * i, 10);
    EXPECT_TRUE(frames[static_cast<std::size_t>(i)].warnings.empty());
  }
}

TEST(Frames, IncompleteLastFrameIsDroppedWithAWarning) {
  const Dataset d = continuous(30);
  const auto frames = binFrames(d, 7);
  ASSERT_EQ(frames.size(), 4u);
  expectWindow(d, frames[3], 21, 7);
  for (const Dataset& f : frames) {
    ASSERT_EQ(f.warnings.size(), 1u);
    EXPECT_EQ(f.warnings[0], "cont.h5: the last 2 of 30 profiles do not fill a frame of 7 and are dropped");
  }
}

TEST(Frames, SlidingWindow) {
  const Dataset d = continuous(30);
  const auto frames = binFrames(d, 10, 6);  // step 4: starts 0, 4, ..., 20
  ASSERT_EQ(frames.size(), 6u);
  for (index_t i = 0; i < 6; ++i) expectWindow(d, frames[static_cast<std::size_t>(i)], 4 * i, 10);
  EXPECT_TRUE(frames[0].warnings.empty());
}

TEST(Frames, ByCount) {
  const Dataset d = continuous(30);
  const auto frames = binFramesByCount(d, 4);  // K = 7, two profiles left over
  ASSERT_EQ(frames.size(), 4u);
  expectWindow(d, frames[2], 14, 7);
  EXPECT_EQ(frames[0].warnings.size(), 1u);
  expectError([&] { (void)binFramesByCount(d, 0); }, "cont.h5: cannot bin 30 profiles into 0 frames (1 to 30)");
  expectError([&] { (void)binFramesByCount(d, 31); }, "cannot bin 30 profiles into 31 frames");
}

TEST(Frames, Errors) {
  const Dataset d = continuous(30);
  expectError([&] { (void)binFrames(d, 0); }, "cont.h5: cannot bin into frames of 0 profiles");
  expectError([&] { (void)binFrames(d, 10, 10); }, "cont.h5: a frame overlap of 10 profiles must be 0 to 9");
  expectError([&] { (void)binFrames(d, 31); }, "cont.h5: 30 profiles are fewer than one frame of 31");
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 16;
  s.coils = 1;
  Dataset cart = phantom::simulate(s);
  cart.source = "cart.h5";
  expectError([&] { (void)binFrames(cart, 4); }, "cart.h5: cannot bin Cartesian data into frames");
  expectError([&] { (void)binFramesByCount(cart, 4); }, "cart.h5: cannot bin Cartesian data into frames");
}

// The continuous acquisition of F K golden-angle spokes, binned into K, has the dynamic simulator's frames.
TEST(Frames, BinningMatchesTheDynamicSimulatorsSpokes) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 16;
  s.coils = 2;
  s.trajectory = TrajectoryKind::GoldenAngle;
  s.frames = 3;
  s.spokesPerFrame = 5;
  const auto series = phantom::simulateSeries(s);
  const auto binned = binFrames(continuous(15), 5);
  ASSERT_EQ(binned.size(), series.size());
  for (std::size_t f = 0; f < series.size(); ++f) {
    ASSERT_EQ(binned[f].trajectory.shape(), series[f].trajectory.shape());
    for (index_t i = 0; i < series[f].trajectory.size(); ++i) ASSERT_EQ(binned[f].trajectory[i], series[f].trajectory[i]);
  }
}
