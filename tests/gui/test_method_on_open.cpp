// GUI tests: the method that fits the data, chosen and run when a file opens (ui/main_window_method.cpp,
// ui/model/method_choice.hpp). An ISMRMRD R4 file gets GRAPPA at once, a fully sampled one FFT with GRAPPA
// hidden; a Poisson-disc ky-kz plane (BART's [1, ny, nz, coils], as the brain example) gets compressed sensing
// and is shown as a 2D image; a radial twix read as Cartesian is flagged with an offer to reopen it as radial;
// the GUI's CG on the R4 file has the error `larmor-cli recon` reports. Each behaviour under Xvfb.
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QPushButton>
#include <QStandardPaths>
#include <QtTest/QtTest>
#include <cmath>
#include <random>

#include "gui_test_support.hpp"
#include "image_viewer.hpp"
#include "larmor/io/cfl.hpp"
#include "larmor/recon/settings_table.hpp"
#include "main_window.hpp"
#include "settings_panel.hpp"
#include "slice_view.hpp"
#include "theme.hpp"

using namespace larmor;
using namespace larmor::ui;
using namespace larmor::ui::test;

class MethodOnOpenTest : public WindowTest {
  Q_OBJECT

 private:
  /// Opens `path` and waits for the reconstruction that opening starts.
  void openAndWaitForRun(const QString& path) {
    const int l = loaded_, f = finished_, e = failed_, lf = loadFailed_;
    w_->openFile(path);
    QVERIFY2(waitUntil([&] { return loaded_ > l || loadFailed_ > lf; }, 60000), "the file did not load");
    QVERIFY2(loaded_ > l, qPrintable(w_->lastError()));
    QVERIFY2(w_->ranOnOpen(), "opening the file started no reconstruction");
    QVERIFY2(waitUntil([&] { return finished_ > f || failed_ > e; }, 120000), "the run on open did not end");
    QVERIFY2(finished_ > f, qPrintable(w_->lastError()));
  }
  recon::Method method() const { return w_->session().settings.method; }
  QString generator(const QString& dir, const QString& name, const QStringList& args) {
    if (!tool("ismrmrd_generate_cartesian_shepp_logan", args + QStringList{"-o", name}, dir)) return {};
    return dir + "/" + name;
  }

 private slots:
  void init() { openWindow({1400, 900}, true); }
  void cleanup() { closeWindow(); }

  // R4 with calibration lines: GRAPPA chosen and run on open, said why; FFT afterwards warns of aliasing.
  // A fully sampled file next: FFT, GRAPPA hidden from the list (the previous method does not carry over).
  void undersampledFileOpensWithGrappa() {
    const QString dir = scratchDir("open-r4");
    const QString r4 = generator(dir, "r4.h5", {"-m", "64", "-c", "4", "-a", "4", "-w", "16", "-n", "0"});
    if (r4.isEmpty()) QSKIP("ismrmrd_generate_cartesian_shepp_logan is not installed");
    openAndWaitForRun(r4);
    if (QTest::currentTestFailed()) return;
    QVERIFY(method() == recon::Method::Grappa);
    QVERIFY2(QString::fromStdString(w_->model().shownRun()->label).contains("GRAPPA"), w_->model().shownRun()->label.c_str());
    QVERIFY2(w_->methodNotice().contains("GRAPPA") && w_->methodNotice().contains("R 4"), qPrintable(w_->methodNotice()));
    QVERIFY(w_->settingsPanel()->methodHidden(recon::Method::Gridding));
    QVERIFY(!w_->settingsPanel()->methodHidden(recon::Method::Grappa));

    const QString full = generator(dir, "full.h5", {"-m", "64", "-c", "4", "-n", "0"});
    QVERIFY(!full.isEmpty());
    openAndWaitForRun(full);
    if (QTest::currentTestFailed()) return;
    QVERIFY(method() == recon::Method::Fft);
    QVERIFY2(w_->settingsPanel()->methodHidden(recon::Method::Grappa), "GRAPPA offered for fully sampled data");
    QVERIFY2(w_->methodNotice().contains("Fully sampled"), qPrintable(w_->methodNotice()));
  }

  // Turned off (and remembered), opening a file chooses the method but runs nothing.
  void runOnOpenCanBeTurnedOff() {
    const QString dir = scratchDir("open-off");
    const QString r4 = generator(dir, "r4.h5", {"-m", "64", "-c", "4", "-a", "4", "-w", "16", "-n", "0"});
    if (r4.isEmpty()) QSKIP("ismrmrd_generate_cartesian_shepp_logan is not installed");
    w_->setRunOnOpen(false);
    const int l = loaded_;
    w_->openFile(r4);
    QVERIFY(waitUntil([&] { return loaded_ > l; }, 60000));
    QVERIFY(!w_->ranOnOpen());
    QVERIFY(method() == recon::Method::Grappa);
    QVERIFY(!w_->model().shownRun());
    MainWindow again;  // the next window starts with the setting as left
    QVERIFY(!again.runOnOpen());
    w_->setRunOnOpen(true);
  }

