// GUI tests of presenter mode and of the reading tools (ui/main_window.cpp, ui/demo.cpp, ui/image_viewer_tools.cpp,
// ui/help.cpp): F11 toggles presenter mode and nothing else, the zoom's Actual size gives the window its size
// back, the demo's captions appear with their pictures; ROI statistics (rectangle, ellipse) and the distance in
// mm on screen equal the model's measurements of the shown image (model/roi_stats.hpp, checked against NumPy),
// Up/Down step slices and Left/Right frames, the right-click menu, Help's user guide and shortcut list.
#include <QApplication>
#include <QClipboard>
#include <QDialog>
#include <QDockWidget>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QProcess>
#include <QScreen>
#include <QStandardPaths>
#include <QTabWidget>
#include <QToolButton>
#include <QtTest/QtTest>

#include "demo.hpp"
#include "gui_test_support.hpp"
#include "help.hpp"
#include "image_viewer.hpp"
#include "larmor/io/cfl.hpp"
#include "main_window.hpp"
#include "roi_stats.hpp"
#include "slice_view.hpp"
#include "theme.hpp"

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

int main(int argc, char** argv) {
  QStandardPaths::setTestModeEnabled(true);
  QApplication app(argc, argv);
  QCoreApplication::setOrganizationName("LarmorTest");
  QCoreApplication::setApplicationName("larmor-gui-tests");
  applyTheme(app);
  ReadingToolsTest t;
  return QTest::qExec(&t, argc, argv);
}

#include "test_reading_tools.moc"
