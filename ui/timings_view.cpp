#include "timings_view.hpp"

#include "run_history.hpp"

#include <QDoubleValidator>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QCursor>
#include <QFontMetricsF>
#include <QToolTip>
#include <QVBoxLayout>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QHorizontalStackedBarSeries>
#include <QtCharts/QLineSeries>
#include <QtCharts/QLogValueAxis>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <cmath>

namespace larmor::ui {
namespace {

const QColor kGpu(76, 187, 120), kCpu(96, 156, 222);

QChart* newChart(const QString& title) {
  auto* c = new QChart;
  c->setTheme(QChart::ChartThemeDark);
  c->setBackgroundRoundness(0);
  c->setTitle(title);
  c->setMargins(QMargins(4, 4, 4, 4));
  c->legend()->setAlignment(Qt::AlignBottom);
  return c;
}

void clearChart(QChart* c) {
  c->removeAllSeries();
  for (QAbstractAxis* a : c->axes()) {
    c->removeAxis(a);
    delete a;
  }
}

void collectResiduals(const nlohmann::json& j, QVector<QPointF>& out) {
  if (!out.isEmpty()) return;
  if (j.is_object()) {
    for (const char* key : {"residual", "residuals", "relative_residual", "relative_change"}) {  // CG; FISTA
      if (j.contains(key) && j[key].is_array() && !j[key].empty() && j[key][0].is_number()) {
        int i = 0;
        for (const auto& v : j[key]) out.append(QPointF(++i, v.get<double>()));
        return;
      }
    }
    for (const auto& [k, v] : j.items()) {
      // A history as a list of objects: [{"iteration": 1, "residual": 0.5}, ...]
      if (v.is_array() && !v.empty() && v[0].is_object() && v[0].contains("residual")) {
        int i = 0;
        for (const auto& e : v) {
          ++i;
          if (!e.contains("residual") || !e["residual"].is_number()) continue;
          const double it = e.contains("iteration") && e["iteration"].is_number() ? e["iteration"].get<double>() : i;
          out.append(QPointF(it, e["residual"].get<double>()));
        }
        return;
      }
      collectResiduals(v, out);
      if (!out.isEmpty()) return;
    }
  }
}

/// ‖Fρ−d‖ and ‖Wρ‖ when the engine reports them (an L-curve point), found by key anywhere.
bool findLCurvePoint(const nlohmann::json& j, double& residual, double& reg) {
  if (!j.is_object()) return false;
  if (j.contains("data_fidelity") && j.contains("regularization") && j["data_fidelity"].is_number() &&
      j["regularization"].is_number()) {
    residual = j["data_fidelity"].get<double>();
    reg = j["regularization"].get<double>();
    return true;
  }
  for (const auto& [k, v] : j.items())
    if (findLCurvePoint(v, residual, reg)) return true;
  return false;
}

}  // namespace

namespace {
// ReconResult may carry the solver's history as a member of its own (ImageSet has one); read it when
// this build's ReconResult has it.
template <class R>
void fromMember(const R& r, QVector<QPointF>& out) {
  if constexpr (requires { r.convergence.is_object(); }) collectResiduals(r.convergence, out);
}
}  // namespace

// Greedy, in pixels: the ends first (they name the λ range), then each label that covers no label kept.
void hideOverlappingPointLabels(QChart* c) {
  QList<QScatterSeries*> dots;
  for (QAbstractSeries* s : c->series())
    if (auto* d = qobject_cast<QScatterSeries*>(s); d && d->count() == 1) dots << d;
  QVector<int> order;
  if (!dots.isEmpty()) order << 0;
  if (dots.size() > 1) order << static_cast<int>(dots.size()) - 1;
  for (int i = 1; i + 1 < dots.size(); ++i) order << i;
  QVector<QRectF> kept;
  for (int i : order) {
    QScatterSeries* d = dots[i];
    const QRectF r = pointLabelRect(c, d);
    const bool free = std::none_of(kept.begin(), kept.end(), [&](const QRectF& k) { return k.intersects(r); });
    d->setPointLabelsVisible(free);
    if (free) kept << r;
  }
}

QRectF pointLabelRect(QChart* c, QScatterSeries* dot) {
  const QFontMetricsF fm(dot->pointLabelsFont());
  const QSizeF size = fm.size(0, dot->pointLabelsFormat()) + QSizeF(4, 2);
  const QPointF p = c->mapToPosition(dot->at(0), dot);
  return QRectF(p.x() - size.width() / 2, p.y() - dot->markerSize() / 2 - size.height(), size.width(), size.height());
}

QVector<QPointF> convergenceHistory(const recon::ReconResult& r) {
  QVector<QPointF> out;
  fromMember(r, out);
  if (!out.isEmpty()) return out;
  collectResiduals(r.provenance, out);
  if (out.isEmpty()) collectResiduals(r.metrics, out);
  return out;
}

TimingsView::TimingsView(QWidget* parent) : QWidget(parent) {
  summary_ = new QLabel(tr("No reconstruction yet."));
  summary_->setObjectName("timingSummary");
  summary_->setWordWrap(true);
  stages_ = new QChartView(newChart(tr("Stage timings")));
  convergence_ = new QChartView(newChart(tr("Convergence")));
  lcurve_ = new QChartView(newChart(tr("λ sweep")));
  error_ = new QChartView(newChart(tr("Error versus λ")));
  error_->setVisible(false);
  for (QChartView* v : {stages_, convergence_, lcurve_, error_}) {
    v->setRenderHint(QPainter::Antialiasing);
    // Labels that would cover one another (the L-curve's corner) are left to the dots' tooltips.
    connect(v->chart(), &QChart::plotAreaChanged, this, [c = v->chart()] { hideOverlappingPointLabels(c); });
  }

  sweepFrom_ = new QLineEdit(QStringLiteral("1e-5"));
  sweepTo_ = new QLineEdit(QStringLiteral("1e1"));
  for (QLineEdit* e : {sweepFrom_, sweepTo_}) {
    auto* v = new QDoubleValidator(0, 1e12, 12, e);
    v->setNotation(QDoubleValidator::ScientificNotation);
    e->setValidator(v);
    e->setMaximumWidth(70);
  }
  sweepCount_ = new QSpinBox;
  sweepCount_->setRange(2, 40);
  sweepCount_->setValue(7);
  auto* sweepButton = new QPushButton(QIcon(":/icons/sweep.svg"), tr("Run λ sweep"));
  sweepButton->setToolTip(tr("Reconstruct with the iterative method (CG or compressed sensing) at log-spaced λ, "
                             "the current settings otherwise: the L-curve, and the error where a truth exists"));
  auto* sweepRow = new QHBoxLayout;
  sweepRow->addWidget(new QLabel(tr("λ from")));
  sweepRow->addWidget(sweepFrom_);
  sweepRow->addWidget(new QLabel(tr("to")));
  sweepRow->addWidget(sweepTo_);
  sweepRow->addWidget(new QLabel(tr("points")));
  sweepRow->addWidget(sweepCount_);
  sweepRow->addWidget(sweepButton);
  sweepRow->addStretch(1);
  connect(sweepButton, &QPushButton::clicked, this, [this] { emit sweepRequested(sweepLambdas()); });

  auto* grid = new QGridLayout(this);
  grid->setContentsMargins(4, 4, 4, 4);
  // Stage timings across the top (stage names need width), convergence and the λ sweep below.
  grid->addWidget(summary_, 0, 0, 1, 2);
  grid->addWidget(stages_, 1, 0, 1, 2);
  grid->addWidget(convergence_, 2, 0);
  auto* right = new QWidget;
  auto* rl = new QVBoxLayout(right);
  rl->setContentsMargins(0, 0, 0, 0);
  rl->addWidget(lcurve_, 1);
  rl->addWidget(error_, 1);
  rl->addLayout(sweepRow);
  grid->addWidget(right, 2, 1);
  grid->setColumnStretch(0, 1);
  grid->setColumnStretch(1, 1);
  grid->setRowStretch(1, 5);
  grid->setRowStretch(2, 4);
  setConvergence({}, {});
  redrawSweep();
}

QVector<double> TimingsView::sweepLambdas() const {
  const double a = std::max(1e-12, sweepFrom_->text().toDouble()), b = std::max(a, sweepTo_->text().toDouble());
  const int n = sweepCount_->value();
  QVector<double> l;
  for (int i = 0; i < n; ++i) l.append(std::pow(10.0, std::log10(a) + (std::log10(b) - std::log10(a)) * i / (n - 1)));
  return l;
}

void TimingsView::showResult(const recon::ReconResult& r, const QString& label) {
  QChart* c = stages_->chart();
  clearChart(c);
  const auto& stages = r.timings.stages();
  auto* gpu = new QBarSet(tr("GPU"));
  auto* cpu = new QBarSet(tr("CPU"));
  gpu->setColor(kGpu);
  cpu->setColor(kCpu);
  gpu->setBorderColor(kGpu);
  cpu->setBorderColor(kCpu);
  QStringList names;
  double maxMs = 0;
  for (const auto& st : stages) maxMs = std::max(maxMs, st.milliseconds);
  // Seconds once a stage takes a second: the axis reads "1.5", not "1.5e+03".
  const bool seconds = maxMs >= 1000;
  const double unit = seconds ? 1e-3 : 1.0;
  // Bars from the top in pipeline order (a horizontal bar chart draws its first category at the bottom).
  for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
    const bool onGpu = it->device.rfind("cuda", 0) == 0;
    // Each bar's duration as people read it ("1.41 s", "23 ms") beside its name, not Qt's "1.41e+03".
    QString name = QStringLiteral("%1  %2").arg(QString::fromStdString(it->stage),
                                                QString::fromStdString(model::formatDuration(it->milliseconds)));
    // Same stage names can repeat (per slice); the axis needs them unique.
    while (names.contains(name)) name += QChar(0x200B);
    names << name;
    gpu->append(onGpu ? it->milliseconds * unit : 0.0);
    cpu->append(onGpu ? 0.0 : it->milliseconds * unit);
  }
  auto* series = new QHorizontalStackedBarSeries;
  series->append(gpu);
  series->append(cpu);
  series->setLabelsVisible(false);  // the durations are in the stage names
  c->addSeries(series);
  auto* cats = new QBarCategoryAxis;
  cats->append(names);
  auto* ms = new QValueAxis;
  ms->setTitleText(seconds ? tr("seconds") : tr("milliseconds"));
  ms->setRange(0, maxMs > 0 ? maxMs * unit * 1.08 : 1);
  ms->applyNiceNumbers();
  ms->setLabelFormat("%g");
  c->addAxis(cats, Qt::AlignLeft);
  c->addAxis(ms, Qt::AlignBottom);
  series->attachAxis(cats);
  series->attachAxis(ms);
  const bool anyGpu = std::any_of(stages.begin(), stages.end(), [](const StageTiming& s) { return s.device.rfind("cuda", 0) == 0; });
  c->setTitle(tr("Stage timings — %1").arg(label));
  QString text = tr("<b>%1</b>: %2 in total on <b>%3</b> (%4)")
                     .arg(label.toHtmlEscaped())
                     .arg(QString::fromStdString(model::formatDuration(r.timings.totalMilliseconds())))
                     .arg(QString::fromStdString(r.device), QString::fromStdString(r.deviceName).toHtmlEscaped());
  if (!anyGpu) text += tr(" — <span style='color:#f0b040'>every stage ran on the CPU</span>");
  if (!r.deviceNotice.empty()) text += QStringLiteral("<br>") + QString::fromStdString(r.deviceNotice).toHtmlEscaped();
  summary_->setText(text);
  setConvergence(convergenceHistory(r), label);
}

