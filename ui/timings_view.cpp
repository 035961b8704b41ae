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
    for (const char* key : {"residual", "residuals", "relative_residual"}) {
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
  for (QChartView* v : {stages_, convergence_, lcurve_}) v->setRenderHint(QPainter::Antialiasing);

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
  sweepButton->setToolTip(tr("Reconstruct with CG at log-spaced λ (the current settings otherwise)"));
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
  line->setName(tr("relative residual"));
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
  y->setTitleText(tr("residual"));
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
  for (const auto& p : points) {
    if (!p.is_object() || !p.contains("lambda")) continue;
    const double l = p["lambda"].get<double>();
    if (p.contains("residual_norm") && p.contains("prior_norm")) {
      const double res = p["residual_norm"].get<double>(), reg = p["prior_norm"].get<double>();
      if (res > 0 && reg > 0) sweep_.append({l, res, reg, true});
    } else if (p.contains("percent_error")) {
      sweep_.append({l, l, p["percent_error"].get<double>(), false});
    }
  }
  redrawSweep();
}

void TimingsView::redrawSweep() {
  QChart* c = lcurve_->chart();
  clearChart(c);
  if (sweep_.isEmpty()) {
    c->setTitle(tr("L-curve — run a λ sweep (iterative method)"));
    c->legend()->hide();
    return;
  }
  const bool lcurve = sweep_.front().lcurve;
  auto* line = new QLineSeries;
  QVector<SweepPoint> pts = sweep_;
  std::sort(pts.begin(), pts.end(), [](const SweepPoint& a, const SweepPoint& b) { return a.lambda < b.lambda; });
  double xlo = 1e300, xhi = 0, ylo = 1e300, yhi = -1e300;
  // One marker per λ, labelled with its λ, with a tooltip, and clickable: a click runs that λ.
  QList<QScatterSeries*> dots;
  for (const auto& p : pts) {
    if (p.lcurve != lcurve) continue;
    line->append(p.x, p.y);
    auto* dot = new QScatterSeries;
    dot->setMarkerSize(9);
    dot->append(p.x, p.y);
    dot->setPointLabelsFormat(QStringLiteral("λ %1").arg(p.lambda, 0, 'g', 2));
    dot->setPointLabelsVisible(true);
    dot->setPointLabelsColor(QColor(220, 226, 235));
    const double lambda = p.lambda, px = p.x, py = p.y;
    connect(dot, &QScatterSeries::clicked, this, [this, lambda] { emit lambdaPicked(lambda); });
    connect(dot, &QScatterSeries::hovered, this, [this, lambda, px, py, lcurve](const QPointF&, bool on) {
      if (!on) return;
      QToolTip::showText(QCursor::pos(), lcurve ? tr("λ %1: ‖Fρ − d‖ %2, ‖Wρ‖ %3 — click to reconstruct with this λ")
                                                      .arg(lambda, 0, 'g', 3).arg(px, 0, 'g', 4).arg(py, 0, 'g', 4)
                                                : tr("λ %1: %2 % error — click to reconstruct with this λ")
                                                      .arg(lambda, 0, 'g', 3).arg(py, 0, 'f', 2));
    });
    dots << dot;
    xlo = std::min(xlo, p.x), xhi = std::max(xhi, p.x), ylo = std::min(ylo, p.y), yhi = std::max(yhi, p.y);
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
  QAbstractAxis* y = lcurve ? axisFor(ylo, yhi, tr("prior ‖Wρ‖")) : axisFor(std::max(0.0, ylo), yhi, tr("percent error"));
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  line->attachAxis(x);
  line->attachAxis(y);
  for (auto* d : dots) {
    d->attachAxis(x);
    d->attachAxis(y);
  }
  c->legend()->hide();
  c->setTitle(lcurve ? tr("L-curve (%1 λ values)").arg(pts.size())
                     : tr("λ sweep: error against the reference (%1 λ values)").arg(pts.size()));
}

}  // namespace larmor::ui
