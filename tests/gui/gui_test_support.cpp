#include "gui_test_support.hpp"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QSet>
#include <QStandardPaths>
#include <QThread>
#include <QtTest/QtTest>
#include <algorithm>
#include <cmath>
#include <csignal>

#include "image_viewer.hpp"
#include "larmor/recon/settings_table.hpp"

namespace larmor::ui::test {

void WindowTest::openWindow(QSize size, bool runOnOpen, bool activate) {
  w_ = std::make_unique<MainWindow>();
  w_->applySession(SessionState{});
  w_->setRunOnOpen(runOnOpen);
  w_->imageViewer()->setHanging(model::Hanging{});  // the panes a test left in QSettings do not reach the next
  w_->resize(size);
  w_->show();
  QVERIFY(QTest::qWaitForWindowExposed(w_.get()));
  if (activate) {
    w_->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w_.get()));
  }
  finished_ = failed_ = cancelled_ = loaded_ = loadFailed_ = sweeps_ = 0;
  connect(w_.get(), &MainWindow::reconFinished, this, [this] { ++finished_; });
  connect(w_.get(), &MainWindow::reconFailed, this, [this] { ++failed_; });
  connect(w_.get(), &MainWindow::reconCancelled, this, [this] { ++cancelled_; });
  connect(w_.get(), &MainWindow::datasetLoaded, this, [this] { ++loaded_; });
  connect(w_.get(), &MainWindow::loadFailed, this, [this] { ++loadFailed_; });
  connect(w_.get(), &MainWindow::sweepFinished, this, [this] { ++sweeps_; });
}

void WindowTest::load(const phantom::SimulateSettings& s) {
  const int before = loaded_, lf = loadFailed_;
  w_->newPhantom(s);
  QVERIFY2(waitUntil([&] { return loaded_ > before || loadFailed_ > lf; }, 60000), "the phantom was not generated");
  QVERIFY2(loaded_ > before, qPrintable(w_->lastError()));
}

void WindowTest::open(const QString& path) {
  const int before = loaded_, lf = loadFailed_;
  w_->openFile(path);
  QVERIFY2(waitUntil([&] { return loaded_ > before || loadFailed_ > lf; }, 60000), "the file did not load");
  QVERIFY2(loaded_ > before, qPrintable(w_->lastError()));
}

bool WindowTest::tryOpen(const QString& path) {
  const int before = loaded_, lf = loadFailed_;
  w_->openFile(path);
  waitUntil([&] { return loaded_ > before || loadFailed_ > lf; }, 60000);
  return loaded_ > before;
}

bool WindowTest::run(int ms) {
  const int f = finished_, e = failed_;
  w_->runReconstruction();
  waitUntil([&] { return finished_ > f || failed_ > e; }, ms);
  return finished_ > f;
}

void WindowTest::setMethod(recon::Method m, int iterations) {
  SessionState s = w_->session();
  s.settings.method = m;
  recon::settings::applyMethodDefaults(s.settings);
  if (iterations > 0) s.settings.iterative.iterations = iterations;
  s.device = "auto";
  w_->applySession(s);
}

bool WindowTest::tool(const QString& program, const QStringList& args, const QString& dir) {
  if (QStandardPaths::findExecutable(program).isEmpty()) return false;
  QProcess p;
  p.setWorkingDirectory(dir);
  p.start(program, args);
  return p.waitForFinished(60000) && p.exitCode() == 0;
}

bool waitUntil(const std::function<bool()>& done, int ms) {
  QElapsedTimer t;
  t.start();
  while (!done() && t.elapsed() < ms) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(5);
  }
  return done();
}

