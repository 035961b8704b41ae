#include "larmor/traj/spiral.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

namespace larmor::traj {

namespace {

void checkDesign(const SpiralDesign& d) {
  require(d.matrix >= 2, "spiral trajectory: matrix must be at least 2, got " + std::to_string(d.matrix));
  require(d.interleaves >= 1 && d.interleaves <= 65536,
          "spiral trajectory: interleaves must be 1 to 65536, got " + std::to_string(d.interleaves));
  require(d.readout == 0 || d.readout >= 2,
          "spiral trajectory: readout must have at least 2 samples, got " + std::to_string(d.readout));
  require(std::isfinite(d.fovCentre) && std::isfinite(d.fovEdge) && d.fovCentre > 0 && d.fovEdge > 0,
          "spiral trajectory: the FOV factors must be positive");
  require(std::isfinite(d.readoutOversampling) && d.readoutOversampling >= 0.25 && d.readoutOversampling <= 16,
          "spiral trajectory: readout oversampling must be 0.25 to 16");
}

/// theta(r) of the design (spiral.hpp), and its derivative.
struct Shape2 {
  double kmax, fc, fe, interleaves;
  double theta(double r) const {
    return 2 * std::numbers::pi / interleaves * (fc * r - (fc - fe) * r * r / (2 * kmax));
  }
  double dtheta(double r) const { return 2 * std::numbers::pi / interleaves * (fe + (fc - fe) * (1 - r / kmax)); }
  double dsdr(double r) const {
    const double a = r * dtheta(r);
    return std::sqrt(1 + a * a);
  }
};

Shape2 shapeOf(const SpiralDesign& d) {
  return {0.5 * static_cast<double>(d.matrix), d.fovCentre, d.fovEdge, static_cast<double>(d.interleaves)};
}

/// Cumulative arc length s(r_i) at r_i = i kmax / n by Simpson's rule on each interval.
std::vector<double> arcTable(const Shape2& s, int n) {
  std::vector<double> table(static_cast<std::size_t>(n) + 1, 0.0);
  const double h = s.kmax / n;
  for (int i = 0; i < n; ++i) {
    const double r0 = i * h;
    table[static_cast<std::size_t>(i) + 1] =
        table[static_cast<std::size_t>(i)] + h / 6 * (s.dsdr(r0) + 4 * s.dsdr(r0 + h / 2) + s.dsdr(r0 + h));
  }
  return table;
}

constexpr int kArcSteps = 1 << 16;

}  // namespace

double spiralArcLength(const SpiralDesign& d) {
  checkDesign(d);
  return arcTable(shapeOf(d), kArcSteps).back();
}

index_t spiralReadout(const SpiralDesign& d) {
  if (d.readout > 0) return d.readout;
  return static_cast<index_t>(std::ceil(spiralArcLength(d) * d.readoutOversampling)) + 1;
}

Trajectory spiral2D(const SpiralDesign& d) {
  checkDesign(d);
  const Shape2 s = shapeOf(d);
  const std::vector<double> arc = arcTable(s, kArcSteps);
  const double length = arc.back();
  const index_t readout = d.readout > 0 ? d.readout : static_cast<index_t>(std::ceil(length * d.readoutOversampling)) + 1;
  require(static_cast<double>(readout) * static_cast<double>(d.interleaves) <= 2147483647.0,
          "spiral trajectory: too many samples");
  // One interleave at equal arc-length steps: invert s(r) by a monotone walk through the table.
  std::vector<double> radius(static_cast<std::size_t>(readout)), angle(radius.size());
  std::size_t node = 0;
  const double h = s.kmax / kArcSteps;
  for (index_t j = 0; j < readout; ++j) {
    const double target = length * static_cast<double>(j) / static_cast<double>(readout - 1);
    while (node + 1 < arc.size() - 1 && arc[node + 1] < target) ++node;
    const double a0 = arc[node], a1 = arc[node + 1];
    const double f = a1 > a0 ? std::clamp((target - a0) / (a1 - a0), 0.0, 1.0) : 0.0;
    const double r = j + 1 == readout ? s.kmax : (static_cast<double>(node) + f) * h;
    radius[static_cast<std::size_t>(j)] = r;
    angle[static_cast<std::size_t>(j)] = s.theta(r);
  }
  Trajectory t;
  t.dims = 2;
  t.kind = TrajectoryKind::Spiral;
  t.k = RArray(Shape{3, readout, d.interleaves}, 0.f);
  for (index_t i = 0; i < d.interleaves; ++i) {
    const double rot = 2 * std::numbers::pi * static_cast<double>(i) / static_cast<double>(d.interleaves);
    for (index_t j = 0; j < readout; ++j) {
      const double r = radius[static_cast<std::size_t>(j)], a = angle[static_cast<std::size_t>(j)] + rot;
      t.k(0, j, i) = static_cast<float>(r * std::cos(a));
      t.k(1, j, i) = static_cast<float>(r * std::sin(a));
    }
  }
  return t;
}

Trajectory stackOfSpirals(const SpiralDesign& d, index_t partitions) {
  require(partitions >= 1 && partitions <= 65536,
          "stack-of-spirals trajectory: partitions must be 1 to 65536, got " + std::to_string(partitions));
  const Trajectory plane = spiral2D(d);
  const index_t readout = plane.readout(), il = plane.profiles();
  require(static_cast<double>(readout) * static_cast<double>(il) * static_cast<double>(partitions) <= 2147483647.0,
          "stack-of-spirals trajectory: too many samples");
  Trajectory t;
  t.dims = 3;
  t.kind = TrajectoryKind::StackOfSpirals;
  t.k = RArray(Shape{3, readout, il * partitions});
  for (index_t p = 0; p < partitions; ++p) {
    const float kz = static_cast<float>(p - partitions / 2);
    for (index_t i = 0; i < il; ++i)
      for (index_t j = 0; j < readout; ++j) {
        t.k(0, j, i + il * p) = plane.k(0, j, i);
        t.k(1, j, i + il * p) = plane.k(1, j, i);
        t.k(2, j, i + il * p) = kz;
      }
  }
  return t;
}

}  // namespace larmor::traj
