#include "gui_test_support.hpp"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QSet>
#include <QThread>
#include <cmath>

namespace larmor::ui::test {

bool waitUntil(const std::function<bool()>& done, int ms) {
  QElapsedTimer t;
  t.start();
  while (!done() && t.elapsed() < ms) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(5);
  }
  return done();
}

phantom::SimulateSettings smallPhantom(TrajectoryKind traj, int n, int coils, int accel, int acs, int n3) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = n;
  s.matrix[2] = n3;
  s.coils = coils;
  s.trajectory = traj;
  s.accel = accel;
  s.acs = acs;
  return s;
}

double greyStdDev(const QImage& image) {
  const QImage g = image.convertToFormat(QImage::Format_Grayscale8);
  double sum = 0, sum2 = 0;
  const double n = static_cast<double>(g.width()) * g.height();
  for (int y = 0; y < g.height(); ++y) {
    const uchar* row = g.constScanLine(y);
    for (int x = 0; x < g.width(); ++x) {
      sum += row[x];
      sum2 += static_cast<double>(row[x]) * row[x];
    }
  }
  if (n <= 0) return 0;
  const double mean = sum / n;
  return std::sqrt(std::max(0.0, sum2 / n - mean * mean));
}

int distinctColours(const QImage& image) {
  const QImage c = image.convertToFormat(QImage::Format_RGB32);
  QSet<QRgb> colours;
  for (int y = 0; y < c.height(); ++y) {
    const auto* row = reinterpret_cast<const QRgb*>(c.constScanLine(y));
    for (int x = 0; x < c.width(); ++x) colours.insert(row[x]);
  }
  return static_cast<int>(colours.size());
}

QString scratchDir(const QString& name) {
  QDir d(QStringLiteral(LARMOR_TEST_TMP) + '/' + name);
  d.removeRecursively();
  QDir().mkpath(d.absolutePath());
  return d.absolutePath();
}

}  // namespace larmor::ui::test