void TestOrthanc::start(const QString& script, const QString& dir) {
  QProcess p;
  p.start("bash", {script, dir});
  QVERIFY(p.waitForFinished(60000));
  const QString out = QString::fromUtf8(p.readAllStandardOutput()).trimmed();
  if (p.exitCode() == 77) {
    skip = out;
    return;
  }
  QVERIFY2(p.exitCode() == 0, qPrintable("start-orthanc.sh failed: " + out));
  for (const QString& line : out.split('\n')) {
    const QString v = line.section('=', 1);
    if (line.startsWith("ORTHANC_PID=")) pid = v.toLongLong();
    if (line.startsWith("ORTHANC_DICOM_PORT=")) dicomPort = v.toInt();
    if (line.startsWith("ORTHANC_HTTP_PORT=")) httpPort = v.toInt();
  }
  QVERIFY(pid > 0 && dicomPort > 0 && httpPort > 0);
}

void TestOrthanc::stop() {
  if (pid <= 0) return;
  ::kill(static_cast<pid_t>(pid), SIGTERM);
  waitUntil([&] { return ::kill(static_cast<pid_t>(pid), 0) != 0; }, 10000);  // it stops in ~3 s
  pid = 0;
}

QString TestOrthanc::node(const QString& aet) const { return QString("%1@localhost:%2").arg(aet).arg(dicomPort); }

QString TestOrthanc::rest(const QString& path) const { return QString("http://localhost:%1%2").arg(httpPort).arg(path); }

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

