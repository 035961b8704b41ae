// GUI tests: what carries over between runs and files, and how the workstation says things
// (ui/image_viewer.cpp, ui/frame_bar.cpp, ui/timings_view.cpp, ui/model/dataset_state.cpp). A run whose image
// has another range (GRAPPA after the aliased FFT) gets a window of its own while a λ-like change keeps the
// user's; the frame bar and the run title name the frame alike ("frame 2/4 · repetition 2", every number from 1); the cine has a speed; stage
// timings read "1.41 s", never "1.41e+03"; a non-twix .dat and a truncated .h5 fail with the one line
// `larmor-cli info` prints. Each behaviour under Xvfb.
#include <QBarCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFontMetrics>
#include <QLabel>
#include <QProcess>
#include <QSlider>
#include <QStandardPaths>
#include <QTimer>
#include <QtTest/QtTest>

#include "frame_bar.hpp"
#include "gui_test_support.hpp"
#include "image_viewer.hpp"
#include "larmor/recon/settings_table.hpp"
#include "main_window.hpp"
#include "slice_view.hpp"
#include "theme.hpp"
#include "timings_view.hpp"

using namespace larmor;
using namespace larmor::ui;
using namespace larmor::ui::test;

class StateCarryOverTest : public WindowTest {
  Q_OBJECT

 private:
  /// What `larmor-cli info FILE` prints on its error line, without the program's name.
  static QString cliInfoError(const QString& file) {
    QProcess p;
    p.start(QCoreApplication::applicationDirPath() + "/larmor-cli", {"info", file});
    p.waitForFinished(60000);
    QString err = QString::fromUtf8(p.readAllStandardError()).trimmed();
    if (err.startsWith("larmor-cli: ")) err = err.mid(12);
    return err;
  }

 private slots:
  void init() { openWindow({1200, 800}); }
  void cleanup() { closeWindow(); }

  // An image of another range gets its own window; one of the same range keeps the user's.
  void windowFollowsTheImagesRange() {
    ImageViewer* v = w_->imageViewer();
    auto image = [](float scale) {
      auto a = std::make_shared<CArray>(Shape{32, 32, 1, 1, 1});
      for (index_t i = 0; i < a->size(); ++i) (*a)[i] = cfloat(scale * static_cast<float>(i % 97) / 96.0f, 0.0f);
      return std::shared_ptr<const CArray>(a);
    };
    v->setImage(image(1.0f), {1, 1, 1}, "fft");
    const double autoHigh = v->windowHigh();
    v->setImage(image(1.2f), {1, 1, 1}, "grappa");  // an automatic window follows the range
    QVERIFY2(std::abs(v->windowHigh() - 1.2 * autoHigh) < 1e-3 * autoHigh, qPrintable(QString::number(v->windowHigh())));
    v->setImage(image(1.0f), {1, 1, 1}, "fft");
    v->setWindow(0.1, 0.5);  // the user's window
    v->setImage(image(1.1f), {1, 1, 1}, "cg, another lambda");
    QCOMPARE(v->windowHigh(), 0.5);
    v->setImage(image(4.0f), {1, 1, 1}, "grappa");  // four times the range: the FFT's window would saturate it
    QVERIFY2(v->windowHigh() > 3.5, qPrintable(QString::number(v->windowHigh())));
  }

