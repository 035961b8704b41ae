// The time-intensity curve (time_curve_view.hpp): frames along x, the mean magnitude along y from 0 to a
// little above the largest value of either curve.
#include "time_curve_view.hpp"

#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>
#include <functional>

namespace larmor::ui {

namespace {

const QColor kBackground(18, 21, 27), kAxis(120, 130, 145), kText(210, 218, 228);
const QColor kRecon(80, 220, 255), kTruth(255, 170, 60), kFrame(255, 214, 10);

/// The curve through the finite points (a gap where a frame has no value).
QPainterPath pathOf(const std::vector<double>& v, const std::function<QPointF(int, double)>& at) {
  QPainterPath p;
  bool open = false;
  for (std::size_t t = 0; t < v.size(); ++t) {
    if (!std::isfinite(v[t])) {
      open = false;
      continue;
    }
    const QPointF q = at(static_cast<int>(t), v[t]);
    if (open) p.lineTo(q);
    else p.moveTo(q);
    open = true;
  }
  return p;
}

}  // namespace

TimeCurveView::TimeCurveView(QWidget* parent) : QWidget(parent) {
  setObjectName("timeCurve");
  setMinimumHeight(130);
  clearCurve({});
}

void TimeCurveView::setCurve(model::TimeCurve curve, const QString& roiText) {
  curve_ = std::move(curve);
  roiText_ = roiText;
  hint_.clear();
  update();
}

void TimeCurveView::clearCurve(const QString& hint) {
  curve_ = {};
  roiText_.clear();
  hint_ = hint.isEmpty() ? tr("Time-intensity curve: draw a rectangle on the image (ROI button, or ctrl+drag)") : hint;
  update();
}

void TimeCurveView::setCurrentFrame(int frame) {
  frame_ = frame;
  update();
}

int TimeCurveView::pointCount() const {
  return static_cast<int>(std::count_if(curve_.values.begin(), curve_.values.end(), [](double v) { return std::isfinite(v); }));
}

void TimeCurveView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), kBackground);
  p.setPen(kText);
  const int n = static_cast<int>(std::max(curve_.values.size(), curve_.truth.size()));
  if (n == 0) {
    p.drawText(rect().adjusted(8, 4, -8, -4), Qt::AlignCenter | Qt::TextWordWrap, hint_);
    return;
  }
  const QFontMetrics fm = p.fontMetrics();
  const QRectF plot(QPointF(fm.horizontalAdvance(QStringLiteral("0.000e-00")) + 4.0, fm.height() * 1.6),
                    QPointF(width() - 12.0, height() - fm.height() * 1.8));
  double top = 0;
  for (const auto* c : {&curve_.values, &curve_.truth})
    for (double v : *c)
      if (std::isfinite(v)) top = std::max(top, v);
  top = top > 0 ? top * 1.1 : 1;
  const auto at = [&](int t, double v) {
    const double x = n > 1 ? plot.left() + plot.width() * t / (n - 1) : plot.center().x();
    return QPointF(x, plot.bottom() - plot.height() * v / top);
  };
  // Axes, the value ticks (0, half, top) and the frame numbers.
  p.setPen(kAxis);
  p.drawLine(plot.bottomLeft(), plot.bottomRight());
  p.drawLine(plot.bottomLeft(), plot.topLeft());
  p.setPen(kText);
  for (double f : {0.0, 0.5, 1.0}) {
    const double v = f * top;
    const QPointF q = at(0, v);
    p.drawText(QRectF(0, q.y() - fm.height() / 2.0, plot.left() - 4, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
               QString::number(v, 'g', 3));
  }
  const int step = std::max(1, n / 12);
  for (int t = 0; t < n; t += step) {
    const QPointF q = at(t, 0);
    p.drawText(QRectF(q.x() - 20, plot.bottom() + 2, 40, fm.height()), Qt::AlignHCenter | Qt::AlignTop, QString::number(t + 1));
  }
  p.drawText(QRectF(plot.left(), plot.bottom() + 2 + fm.height() * 0.8, plot.width(), fm.height()),
             Qt::AlignRight | Qt::AlignTop, tr("frame"));
  // The current frame.
  if (frame_ >= 0 && frame_ < n) {
    p.setPen(QPen(kFrame, 1, Qt::DashLine));
    p.drawLine(at(frame_, 0), QPointF(at(frame_, 0).x(), plot.top()));
  }
  // The reconstruction (solid, filled points), the truth over it (dashed, larger hollow points: both show where
  // they agree).
  p.setPen(QPen(kRecon, 2));
  p.drawPath(pathOf(curve_.values, at));
  p.setBrush(kRecon);
  for (int t = 0; t < static_cast<int>(curve_.values.size()); ++t)
    if (std::isfinite(curve_.values[t])) p.drawEllipse(at(t, curve_.values[t]), 3, 3);
  if (!curve_.truth.empty()) {
    p.setBrush(Qt::NoBrush);
    p.setPen(QPen(kTruth, 1.4, Qt::DashLine));
    p.drawPath(pathOf(curve_.truth, at));
    p.setPen(QPen(kTruth, 1.4));
    for (int t = 0; t < static_cast<int>(curve_.truth.size()); ++t)
      if (std::isfinite(curve_.truth[t])) p.drawEllipse(at(t, curve_.truth[t]), 5.5, 5.5);
  }
  // Legend.
  p.setBrush(Qt::NoBrush);
  p.setPen(kRecon);
  const QString a = tr("● mean magnitude in the ROI") + (roiText_.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(roiText_));
  p.drawText(QPointF(plot.left() + 6, fm.ascent() + 2), a);
  if (!curve_.truth.empty()) {
    p.setPen(kTruth);
    p.drawText(QPointF(plot.left() + 16 + fm.horizontalAdvance(a), fm.ascent() + 2), tr("○ truth"));
  }
}

}  // namespace larmor::ui
