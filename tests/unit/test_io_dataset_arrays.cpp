// io::datasetFromArrays: arrays in memory give the Dataset that loadDataset reads from .cfl files of the same arrays
// (header, masks, calibration, trajectory and samples alike), Cartesian and radial; bad shapes are one-line errors.
#include <gtest/gtest.h>

#include "larmor/io/cfl.hpp"
#include "larmor/io/dataset_arrays.hpp"
#include "larmor/phantom/simulate.hpp"
#include "support/expect_error.hpp"
#include "support/test_dir.hpp"

using namespace larmor;
using larmor::test::expectError;

namespace {

Dataset simulated(TrajectoryKind kind) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 32;
  s.coils = 3;
  s.trajectory = kind;
  if (kind == TrajectoryKind::Cartesian) s.accel = 2, s.acs = 12;
  else s.spokes = 24;
  return phantom::simulate(s);
}

CArray complexTrajectory(const RArray& t) {
  CArray c(t.shape());
  for (index_t i = 0; i < c.size(); ++i) c[i] = cfloat(t[i], 0.f);
  return c;
}

template <class T>
void expectSame(const Array<T>& a, const Array<T>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (index_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << what << " element " << i;
}

void expectSameDataset(const Dataset& a, const Dataset& b) {
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(a.header.encoded[i], b.header.encoded[i]);
    EXPECT_EQ(a.header.recon[i], b.header.recon[i]);
  }
  EXPECT_EQ(a.header.coils, b.header.coils);
  EXPECT_EQ(a.header.trajectory, b.header.trajectory);
  EXPECT_EQ(a.header.accelerationPe1, b.header.accelerationPe1);
  EXPECT_EQ(a.header.calibrationLines, b.header.calibrationLines);
  expectSame(a.kspace, b.kspace, "kspace");
  expectSame(a.sampled, b.sampled, "sampled");
  expectSame(a.calibration, b.calibration, "calibration");
  expectSame(a.trajectory, b.trajectory, "trajectory");
}

}  // namespace

TEST(IoDatasetArrays, CartesianEqualsTheCflReader) {
  const Dataset sim = simulated(TrajectoryKind::Cartesian);
  const std::string dir = larmor::testing::freshTestDir("io-dataset-arrays");
  io::writeCfl(dir + "/k", sim.kspace);
  const Dataset fromFile = io::loadDataset(dir + "/k.cfl");
  const Dataset fromArrays = io::datasetFromArrays("arrays", sim.kspace, nullptr);
  expectSameDataset(fromArrays, fromFile);
  EXPECT_GT(fromArrays.header.calibrationLines, 0);
}

TEST(IoDatasetArrays, RadialEqualsTheCflReader) {
  const Dataset sim = simulated(TrajectoryKind::Radial);
  const std::string dir = larmor::testing::freshTestDir("io-dataset-arrays");
  const CArray traj = complexTrajectory(sim.trajectory);
  io::writeCfl(dir + "/k", sim.kspace);
  io::writeCfl(dir + "/t", traj);
  io::LoadOptions lo;
  lo.trajectoryPath = dir + "/t.cfl";
  const Dataset fromFile = io::loadDataset(dir + "/k.cfl", lo);
  const Dataset fromArrays = io::datasetFromArrays("arrays", sim.kspace, &traj);
  expectSameDataset(fromArrays, fromFile);
  EXPECT_EQ(fromArrays.header.trajectory, TrajectoryKind::Radial);
}

TEST(IoDatasetArrays, ShapesThatDoNotFitAreErrors) {
  const Dataset sim = simulated(TrajectoryKind::Radial);
  const CArray traj = complexTrajectory(sim.trajectory);
  CArray wrong(Shape{7, 24, 1, 3});
  expectError([&] { (void)io::datasetFromArrays("arrays", wrong, &traj); },
              "does not match the trajectory arrays trajectory [3, 64, 24]");
  CArray six(Shape{2, 2, 2, 2, 2, 2});
  expectError([&] { (void)io::datasetFromArrays("arrays", six, nullptr); }, "must be [readout, pe1, pe2, coils, slices]");
}
