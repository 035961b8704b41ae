#include "larmor/traj/radial.hpp"

#include <cmath>
#include <numbers>

namespace larmor::traj {

namespace {

void checkArgs(index_t readout, index_t spokes, index_t matrix, const char* what) {
  require(matrix >= 2, std::string(what) + ": matrix must be at least 2, got " + std::to_string(matrix));
  require(readout >= 2, std::string(what) + ": readout must have at least 2 samples, got " + std::to_string(readout));
  require(spokes >= 1, std::string(what) + ": spokes must be at least 1, got " + std::to_string(spokes));
  require(static_cast<double>(readout) * static_cast<double>(spokes) <= 2147483647.0,
          std::string(what) + ": " + std::to_string(readout) + " x " + std::to_string(spokes) + " samples is too many");
}

/// Position of sample i along a full spoke: (i - floor(R/2)) N/R (see radial.hpp).
double spokePosition(index_t i, index_t readout, index_t matrix) {
  return static_cast<double>(i - readout / 2) * static_cast<double>(matrix) / static_cast<double>(readout);
}

double frac(double x) { return x - std::floor(x); }

}  // namespace

index_t nyquistSpokes(index_t matrix, int dims) {
  const double n = static_cast<double>(matrix);
  return std::max<index_t>(1, std::llround(std::numbers::pi / 2 * (dims == 3 ? n * n : n)));
}

Trajectory radial2D(index_t readout, index_t spokes, index_t matrix, RadialOrder order) {
  checkArgs(readout, spokes, matrix, "radial trajectory");
  Trajectory t;
  t.dims = 2;
  t.kind = order == RadialOrder::GoldenAngle ? TrajectoryKind::GoldenAngle : TrajectoryKind::Radial;
  t.k = RArray(Shape{3, readout, spokes}, 0.f);
  RadialInfo info;
  info.readout = readout;
  info.spokes = spokes;
  info.kStart = static_cast<float>(spokePosition(0, readout, matrix));
  info.kStep = static_cast<float>(static_cast<double>(matrix) / static_cast<double>(readout));
  info.anglesRad.resize(static_cast<std::size_t>(spokes));
  const double pi = std::numbers::pi;
  for (index_t p = 0; p < spokes; ++p) {
    double a = 0;
    switch (order) {
      case RadialOrder::Linear180: a = pi * static_cast<double>(p) / static_cast<double>(spokes); break;
      case RadialOrder::Linear360: a = 2 * pi * static_cast<double>(p) / static_cast<double>(spokes); break;
      case RadialOrder::GoldenAngle:
        // Reduced modulo 2 pi in double before the float conversion: p * 1.94 rad grows large.
        a = std::fmod(static_cast<double>(p) * kGoldenAngleDeg, 360.0) * pi / 180.0;
        break;
    }
    info.anglesRad[static_cast<std::size_t>(p)] = static_cast<float>(a);
    const double c = std::cos(a), s = std::sin(a);
    for (index_t i = 0; i < readout; ++i) {
      const double r = spokePosition(i, readout, matrix);
      t.k(0, i, p) = static_cast<float>(r * c);
      t.k(1, i, p) = static_cast<float>(r * s);
    }
  }
  t.radial = std::move(info);
  return t;
}

Trajectory radial3D(index_t readout, index_t spokes, index_t matrix) {
  checkArgs(readout, spokes, matrix, "3D radial trajectory");
  Trajectory t;
  t.dims = 3;
  t.kind = TrajectoryKind::Radial3D;
  t.k = RArray(Shape{3, readout, spokes}, 0.f);
  for (index_t m = 0; m < spokes; ++m) {
    // Chan et al. 2009: the two golden means spread successive spokes evenly over the hemisphere.
    const double z = frac(static_cast<double>(m) * kGoldenMean1);
    const double f = 2 * std::numbers::pi * frac(static_cast<double>(m) * kGoldenMean2);
    const double rho = std::sqrt(std::max(0.0, 1 - z * z));
    const double dir[3] = {rho * std::cos(f), rho * std::sin(f), z};
    for (index_t i = 0; i < readout; ++i) {
      const double r = spokePosition(i, readout, matrix);
      for (int d = 0; d < 3; ++d) t.k(d, i, m) = static_cast<float>(r * dir[d]);
    }
  }
  return t;
}

}  // namespace larmor::traj
