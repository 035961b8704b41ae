// The pictures of docs/gui.md's workflows, made by driving the window as a user would, and checked: the radiographer
// opens an undersampled file (the fitting method, GRAPPA, runs on open), sets a window preset and draws an ellipse
// ROI whose statistics show under the image; the researcher compares gridding, CG and CS on undersampled radial
// data, moves λ (live), runs the λ sweep (the L-curve and the error against λ), looks at the runs side by side and
// puts the gridding run into a pane beside the CS run in the image tab.
// Each picture must hold an image (not blank) and is saved into $LARMOR_DOC_PICTURES (docs/images when remaking
// the docs' pictures) or else the test's scratch folder.
#include <QApplication>
#include <QCoreApplication>
#include <QDir>
#include <QDockWidget>
#include <QStandardPaths>
#include <QToolButton>
#include <QtCharts/QChartView>
#include <QtTest/QtTest>

#include "gui_test_support.hpp"
#include "image_viewer.hpp"
#include "main_window.hpp"
#include "settings_panel.hpp"
#include "side_by_side_view.hpp"
#include "slice_view.hpp"
#include "theme.hpp"
#include "timings_view.hpp"
#include "worker.hpp"

using namespace larmor;
using namespace larmor::ui;
using namespace larmor::ui::test;

class DocPicturesTest : public WindowTest {
  Q_OBJECT

 private:
  SliceView* axial() const { return w_->imageViewer()->planeView(SliceView::Axial); }

  /// The window saved as NAME.png into $LARMOR_DOC_PICTURES (or the scratch folder): checked not blank.
  void picture(const QString& name) {
    QTest::qWait(400);  // the last paints (charts, VTK frames) done
    QString dir = qEnvironmentVariable("LARMOR_DOC_PICTURES");
    if (dir.isEmpty()) dir = scratchDir("doc-pictures");
    const QString path = QDir(dir).filePath(name + ".png");
    QVERIFY2(w_->saveScreenshot(path), qPrintable(w_->lastError()));
    const QImage image(path);
    QVERIFY2(!image.isNull() && greyStdDev(image) > 20 && distinctColours(image) > 200,
             qPrintable(QString("%1 looks blank (grey SD %2)").arg(path).arg(greyStdDev(image))));
    qInfo("picture: %s (%d x %d)", qPrintable(path), image.width(), image.height());
  }

  /// View ▸ Dataset and Settings, both shown or hidden.
  void docks(bool shown) {
    for (const char* name : {"datasetDock", "settingsDock"}) w_->findChild<QDockWidget*>(name)->setVisible(shown);
  }

  /// One λ sweep to its end: whether it finished.
  bool sweep(const QVector<double>& lambdas) {
    const int n = sweeps_, e = failed_;
    w_->runLambdaSweep(lambdas);
    waitUntil([&] { return sweeps_ > n || failed_ > e; }, 240000);
    return sweeps_ > n && failed_ == e;
  }

 private slots:
  void init() { openWindow({1440, 900}, true); }
  void cleanup() { closeWindow(); }

  // The radiographer: `larmor-cli simulate --matrix 256 --coils 8 --accel 4 --acs 24 --noise 0.002`, opened: GRAPPA
  // is chosen and run on open; the "High contrast" window; an ellipse ROI drawn with the mouse, its statistics shown.
  void radiographerPictures() {
    const QString dir = scratchDir("doc-radiographer");
    QVERIFY(tool(QCoreApplication::applicationDirPath() + "/larmor-cli",
                 {"simulate", "--matrix", "256", "--coils", "8", "--accel", "4", "--acs", "24", "--noise", "0.002",
                  "--output", dir + "/r4.h5"},
                 dir));
    const int f = finished_;
    open(dir + "/r4.h5");
    if (QTest::currentTestFailed()) return;
    QVERIFY2(w_->ranOnOpen(), "opening the file started no reconstruction");
    QVERIFY2(waitUntil([&] { return finished_ > f; }, 120000), qPrintable(w_->lastError()));
    QVERIFY2(w_->session().settings.method == recon::Method::Grappa, "GRAPPA was not chosen on open");
    w_->showTab("image");
    ImageViewer* v = w_->imageViewer();
    v->applyWindowPreset("High contrast");
    v->setRoiShape(model::RoiShape::Ellipse);
    v->roiButton()->setChecked(true);
    QTest::mousePress(axial(), Qt::LeftButton, {}, axial()->screenOf({62, 170, 0}).toPoint());
    QTest::mouseMove(axial(), axial()->screenOf({90, 192, 0}).toPoint());
    QTest::mouseRelease(axial(), Qt::LeftButton, {}, axial()->screenOf({90, 192, 0}).toPoint());
    QVERIFY(v->roi());
    QVERIFY2(v->roiStatsText().startsWith("ROI ellipse: mean"), qPrintable(v->roiStatsText()));
    picture("gui-radiographer");
  }

  // The researcher: 128², 8 coils, 64 radial spokes; gridding, CG-SENSE and CS; λ moved live (the slider in view);
  // the λ sweep's L-curve and error against λ; the three runs side by side.
  void researcherPictures() {
    phantom::SimulateSettings s;
    s.matrix[0] = s.matrix[1] = 128;
    s.coils = 8;
    s.trajectory = TrajectoryKind::Radial;
    s.spokes = 64;
    s.noiseSigma = 0.002f;
    load(s);
    if (QTest::currentTestFailed()) return;
    for (auto [m, iterations] : {std::pair{recon::Method::Gridding, 0}, {recon::Method::Cg, 30}, {recon::Method::Cs, 60}}) {
      setMethod(m, iterations);
      QVERIFY2(run(240000), qPrintable(w_->lastError()));
    }
    QVERIFY2(waitUntil([&] { return !w_->worker()->busy(); }, 120000), "the live λ setup did not finish");
    const int f = finished_;
    w_->settingsPanel()->slideLambdaTo(3e-3);
    QVERIFY2(waitUntil([&] { return finished_ > f && !w_->worker()->busy(); }, 120000), "the live λ solve did not end");
    w_->showTab("image");
    picture("gui-researcher");

    docks(false);  // the charts get the window's width
    QVERIFY2(sweep({1e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 1e-1}), qPrintable(w_->lastError()));
    QCOMPARE(w_->timingsView()->sweepPoints(), 7);
    w_->showTab("timings");
    QVERIFY(w_->timingsView()->errorChart() && w_->timingsView()->errorChart()->isVisible());
    picture("gui-researcher-lcurve");

    w_->showTab("side");
    QVERIFY(waitUntil([&] { return w_->sideBySideView()->panelCount() >= 3; }, 5000));
    picture("gui-researcher-side");

    // The gridding run beside the shown CS run in the image tab: a pane's "Show in this pane", linked with it.
    w_->showTab("image");
    ImageViewer* v = w_->imageViewer();
    int gridding = 0;
    for (const auto& r : w_->model().runs().runs())
      if (!gridding && QString::fromStdString(r.label).contains("gridding", Qt::CaseInsensitive)) gridding = r.number;
    QVERIFY(gridding > 0);
    v->setHanging(model::Hanging{model::PaneLayout::OneByTwo, model::Hanging{}.panes});
    v->setPaneImage(1, gridding);
    QCOMPARE(v->paneWidget(1), static_cast<QWidget*>(v->paneImageView(1)));
    picture("gui-researcher-panes");
    docks(true);
  }
};

int main(int argc, char** argv) { return guiTestMain<DocPicturesTest>("larmor-gui-tests", argc, argv); }

#include "test_doc_pictures.moc"
