// The oblique plane view (oblique_view.hpp): the picture from model/oblique_plane.hpp, coloured by the viewer's
// window and colour map, drawn with the aspect of its samples (square: one step in both directions).
#include "oblique_view.hpp"

#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QSlider>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "colormaps.hpp"

namespace larmor::ui {

namespace {

constexpr int kControlsHeight = 30;

QSlider* angleSlider(const QString& name, const QString& tip) {
  auto* s = new QSlider(Qt::Horizontal);
  s->setObjectName(name);
  s->setRange(-90, 90);
  s->setToolTip(tip);
  return s;
}

}  // namespace

ObliqueView::ObliqueView(QWidget* parent) : QWidget(parent) {
  setObjectName("obliqueView");
  setMinimumSize(160, 160);
  setMouseTracking(false);
  tilt_ = angleSlider("obliqueTilt", tr("Tilt: the plane turned about the image's x axis (degrees)"));
  spin_ = angleSlider("obliqueSpin", tr("Spin: the plane turned about the image's y axis (degrees)"));
  auto* row = new QHBoxLayout;
  row->setContentsMargins(6, 0, 6, 2);
  row->addWidget(new QLabel(tr("Tilt")));
  row->addWidget(tilt_, 1);
  row->addWidget(new QLabel(tr("Spin")));
  row->addWidget(spin_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addStretch(1);
  layout->addLayout(row);
  for (QSlider* s : {tilt_, spin_})
    connect(s, &QSlider::valueChanged, this, [this] { setAngles(tilt_->value(), spin_->value()); });
  setColormap("grey");
  syncSliders();
}

void ObliqueView::setVolume(std::shared_ptr<const RArray> values, std::array<double, 3> spacingMm) {
  values_ = std::move(values);
  spacing_ = spacingMm;
  if (values_) {
    const Shape& s = values_->shape();
    side_ = model::obliqueSide(s, spacing_);
    step_ = model::obliqueStep(spacing_);
    bool inside = true;
    for (std::size_t k = 0; k < 3; ++k) inside &= plane_.centre[k] >= 0 && plane_.centre[k] <= s[k] - 1;
    if (!inside) plane_.centre = {0.5 * (s[0] - 1), 0.5 * (s[1] - 1), 0.5 * (s[2] - 1)};
  }
  stale_ = true;
  update();
}

void ObliqueView::setWindow(double lo, double hi) {
  lo_ = lo;
  hi_ = hi > lo ? hi : lo + 1e-12;
  update();
}

void ObliqueView::setColormap(const QString& name) {
  const QVector<ColormapAnchor> anchors = colormapAnchors(name);
  for (int i = 0; i < 256; ++i) {
    const double t = i / 255.0;
    auto hi = std::find_if(anchors.begin(), anchors.end(), [t](const ColormapAnchor& a) { return a.position >= t; });
    if (hi == anchors.end()) hi = anchors.end() - 1;
    const auto lo = hi == anchors.begin() ? hi : hi - 1;
    const double w = hi->position > lo->position ? (t - lo->position) / (hi->position - lo->position) : 0;
    auto mix = [w](int a, int b) { return static_cast<int>(std::lround(a + w * (b - a))); };
    lut_[static_cast<std::size_t>(i)] = qRgb(mix(lo->color.red(), hi->color.red()), mix(lo->color.green(), hi->color.green()),
                                             mix(lo->color.blue(), hi->color.blue()));
  }
  update();
}

void ObliqueView::setCentre(std::array<int, 3> voxel) {
  plane_.centre = {double(voxel[0]), double(voxel[1]), double(voxel[2])};
  stale_ = true;
  update();
}

void ObliqueView::setAngles(double tiltDeg, double spinDeg) {
  tiltDeg = std::clamp(tiltDeg, -90.0, 90.0);
  spinDeg = std::clamp(spinDeg, -90.0, 90.0);
  if (tiltDeg == plane_.tiltDeg && spinDeg == plane_.spinDeg) return;
  plane_.tiltDeg = tiltDeg;
  plane_.spinDeg = spinDeg;
  syncSliders();
  stale_ = true;
  update();
  emit anglesChanged(tiltDeg, spinDeg);
}

void ObliqueView::syncSliders() {
  for (auto [s, v] : {std::pair{tilt_, plane_.tiltDeg}, std::pair{spin_, plane_.spinDeg}}) {
    s->blockSignals(true);
    s->setValue(static_cast<int>(std::lround(v)));
    s->blockSignals(false);
  }
  update();  // the title carries the angles
}

void ObliqueView::resample() {
  stale_ = false;
  picture_ = values_ ? model::resampleOblique(*values_, spacing_, plane_, side_, side_, step_) : RArray();
}

const RArray& ObliqueView::picture() {
  if (stale_) resample();
  return picture_;
}

QRectF ObliqueView::pictureRect() const {
  const double h = std::max(20, height() - kControlsHeight - 4), w = std::max(20, width() - 4);
  const double d = std::min(w, h);
  return {(width() - d) / 2, 2 + (h - d) / 2, d, d};
}

QPointF ObliqueView::screenOf(double a, double b) const {
  const QRectF r = pictureRect();
  const double px = r.width() / std::max(1, side_);
  return {r.left() + (a + 0.5) * px, r.top() + (b + 0.5) * px};
}

std::array<int, 3> ObliqueView::voxelAt(QPointF pos) const {
  const QRectF r = pictureRect();
  const double px = r.width() / std::max(1, side_);
  const auto q = model::obliquePoint(plane_, spacing_, side_, side_, step_, (pos.x() - r.left()) / px - 0.5,
                                     (pos.y() - r.top()) / px - 0.5);
  std::array<int, 3> v{};
  for (std::size_t k = 0; k < 3; ++k)
    v[k] = values_ ? std::clamp(static_cast<int>(std::lround(q[k])), 0, static_cast<int>(values_->shape()[k]) - 1) : 0;
  return v;
}

void ObliqueView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::black);
  if (!values_) {
    p.setPen(QColor(150, 160, 175));
    p.drawText(rect(), Qt::AlignCenter, tr("Oblique plane: a 3D image"));
    return;
  }
  const RArray& pic = picture();
  QImage img(side_, side_, QImage::Format_RGB32);
  const double scale = 255.0 / (hi_ - lo_);
  for (int b = 0; b < side_; ++b) {
    auto* line = reinterpret_cast<QRgb*>(img.scanLine(b));
    for (int a = 0; a < side_; ++a)
      line[a] = lut_[static_cast<std::size_t>(std::clamp((pic.data()[a + side_ * b] - lo_) * scale, 0.0, 255.0))];
  }
  const QRectF r = pictureRect();
  p.drawImage(r, img);
  const QPointF c = screenOf(0.5 * (side_ - 1), 0.5 * (side_ - 1));  // the cursor: the plane's centre
  p.setPen(QPen(QColor(255, 214, 10, 170), 1, Qt::DashLine));
  p.drawLine(QPointF(r.left(), c.y()), QPointF(r.right(), c.y()));
  p.drawLine(QPointF(c.x(), r.top()), QPointF(c.x(), r.bottom()));
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(QColor(226, 232, 240));
  p.drawText(QRectF(8, 6, width() - 16, 20), Qt::AlignLeft | Qt::AlignTop,
             tr("Oblique  %1 tilt %2°, spin %3°").arg(QChar(0x00B7)).arg(plane_.tiltDeg, 0, 'f', 0).arg(plane_.spinDeg, 0, 'f', 0));
}

void ObliqueView::mousePressEvent(QMouseEvent* e) {
  pressed_ = e->button() == Qt::LeftButton;
  press_ = e->position();
  pressTilt_ = plane_.tiltDeg;
  pressSpin_ = plane_.spinDeg;
}

void ObliqueView::mouseMoveEvent(QMouseEvent* e) {
  if (!pressed_ || (e->position() - press_).manhattanLength() <= 4) return;
  const QPointF d = e->position() - press_;  // half a degree a pixel
  setAngles(std::round(pressTilt_ - 0.5 * d.y()), std::round(pressSpin_ + 0.5 * d.x()));
}

void ObliqueView::mouseReleaseEvent(QMouseEvent* e) {
  if (pressed_ && values_ && (e->position() - press_).manhattanLength() <= 4 && pictureRect().contains(e->position())) {
    const auto v = voxelAt(e->position());
    emit clicked(v[0], v[1], v[2]);
  }
  pressed_ = false;
}

}  // namespace larmor::ui
