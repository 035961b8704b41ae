// GUI tests of presenter mode and of the reading tools (ui/main_window.cpp, ui/demo.cpp, ui/image_viewer_tools.cpp,
// ui/image_viewer_panes.cpp, ui/help.cpp): F11 toggles presenter mode and nothing else, the zoom's Actual size gives
// the window its size back, the demo's captions appear with their pictures; ROI statistics (rectangle, ellipse,
// freehand) and the distance in mm on screen equal the model's measurements of the shown image (model/roi_stats.hpp,
// checked against NumPy), the ROI statistics line whole at 1280 and 1024 px, the freehand region's curve over the
// frames, the angle in degrees with anisotropic voxels, Up/Down step slices and Left/Right frames, the right-click
// menu, Help's user guide and shortcut list; the layouts (1x1, 1x2, 2x2) and their views kept across restarts, any
// run or reference series in any pane, linked with the current image; a reference series following the frame; the oblique plane of a 3D image, turned and
// linked to the planes.
#include <QApplication>
#include <QClipboard>
#include <QDialog>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QProcess>
#include <QRegularExpression>
#include <QScreen>
#include <QSettings>
#include <QSlider>
#include <QStandardPaths>
#include <QTabWidget>
#include <QToolButton>
#include <QtTest/QtTest>
#include <numbers>

#include "demo.hpp"
#include "exporter.hpp"
#include "gui_test_support.hpp"
#include "help.hpp"
#include "image_viewer.hpp"
#include "larmor/io/cfl.hpp"
#include "oblique_plane.hpp"
#include "main_window.hpp"
#include "oblique_view.hpp"
#include "roi_stats.hpp"
#include "slice_view.hpp"
#include "theme.hpp"
#include "time_curve_view.hpp"
#include "volume_view.hpp"

using namespace larmor;
using namespace larmor::ui;
using namespace larmor::ui::test;

class ReadingToolsTest : public WindowTest {
  Q_OBJECT

 private:
  SliceView* axial() const { return w_->imageViewer()->planeView(SliceView::Axial); }
  QAction* action(const QString& name) const { return w_->findChild<QAction*>(name); }
  /// The Cartesian phantom 64², 4 coils, fully sampled, reconstructed (FFT: the run on open is off).
  void shownPhantom(int n3 = 1) {
    load(smallPhantom(TrajectoryKind::Cartesian, 64, 4, 1, 0, n3));
    QVERIFY2(run(), qPrintable(w_->lastError()));
    w_->showTab("image");
    QVERIFY(waitUntil([&] { return w_->imageViewer()->hasImage(); }, 5000));
  }
  /// The shown image as the viewer holds it ([x, y, z x slices]) and its voxel size.
  CArray shownPlaneStack() const {
    CArray a = *w_->model().shownRun()->image();
    const Shape& s = a.shape();
    a.reshape(Shape{s[0], s[1], a.size() / (s[0] * s[1])});
    return a;
  }
  /// NumPy's "n mean sd min max" lines of tests/gui/roi_numpy.py on `stack` (written as a .cfl); empty: no numpy.
  QStringList numpyStats(const CArray& stack, const QStringList& args) {
    const QString dir = scratchDir("roi-numpy");
    io::writeCfl((dir + "/shown").toStdString(), stack);
    QProcess py;
    py.start("/usr/bin/python3", QStringList{QStringLiteral(LARMOR_GUI_TEST_SOURCE_DIR "/roi_numpy.py"), dir + "/shown"} + args);
    if (!py.waitForFinished(60000) || py.exitCode() == 77) return {};
    const QStringList out = QString::fromUtf8(py.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts);
    if (py.exitCode() != 0) qWarning("roi_numpy.py: %s", py.readAllStandardError().constData());
    return out;
  }
  /// Whether NumPy's line `line` ("n mean sd min max") is `s` within 1e-6 (relative); the difference in `why`.
  static bool sameStats(const QString& line, const model::RoiStats& s, QString* why) {
    const QStringList f = line.split(' ');
    if (f.size() != 5 || f[0].toULongLong() != s.voxels) {
      *why = QString("NumPy %1, Larmor %2 voxels").arg(line).arg(s.voxels);
      return false;
    }
    const double want[4] = {s.mean, s.sd, s.min, s.max};
    for (int j = 0; j < 4; ++j)
      if (!(std::abs(f[j + 1].toDouble() - want[j]) <= 1e-6 * std::max(1.0, std::abs(want[j])))) {
        *why = QString("%1: NumPy %2, Larmor %3").arg(line).arg(f[j + 1]).arg(want[j], 0, 'g', 17);
        return false;
      }
    return true;
  }
  /// A left drag on the axial plane through the voxels `path` (press at the first, release at the last).
  void dragThrough(const std::vector<std::array<int, 3>>& path) {
    QTest::mousePress(axial(), Qt::LeftButton, {}, axial()->screenOf(path.front()).toPoint());
    for (std::size_t i = 1; i + 1 < path.size(); ++i) QTest::mouseMove(axial(), axial()->screenOf(path[i]).toPoint());
    QTest::mouseRelease(axial(), Qt::LeftButton, {}, axial()->screenOf(path.back()).toPoint());
  }
  /// The 3D phantom 32³ reconstructed (FFT), its planes shown.
  void shownVolume() {
    load(smallPhantom(TrajectoryKind::Cartesian, 32, 4, 1, 0, 32));
    setMethod(recon::Method::Fft);
    QVERIFY(run());
    w_->showTab("image");
    QVERIFY(waitUntil([&] { return w_->imageViewer()->planeView(SliceView::Coronal)->isVisible(); }, 5000));
  }
  /// What of `l`'s text does not show: a line (unwrapped) or a word (wrapped) wider than the label, or "(lines
  /// below the label)" when the wrapped text is taller; "" when it shows whole.
  static QString cutText(const QLabel* l) {
    const QFontMetrics fm(l->font());
    const int room = l->contentsRect().width() - 2 * l->margin();
    const QStringList pieces = l->text().split(l->wordWrap() ? QRegularExpression("\\s+") : QRegularExpression("\n"));
    for (const QString& p : pieces)
      if (fm.horizontalAdvance(p) > room) return p;
    if (l->wordWrap() && l->height() < l->heightForWidth(l->width())) return QStringLiteral("(lines below the label)");
    return {};
  }
  void saveShot(QWidget* w, const QString& name) {
    const QString path = scratchDir("reading-tools-" + name) + "/" + name + ".png";
    QVERIFY(w->grab().save(path));
    qInfo("picture: %s", qPrintable(path));
  }