namespace larmor::ui::test {

ExportReadBack readExportsIndependently(const QString& dicomDir, const QString& nifti) {
  ExportReadBack r;
  // LARMOR_TEST_PYTHON: another interpreter (a missing one shows that the tests report SKIP, not pass).
  const QString python = qEnvironmentVariable("LARMOR_TEST_PYTHON", QStringLiteral("/usr/bin/python3"));
  if (!QFileInfo::exists(python)) {
    r.readersMissing = true;
    return r;
  }
  QProcess p;
  p.start(python, {QStringLiteral(LARMOR_GUI_TEST_SOURCE_DIR "/check_export.py"), dicomDir.isEmpty() ? "-" : dicomDir,
                   nifti.isEmpty() ? "-" : nifti});
  if (!p.waitForFinished(120000)) {
    r.error = "check_export.py did not finish";
    return r;
  }
  if (p.exitCode() == 3) {
    r.readersMissing = true;
    return r;
  }
  if (p.exitCode() != 0) {
    r.error = "check_export.py failed: " + QString::fromUtf8(p.readAllStandardError()).right(600);
    return r;
  }
  QJsonParseError e;
  const QJsonDocument doc = QJsonDocument::fromJson(p.readAllStandardOutput(), &e);
  if (e.error != QJsonParseError::NoError) r.error = "check_export.py printed no JSON: " + e.errorString();
  r.json = doc.object();
  return r;
}

namespace {

bool near(double a, double b, double tol) { return std::abs(a - b) <= tol; }
QString vec(const QJsonArray& a) {
  QStringList s;
  for (const auto& v : a) s << QString::number(v.toDouble(), 'g', 8);
  return "[" + s.join(", ") + "]";
}

}  // namespace

QString compareExports(const QJsonObject& j, const CArray& image, const io::ImageGeometry& g, double lo, double hi) {
  const index_t nx = image.shape()[0], ny = image.shape()[1], planes = image.size() / (nx * ny);
  double peak = 0;
  for (index_t i = 0; i < image.size(); ++i) peak = std::max(peak, static_cast<double>(std::abs(image[i])));
  if (j.contains("dicom")) {
    const QJsonArray files = j["dicom"].toArray();
    if (files.size() != planes) return QString("DICOM: %1 files for %2 planes").arg(files.size()).arg(planes);
    for (index_t p = 0; p < planes; ++p) {
      const QJsonObject f = files[static_cast<int>(p)].toObject();
      const QString where = "DICOM " + f["file"].toString() + ": ";
      if (f["rows"].toInt() != ny || f["columns"].toInt() != nx) return where + "Rows/Columns";
      const QJsonArray iop = f["iop"].toArray(), ipp = f["ipp"].toArray(), sp = f["spacing"].toArray();
      for (int a = 0; a < 3; ++a) {
        if (!near(iop[a].toDouble(), g.row[a], 1e-4) || !near(iop[a + 3].toDouble(), g.column[a], 1e-4))
          return where + "ImageOrientationPatient " + vec(iop);
        if (!near(ipp[a].toDouble(), g.topLeft[static_cast<std::size_t>(p)][a], 1e-3))
          return where + "ImagePositionPatient " + vec(ipp) + QString(" expected [%1, %2, %3]")
                                                               .arg(g.topLeft[p][0]).arg(g.topLeft[p][1]).arg(g.topLeft[p][2]);
      }
      if (!near(sp[0].toDouble(), g.spacingY, 1e-4) || !near(sp[1].toDouble(), g.spacingX, 1e-4))
        return where + "PixelSpacing " + vec(sp);
      if (!near(f["center"].toDouble(), 0.5 * (lo + hi), 1e-4 * hi) || !near(f["width"].toDouble(), hi - lo, 1e-4 * hi))
        return where + QString("window centre/width %1/%2, on screen %3/%4")
                           .arg(f["center"].toDouble()).arg(f["width"].toDouble()).arg(0.5 * (lo + hi)).arg(hi - lo);
      const QJsonArray rows = f["pixels"].toArray();
      for (index_t y = 0; y < ny; ++y) {
        const QJsonArray row = rows[static_cast<int>(y)].toArray();
        for (index_t x = 0; x < nx; ++x) {
          const double want = std::abs(image[x + nx * (y + ny * p)]);
          if (!near(row[static_cast<int>(x)].toDouble(), want, 1e-4 * peak))  // 16-bit steps: 1.5e-5 of the peak
            return where + QString("pixel (x %1, y %2) = %3, on screen %4").arg(x).arg(y).arg(row[static_cast<int>(x)].toDouble()).arg(want);
        }
      }
    }
  }
  if (j.contains("nifti")) {
    const QJsonObject n = j["nifti"].toObject();
    const QJsonArray shape = n["shape"].toArray();
    if (shape.size() < 2 || shape[0].toInt() != nx || shape[1].toInt() != ny) return "NIfTI shape " + vec(shape);
    const QJsonArray vox = n["voxels"].toArray();
    if (vox.size() != image.size()) return QString("NIfTI: %1 voxels for %2").arg(vox.size()).arg(image.size());
    for (index_t i = 0; i < image.size(); ++i)
      if (!near(vox[static_cast<int>(i)].toDouble(), std::abs(image[i]), 1e-6 * peak))
        return QString("NIfTI voxel %1 = %2, on screen %3").arg(i).arg(vox[static_cast<int>(i)].toDouble()).arg(std::abs(image[i]));
    // The sform in RAS: (x, y) of LPS negated.
    const double flip[3] = {-1, -1, 1};
    const QJsonArray a = n["affine"].toArray();
    for (int r = 0; r < 3; ++r) {
      const QJsonArray row = a[r].toArray();
      const double want[4] = {flip[r] * g.row[r] * g.spacingX, flip[r] * g.column[r] * g.spacingY,
                              planes > 1 ? flip[r] * (g.topLeft[1][r] - g.topLeft[0][r]) : row[2].toDouble(),
                              flip[r] * g.topLeft[0][r]};
      for (int c = 0; c < 4; ++c)
        if (!near(row[c].toDouble(), want[c], 1e-3)) return QString("NIfTI affine row %1: %2").arg(r).arg(vec(row));
    }
    if (n["sform_code"].toInt() <= 0) return "NIfTI sform_code 0";
    if (!near(n["cal_min"].toDouble(), lo, 1e-4 * hi) || !near(n["cal_max"].toDouble(), hi, 1e-4 * hi))
      return QString("NIfTI cal_min/cal_max %1/%2, on screen %3/%4").arg(n["cal_min"].toDouble()).arg(n["cal_max"].toDouble()).arg(lo).arg(hi);
  }
  return {};
}

}  // namespace larmor::ui::test
