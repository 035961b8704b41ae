// BART k-space with TIME (dim 10) and a trajectory with one set of spokes per time point (BART's layout of a
// dynamic acquisition, and `larmor-cli simulate --frames N --traj-output`): each frame gets its own spokes; a
// trajectory whose time points do not match the k-space's is a one-line error; a trajectory without TIME still
// serves every frame.
#include <gtest/gtest.h>

#include "larmor/io/cfl.hpp"
#include "larmor/io/dataset_io.hpp"
#include "larmor/phantom/dynamic.hpp"
#include "support/expect_error.hpp"
#include "support/test_dir.hpp"

using namespace larmor;
using larmor::test::expectError;

namespace {

// The frames' arrays stacked along BART's dimension 10 (shape [d0, d1, d2, d3, 1, ..., frames]).
CArray alongTime(const std::vector<CArray>& a, const Shape& frame) {
  std::vector<index_t> dims(11, 1);
  for (std::size_t i = 0; i < frame.rank() && i < 4; ++i) dims[i] = frame[i];
  dims[10] = static_cast<index_t>(a.size());
  CArray out{Shape(dims)};
  for (std::size_t f = 0; f < a.size(); ++f)
    std::copy(a[f].data(), a[f].data() + a[f].size(), out.data() + a[f].size() * static_cast<index_t>(f));
  return out;
}

struct Files {
  std::vector<Dataset> frames;
  std::string dir;
};

Files write(index_t n) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 32;
  s.coils = 2;
  s.trajectory = TrajectoryKind::GoldenAngle;
  s.frames = n;
  s.spokesPerFrame = 5;
  Files out{phantom::simulateSeries(s), larmor::testing::freshTestDir("io-bart-dynamic")};
  std::vector<CArray> k, t;
  for (const Dataset& d : out.frames) {
    k.push_back(d.kspace);
    CArray c(d.trajectory.shape());
    for (index_t i = 0; i < c.size(); ++i) c[i] = cfloat(d.trajectory[i], 0.f);
    t.push_back(std::move(c));
  }
  io::writeCfl(out.dir + "/k", alongTime(k, out.frames[0].kspace.shape()));
  io::writeCfl(out.dir + "/t", alongTime(t, Shape{3, 64, 5}));
  io::writeCfl(out.dir + "/t0", t[0]);
  return out;
}

}  // namespace

TEST(IoBartDynamic, EachTimePointHasItsOwnSpokes) {
  const Files f = write(3);
  io::LoadOptions lo;
  lo.trajectoryPath = f.dir + "/t.cfl";
  const io::Series s = io::loadSeries(f.dir + "/k.cfl", lo);
  ASSERT_EQ(s.frames.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(s.keys[i].repetition, static_cast<int>(i));
    const Dataset& a = f.frames[i];
    const Dataset& b = s.frames[i];
    ASSERT_EQ(b.trajectory.shape(), a.trajectory.shape());
    for (index_t j = 0; j < a.trajectory.size(); ++j) ASSERT_EQ(b.trajectory[j], a.trajectory[j]) << "frame " << i;
    ASSERT_EQ(b.kspace.size(), a.kspace.size());
    for (index_t j = 0; j < a.kspace.size(); ++j) ASSERT_EQ(b.kspace[j], a.kspace[j]) << "frame " << i;
  }
  EXPECT_NE(s.frames[0].trajectory[3 * 70 + 1], s.frames[2].trajectory[3 * 70 + 1]);
}

TEST(IoBartDynamic, OneTrajectoryServesEveryFrame) {
  const Files f = write(2);
  io::LoadOptions lo;
  lo.trajectoryPath = f.dir + "/t0.cfl";
  const io::Series s = io::loadSeries(f.dir + "/k.cfl", lo);
  ASSERT_EQ(s.frames.size(), 2u);
  for (index_t j = 0; j < s.frames[1].trajectory.size(); ++j)
    ASSERT_EQ(s.frames[1].trajectory[j], f.frames[0].trajectory[j]);
}

TEST(IoBartDynamic, TimePointsMustMatch) {
  const Files f = write(3);
  const Files g = write(2);  // the directory made afresh: the 3-frame k-space goes next to a 2-point trajectory
  std::vector<CArray> k;
  for (const Dataset& d : f.frames) k.push_back(d.kspace);
  io::writeCfl(g.dir + "/k3", alongTime(k, f.frames[0].kspace.shape()));
  io::LoadOptions lo;
  lo.trajectoryPath = g.dir + "/t.cfl";
  expectError([&] { (void)io::loadSeries(g.dir + "/k3.cfl", lo); },
              "t.cfl: trajectory [3, 64, 5, 1, 1, 1, 1, 1, 1, 1, 2] has 2 time points (TIME dim 10) but the k-space has 3");
}