 private slots:
  void init() { openWindow({1024, 768}, false, true); }
  void cleanup() { closeWindow(); }

  // F11 toggles presenter mode (full screen, zoom 1.5, no docks) and nothing else: the loaded data and the
  // run stay; F11 again brings the window back. The scripted demo has its own entry.
  void f11TogglesPresenterModeOnly() {
    load(smallPhantom(TrajectoryKind::Cartesian, 48, 2));
    QVERIFY(run());
    const int runNumber = w_->model().shownRun()->number;
    const int loads = loaded_, runs = finished_;
    QVERIFY(action("scriptedDemo"));
    QTest::keyClick(w_.get(), Qt::Key_F11);
    QVERIFY(waitUntil([&] { return w_->isFullScreen(); }, 3000));
    QVERIFY(w_->presenterMode());
    QCOMPARE(w_->uiScale(), 1.5);
    QVERIFY(!w_->findChild<QDockWidget*>("settingsDock")->isVisible());
    QTest::qWait(500);
    QCOMPARE(loaded_, loads);  // nothing loaded (the demo's phantoms would be)
    QCOMPARE(finished_, runs);  // nothing run
    QCOMPARE(w_->model().shownRun()->number, runNumber);
    QTest::keyClick(w_.get(), Qt::Key_F11);
    QVERIFY(waitUntil([&] { return !w_->isFullScreen(); }, 3000));
    QVERIFY(!w_->presenterMode());
    QCOMPARE(w_->uiScale(), 1.0);
    QVERIFY(w_->findChild<QDockWidget*>("settingsDock")->isVisible());
    QCOMPARE(loaded_, loads);
  }

  // Ctrl+= twice then Ctrl+0: the window has its size again, exactly; zoomed, it is no wider than the screen.
  void zoomActualSizeRestoresTheWindow() {
    QTest::qWait(200);
    const QSize before = w_->size();
    for (int i = 0; i < 4; ++i) {  // 175 %: the minimum width of the window's contents passes the screen's
      QTest::keyClick(w_.get(), Qt::Key_Equal, Qt::ControlModifier);
      QTest::qWait(150);
    }
    QTest::qWait(300);
    qInfo("zoom %.2f: %d x %d (minimum %d x %d), before %d x %d", w_->uiScale(), w_->width(), w_->height(),
          w_->minimumSizeHint().width(), w_->minimumSizeHint().height(), before.width(), before.height());
    QVERIFY2(w_->uiScale() > 1.7, qPrintable(QString::number(w_->uiScale())));
    const int screenWidth = w_->screen()->availableGeometry().width();
    QVERIFY2(w_->width() <= std::max(screenWidth, w_->minimumSizeHint().width()),
             qPrintable(QString("zoomed %1 px on a %2 px screen").arg(w_->width()).arg(screenWidth)));
    QTest::keyClick(w_.get(), Qt::Key_0, Qt::ControlModifier);
    QVERIFY(waitUntil([&] { return w_->size() == before; }, 3000));
    QCOMPARE(w_->uiScale(), 1.0);
    QCOMPARE(w_->size(), before);
  }

  // Each caption of a step that loads or runs appears after its picture: a datasetLoaded or reconFinished
  // comes between the step's start and its caption.
  void demoCaptionsWaitForTheirImages() {
    QStringList events;  // connected before the demo's own slots, so that a picture is noted before it reacts
    connect(w_.get(), &MainWindow::datasetLoaded, this, [&] { events << "picture"; });
    connect(w_.get(), &MainWindow::reconFinished, this, [&] { events << "picture"; });
    DemoScript demo(w_.get(), false);
    connect(&demo, &DemoScript::captionShown, this, [&](int i) { events << QString("caption %1").arg(i); });
    int code = -1;
    connect(&demo, &DemoScript::finished, this, [&](int c) { code = c; });
    demo.start(50);
    QVERIFY2(waitUntil([&] { return code >= 0; }, 150000), "the demo did not finish");
    QCOMPARE(code, 0);
    for (int i = 0; i < demo.stepCount(); ++i) {
      const int at = static_cast<int>(events.indexOf(QString("caption %1").arg(i)));
      QVERIFY2(at >= 0, qPrintable(QString("no caption for step %1").arg(i)));
      if (demo.stepWaitsForImage(i))
        QVERIFY2(at > 0 && events[at - 1] == "picture",
                 qPrintable(QString("step %1 (%2): its caption came before its picture: %3")
                                .arg(i).arg(demo.stepCaption(i), events.mid(0, at + 1).join(", "))));
    }
    // The strongest screen last: the three radial methods side by side (not GRAPPA R4 against the truth).
    QVERIFY2(demo.stepCaption(demo.stepCount() - 1).contains("side by side"), qPrintable(demo.stepCaption(demo.stepCount() - 1)));
    QVERIFY(w_->sideBySideView()->isVisible());  // its tab in front
    QCOMPARE(w_->sideBySideView()->panelCount(), 3);
    w_->setPresenterMode(false);
  }

