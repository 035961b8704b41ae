// GUI tests of the researcher's views (ui/side_by_side_view.cpp, ui/timings_view.cpp, ui/tasks.cpp,
// ui/settings_panel.cpp): Side by side shows the runs of the data (the newest, or those picked in its Runs
// menu); the λ sweep works for compressed sensing as for CG (the CS prior's norm on the L-curve); the λ slider
// spans the decades around λ, so a short drag is a small step; the L-curve's labels never cover one another,
// and an error-versus-λ chart comes from the sweep's points where a truth exists.
#include <QAction>
#include <QApplication>
#include <QLineEdit>
#include <QMenu>
#include <QSlider>
#include <QToolButton>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtTest/QtTest>
#include <cmath>

#include "gui_test_support.hpp"
#include "larmor/recon/settings_table.hpp"
#include "main_window.hpp"
#include "settings_panel.hpp"
#include "side_by_side_view.hpp"
#include "slice_view.hpp"
#include "timings_view.hpp"

using namespace larmor;
using namespace larmor::ui;
using namespace larmor::ui::test;

class ResearchViewsTest : public WindowTest {
  Q_OBJECT

 private:
  /// Runs the λ sweep and waits for its end; the number of sweeps that failed is in failed_.
  bool sweep(const QVector<double>& lambdas) {
    const int n = sweeps_, e = failed_;
    w_->runLambdaSweep(lambdas);
    waitUntil([&] { return sweeps_ > n || failed_ > e; }, 120000);
    return sweeps_ > n && failed_ == e;
  }
  static QList<QScatterSeries*> dots(QChart* c) {
    QList<QScatterSeries*> out;
    for (QAbstractSeries* s : c->series())
      if (auto* d = qobject_cast<QScatterSeries*>(s)) out << d;
    return out;
  }

 private slots:
  void init() { openWindow({1024, 768}); }
  void cleanup() { closeWindow(); }

  // Four runs of the data: the Side by side tab shows them (it said "No runs to show yet"); its Runs menu
  // lists them and picking two shows those two; new data empties it.
  void sideBySideShowsTheRuns() {
    load(smallPhantom(TrajectoryKind::Cartesian, 32, 2));
    for (recon::Method m : {recon::Method::Fft, recon::Method::Cg, recon::Method::Cs, recon::Method::Fft}) {
      setMethod(m, 4);
      QVERIFY2(run(), qPrintable(w_->lastError()));
    }
    w_->showTab("side");
    SideBySideView* side = w_->sideBySideView();
    QVERIFY(waitUntil([&] { return side->panelCount() == 4; }, 3000));
    const int newest = w_->model().runs().newest()->number;
    QVERIFY2(side->view(3)->title().startsWith(QStringLiteral("run %1:").arg(newest)), qPrintable(side->view(3)->title()));
    QList<QAction*> items = side->runsButton()->menu()->actions();
    QCOMPARE(items.size(), 4);
    for (QAction* a : items) QVERIFY(a->isChecked());
    // Pick two: uncheck all, then check the two oldest.
    for (QAction* a : items) a->setChecked(false);
    QVERIFY(waitUntil([&] { return side->panelCount() == 4; }, 2000));  // none picked: the newest again
    items = side->runsButton()->menu()->actions();
    items[items.size() - 1]->setChecked(true);
    QVERIFY(waitUntil([&] { return side->panelCount() == 1; }, 2000));
    items = side->runsButton()->menu()->actions();
    items[items.size() - 2]->setChecked(true);
    QVERIFY(waitUntil([&] { return side->panelCount() == 2; }, 2000));
    QVERIFY2(side->view(0)->title().startsWith(QStringLiteral("run %1:").arg(newest - 3)), qPrintable(side->view(0)->title()));
    load(smallPhantom(TrajectoryKind::Cartesian, 32, 2));
    QVERIFY(waitUntil([&] { return side->panelCount() == 0; }, 3000));
  }

  // The λ sweep under compressed sensing gives its L-curve (residual against the TV norm, which falls as λ
  // rises) instead of failing with "needs CG".
  void lambdaSweepWorksForCs() {
    load(smallPhantom(TrajectoryKind::Radial, 32, 2));
    setMethod(recon::Method::Cs, 8);
    QVERIFY2(sweep({1e-3, 1e-2, 1e-1}), qPrintable(w_->lastError()));
    QCOMPARE(w_->timingsView()->sweepPoints(), 3);
    QList<QScatterSeries*> d = dots(w_->timingsView()->lcurveChart()->chart());
    QCOMPARE(d.size(), 3);
    // Larger λ: a sparser (smoother) image, so the prior's norm (y) falls and the misfit (x) grows.
    QVERIFY2(d[0]->at(0).y() > d[2]->at(0).y(), qPrintable(QString("%1 %2").arg(d[0]->at(0).y()).arg(d[2]->at(0).y())));
    QVERIFY(d[0]->at(0).x() < d[2]->at(0).x());
    // A CS run's convergence plot: FISTA's relative change per iteration (it was left empty: CG only).
    QVERIFY(run());
    QChart* convergence = nullptr;
    for (QChartView* v : w_->timingsView()->findChildren<QChartView*>())
      if (v->chart()->title().startsWith(QStringLiteral("Convergence"))) convergence = v->chart();
    QVERIFY(convergence);
    QVERIFY2(!convergence->series().isEmpty(), qPrintable(convergence->title()));
    auto* line = qobject_cast<QLineSeries*>(convergence->series().front());
    QVERIFY(line && line->count() >= 2);
  }