QString TimingsView::summaryText() const { return summary_->text(); }

void TimingsView::clearResult() {
  clearChart(stages_->chart());
  stages_->chart()->setTitle(tr("Stage timings — run a reconstruction"));
  summary_->setText(tr("No reconstruction yet."));
  setConvergence({}, {});
}

void TimingsView::setConvergence(const QVector<QPointF>& points, const QString& label) {
  QChart* c = convergence_->chart();
  clearChart(c);
  if (points.isEmpty()) {
    c->setTitle(tr("Convergence — iterative runs show their residual here"));
    c->legend()->hide();
    return;
  }
  auto* line = new QLineSeries;
  line->setName(tr("relative residual (CG) or relative change of the image (FISTA)"));
  double lo = 1e300, hi = 0;
  for (const QPointF& p : points) {
    if (!(p.y() > 0)) continue;
    line->append(p);
    lo = std::min(lo, p.y());
    hi = std::max(hi, p.y());
  }
  line->setPointsVisible(points.size() < 80);
  c->addSeries(line);
  auto* x = new QValueAxis;
  x->setTitleText(tr("iteration"));
  x->setLabelFormat("%d");
  x->setRange(points.front().x(), std::max(points.back().x(), points.front().x() + 1));
  auto* y = new QLogValueAxis;
  y->setTitleText(tr("residual / change"));
  y->setLabelFormat("%.0e");
  if (hi > 0) y->setRange(lo / 1.5, hi * 1.5);
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  line->attachAxis(x);
  line->attachAxis(y);
  c->legend()->hide();
  c->setTitle(tr("Convergence — %1").arg(label));
}

