#pragma once
// The timings tab: time per pipeline stage (Qt Charts), each bar coloured by the device that ran it
// (GPU green, CPU blue); the iteration/residual plot of iterative runs; the L-curve of a λ sweep.
#include <QPointF>
#include <QVector>
#include <QWidget>

#include "larmor/recon/recon.hpp"

class QChart;
class QChartView;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace larmor::ui {

/// (iteration, residual) pairs the engine recorded: the iterative solver's history ({"residual": [...]},
/// solve::CgResult::toJson) wherever the result carries it (a `convergence` member, the provenance or
/// the metrics JSON), or a list of {"iteration", "residual"} objects.
QVector<QPointF> convergenceHistory(const recon::ReconResult& r);

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
  /// The λ sweep's points: {"lambda", "residual_norm", "prior_norm"} (an L-curve) or {"lambda",
  /// "percent_error"} (error against the reference), as makeLambdaSweepTask returns them.
  void setSweep(const nlohmann::json& points);
  int sweepPoints() const { return static_cast<int>(sweep_.size()); }
  QChartView* stageChart() const { return stages_; }
  QChartView* lcurveChart() const { return lcurve_; }
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
    double lambda, x, y;
    bool lcurve;
  };
  QVector<SweepPoint> sweep_;
};

}  // namespace larmor::ui