  // A rectangle and an ellipse drawn on the image: the statistics under it are the model's of the shown
  // image, and the model's equal NumPy's on the exported .cfl within 1e-6 (relative).
  void roiStatisticsOnScreen() {
    shownPhantom();
    ImageViewer* v = w_->imageViewer();
    const auto spacing = w_->model().voxelSpacing(*w_->model().shownRun()->image());
    // Drawn with the mouse in ROI mode: corner voxels (20, 24) and (40, 36).
    v->roiButton()->setChecked(true);
    QTest::mousePress(axial(), Qt::LeftButton, {}, axial()->screenOf({20, 24, 0}).toPoint());
    QTest::mouseMove(axial(), axial()->screenOf({40, 36, 0}).toPoint());
    QTest::mouseRelease(axial(), Qt::LeftButton, {}, axial()->screenOf({40, 36, 0}).toPoint());
    QVERIFY(v->roi());
    const model::PlaneRoi rect = *v->roi();
    QCOMPARE(rect.voxels(), 21 * 13);
    const CArray stack = shownPlaneStack();
    const model::RoiStats rs = model::roiStatistics(stack, rect, spacing);
    QCOMPARE(rs.voxels, std::size_t(21 * 13));
    const QString text = w_->findChild<QLabel*>("measurements")->text();
    QVERIFY2(text.contains("ROI rectangle: " + QString::fromStdString(model::formatRoiStats(rs))), qPrintable(text));
    QVERIFY2(text.contains(QString("area %1 mm").arg(273 * spacing[0] * spacing[1], 0, 'f', 1)), qPrintable(text));
    v->setRoiShape(model::RoiShape::Ellipse);
    const model::RoiStats es = model::roiStatistics(stack, *v->roi(), spacing);
    QVERIFY(es.voxels < rs.voxels && es.voxels > rs.voxels / 2);
    QVERIFY2(v->roiStatsText() == "ROI ellipse: " + QString::fromStdString(model::formatRoiStats(es)), qPrintable(v->roiStatsText()));
    // NumPy on the exported image.
    const QString dir = scratchDir("roi-numpy");
    io::writeCfl((dir + "/shown").toStdString(), stack);
    QProcess py;
    py.start("/usr/bin/python3", {QStringLiteral(LARMOR_GUI_TEST_SOURCE_DIR "/roi_numpy.py"), dir + "/shown", "20", "24", "40", "36"});
    QVERIFY(py.waitForFinished(60000));
    if (py.exitCode() == 77) QSKIP("no numpy for /usr/bin/python3");
    const QStringList out = QString::fromUtf8(py.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts);
    QVERIFY2(py.exitCode() == 0 && out.size() == 2, qPrintable(py.readAllStandardError()));
    for (int k = 0; k < 2; ++k) {
      const QStringList f = out[k].split(' ');  // n mean sd min max
      const model::RoiStats& s = k == 0 ? rs : es;
      QCOMPARE(f[0].toULongLong(), static_cast<qulonglong>(s.voxels));
      const double want[4] = {s.mean, s.sd, s.min, s.max};
      for (int j = 0; j < 4; ++j)
        QVERIFY2(std::abs(f[j + 1].toDouble() - want[j]) <= 1e-6 * std::max(1.0, std::abs(want[j])),
                 qPrintable(QString("%1: NumPy %2, Larmor %3").arg(out[k]).arg(f[j + 1]).arg(want[j], 0, 'g', 17)));
    }
  }

  // The ROI statistics line under the image is read whole in a 1280 px and a 1024 px wide window: each of its
  // words within the label's width, and the label as tall as its lines (wrapped, not cut at the right).
  void roiStatisticsReadWhole() {
    for (const QSize size : {QSize(1280, 800), QSize(1024, 768)}) {
      closeWindow();
      openWindow(size, false, true);
      shownPhantom();
      if (QTest::currentTestFailed()) return;
      ImageViewer* v = w_->imageViewer();
      v->setRoiShape(model::RoiShape::Ellipse);
      v->setRoi(model::PlaneRoi{12, 14, 50, 44, 0, model::RoiShape::Ellipse, {}});
      auto* label = w_->findChild<QLabel*>("measurements");
      QVERIFY(waitUntil([&] { return label->isVisible() && label->text().contains("voxels"); }, 3000));
      QTest::qWait(100);  // the layout settles
      const QString cut = cutText(label);
      saveShot(w_.get(), QString("roi-line-%1").arg(size.width()));
      QVERIFY2(cut.isEmpty(), qPrintable(QString("%1 px window: \"%2\" cut (label %3 px wide, %4 px tall): %5")
                                             .arg(size.width()).arg(cut).arg(label->contentsRect().width())
                                             .arg(label->height()).arg(label->text())));
      QVERIFY(label->mapTo(w_.get(), QPoint(label->width(), 0)).x() <= w_->width());
    }
  }