void TimingsView::clearSweep() {
  sweep_.clear();
  redrawSweep();
}

void TimingsView::setSweep(const nlohmann::json& points) {
  sweep_.clear();
  auto number = [](const nlohmann::json& p, const char* key, double otherwise) {
    return p.contains(key) && p[key].is_number() ? p[key].get<double>() : otherwise;
  };
  for (const auto& p : points) {
    if (!p.is_object() || !p.contains("lambda")) continue;
    SweepPoint s;
    s.lambda = p["lambda"].get<double>();
    s.residual = number(p, "residual_norm", 0);
    s.prior = number(p, "prior_norm", 0);
    s.error = number(p, "percent_error", std::nan(""));
    sweep_.append(s);
  }
  redrawSweep();
}

void TimingsView::redrawSweep() {
  QVector<SweepPoint> pts = sweep_;
  std::sort(pts.begin(), pts.end(), [](const SweepPoint& a, const SweepPoint& b) { return a.lambda < b.lambda; });
  QVector<SweepPoint> lcurve, error;
  for (const SweepPoint& p : pts) {
    if (p.residual > 0 && p.prior > 0) lcurve.append(p);
    if (std::isfinite(p.error)) error.append(p);
  }
  plotSweep(lcurve_->chart(), lcurve, true);
  plotSweep(error_->chart(), error, false);
  error_->setVisible(!error.isEmpty());
  // With a sweep on show its two charts get the larger share of the height (the stage bars need little).
  if (auto* grid = qobject_cast<QGridLayout*>(layout())) {
    grid->setRowStretch(1, pts.isEmpty() ? 5 : 2);
    grid->setRowStretch(2, pts.isEmpty() ? 4 : 5);
  }
  if (lcurve.isEmpty()) lcurve_->chart()->setTitle(tr("L-curve — run a λ sweep (CG or compressed sensing)"));
  else lcurve_->chart()->setTitle(tr("L-curve (%1 λ values)").arg(lcurve.size()));
  if (!error.isEmpty()) {
    const auto best = std::min_element(error.begin(), error.end(), [](const SweepPoint& a, const SweepPoint& b) { return a.error < b.error; });
    error_->chart()->setTitle(tr("Error against the truth versus λ (lowest %1 % at λ %2)")
                                  .arg(best->error, 0, 'f', 2).arg(best->lambda, 0, 'g', 2));
  }
}

