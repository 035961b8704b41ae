#pragma once
// The time-intensity curve of a series (the DCE / perfusion view): the mean magnitude in the rectangle of
// interest over the frames (model/time_curve.hpp), the truth's curve beside it when the data have one
// (a simulated series), and the current frame marked. Drawn with QPainter; shown under the image for data
// with frames.
#include <QString>
#include <QWidget>

#include "time_curve.hpp"

namespace larmor::ui {

class TimeCurveView : public QWidget {
  Q_OBJECT
 public:
  explicit TimeCurveView(QWidget* parent = nullptr);
  /// The curve of the rectangle described by `roiText` ("x 10–20, y 5–12").
  void setCurve(model::TimeCurve curve, const QString& roiText);
  /// No curve: says how to get one.
  void clearCurve(const QString& hint);
  void setCurrentFrame(int frame);
  const model::TimeCurve& curve() const { return curve_; }
  /// The frames with a value (finite) in the reconstruction's curve.
  int pointCount() const;
  QSize sizeHint() const override { return {480, 190}; }
  QSize minimumSizeHint() const override { return {240, 130}; }

 protected:
  void paintEvent(QPaintEvent* e) override;

 private:
  model::TimeCurve curve_;
  QString roiText_, hint_;
  int frame_ = 0;
};

}  // namespace larmor::ui