  // Two clicks with the distance tool: the distance in mm between the voxels' centres.
  void distanceBetweenTwoClicks() {
    shownPhantom();
    ImageViewer* v = w_->imageViewer();
    w_->findChild<QAction*>("distanceTool")->trigger();  // the ROI button's menu
    QVERIFY(v->distanceMode());
    QTest::mouseClick(axial(), Qt::LeftButton, {}, axial()->screenOf({10, 12, 0}).toPoint());
    QVERIFY(v->distanceText().isEmpty());
    QTest::mouseClick(axial(), Qt::LeftButton, {}, axial()->screenOf({40, 52, 0}).toPoint());
    const auto sp = w_->model().voxelSpacing(*w_->model().shownRun()->image());
    const double mm = std::hypot(30 * sp[0], 40 * sp[1]);
    QCOMPARE(v->distanceText(), QString("distance %1 mm").arg(mm, 0, 'f', 1));
    QVERIFY(w_->findChild<QLabel*>("measurements")->text().contains(v->distanceText()));
  }

  // Up/Down (and PgUp/PgDn) step the slices of a volume; Left/Right the frames of a series.
  void keyboardStepsSlicesAndFrames() {
    shownPhantom(8);
    SliceView* a = axial();
    a->setFocus();
    const int s0 = a->slice();
    QTest::keyClick(a, Qt::Key_Up);
    QCOMPARE(a->slice(), s0 + 1);
    QTest::keyClick(a, Qt::Key_PageUp);
    QCOMPARE(a->slice(), s0 + 2);
    QTest::keyClick(a, Qt::Key_Down);
    QTest::keyClick(a, Qt::Key_PageDown);
    QCOMPARE(a->slice(), s0);
    phantom::SimulateSettings s = smallPhantom(TrajectoryKind::Cartesian, 32, 2);
    s.frames = 3;
    load(s);
    QVERIFY(run());
    QCOMPARE(w_->model().frameCount(), std::size_t(3));
    QCOMPARE(w_->model().frame(), std::size_t(0));
    axial()->setFocus();
    QTest::keyClick(axial(), Qt::Key_Right);
    QCOMPARE(w_->model().frame(), std::size_t(1));
    QTest::keyClick(axial(), Qt::Key_Right);
    QTest::keyClick(axial(), Qt::Key_Right);  // the last frame stays
    QCOMPARE(w_->model().frame(), std::size_t(2));
    QTest::keyClick(axial(), Qt::Key_Left);
    QCOMPARE(w_->model().frame(), std::size_t(1));
  }

  // A right click on the image opens its menu: window presets, reset, copy value, the tools, a screenshot.
  void rightClickMenuOnTheImage() {
    shownPhantom();
    const QPoint at = axial()->screenOf({32, 32, 0}).toPoint();
    QTest::mouseClick(axial(), Qt::RightButton, {}, at);
    QMenu* menu = nullptr;
    QVERIFY(waitUntil([&] { return (menu = w_->findChild<QMenu*>("imageContextMenu")) && menu->isVisible(); }, 3000));
    QStringList texts;
    for (QAction* a : menu->actions()) texts << a->text();
    for (const char* want : {"Window presets", "Reset window", "Copy value", "ROI rectangle", "ROI ellipse", "Distance", "Export screenshot…"})
      QVERIFY2(texts.contains(QString::fromUtf8(want)), qPrintable(texts.join(" | ")));
    for (QAction* a : menu->actions())
      if (a->text() == "Copy value") a->trigger();
    const auto pv = quality::probe(shownPlaneStack(), 32, 32, 0);
    QCOMPARE(QApplication::clipboard()->text(), QString::number(pv.magnitude, 'g', 9));
    menu->close();
    QVERIFY(waitUntil([&] { return !w_->findChild<QMenu*>("imageContextMenu"); }, 3000));
    w_->imageViewer()->setWindow(0.0, 1e-3);
    menu = w_->imageViewer()->showContextMenu(w_->mapToGlobal(QPoint(100, 100)), std::nullopt);
    for (QAction* a : menu->actions())
      if (a->text() == "Reset window") a->trigger();
    QVERIFY(w_->imageViewer()->windowHigh() > 1e-3);
    for (QAction* a : menu->actions())
      if (a->text() == "ROI ellipse") a->trigger();
    QCOMPARE(w_->imageViewer()->roiShape(), model::RoiShape::Ellipse);
    QVERIFY(w_->imageViewer()->roiButton()->isChecked());
    menu->close();
  }