  // The same on real runs: FFT of an R4 file (aliased, lower), then GRAPPA.
  void grappaAfterFftGetsItsOwnWindow() {
    const QString dir = scratchDir("carry-window");
    if (!tool("ismrmrd_generate_cartesian_shepp_logan", {"-m", "64", "-c", "4", "-a", "4", "-w", "24", "-n", "0", "-o", "r4.h5"}, dir))
      QSKIP("ismrmrd_generate_cartesian_shepp_logan is not installed");
    QVERIFY2(tryOpen(dir + "/r4.h5"), qPrintable(w_->lastError()));
    setMethod(recon::Method::Fft);
    QVERIFY2(run(), qPrintable(w_->lastError()));
    const double fftHigh = w_->imageViewer()->windowHigh();
    setMethod(recon::Method::Grappa);
    QVERIFY2(run(), qPrintable(w_->lastError()));
    const double grappaHigh = w_->imageViewer()->windowHigh();
    w_->imageViewer()->autoWindow();
    QCOMPARE(grappaHigh, w_->imageViewer()->windowHigh());  // GRAPPA's own window, not FFT's
    QVERIFY2(std::abs(grappaHigh - fftHigh) > 0.1 * grappaHigh,
             qPrintable(QString("FFT %1, GRAPPA %2: the test data do not differ in range").arg(fftHigh).arg(grappaHigh)));
  }

  // The frame bar names only the frame it shows: a scan of 20,000 frames costs one name per step, not 20,000 names
  // each time a frame arrives (the live view sets the bar again at every new frame).
  void frameBarNamesOnlyTheFrameShown() {
    FrameBar bar;
    int asked = 0;
    bar.setFrames(20000, [&](int f) { ++asked; return QString("frame %1").arg(f + 1); }, 7);
    QCOMPARE(bar.currentName(), QStringLiteral("frame 8"));
    QVERIFY2(asked <= 1, qPrintable(QString("%1 names made for one shown").arg(asked)));
    bar.findChild<QSlider*>("frameSlider")->setValue(12000);
    QCOMPARE(bar.currentName(), QStringLiteral("frame 12001"));
    bar.setCurrent(19999);
    QCOMPARE(bar.currentName(), QStringLiteral("frame 20000"));
    QVERIFY2(asked <= 3, qPrintable(QString("%1 names made for three shown").arg(asked)));
    bar.setFrames(1, [](int) { return QString("only"); }, 0);
    QVERIFY(bar.isHidden());  // a single frame: no bar
  }

  // "frame 2/4" in the frame bar and in the title of the frame's run; the cine's speed.
  void frameLabelsAgreeAndCineHasASpeed() {
    const QString dir = scratchDir("carry-frames");
    if (!tool("ismrmrd_generate_cartesian_shepp_logan", {"-m", "32", "-c", "2", "-r", "4", "-n", "0", "-o", "rep4.h5"}, dir))
      QSKIP("ismrmrd_generate_cartesian_shepp_logan is not installed");
    QVERIFY2(tryOpen(dir + "/rep4.h5"), qPrintable(w_->lastError()));
    auto* bar = w_->findChild<FrameBar*>();
    QVERIFY(bar);
    // Every number counted from 1, as the title's "frame 2/4": the file's repetition counters 0..3 read 1..4.
    QCOMPARE(bar->currentName(), QStringLiteral("frame 1/4 · repetition 1"));
    setMethod(recon::Method::Fft);
    QVERIFY2(run(), qPrintable(w_->lastError()));
    const int before = finished_;
    bar->findChild<QSlider*>("frameSlider")->setValue(1);
    QVERIFY(waitUntil([&] { return finished_ > before; }, 60000));
    QCOMPARE(bar->currentName(), QStringLiteral("frame 2/4 · repetition 2"));
    const QString title = w_->imageViewer()->planeView(SliceView::Axial)->title();
    QVERIFY2(title.endsWith(QStringLiteral("· frame 2/4")), qPrintable(title));
    auto* speed = bar->findChild<QComboBox*>("cineSpeed");
    QVERIFY2(speed && speed->isVisibleTo(w_.get()), "no cine speed");
    bar->setCineRate(15);
    bar->setPlaying(true);
    QCOMPARE(bar->findChild<QTimer*>()->interval(), 67);
    bar->setCineRate(2);
    QCOMPARE(bar->findChild<QTimer*>()->interval(), 500);  // a running cine takes the new speed
    bar->setPlaying(false);
  }

