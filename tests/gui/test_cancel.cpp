// Cancel in the workstation within 0.5 s on the exact-DFT paths, which are single long calls (the DFT polls the
// task's CancelScope per block): --method dft of a 256^2 radial 8-coil phantom, and cg whose Toeplitz kernel Q is
// the exact DFT's; and inside 3D ESPIRiT's calibration (cg on a 64^3 phantom with a 24^3 calibration box: its Gram
// and eigen-decomposition, seconds each, cut into blocks). After Cancel the window reports it, shows no result of
// the run, and the next run works.
#include <QElapsedTimer>
#include <QtTest/QtTest>

#include "gui_test_support.hpp"
#include "main_window.hpp"
#include "session.hpp"
#include "worker.hpp"

using namespace larmor;
using namespace larmor::ui;
using namespace larmor::ui::test;

class CancelTest : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<MainWindow> w_;
  int finished_ = 0, failed_ = 0, cancelled_ = 0, loaded_ = 0;
  QStringList stages_;

  void load256Radial() {
    const int before = loaded_;
    w_->newPhantom(smallPhantom(TrajectoryKind::Radial, 256, 8));
    QVERIFY2(waitUntil([&] { return loaded_ > before; }, 120000), qPrintable("no phantom: " + w_->lastError()));
  }
  /// Runs, waits until a stage containing `stage` was reported and 150 ms more, presses Cancel: the milliseconds
  /// until the window reports the run cancelled (-1: it finished or failed instead, or took over 10 s).
  qint64 cancelDuring(const QString& stage, int waitMs = 150) {
    const int f = finished_, e = failed_, c = cancelled_;
    stages_.clear();
    w_->runReconstruction();
    if (!waitUntil([&] { return stages_.filter(stage).size() > 0 || finished_ > f || failed_ > e; }, 60000)) return -1;
    QTest::qWait(waitMs);  // inside the long call
    if (finished_ > f || failed_ > e) return -1;
    QElapsedTimer t;
    t.start();
    w_->cancelRun();
    waitUntil([&] { return cancelled_ > c || finished_ > f || failed_ > e; }, 10000);
    return cancelled_ > c ? t.elapsed() : -1;
  }
  void expectUsableAfterwards(recon::Method next = recon::Method::Gridding) {
    QVERIFY(!w_->worker()->busy());
    QVERIFY(!w_->model().shownResult());
    QVERIFY(w_->statusText().contains("Cancelled"));
    SessionState s = w_->session();
    s.settings.method = next;
    w_->applySession(s);
    const int f = finished_, e = failed_;
    w_->runReconstruction();
    QVERIFY2(waitUntil([&] { return finished_ > f || failed_ > e; }, 60000), "the next run did not end");
    QVERIFY2(finished_ > f, qPrintable("the next run failed: " + w_->lastError()));
    QVERIFY(w_->model().shownResult());
  }

 private slots:
  void init() {
    w_ = std::make_unique<MainWindow>();
    w_->applySession(SessionState{});
    w_->setRunOnOpen(false);
    w_->resize(1400, 900);
    w_->show();
    QVERIFY(QTest::qWaitForWindowExposed(w_.get()));
    finished_ = failed_ = cancelled_ = loaded_ = 0;
    stages_.clear();
    connect(w_.get(), &MainWindow::reconFinished, this, [this] { ++finished_; });
    connect(w_.get(), &MainWindow::reconFailed, this, [this] { ++failed_; });
    connect(w_.get(), &MainWindow::reconCancelled, this, [this] { ++cancelled_; });
    connect(w_.get(), &MainWindow::datasetLoaded, this, [this] { ++loaded_; });
    connect(w_->worker(), &Worker::progress, this, [this](quint64, double, const QString& s) { stages_ << s; });
  }
  void cleanup() { w_.reset(); }

  void dftCancelsWithinHalfASecond() {
    load256Radial();
    SessionState s = w_->session();
    s.settings.method = recon::Method::Dft;
    s.device = "cpu";
    w_->applySession(s);
    const qint64 ms = cancelDuring("exact adjoint DFT");
    qInfo("--method dft (256^2 radial, 8 coils): cancelled %lld ms after Cancel", ms);
    QVERIFY2(ms >= 0, "the run was not cancelled");
    QVERIFY2(ms < 500, "Cancel took longer than 0.5 s");
    expectUsableAfterwards();
  }

  void exactQCancelsWithinHalfASecond() {
    load256Radial();
    SessionState s = w_->session();
    s.settings.method = recon::Method::Cg;
    s.settings.iterative.fhd = recon::FhdMethod::Nufft;
    s.settings.iterative.toeplitz = recon::ToeplitzMethod::Dft;
    s.settings.iterative.cacheDirectory = "none";  // computed, not read from an earlier run's cache
    s.device = "cpu";
    w_->applySession(s);
    const qint64 ms = cancelDuring("Q");
    qInfo("cg --toeplitz dft (256^2 radial, 8 coils): cancelled %lld ms after Cancel", ms);
    QVERIFY2(ms >= 0, "the run was not cancelled");
    QVERIFY2(ms < 500, "Cancel took longer than 0.5 s");
    expectUsableAfterwards();
  }

  void espirit3DCancelsWithinHalfASecond() {
    const int before = loaded_;
    w_->newPhantom(smallPhantom(TrajectoryKind::Cartesian, 64, 8, 2, 24, 64));
    QVERIFY2(waitUntil([&] { return loaded_ > before; }, 120000), qPrintable("no phantom: " + w_->lastError()));
    SessionState s = w_->session();
    s.settings.method = recon::Method::Cg;  // ESPIRiT maps: A (6859 x 1728), its Gram, the Gram's eigenvectors
    s.device = "cpu";
    w_->applySession(s);
    for (const int waitMs : {150, 3000, 8000}) {
      const qint64 ms = cancelDuring("coil maps", waitMs);
      qInfo("3D cg, ESPIRiT (64^3, 24^3 box, 8 coils), Cancel %d ms into the coil maps: cancelled %lld ms after Cancel",
            waitMs, ms);
      QVERIFY2(ms >= 0, "the run was not cancelled");
      QVERIFY2(ms < 500, "Cancel took longer than 0.5 s");
    }
    expectUsableAfterwards(recon::Method::Fft);
  }
};

int main(int argc, char** argv) { return guiTestMain<CancelTest>("larmor-gui-cancel-tests", argc, argv); }
#include "test_cancel.moc"