  // A freehand outline dragged on the image (a concave one): the statistics under the image are the model's of
  // the shown image, which equal NumPy's even-odd rule on the exported .cfl within 1e-6; for a series, the time
  // curve is the region's mean in each frame.
  void freehandRoiOnScreen() {
    shownPhantom();
    ImageViewer* v = w_->imageViewer();
    v->setRoiShape(model::RoiShape::Freehand);  // as the ROI button's menu and the right-click menu do
    v->roiButton()->setChecked(true);
    const std::vector<std::array<int, 3>> path{{20, 20, 0}, {44, 22, 0}, {32, 32, 0}, {44, 44, 0}, {20, 42, 0}, {16, 30, 0}};
    dragThrough(path);
    QVERIFY(v->roi());
    const model::PlaneRoi roi = *v->roi();
    QCOMPARE(roi.shape, model::RoiShape::Freehand);
    QCOMPARE(roi.polygon.size(), path.size());
    QString polygon;
    for (std::size_t i = 0; i < path.size(); ++i) {
      QCOMPARE(roi.polygon[i][0], path[i][0]);
      QCOMPARE(roi.polygon[i][1], path[i][1]);
      polygon += QString("%1%2,%3").arg(i ? ";" : "").arg(path[i][0]).arg(path[i][1]);
    }
    QCOMPARE(axial()->roiOutline().size(), path.size());  // drawn on the image
    const CArray stack = shownPlaneStack();
    const auto spacing = w_->model().voxelSpacing(*w_->model().shownRun()->image());
    const model::RoiStats fs = model::roiStatistics(stack, roi, spacing);
    QVERIFY2(fs.voxels > 300 && fs.voxels < 25 * 29, qPrintable(QString::number(fs.voxels)));  // the box less its notch
    QVERIFY(!model::roiContains(roi, 40, 32));  // the notch
    QVERIFY2(v->roiStatsText() == "ROI freehand: " + QString::fromStdString(model::formatRoiStats(fs)), qPrintable(v->roiStatsText()));
    QVERIFY(w_->findChild<QLabel*>("measurements")->text().contains(v->roiStatsText()));
    saveShot(v->viewArea(), "freehand");
    const QStringList out = numpyStats(stack, {"20", "20", "44", "44", polygon});
    if (out.isEmpty()) QSKIP("no numpy for /usr/bin/python3");
    QCOMPARE(out.size(), 3);
    QString why;
    QVERIFY2(sameStats(out[2], fs, &why), qPrintable(why));
    // A series of three frames: the curve holds the region's mean in each frame.
    phantom::SimulateSettings s = smallPhantom(TrajectoryKind::Cartesian, 64, 2);
    s.frames = 3;
    load(s);
    QVERIFY(run());
    w_->showTab("image");
    v->setRoiShape(model::RoiShape::Freehand);
    v->roiButton()->setChecked(true);
    dragThrough(path);
    QVERIFY(v->roi() && v->roi()->shape == model::RoiShape::Freehand);
    axial()->setFocus();
    for (int f = 1; f < 3; ++f) {  // each frame reconstructed as it is shown
      const int before = finished_;
      QTest::keyClick(axial(), Qt::Key_Right);
      QVERIFY2(waitUntil([&] { return finished_ > before; }, 60000), "a frame was not reconstructed");
    }
    QCOMPARE(w_->timeCurveView()->pointCount(), 3);
    const model::TimeCurve curve = w_->timeCurveView()->curve();
    QCOMPARE(curve.values.size(), std::size_t(3));
    QTest::keyClick(axial(), Qt::Key_Left);
    QTest::keyClick(axial(), Qt::Key_Left);
    for (std::size_t f = 0; f < 3; ++f) {
      QCOMPARE(w_->model().frame(), f);
      const model::RoiStats st = model::roiStatistics(shownPlaneStack(), *v->roi(), spacing);
      QVERIFY2(std::abs(curve.values[f] - st.mean) <= 1e-6 * std::abs(st.mean),
               qPrintable(QString("frame %1: curve %2, region %3").arg(f).arg(curve.values[f]).arg(st.mean)));
      QVERIFY(v->roiStatsText().contains(QString::fromStdString(model::formatRoiStats(st))));
      QTest::keyClick(axial(), Qt::Key_Right);
    }
  }

  // Three clicks with the angle tool (an end, the vertex, the other end) on an image of 0.5 x 1.5 mm voxels: the
  // angle is the physical one (atan 3 = 71.6°, not the 45° of the voxel grid), under the image and on it.
  void angleInPhysicalSpace() {
    shownPhantom();
    ImageViewer* v = w_->imageViewer();
    auto image = std::make_shared<CArray>(*w_->model().shownRun()->image());
    v->setImage(image, {0.5, 1.5, 5.0}, "anisotropic");
    QTest::mouseClick(axial(), Qt::RightButton, {}, axial()->screenOf({32, 32, 0}).toPoint());
    QMenu* menu = nullptr;
    QVERIFY(waitUntil([&] { return (menu = w_->findChild<QMenu*>("imageContextMenu")) && menu->isVisible(); }, 3000));
    QStringList texts;
    for (QAction* a : menu->actions()) texts << a->text();
    QCOMPARE(texts.indexOf("Angle"), texts.indexOf("Distance") + 1);  // beside Distance
    QVERIFY(texts.contains("ROI freehand"));
    for (QAction* a : menu->actions())
      if (a->text() == "Angle") a->trigger();
    menu->close();
    QVERIFY(v->angleMode());
    QVERIFY(!v->distanceMode());
    QTest::mouseClick(axial(), Qt::LeftButton, {}, axial()->screenOf({30, 10, 0}).toPoint());
    QTest::mouseClick(axial(), Qt::LeftButton, {}, axial()->screenOf({10, 10, 0}).toPoint());  // the vertex
    QVERIFY(v->angleText().isEmpty());
    QTest::mouseClick(axial(), Qt::LeftButton, {}, axial()->screenOf({30, 30, 0}).toPoint());
    const double deg = std::atan(3.0) * 180.0 / std::numbers::pi;  // (10, 0) mm and (10, 30) mm from the vertex
    QCOMPARE(v->angleText(), QString("angle %1°").arg(deg, 0, 'f', 1));
    QCOMPARE(v->angleText(), QString("angle 71.6°"));
    QVERIFY(w_->findChild<QLabel*>("measurements")->text().contains(v->angleText()));
    saveShot(v->viewArea(), "angle");
    w_->findChild<QAction*>("distanceTool")->trigger();  // the tools exclude each other
    QVERIFY(v->distanceMode() && !v->angleMode());
  }