  // Colour-bar labels of an image at ~3e12 (the BART brain's scale): each fits beside the bar, the power of ten
  // said once under it.
  void colorBarLabelsFit() {
    SliceView* axial = w_->imageViewer()->planeView(SliceView::Axial);
    w_->imageViewer()->setWindow(0, 3.0682e12);
    QCOMPARE(axial->colorBarScale(), QStringLiteral("×1e12"));
    QFont f = axial->font();
    f.setPointSizeF(std::max(7.0, f.pointSizeF() - 1));
    const QFontMetrics fm(f);
    for (const QString& l : axial->colorBarLabels())
      QVERIFY2(fm.horizontalAdvance(l) <= SliceView::colorBarLabelWidth(), qPrintable(l));
    QCOMPARE(axial->colorBarLabels().last(), QStringLiteral("3.068"));
    w_->imageViewer()->setWindow(0, 1.5);
    QCOMPARE(axial->colorBarScale(), QString());
    QCOMPARE(axial->colorBarLabels().last(), QStringLiteral("1.5"));
  }

  // Stage timings as people read them: no "e+03" in the stage names.
  void timingsAreReadable() {
    auto s = smallPhantom(TrajectoryKind::Cartesian, 32, 2);
    const int before = loaded_;
    w_->newPhantom(s);
    QVERIFY(waitUntil([&] { return loaded_ > before; }, 60000));
    setMethod(recon::Method::Fft);
    QVERIFY2(run(), qPrintable(w_->lastError()));
    QChart* chart = w_->timingsView()->stageChart()->chart();
    QStringList names;
    for (QAbstractAxis* a : chart->axes(Qt::Vertical))
      if (auto* cats = qobject_cast<QBarCategoryAxis*>(a)) names = cats->categories();
    QVERIFY(!names.isEmpty());
    for (const QString& n : names) {
      QVERIFY2(!n.contains("e+") && !n.contains("e-"), qPrintable(n));
      QVERIFY2(n.contains(QRegularExpression(" [0-9.]+ (ms|s)$")), qPrintable(n));
    }
  }

  // A .dat that is no twix and a truncated .h5: the one line larmor-cli info prints, no libhdf5 internals.
  void loadErrorsAreTheClisOneLine() {
    const QString dir = scratchDir("carry-errors");
    QFile text(dir + "/notes.dat");
    QVERIFY(text.open(QIODevice::WriteOnly));
    text.write("hello, this is not a twix file\n");
    text.close();
    QVERIFY(!tryOpen(dir + "/notes.dat"));
    QVERIFY2(w_->lastError().contains("notes.dat: not a Siemens twix file"), qPrintable(w_->lastError()));
    QCOMPARE(w_->lastError(), cliInfoError(dir + "/notes.dat"));
    if (!tool("ismrmrd_generate_cartesian_shepp_logan", {"-m", "32", "-c", "2", "-n", "0", "-o", "full.h5"}, dir))
      QSKIP("ismrmrd_generate_cartesian_shepp_logan is not installed");
    QFile full(dir + "/full.h5");
    QVERIFY(full.open(QIODevice::ReadOnly));
    const QByteArray bytes = full.read(full.size() / 2);
    QFile cut(dir + "/cut.h5");
    QVERIFY(cut.open(QIODevice::WriteOnly));
    cut.write(bytes);
    cut.close();
    QVERIFY(!tryOpen(dir + "/cut.h5"));
    QVERIFY2(!w_->lastError().contains("eof") && !w_->lastError().contains("sblock") && !w_->lastError().contains('\n'),
             qPrintable(w_->lastError()));
    QVERIFY2(w_->lastError().contains("cut.h5: damaged or truncated HDF5 file (the file ends after"), qPrintable(w_->lastError()));
    QCOMPARE(w_->lastError(), cliInfoError(dir + "/cut.h5"));
  }
};

int main(int argc, char** argv) { return guiTestMain<StateCarryOverTest>("larmor-gui-state-tests", argc, argv); }

#include "test_state_carry_over.moc"
