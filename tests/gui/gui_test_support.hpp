#pragma once
// Helpers for the GUI tests: waiting on the event loop, small phantoms, picture statistics.
#include <QImage>
#include <QString>
#include <functional>

#include "larmor/phantom/simulate.hpp"

namespace larmor::ui::test {

/// Processes events until `done` is true or `ms` pass; returns done().
bool waitUntil(const std::function<bool()>& done, int ms);

/// A small Shepp-Logan phantom: n x n (x n3 when n3 > 1), `coils` coils, on `traj`.
phantom::SimulateSettings smallPhantom(TrajectoryKind traj, int n, int coils, int accel = 1, int acs = 0, int n3 = 1);

/// Standard deviation of the grey level (0..255) over the picture, and the number of distinct colours:
/// a blank or uniformly filled region has (close to) zero of the first and one of the second.
double greyStdDev(const QImage& image);
int distinctColours(const QImage& image);

/// A fresh directory under the build's test-tmp for one test.
QString scratchDir(const QString& name);

}  // namespace larmor::ui::test