  // View ▸ Layout: 1x1, 1x2 and 2x2 panes of a 3D image, each with the view chosen for it; the choice is in
  // QSettings and the next window starts from it.
  void layoutsAreRemembered() {
    shownVolume();
    ImageViewer* v = w_->imageViewer();
    QVERIFY(v->hanging() == model::Hanging{});
    for (int p = 0; p < 4; ++p) QVERIFY(v->paneWidget(p)->isVisible());
    action("layout1x2")->trigger();
    QTest::qWait(100);
    QCOMPARE(v->paneWidget(0), static_cast<QWidget*>(axial()));
    QCOMPARE(v->paneWidget(1), static_cast<QWidget*>(v->planeView(SliceView::Coronal)));
    QVERIFY(!v->paneWidget(2));
    QVERIFY(!v->planeView(SliceView::Sagittal)->isVisible() && !v->volumeView()->isVisible());
    const QWidget* area = v->viewArea();
    QCOMPARE(axial()->y(), v->planeView(SliceView::Coronal)->y());  // side by side, the full height each
    QVERIFY(axial()->height() > area->height() - 10 && axial()->width() < area->width() / 2 + 5);
    action("pane2Oblique")->trigger();
    QTest::qWait(100);
    QCOMPARE(v->paneWidget(1), static_cast<QWidget*>(v->obliqueView()));
    QVERIFY(v->obliqueView()->isVisible() && !v->planeView(SliceView::Coronal)->isVisible());
    QVERIFY((v->obliqueView()->plane().centre == std::array<double, 3>{15.5, 15.5, 15.5}));  // no cursor: the middle
    saveShot(v->viewArea(), "layout-1x2-oblique");
    action("layout1x1")->trigger();
    QTest::qWait(100);
    QVERIFY(axial()->isVisible() && !v->obliqueView()->isVisible());
    QVERIFY(axial()->width() > area->width() - 10);
    action("layout1x2")->trigger();
    const model::Hanging chosen = v->hanging();
    QCOMPARE(QString::fromStdString(model::toString(chosen)), QString("1x2:axial,oblique,sagittal,volume"));
    QCOMPARE(QSettings().value(ImageViewer::kHangingKey).toString(), QString::fromStdString(model::toString(chosen)));
    closeWindow();  // a restart: the next window hangs the same
    {
      MainWindow again;
      QVERIFY(again.imageViewer()->hanging() == chosen);
      again.imageViewer()->setHanging(model::Hanging{});
    }
    // A hand-edited settings file with the value unquoted (QSettings reads a list of the parts between commas).
    QSettings().setValue(ImageViewer::kHangingKey, QStringList{"1x1:axial", "coronal", "sagittal", "oblique"});
    {
      MainWindow edited;
      QVERIFY(edited.imageViewer()->hanging() == model::hangingFromString("1x1:axial,coronal,sagittal,oblique"));
      QCOMPARE(edited.imageViewer()->hanging().layout, model::PaneLayout::One);
      edited.imageViewer()->setHanging(model::Hanging{});
    }
    QCOMPARE(QSettings().value(ImageViewer::kHangingKey).toString(), QString("2x2:axial,coronal,sagittal,volume"));
  }

  // A DICOM series of every frame loaded as the reference follows the frame on screen: each frame's reconstruction
  // is compared with the series' images of that frame (paired by geometry and frame as larmor-cli compare pairs
  // them), not with those of the frame shown when it was loaded.
  void dicomReferenceFollowsTheFrame() {
    phantom::SimulateSettings s = smallPhantom(TrajectoryKind::Cartesian, 64, 2);
    s.frames = 3;
    load(s);
    setMethod(recon::Method::Fft);
    QVERIFY2(run(), qPrintable(w_->lastError()));
    w_->showTab("image");
    axial()->setFocus();
    for (int f = 1; f < 3; ++f) {  // each frame reconstructed as it is shown
      const int before = finished_;
      QTest::keyClick(axial(), Qt::Key_Right);
      QVERIFY2(waitUntil([&] { return finished_ > before; }, 60000), "a frame was not reconstructed");
    }
    const QString dir = scratchDir("reference-frames") + "/series";
    DicomExportOptions o;
    o.frames = DicomExportOptions::Frames::All;
    QVERIFY2(w_->exportDicomSeries(dir, o), qPrintable(w_->lastError()));
    const QStringList dcm = QDir(dir).entryList({"*.dcm"}, QDir::Files, QDir::Name);
    QCOMPARE(dcm.size(), 3);
    axial()->setFocus();
    QTest::keyClick(axial(), Qt::Key_Left);
    QTest::keyClick(axial(), Qt::Key_Left);
    QCOMPARE(w_->model().frame(), std::size_t(0));
    const std::shared_ptr<const CArray> frame0 = w_->model().shownRun()->image();
    QVERIFY2(w_->loadReferenceFile(dir + "/" + dcm.first()), qPrintable(w_->lastError()));
    const int ref = w_->model().comparison().reference;
    QVERIFY(ref < -1);
    // Relative error of a magnitude image against the reference's images (stored magnitude).
    const auto error = [&](const CArray& a) {
      const auto& c = w_->model().comparison().candidates;
      const auto b = std::find_if(c.begin(), c.end(), [&](const auto& x) { return x.run == ref; });
      if (b == c.end() || !b->image || b->image->size() != a.size()) return 1e9;
      double diff = 0, norm = 0;
      for (index_t i = 0; i < a.size(); ++i) {
        diff += std::norm(std::abs(a[i]) - (*b->image)[i].real());
        norm += std::norm(std::abs(a[i]));
      }
      return std::sqrt(diff / norm);
    };
    QVERIFY2(error(*frame0) < 1e-2, qPrintable(QString("frame 1 against its reference: %1").arg(error(*frame0))));
    for (std::size_t f = 1; f < 3; ++f) {
      QTest::keyClick(axial(), Qt::Key_Right);
      QCOMPARE(w_->model().frame(), f);
      QCOMPARE(w_->model().comparison().reference, ref);  // still the reference, now of this frame
      const double e = error(*w_->model().shownRun()->image());
      QVERIFY2(e < 1e-2, qPrintable(QString("frame %1 against the reference: %2").arg(f + 1).arg(e)));
    }
    const double stale = error(*frame0);  // the frames differ: the reference of frame 1 would not do for frame 3
    QVERIFY2(stale > 5e-2, qPrintable(QString("frame 1 against frame 3's reference: %1").arg(stale)));
  }

