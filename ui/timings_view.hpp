#pragma once
// The timings tab: time per pipeline stage (Qt Charts), each bar coloured by the device that ran it
// (GPU green, CPU blue); the iteration/residual plot of iterative runs; the L-curve of a λ sweep (cg or cs)
// and, where a truth exists, its percent error versus λ.
#include <QPointF>
#include <QRectF>
#include <QVector>
#include <QWidget>

#include "larmor/recon/recon.hpp"

class QChart;
class QChartView;
class QScatterSeries;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace larmor::ui {

/// (iteration, residual) pairs the engine recorded: the iterative solver's history ({"residual": [...]},
/// solve::CgResult::toJson) wherever the result carries it (a `convergence` member, the provenance or
/// the metrics JSON), or a list of {"iteration", "residual"} objects.
QVector<QPointF> convergenceHistory(const recon::ReconResult& r);

/// Hides the point labels of a chart's one-point scatter series (the λ sweep's dots) that would cover a
/// label already shown: the first and the last first, then in order. Their tooltips still name the λ.
void hideOverlappingPointLabels(QChart* c);
/// Where QtCharts draws a one-point scatter series' label: centred above its marker (scene coordinates).
QRectF pointLabelRect(QChart* c, QScatterSeries* dot);

class TimingsView : public QWidget {
  Q_OBJECT
 public:
  explicit TimingsView(QWidget* parent = nullptr);
  void showResult(const recon::ReconResult& r, const QString& label);
  /// Adds residuals seen in the progress text when the result carries none.
  void setConvergence(const QVector<QPointF>& points, const QString& label);
  void clearSweep();
  /// Forgets the shown run's stages and convergence (new data).
  void clearResult();
  /// The stage chart's summary line (tests).
  QString summaryText() const;
  /// The λ sweep's points: {"lambda", "residual_norm", "prior_norm"} (the L-curve) and/or {"lambda",
  /// "percent_error"} (error against the reference), as makeLambdaSweepTask returns them.
  void setSweep(const nlohmann::json& points);
  int sweepPoints() const { return static_cast<int>(sweep_.size()); }
  QChartView* stageChart() const { return stages_; }
  QChartView* lcurveChart() const { return lcurve_; }
  /// Percent error against the truth versus λ, from the sweep's points (hidden when the data have no truth).
  QChartView* errorChart() const { return error_; }
  QVector<double> sweepLambdas() const;

 signals:
  void sweepRequested(const QVector<double>& lambdas);
  /// A point of the λ sweep was clicked: reconstruct with that λ.
  void lambdaPicked(double lambda);

 private:
  void redrawSweep();
  QChartView* stages_ = nullptr;
  QChartView* convergence_ = nullptr;
  QChartView* lcurve_ = nullptr;
  QLabel* summary_ = nullptr;
  QLineEdit* sweepFrom_ = nullptr;
  QLineEdit* sweepTo_ = nullptr;
  QSpinBox* sweepCount_ = nullptr;
  struct SweepPoint {
    double lambda = 0;
    double residual = 0, prior = 0;  ///< an L-curve point when both > 0
    double error = 0;                ///< percent error against the truth; NaN: none
  };
  QVector<SweepPoint> sweep_;
  QChartView* error_ = nullptr;
  /// One sweep chart: (x, y) per λ, a labelled clickable dot each; lcurve: misfit vs prior, else λ vs error.
  void plotSweep(QChart* c, const QVector<SweepPoint>& pts, bool lcurve);
};

}  // namespace larmor::ui