// One chart of the sweep: its series, tooltips, axes (log where the values span decades) and labels.
void TimingsView::plotSweep(QChart* c, const QVector<SweepPoint>& pts, bool lcurve) {
  clearChart(c);
  c->legend()->hide();
  if (pts.isEmpty()) return;
  auto* line = new QLineSeries;
  double xlo = 1e300, xhi = 0, ylo = 1e300, yhi = -1e300;
  // One marker per λ, labelled with its λ, with a tooltip, and clickable: a click runs that λ.
  QList<QScatterSeries*> dots;
  for (const auto& p : pts) {
    const double px = lcurve ? p.residual : p.lambda, py = lcurve ? p.prior : p.error;
    line->append(px, py);
    auto* dot = new QScatterSeries;
    dot->setMarkerSize(9);
    dot->append(px, py);
    dot->setPointLabelsFormat(QStringLiteral("λ %1").arg(p.lambda, 0, 'g', 2));
    dot->setPointLabelsVisible(true);
    dot->setPointLabelsColor(QColor(220, 226, 235));
    const double lambda = p.lambda;
    connect(dot, &QScatterSeries::clicked, this, [this, lambda] { emit lambdaPicked(lambda); });
    connect(dot, &QScatterSeries::hovered, this, [this, lambda, px, py, lcurve](const QPointF&, bool on) {
      if (!on) return;
      QToolTip::showText(QCursor::pos(), lcurve ? tr("λ %1: ‖Fρ − d‖ %2, prior %3 — click to reconstruct with this λ")
                                                      .arg(lambda, 0, 'g', 3).arg(px, 0, 'g', 4).arg(py, 0, 'g', 4)
                                                : tr("λ %1: %2 % error — click to reconstruct with this λ")
                                                      .arg(lambda, 0, 'g', 3).arg(py, 0, 'f', 2));
    });
    dots << dot;
    xlo = std::min(xlo, px), xhi = std::max(xhi, px), ylo = std::min(ylo, py), yhi = std::max(yhi, py);
  }
  c->addSeries(line);
  for (auto* d : dots) c->addSeries(d);
  // A log axis labels only powers of ten: within a decade it would show no numbers at
  // all. Linear axes with values then; log axes when the values span decades.
  auto axisFor = [](double lo, double hi, const QString& title) -> QAbstractAxis* {
    if (lo > 0 && hi / lo > 20) {
      auto* a = new QLogValueAxis;
      a->setLabelFormat("%.0e");
      a->setMinorTickCount(8);
      a->setRange(lo / 1.5, hi * 1.5);
      a->setTitleText(title);
      return a;
    }
    auto* a = new QValueAxis;
    const double pad = std::max(1e-12, 0.1 * (hi - lo) + 0.02 * std::abs(hi));
    a->setRange(std::max(0.0, lo - pad), hi + pad);
    a->setLabelFormat("%.3g");
    a->setTickCount(5);
    a->setTitleText(title);
    return a;
  };
  QAbstractAxis* x = axisFor(xlo, xhi, lcurve ? tr("data misfit ‖Fρ − d‖") : tr("λ"));
  QAbstractAxis* y = lcurve ? axisFor(ylo, yhi, tr("prior ‖Wρ‖ (cs: TV or wavelet ℓ1)")) : axisFor(std::max(0.0, ylo), yhi, tr("percent error"));
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  line->attachAxis(x);
  line->attachAxis(y);
  for (auto* d : dots) {
    d->attachAxis(x);
    d->attachAxis(y);
  }
  hideOverlappingPointLabels(c);
}

}  // namespace larmor::ui