  // BART's ky-kz plane [1, ny, nz, coils] with Poisson-disc-like sampling and a full centre (the brain
  // example's layout): compressed sensing, the sampling row says so, and the image is 2D (no 3D views).
  void poissonPlaneIsCsAndTwoDimensional() {
    const index_t ny = 48, nz = 40, coils = 4;
    // The k-space of a small disc, seen by coils of different phase, kept where a Poisson-like mask samples.
    CArray image(Shape{ny, nz}), k(Shape{1, ny, nz, coils});
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> u(0, 1);
    for (index_t c = 0; c < coils; ++c)
      for (index_t z = 0; z < nz; ++z)
        for (index_t y = 0; y < ny; ++y) {
          const bool centre = std::abs(y - ny / 2) < 8 && std::abs(z - nz / 2) < 8;
          if (c == 0 && !centre && u(rng) > 0.2) continue;
          double re = 0, im = 0;  // a sum of a few k-space Gaussians: a smooth object's spectrum
          const double dy = y - ny / 2.0, dz = z - nz / 2.0, ph = 0.7 * c;
          const double g = std::exp(-(dy * dy + dz * dz) / 18.0);
          re = g * std::cos(ph + 0.1 * dy), im = g * std::sin(ph + 0.1 * dz);
          k(0, y, z, c) = cfloat(static_cast<float>(re), static_cast<float>(im));
        }
    for (index_t z = 0; z < nz; ++z)  // the mask of coil 0 for every coil
      for (index_t y = 0; y < ny; ++y)
        if (k(0, y, z, 0) == cfloat(0.f, 0.f))
          for (index_t c = 1; c < coils; ++c) k(0, y, z, c) = cfloat(0.f, 0.f);
    const QString dir = scratchDir("open-poisson");
    io::writeCfl((dir + "/ksp").toStdString(), k);
    openAndWaitForRun(dir + "/ksp.cfl");
    if (QTest::currentTestFailed()) return;
    QVERIFY(method() == recon::Method::Cs);
    QVERIFY2(w_->methodNotice().contains("compressed sensing"), qPrintable(w_->methodNotice()));
    QVERIFY(w_->settingsPanel()->methodHidden(recon::Method::Grappa));
    ImageViewer* v = w_->imageViewer();
    QVERIFY2(!v->planeView(SliceView::Coronal)->isVisible(), "a ky-kz plane is shown as a 3D volume");
    QCOMPARE(v->planeView(SliceView::Axial)->sliceCount(), 1);
  }

  // The radial twix stores no trajectory: read as Cartesian it is flagged, and the banner's button reads it
  // again as radial, which then gets a non-Cartesian method.
  void radialTwixOffersRadial() {
    const QString twix = QStringLiteral(LARMOR_GUI_TEST_SOURCE_DIR "/../unit/data/twix/meas_MID00118_FID33075_sol24.dat");
    if (!QFile::exists(twix)) QSKIP("the radial twix of the test data is missing");
    openAndWaitForRun(twix);
    if (QTest::currentTestFailed()) return;
    QVERIFY2(w_->methodNotice().contains("radial"), qPrintable(w_->methodNotice()));
    auto* reopen = w_->findChild<QPushButton*>("reopenRadial180");
    QVERIFY(reopen);
    QVERIFY(reopen->isVisible());
    const int l = loaded_, f = finished_;
    reopen->click();
    QVERIFY(waitUntil([&] { return loaded_ > l; }, 60000));
    QVERIFY(w_->model().dataset()->header.trajectory == TrajectoryKind::Radial);
    QVERIFY(method() == recon::Method::Gridding || method() == recon::Method::Cs);
    QVERIFY(waitUntil([&] { return finished_ > f; }, 120000));
    QVERIFY(!reopen->isVisible());
  }

  // CG with its defaults on an ISMRMRD-generator R4 file (default noise): the same error as larmor-cli's.
  void cgMatchesTheCli() {
    const QString dir = scratchDir("open-cg");
    const QString r4 = generator(dir, "r4.h5", {"-m", "64", "-c", "4", "-a", "4", "-w", "16", "-r", "1"});
    if (r4.isEmpty()) QSKIP("ismrmrd_generate_cartesian_shepp_logan is not installed");
    const QString cli = QCoreApplication::applicationDirPath() + "/larmor-cli";
    QProcess p;
    p.start(cli, {"recon", r4, "--method", "cg", "--device", "cpu", "--output", dir + "/cg.cfl", "--json", dir + "/cg.json"});
    QVERIFY2(p.waitForFinished(120000) && p.exitCode() == 0, p.readAllStandardError().constData());
    QFile j(dir + "/cg.json");
    QVERIFY(j.open(QIODevice::ReadOnly));
    const double cliError = QJsonDocument::fromJson(j.readAll()).object().value("metrics").toObject().value("percent_error").toDouble(-1);
    QVERIFY2(cliError > 0, "larmor-cli wrote no percent_error");
    openAndWaitForRun(r4);
    if (QTest::currentTestFailed()) return;
    SessionState s = w_->session();
    s.settings.method = recon::Method::Cg;
    recon::settings::applyMethodDefaults(s.settings);
    s.device = "cpu";
    w_->applySession(s);
    const int f = finished_;
    w_->runReconstruction();
    QVERIFY(waitUntil([&] { return finished_ > f; }, 120000));
    const auto& m = w_->model().shownResult()->metrics;
    QVERIFY(m.contains("percent_error"));
    const double guiError = m["percent_error"].get<double>();
    qInfo("CG: GUI %.3f %%, larmor-cli %.3f %%", guiError, cliError);
    QVERIFY2(std::abs(guiError - cliError) < 0.01 * cliError, "the GUI's CG differs from the CLI's");
  }
};

int main(int argc, char** argv) { return guiTestMain<MethodOnOpenTest>("larmor-gui-open-tests", argc, argv); }

#include "test_method_on_open.moc"