  // Any pane shows any run of the session or a reference series (a DICOM series as Query PACS opens one): chosen with
  // the right-click menu's "Show in this pane" or View ▸ Layout ▸ Pane N, beside the current image, its slice and
  // window linked with it; "The pane's own view" gives the pane back.
  void panesShowAnyRunAndTheReference() {
    auto s = smallPhantom(TrajectoryKind::Cartesian, 64, 4);
    s.slices = 3;
    load(s);
    setMethod(recon::Method::Fft);
    QVERIFY2(run(), qPrintable(w_->lastError()));
    const int fft = w_->model().shownRun()->number;
    setMethod(recon::Method::Cg, 5);
    QVERIFY2(run(), qPrintable(w_->lastError()));
    const QString dir = scratchDir("panes-reference") + "/series";
    DicomExportOptions o;
    o.frames = DicomExportOptions::Frames::Current;
    QVERIFY2(w_->exportDicomSeries(dir, o), qPrintable(w_->lastError()));
    const QStringList dcm = QDir(dir).entryList({"*.dcm"}, QDir::Files, QDir::Name);
    QVERIFY(!dcm.isEmpty());
    QVERIFY2(w_->loadReferenceFile(dir + "/" + dcm.first()), qPrintable(w_->lastError()));
    const int ref = w_->model().comparison().reference;
    QVERIFY(ref < -1);
    w_->showTab("image");
    ImageViewer* v = w_->imageViewer();
    action("layout1x2")->trigger();
    QVERIFY(!v->paneWidget(1));  // 2D: the current image alone until a pane shows another
    QMenu* menu = v->showContextMenu(axial()->mapToGlobal(QPoint(20, 20)), std::nullopt, 1);
    QAction* pick = menu->findChild<QAction*>(QString("showInPane%1").arg(fft));
    QVERIFY2(pick, "no run 1 in the right-click menu's Show in this pane");
    pick->trigger();
    menu->close();
    QCOMPARE(v->paneImage(1), fft);
    QCOMPARE(v->paneWidget(1), static_cast<QWidget*>(v->paneImageView(1)));
    QVERIFY(waitUntil([&] { return v->paneImageView(1)->isVisible() && axial()->isVisible(); }, 2000));
    QVERIFY2(v->paneImageView(1)->title().startsWith(QString("run %1").arg(fft)), qPrintable(v->paneImageView(1)->title()));
    QCOMPARE(axial()->y(), v->paneImageView(1)->y());  // side by side
    action("layout2x2")->trigger();
    QAction* refAction = action(QString("pane4Image%1").arg(ref));
    QVERIFY2(refAction, "no reference series in View > Layout > Pane 4");
    refAction->trigger();
    QCOMPARE(v->paneWidget(3), static_cast<QWidget*>(v->paneImageView(3)));
    QVERIFY2(v->paneImageView(3)->title().endsWith(".dcm"), qPrintable(v->paneImageView(3)->title()));
    // Linked: the slice and the window.
    axial()->setSlice(2);
    QCOMPARE(v->paneImageView(1)->slice(), 2);
    QCOMPARE(v->paneImageView(3)->slice(), 2);
    v->paneImageView(3)->setSlice(1);
    QCOMPARE(axial()->slice(), 1);
    QCOMPARE(v->paneImageView(1)->slice(), 1);
    v->setWindow(0, 0.8 * v->windowHigh());
    for (int p : {1, 3}) QCOMPARE(v->paneImageView(p)->windowHigh(), v->windowHigh());
    QTest::qWait(200);
    for (int p : {1, 3})
      QVERIFY2(distinctColours(v->paneImageView(p)->grab().toImage()) > 16, qPrintable(QString("pane %1 is blank").arg(p + 1)));
    saveShot(v->viewArea(), "panes-2x2-runs-and-reference");
    menu = v->showContextMenu(axial()->mapToGlobal(QPoint(20, 20)), std::nullopt, 1);
    menu->findChild<QAction*>("showInPane0")->trigger();
    menu->close();
    QCOMPARE(v->paneImage(1), 0);
    QVERIFY(!v->paneImageView(1)->volume());  // 2D: the pane says how to choose an image again
    action("pane4Axial")->trigger();           // a view for the pane: its own again, no other image in any pane
    QCOMPARE(v->paneImage(3), 0);
    QCOMPARE(v->paneWidget(0), static_cast<QWidget*>(axial()));
    QVERIFY(!v->paneWidget(1) && !v->paneWidget(3));  // 2D: the current image alone
  }

  // A 3D image's 2x2: pane 4 shows an earlier run instead of the volume rendering, its axial planes following the
  // current image's axial plane; the three planes stay in their panes.
  void panesOfA3DImageShowARun() {
    shownVolume();
    if (QTest::currentTestFailed()) return;
    const int first = w_->model().shownRun()->number;
    setMethod(recon::Method::Cg, 2);
    QVERIFY2(run(), qPrintable(w_->lastError()));
    w_->showTab("image");
    ImageViewer* v = w_->imageViewer();
    QVERIFY(action(QString("pane4Image%1").arg(first)));
    action(QString("pane4Image%1").arg(first))->trigger();
    QCOMPARE(v->paneWidget(3), static_cast<QWidget*>(v->paneImageView(3)));
    QVERIFY(waitUntil([&] { return v->paneImageView(3)->isVisible(); }, 2000));
    QVERIFY(!v->volumeView()->isVisible());
    for (int axis : {SliceView::Axial, SliceView::Coronal, SliceView::Sagittal}) QVERIFY(v->planeView(axis)->isVisible());
    v->linkCursor(10, 12, 20);
    QCOMPARE(v->paneImageView(3)->slice(), 20);
    QCOMPARE(v->paneImageView(3)->sliceCount(), 32);
    saveShot(v->viewArea(), "panes-3d-run-in-pane-4");
    QAction* volume = action("pane43D");  // View > Layout > Pane 4 > 3D rendering: the pane's own view again
    QVERIFY(volume);
    volume->trigger();
    QCOMPARE(v->paneWidget(3), static_cast<QWidget*>(v->volumeView()));
    QCOMPARE(v->paneImage(3), 0);
  }