  // Where the data have a truth, the sweep's points give an error-versus-λ chart (one dot per λ).
  void errorVersusLambdaFromTheSweep() {
    load(smallPhantom(TrajectoryKind::Radial, 32, 2));
    setMethod(recon::Method::Cg, 6);
    QVERIFY2(sweep({1e-4, 1e-2, 1}), qPrintable(w_->lastError()));
    QChartView* error = w_->timingsView()->errorChart();
    QVERIFY(error);
    w_->showTab("timings");
    QVERIFY(error->isVisible());
    QList<QScatterSeries*> d = dots(error->chart());
    QCOMPARE(d.size(), 3);
    for (QScatterSeries* s : d) QVERIFY(s->at(0).y() > 0 && s->at(0).y() < 100);
    QCOMPARE(d[1]->at(0).x(), 1e-2);
  }

  // Many λ near the L-curve's corner: the labels shown never cover one another (the dots keep tooltips).
  void lcurveLabelsDoNotOverlap() {
    load(smallPhantom(TrajectoryKind::Radial, 32, 2));
    setMethod(recon::Method::Cg, 4);
    QVector<double> lambdas;
    for (int i = 0; i < 12; ++i) lambdas << 1e-6 * std::pow(10.0, i / 11.0);
    QVERIFY2(sweep(lambdas), qPrintable(w_->lastError()));
    w_->showTab("timings");
    QChart* c = w_->timingsView()->lcurveChart()->chart();
    QTest::qWait(300);
    QList<QScatterSeries*> d = dots(c);
    QCOMPARE(d.size(), 12);
    QVector<QRectF> shown;
    for (QScatterSeries* s : d)
      if (s->pointLabelsVisible()) shown << pointLabelRect(c, s);
    qInfo("%d of %d λ labels shown", static_cast<int>(shown.size()), static_cast<int>(d.size()));
    QVERIFY2(shown.size() >= 2, "the λ range is not labelled");
    for (int i = 0; i < shown.size(); ++i)
      for (int j = i + 1; j < shown.size(); ++j) QVERIFY2(!shown[i].intersects(shown[j]), "two λ labels overlap");
  }

  // The λ slider spans the two decades around λ on the panel's full width: 30 px of it is a factor under 4
  // (it was 8 decades in 65 px at 1024 x 768: a factor of ~5000); a typed λ centres it there; the arrow keys
  // step by about 2 %.
  void lambdaSliderHasFineSteps() {
    load(smallPhantom(TrajectoryKind::Radial, 32, 2));
    setMethod(recon::Method::Cg, 4);
    SettingsPanel* p = w_->settingsPanel();
    QSlider* slider = p->lambdaSlider();
    QVERIFY(waitUntil([&] { return slider->isVisible() && slider->width() > 0; }, 3000));
    const int width = std::max(1, slider->width());
    const int per30px = static_cast<int>(std::lround(30.0 * (slider->maximum() - slider->minimum()) / width));
    const int mid = (slider->maximum() + slider->minimum()) / 2;
    const double ratio = p->lambdaAt(mid + per30px) / p->lambdaAt(mid);
    qInfo("slider %d px; 30 px is a factor %.3g in λ", width, ratio);
    QVERIFY2(ratio < 4, qPrintable(QString("30 px is a factor %1").arg(ratio)));
    const double step = p->lambdaAt(mid + slider->singleStep()) / p->lambdaAt(mid);
    QVERIFY2(step < 1.05, qPrintable(QString::number(step)));
    // The window follows λ: a typed 0.14 sits near the slider's middle, and the slider reaches it.
    QLineEdit* edit = nullptr;
    for (QLineEdit* e : slider->parentWidget()->findChildren<QLineEdit*>()) edit = e;
    QVERIFY(edit);
    edit->setText("0.14");
    emit edit->editingFinished();
    const double at = p->lambdaAt(slider->value());
    QVERIFY2(std::abs(std::log10(at / 0.14)) < 0.01, qPrintable(QString::number(at)));
    QVERIFY(std::abs(slider->value() - mid) <= 2);
  }
};

int main(int argc, char** argv) { return guiTestMain<ResearchViewsTest>("larmor-gui-research-tests", argc, argv); }

#include "test_research_views.moc"
