#pragma once
// Helpers for the GUI tests: the window every test drives (WindowTest), waiting on the event loop, small
// phantoms, picture statistics, the exports read back by independent readers.
#include <QApplication>
#include <QImage>
#include <QJsonObject>
#include <QObject>
#include <QSize>
#include <QString>
#include <QStandardPaths>
#include <QStringList>
#include <QtTest/QtTest>
#include <functional>
#include <memory>

#include "larmor/io/image_geometry.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/settings.hpp"
#include "main_window.hpp"
#include "theme.hpp"

namespace larmor::ui::test {

/// The base of a GUI test class: a fresh workstation window per test function (openWindow() in init(), the
/// window gone in cleanup()), counters of its signals, and the steps every test takes with it. The helpers that
/// check (load, open) record a failure with QVERIFY2 and return; the caller ends the test function when
/// QTest::currentTestFailed().
class WindowTest : public QObject {
 protected:
  std::unique_ptr<MainWindow> w_;
  int finished_ = 0, failed_ = 0, cancelled_ = 0, loaded_ = 0, loadFailed_ = 0, sweeps_ = 0;

  /// A window of `size` with default settings, shown and exposed (active too where `activate`: the keys'
  /// shortcuts go to the active window), the run on open as `runOnOpen`, its counters at zero.
  void openWindow(QSize size, bool runOnOpen = false, bool activate = false);
  void closeWindow() { w_.reset(); }

  /// A simulated phantom loaded (checked).
  void load(const phantom::SimulateSettings& s);
  /// `path` opened (checked).
  void open(const QString& path);
  /// `path` opened: whether it loaded (a load error is in w_->lastError()).
  bool tryOpen(const QString& path);
  /// One reconstruction with the window's settings: whether it finished within `ms`.
  bool run(int ms = 90000);
  /// The method with its defaults (and `iterations` where > 0) on the automatic device.
  void setMethod(recon::Method m, int iterations = 0);
  /// Runs `program` in `dir`: false when it is not installed or fails (the caller skips).
  static bool tool(const QString& program, const QStringList& args, const QString& dir);
};

/// A real Orthanc for the PACS tests: tests/e2e/orthanc/start-orthanc.sh `script` run in `dir` by start() (checked:
/// a failed start fails the test), stopped by stop(). `skip` says why it is not there (the script's exit 77: not
/// installed), "" when it runs; the tests QSKIP with it, which `make test` does not accept.
struct TestOrthanc {
  QString skip;
  qint64 pid = 0;
  int dicomPort = 0, httpPort = 0;
  void start(const QString& script, const QString& dir);
  void stop();
  QString node(const QString& aet = "ORTHANC") const;  ///< AET@localhost:PORT
  QString rest(const QString& path) const;             ///< http://localhost:PORT/path
};

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

/// The exports read back by independent readers (tests/gui/check_export.py: pydicom for the DICOM series in
/// `dicomDir`, nibabel for the NIfTI file `nifti`; "" leaves one out), run by /usr/bin/python3 (or
/// $LARMOR_TEST_PYTHON).
struct ExportReadBack {
  bool readersMissing = false;  ///< no /usr/bin/python3 with pydicom, nibabel and numpy: the caller QSKIPs
  QString error;                ///< the reader failed (a broken file): the caller fails
  QJsonObject json;
};
ExportReadBack readExportsIndependently(const QString& dicomDir, const QString& nifti);

/// The read-back exports against the image on screen: `image` [x, y, z, 1, slices] (its magnitude is what
/// the files hold), the patient geometry `g` they must carry (ImagePositionPatient = g.topLeft[plane],
/// ImageOrientationPatient = g.row, g.column, PixelSpacing; the NIfTI sform = the same in RAS), and the
/// window [lo, hi] on screen (WindowCenter / WindowWidth, cal_min / cal_max). "" when all agree, else the
/// first difference.
QString compareExports(const QJsonObject& readBack, const CArray& image, const io::ImageGeometry& g, double lo, double hi);

/// The main() of a GUI test binary: settings and caches away from the user's own (QStandardPaths' test mode: the
/// workstation's QSettings of a test never reach ~/.config), the organisation LarmorTest and `application` as the
/// names, the workstation's theme, then the test functions of a T.
template <class T>
int guiTestMain(const char* application, int argc, char** argv) {
  QStandardPaths::setTestModeEnabled(true);
  QApplication app(argc, argv);
  QCoreApplication::setOrganizationName("LarmorTest");
  QCoreApplication::setApplicationName(application);
  applyTheme(app);
  T test;
  return QTest::qExec(&test, argc, argv);
}

}  // namespace larmor::ui::test