  // The oblique plane of a 3D image: through the linked cursor, turned by its sliders or a drag, resampled from the
  // shown volume (model/oblique_plane.hpp); a click on it moves the cursor, and the three planes follow.
  void obliquePlaneLinkedToThePlanes() {
    shownVolume();
    ImageViewer* v = w_->imageViewer();
    action("pane4Oblique")->trigger();
    ObliqueView* o = v->obliqueView();
    QVERIFY(waitUntil([&] { return o->isVisible() && o->width() > 200; }, 3000));
    QTest::mouseClick(axial(), Qt::LeftButton, {}, axial()->screenOf({12, 18, 16}).toPoint());
    QVERIFY((v->linkedCursor() == std::array<int, 3>{12, 18, 16}));
    QVERIFY((o->plane().centre == std::array<double, 3>{12, 18, 16}));
    o->findChild<QSlider*>("obliqueTilt")->setValue(30);
    o->findChild<QSlider*>("obliqueSpin")->setValue(-20);
    QCOMPARE(o->plane().tiltDeg, 30.0);
    QCOMPARE(o->plane().spinDeg, -20.0);
    // The picture is the shown magnitude's trilinear samples at the plane's points.
    CArray stack = shownPlaneStack();
    RArray magnitude(stack.shape());
    for (index_t n = 0; n < stack.size(); ++n) magnitude.data()[n] = std::abs(stack.data()[n]);
    const auto spacing = w_->model().voxelSpacing(*w_->model().shownRun()->image());
    const RArray& pic = o->picture();
    const int side = o->side();
    QCOMPARE(side, model::obliqueSide(magnitude.shape(), spacing));
    int compared = 0;
    for (int b = 0; b < side; b += 7)
      for (int a = 0; a < side; a += 5) {
        const auto q = model::obliquePoint(o->plane(), spacing, side, side, model::obliqueStep(spacing), a, b);
        const double want = model::trilinear(magnitude, q[0], q[1], q[2]);
        QVERIFY2(std::abs(pic.data()[a + side * b] - want) <= 1e-5 * std::max(1.0, std::abs(want)),
                 qPrintable(QString("sample %1 %2").arg(a).arg(b)));
        compared += want != 0;
      }
    QVERIFY(compared > 20);
    QVERIFY(greyStdDev(o->grab().toImage()) > 5);  // not blank
    // A drag turns the plane (half a degree a pixel); a click moves the cursor and the planes follow.
    const QPoint c = o->screenOf(0.5 * (side - 1), 0.5 * (side - 1)).toPoint();
    QTest::mousePress(o, Qt::LeftButton, {}, c);
    QTest::mouseMove(o, c + QPoint(20, 0));
    QTest::mouseRelease(o, Qt::LeftButton, {}, c + QPoint(20, 0));
    QCOMPARE(o->plane().spinDeg, -10.0);
    QCOMPARE(o->findChild<QSlider*>("obliqueSpin")->value(), -10);
    const QPoint at = o->screenOf(0.3 * side, 0.6 * side).toPoint();
    const std::array<int, 3> voxel = o->voxelAt(at);
    QTest::mouseClick(o, Qt::LeftButton, {}, at);
    QVERIFY(v->linkedCursor() == voxel);
    QVERIFY(voxel != (std::array<int, 3>{12, 18, 16}));
    QCOMPARE(v->planeView(SliceView::Sagittal)->slice(), voxel[0]);
    QCOMPARE(v->planeView(SliceView::Coronal)->slice(), voxel[1]);
    QCOMPARE(axial()->slice(), voxel[2]);
    for (int k = 0; k < 3; ++k) QVERIFY(v->planeView(k)->crosshair() == voxel);
    QVERIFY((o->plane().centre == std::array<double, 3>{double(voxel[0]), double(voxel[1]), double(voxel[2])}));
    saveShot(v->viewArea(), "oblique");
  }

  // Help has the user guide (a file that exists) and the keyboard shortcuts (a dialog that lists them).
  void helpHasTheGuideAndTheShortcuts() {
    QVERIFY(action("userGuide"));
    const QString guide = userGuidePath();
    QVERIFY2(!guide.isEmpty() && QFileInfo::exists(guide), qPrintable(guide));
    action("keyboardShortcuts")->trigger();
    QDialog* d = nullptr;
    QVERIFY(waitUntil([&] { return (d = w_->findChild<QDialog*>("shortcutsDialog")) && d->isVisible(); }, 3000));
    const QString text = d->findChild<QLabel*>("shortcutsText")->text();
    for (const char* key : {"F11", "Ctrl+0", "PgUp", "Left / Right", "Ctrl+left drag"})
      QVERIFY2(text.contains(QString::fromUtf8(key)), key);
    d->close();
  }
};

int main(int argc, char** argv) { return guiTestMain<ReadingToolsTest>("larmor-gui-tests", argc, argv); }

#include "test_reading_tools.moc"
