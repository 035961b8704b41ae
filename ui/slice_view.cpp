#include "slice_view.hpp"

#include <QLinearGradient>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QFontMetrics>
#include <QPainter>
#include <QWheelEvent>
#include <cmath>

#include <vtkCamera.h>
#include <vtkImageData.h>
#include <vtkImageProperty.h>
#include <vtkImageSlice.h>
#include <vtkImageSliceMapper.h>
#include <vtkLookupTable.h>
#include <vtkRenderer.h>
#include <vtkSmartPointer.h>

#include "colormaps.hpp"

namespace larmor::ui {
namespace {

constexpr int kColorBarWidth = 78;
constexpr double kTextMargin = 26;  ///< pixels around a fitted image for the overlay text

/// How a plane is shown: the screen's right and up as (volume axis, sign), from the display
/// convention (model/display_orientation.hpp). With the identity orientation, axial keeps row 0 at the
/// top, as the engine's PNG files do; coronal and sagittal put z (the slice direction) upwards.
struct PlaneAxes {
  int right, rightSign, up, upSign;
};
PlaneAxes planeAxes(const model::PlaneLayout& l) { return {l.right, l.rightSign, l.up, l.upSign}; }

QString formatValue(double v) {
  const double a = std::abs(v);
  if (a != 0 && (a < 1e-3 || a >= 1e5)) return QString::number(v, 'e', 2);
  return QString::number(v, 'g', 4);
}

}  // namespace

struct SliceView::Vtk {
  vtkSmartPointer<vtkImageSliceMapper> mapper = vtkSmartPointer<vtkImageSliceMapper>::New();
  vtkSmartPointer<vtkImageSlice> actor = vtkSmartPointer<vtkImageSlice>::New();
  vtkSmartPointer<vtkLookupTable> lut = vtkSmartPointer<vtkLookupTable>::New();
};

/// Screen (widget pixels) <-> view plane (mm): u along the screen's right, v along its up.
struct SliceView::Geometry {
  PlaneAxes axes{};
  double u0 = 0, v0 = 0;  // view-plane coordinates of the image area's centre
  double mmPerPixel = 1;
  double areaWidth = 1, areaHeight = 1;
  double fitScale = 1;
};

SliceView::SliceView(Axis axis, QWidget* parent)
    : VtkCanvas(parent), vtk_(std::make_unique<Vtk>()), axis_(axis), layout_(model::planeLayout({}, axis)) {
  vtk_->actor->SetMapper(vtk_->mapper);
  vtk_->actor->GetProperty()->SetLookupTable(vtk_->lut);
  vtk_->actor->GetProperty()->UseLookupTableScalarRangeOn();
  // Nearest neighbour: a voxel is a voxel; smoothing would hide the artefacts the user looks for.
  vtk_->actor->GetProperty()->SetInterpolationTypeToNearest();
  vtk_->mapper->SetOrientation(axis_);
  vtk_->mapper->BorderOn();
  renderer()->GetActiveCamera()->ParallelProjectionOn();
  fillLookupTable(vtk_->lut, colormap_, lo_, hi_);
  setMouseTracking(true);
  setFocusPolicy(Qt::WheelFocus);
}

SliceView::~SliceView() = default;

void SliceView::setVolume(DisplayVolumePtr volume) {
  const bool first = !volume_;
  const bool reshaped = volume && volume_ && (volume->dim(axis_) != volume_->dim(axis_));
  volume_ = std::move(volume);
  if (!volume_) {
    renderer()->RemoveViewProp(vtk_->actor);
    requestRender();
    return;
  }
  vtk_->mapper->SetInputData(volume_->image());
  if (first || reshaped || slice_ >= sliceCount()) slice_ = sliceCount() / 2;
  vtk_->mapper->SetSliceNumber(slice_);
  if (!renderer()->HasViewProp(vtk_->actor)) renderer()->AddViewProp(vtk_->actor);
  placeholder_.clear();
  requestRender();
}

int SliceView::sliceCount() const { return volume_ ? volume_->dim(axis_) : 0; }

void SliceView::setSlice(int slice) {
  if (!volume_) return;
  slice = std::clamp(slice, 0, sliceCount() - 1);
  if (slice == slice_) return;
  slice_ = slice;
  vtk_->mapper->SetSliceNumber(slice_);
  requestRender();
  emit sliceChanged(slice_);
}

void SliceView::setWindow(double lo, double hi) {
  if (!(hi > lo)) hi = lo + 1e-6 * std::max(1.0, std::abs(lo));
  lo_ = lo;
  hi_ = hi;
  applyWindow();
}

void SliceView::setColormap(const QString& name) {
  colormap_ = name;
  applyWindow();
}

void SliceView::applyWindow() {
  fillLookupTable(vtk_->lut, colormap_, lo_, hi_);
  requestRender();
}

void SliceView::setColorBar(bool visible, const QString& title) {
  colorBar_ = visible;
  colorBarTitle_ = title;
  requestRender();
}

void SliceView::setTitle(const QString& title) {
  title_ = title;
  update();
}
void SliceView::setInfoText(const QString& text) {
  info_ = text;
  update();
}
void SliceView::setBadge(const QString& badge) {
  badge_ = badge;
  update();
}
void SliceView::setCrosshair(std::optional<std::array<int, 3>> voxel) {
  crosshair_ = voxel;
  update();
}
void SliceView::setPlaceholder(const QString& text) {
  placeholder_ = text;
  update();
}

void SliceView::setOrientation(const model::DisplayOrientation& o) {
  layout_ = model::planeLayout(o, axis_);
  requestRender();
}

QString SliceView::orientationLetters() const {
  return QString(QChar(layout_.left)) + QChar(layout_.rightLetter) + QChar(layout_.top) + QChar(layout_.bottom);
}

void SliceView::setViewTransform(double zoom, double panRight, double panUp) {
  zoom_ = std::clamp(zoom, 0.05, 64.0);
  panRight_ = panRight;
  panUp_ = panUp;
  requestRender();
}

void SliceView::resetView() {
  setViewTransform(1, 0, 0);
  emit viewTransformChanged(zoom_, panRight_, panUp_);
}

int SliceView::imageAreaWidth() const { return std::max(40, width() - (colorBar_ ? kColorBarWidth : 0)); }

SliceView::Geometry SliceView::geometry() const {
  Geometry g;
  g.axes = planeAxes(layout_);
  g.areaWidth = imageAreaWidth();
  g.areaHeight = std::max(1, height());
  if (!volume_) return g;
  auto extent = [&](int a) { return volume_->dim(a) * volume_->spacing(a); };
  auto centre = [&](int a) { return 0.5 * (volume_->dim(a) - 1) * volume_->spacing(a); };
  // Fit the whole plane inside margins that keep the title, the orientation letters and the window
  // text off the image, whichever of width and height is the tighter.
  const double usableH = std::max(20.0, g.areaHeight - 2.0 * kTextMargin);
  const double usableW = std::max(20.0, g.areaWidth - 2.0 * kTextMargin);
  g.fitScale = std::max(0.5 * extent(g.axes.up) * g.areaHeight / usableH, 0.5 * extent(g.axes.right) * g.areaHeight / usableW);
  const double scale = g.fitScale / zoom_;
  g.mmPerPixel = 2 * scale / g.areaHeight;
  g.u0 = g.axes.rightSign * centre(g.axes.right) - panRight_;
  g.v0 = g.axes.upSign * centre(g.axes.up) - panUp_;
  return g;
}

std::optional<std::array<int, 3>> SliceView::voxelAt(QPointF pos) const {
  if (pos.x() >= imageAreaWidth()) return std::nullopt;
  const auto v = nearestVoxel(pos);
  if (!v) return std::nullopt;
  // Outside the image when clamping moved it by more than the half voxel that rounding allows.
  const Geometry g = geometry();
  const double u = g.u0 + (pos.x() - g.areaWidth / 2) * g.mmPerPixel;
  const double w = g.v0 + (g.areaHeight / 2 - pos.y()) * g.mmPerPixel;
  const long i = std::lround(g.axes.rightSign * u / volume_->spacing(g.axes.right));
  const long j = std::lround(g.axes.upSign * w / volume_->spacing(g.axes.up));
  if (i != (*v)[static_cast<std::size_t>(g.axes.right)] || j != (*v)[static_cast<std::size_t>(g.axes.up)]) return std::nullopt;
  return v;
}

std::optional<std::array<int, 3>> SliceView::nearestVoxel(QPointF pos) const {
  if (!volume_) return std::nullopt;
  const Geometry g = geometry();
  const double u = g.u0 + (pos.x() - g.areaWidth / 2) * g.mmPerPixel;
  const double v = g.v0 + (g.areaHeight / 2 - pos.y()) * g.mmPerPixel;
  std::array<int, 3> ijk{};
  ijk[static_cast<std::size_t>(axis_)] = slice_;
  ijk[static_cast<std::size_t>(g.axes.right)] =
      static_cast<int>(std::lround(g.axes.rightSign * u / volume_->spacing(g.axes.right)));
  ijk[static_cast<std::size_t>(g.axes.up)] = static_cast<int>(std::lround(g.axes.upSign * v / volume_->spacing(g.axes.up)));
  for (int a = 0; a < 3; ++a) ijk[static_cast<std::size_t>(a)] = std::clamp(ijk[static_cast<std::size_t>(a)], 0, volume_->dim(a) - 1);
  return ijk;
}

QPointF SliceView::screenOf(const std::array<int, 3>& ijk, double du, double dv) const {
  const Geometry g = geometry();
  const double u = g.axes.rightSign * ijk[static_cast<std::size_t>(g.axes.right)] * volume_->spacing(g.axes.right) +
                   du * 0.5 * volume_->spacing(g.axes.right);
  const double v = g.axes.upSign * ijk[static_cast<std::size_t>(g.axes.up)] * volume_->spacing(g.axes.up) +
                   dv * 0.5 * volume_->spacing(g.axes.up);
  return {g.areaWidth / 2 + (u - g.u0) / g.mmPerPixel, g.areaHeight / 2 - (v - g.v0) / g.mmPerPixel};
}

void SliceView::setRoi(std::optional<std::pair<std::array<int, 3>, std::array<int, 3>>> corners) {
  roi_ = corners;
  update();
}

void SliceView::setRoiFreehand(bool on) {
  roiFreehand_ = on;
  update();
}

void SliceView::setRoiOutline(std::vector<std::array<int, 3>> outline) {
  outline_ = std::move(outline);
  update();
}

void SliceView::drawRoi(QPainter& p) {
  if (outline_.size() >= 2 && volume_) {
    QPolygonF poly;
    for (const auto& v : outline_) poly << screenOf(v);
    p.setPen(QPen(QColor(0, 0, 0, 160), 3));
    p.drawPolygon(poly);
    p.setPen(QPen(QColor(80, 220, 255), 1.5));
    p.drawPolygon(poly);
  }
  if (!roi_ || !volume_) return;
  // The rectangle around both corner voxels: each corner pushed half a voxel outwards.
  const Geometry g = geometry();
  const auto& [a, b] = *roi_;
  const int ra = a[static_cast<std::size_t>(g.axes.right)], rb = b[static_cast<std::size_t>(g.axes.right)];
  const int ua = a[static_cast<std::size_t>(g.axes.up)], ub = b[static_cast<std::size_t>(g.axes.up)];
  const double sa = (ra <= rb ? -1.0 : 1.0) * g.axes.rightSign, ta = (ua <= ub ? -1.0 : 1.0) * g.axes.upSign;
  const QRectF r = QRectF(screenOf(a, sa, ta), screenOf(b, -sa, -ta)).normalized();
  p.setPen(QPen(QColor(0, 0, 0, 160), 3));
  roiEllipse_ ? p.drawEllipse(r) : p.drawRect(r);
  p.setPen(QPen(QColor(80, 220, 255), 1.5));
  roiEllipse_ ? p.drawEllipse(r) : p.drawRect(r);
}

void SliceView::setRoiEllipse(bool on) {
  roiEllipse_ = on;
  update();
}

void SliceView::setMeasureLine(std::optional<std::pair<std::array<int, 3>, std::array<int, 3>>> ends, const QString& label) {
  setMeasurePath(ends ? std::vector<std::array<int, 3>>{ends->first, ends->second} : std::vector<std::array<int, 3>>{}, label);
}

void SliceView::setMeasurePath(std::vector<std::array<int, 3>> points, const QString& label) {
  measure_ = std::move(points);
  measureLabel_ = label;
  update();
}

void SliceView::drawMeasureLine(QPainter& p) {
  if (measure_.size() < 2 || !volume_) return;
  QPolygonF path;
  for (const auto& v : measure_) path << screenOf(v);
  p.setPen(QPen(QColor(0, 0, 0, 160), 3));
  p.drawPolyline(path);
  p.setPen(QPen(QColor(255, 210, 60), 1.5));
  p.drawPolyline(path);
  for (const QPointF& e : path) p.drawEllipse(e, 3, 3);
  // The distance's label beside its second end; the angle's beside its vertex.
  if (!measureLabel_.isEmpty()) p.drawText(path[path.size() == 3 ? 1 : path.size() - 1] + QPointF(6, -6), measureLabel_);
}

void SliceView::beforeRender(int width, int /*height*/) {
  const double areaFraction = static_cast<double>(imageAreaWidth()) / std::max(1, this->width());
  renderer()->SetViewport(0, 0, std::min(1.0, areaFraction), 1);
  (void)width;
  if (!volume_) return;
  const Geometry g = geometry();
  double focal[3], dir[3] = {0, 0, 0}, up[3] = {0, 0, 0};
  focal[g.axes.right] = g.axes.rightSign * g.u0;
  focal[g.axes.up] = g.axes.upSign * g.v0;
  focal[axis_] = slice_ * volume_->spacing(axis_);
  up[g.axes.up] = g.axes.upSign;
  // Looking direction = up x right, so that right = direction x up (VTK's camera convention).
  const double right[3] = {g.axes.right == 0 ? 1.0 * g.axes.rightSign : 0, g.axes.right == 1 ? 1.0 * g.axes.rightSign : 0,
                           g.axes.right == 2 ? 1.0 * g.axes.rightSign : 0};
  dir[0] = up[1] * right[2] - up[2] * right[1];
  dir[1] = up[2] * right[0] - up[0] * right[2];
  dir[2] = up[0] * right[1] - up[1] * right[0];
  const double distance = 10.0 * (volume_->dim(0) * volume_->spacing(0) + volume_->dim(1) * volume_->spacing(1) +
                                  volume_->dim(2) * volume_->spacing(2));
  vtkCamera* cam = renderer()->GetActiveCamera();
  cam->SetFocalPoint(focal);
  cam->SetPosition(focal[0] - distance * dir[0], focal[1] - distance * dir[1], focal[2] - distance * dir[2]);
  cam->SetViewUp(up);
  cam->SetParallelScale(g.mmPerPixel * g.areaHeight / 2);
  renderer()->ResetCameraClippingRange();
}

namespace {
// The power of ten of the colour bar's labels: 0 while the values read as they are (formatValue's range).
int colorBarExponent(double lo, double hi) {
  const double a = std::max(std::abs(lo), std::abs(hi));
  if (!(a > 0) || !std::isfinite(a) || (a >= 1e-3 && a < 1e5)) return 0;
  return static_cast<int>(std::floor(std::log10(a)));
}
}  // namespace

QStringList SliceView::colorBarLabels() const {
  const double scale = std::pow(10.0, -colorBarExponent(lo_, hi_));
  QStringList l;
  for (int t = 0; t <= 4; ++t) l << QString::number((lo_ + t / 4.0 * (hi_ - lo_)) * scale, 'g', 4);
  return l;
}

QString SliceView::colorBarScale() const {
  const int e = colorBarExponent(lo_, hi_);
  return e == 0 ? QString() : QStringLiteral("×1e%1").arg(e);
}

int SliceView::colorBarLabelWidth() { return kColorBarWidth - 12 - 14 - 6; }

void SliceView::drawColorBar(QPainter& p) {
  const int x0 = imageAreaWidth();
  p.fillRect(QRect(x0, 0, width() - x0, height()), QColor(18, 21, 27));
  const int top = 34, bottom = height() - 34;
  if (bottom - top < 30) return;
  const QRect bar(x0 + 12, top, 14, bottom - top);
  QLinearGradient grad(bar.bottomLeft(), bar.topLeft());
  for (const auto& a : colormapAnchors(colormap_)) grad.setColorAt(a.position, a.color);
  p.fillRect(bar, grad);
  p.setPen(QColor(120, 130, 145));
  p.drawRect(bar.adjusted(0, 0, -1, -1));
  QFont f = font();
  f.setPointSizeF(std::max(7.0, f.pointSizeF() - 1));
  p.setFont(f);
  p.setPen(QColor(210, 218, 228));
  const QStringList labels = colorBarLabels();
  for (int t = 0; t <= 4; ++t) {
    const int y = static_cast<int>(bar.bottom() - t / 4.0 * bar.height());
    p.drawLine(bar.right() + 1, y, bar.right() + 4, y);
    p.drawText(QRect(bar.right() + 6, y - 8, width() - bar.right() - 6, 16), Qt::AlignLeft | Qt::AlignVCenter, labels[t]);
  }
  if (const QString scale = colorBarScale(); !scale.isEmpty())
    p.drawText(QRect(x0 + 2, bottom + 8, width() - x0 - 4, 20), Qt::AlignHCenter | Qt::AlignVCenter, scale);
  if (!colorBarTitle_.isEmpty())
    p.drawText(QRect(x0 + 2, 6, width() - x0 - 4, 22), Qt::AlignHCenter | Qt::AlignVCenter, colorBarTitle_);
}

void SliceView::drawOverlay(QPainter& p) {
  if (colorBar_) drawColorBar(p);
  const QColor text(226, 232, 240);
  QFont f = font();
  p.setFont(f);
  if (!volume_) {
    p.setPen(QColor(150, 160, 175));
    p.drawText(QRect(0, 0, imageAreaWidth(), height()), Qt::AlignCenter | Qt::TextWordWrap,
               placeholder_.isEmpty() ? tr("No image") : placeholder_);
    return;
  }
  drawRoi(p);
  drawMeasureLine(p);
  // Crosshair of the linked cursor.
  if (crosshair_) {
    const Geometry g = geometry();
    const auto& c = *crosshair_;
    const double u = g.axes.rightSign * c[static_cast<std::size_t>(g.axes.right)] * volume_->spacing(g.axes.right);
    const double v = g.axes.upSign * c[static_cast<std::size_t>(g.axes.up)] * volume_->spacing(g.axes.up);
    const double x = g.areaWidth / 2 + (u - g.u0) / g.mmPerPixel;
    const double y = g.areaHeight / 2 - (v - g.v0) / g.mmPerPixel;
    QPen pen(QColor(255, 214, 10, 170), 1, Qt::DashLine);
    p.setPen(pen);
    p.drawLine(QPointF(0, y), QPointF(g.areaWidth, y));
    p.drawLine(QPointF(x, 0), QPointF(x, g.areaHeight));
  }
  auto shadowText = [&](const QRect& r, int flags, const QString& s, const QColor& c) {
    p.setPen(QColor(0, 0, 0, 200));
    p.drawText(r.translated(1, 1), flags, s);
    p.setPen(c);
    p.drawText(r, flags, s);
  };
  const QRect area(8, 6, imageAreaWidth() - 16, height() - 12);
  const QString sliceText =
      sliceCount() > 1 ? QStringLiteral("  %1 %2/%3").arg(QChar(0x00B7)).arg(slice_ + 1).arg(sliceCount()) : QString();
  QFont bold = f;
  bold.setBold(true);
  // A narrow pane elides the title, never the slice number after it.
  const QFontMetrics boldMetrics(bold);
  const QString heading =
      boldMetrics.elidedText(title_.isEmpty() ? QString::fromStdString(layout_.name) : title_, Qt::ElideRight,
                             std::max(0, area.width() - boldMetrics.horizontalAdvance(sliceText))) + sliceText;
  p.setFont(bold);
  shadowText(area, Qt::AlignLeft | Qt::AlignTop, heading, text);
  p.setFont(f);
  if (!info_.isEmpty()) shadowText(area, Qt::AlignLeft | Qt::AlignBottom, info_, text);
  const QString wl = QStringLiteral("W %1  L %2").arg(formatValue(hi_ - lo_), formatValue(0.5 * (hi_ + lo_)));
  shadowText(area, Qt::AlignRight | Qt::AlignBottom, wl, QColor(170, 180, 195));
  // Orientation letters at the middle of each edge of the image area.
  {
    QFont lf = f;
    lf.setBold(true);
    lf.setPointSizeF(f.pointSizeF() * 1.15);
    p.setFont(lf);
    const QColor lc(255, 214, 10, 230);
    const int aw = imageAreaWidth(), ah = height(), m = 6, fh = p.fontMetrics().height();
    shadowText(QRect(m, ah / 2 - fh, 30, 2 * fh), Qt::AlignLeft | Qt::AlignVCenter, QString(QChar(layout_.left)), lc);
    shadowText(QRect(aw - 30 - m, ah / 2 - fh, 30, 2 * fh), Qt::AlignRight | Qt::AlignVCenter,
               QString(QChar(layout_.rightLetter)), lc);
    shadowText(QRect(aw / 2 - 15, m + fh + 2, 30, fh + 4), Qt::AlignHCenter | Qt::AlignTop, QString(QChar(layout_.top)), lc);
    shadowText(QRect(aw / 2 - 15, ah - 2 * fh - m - 4, 30, fh + 4), Qt::AlignHCenter | Qt::AlignBottom,
               QString(QChar(layout_.bottom)), lc);
    p.setFont(f);
  }
  if (!badge_.isEmpty()) {
    QFont big = f;
    big.setPointSizeF(f.pointSizeF() * 2.2);
    big.setBold(true);
    p.setFont(big);
    shadowText(area, Qt::AlignRight | Qt::AlignTop, badge_, QColor(255, 214, 10));
    p.setFont(f);
  }
}

void SliceView::mousePressEvent(QMouseEvent* e) {
  roiDrag_ = e->button() == Qt::LeftButton && (roiMode_ || (e->modifiers() & Qt::ControlModifier)) && voxelAt(e->position());
  if (roiDrag_ && roiFreehand_) {
    setRoi(std::nullopt);
    setRoiOutline({*voxelAt(e->position())});
    dragButton_ = Qt::NoButton;
    return;
  }
  if (roiDrag_) {
    const auto v = *voxelAt(e->position());
    setRoiOutline({});
    setRoi(std::make_pair(v, v));
    dragButton_ = Qt::NoButton;
    return;
  }
  dragButton_ = e->button();
  dragPan_ = e->button() == Qt::MiddleButton || (e->button() == Qt::LeftButton && (e->modifiers() & Qt::ShiftModifier));
  dragStart_ = e->position();
  dragLo_ = lo_;
  dragHi_ = hi_;
  dragZoom_ = zoom_;
  dragPanRight_ = panRight_;
  dragPanUp_ = panUp_;
}

void SliceView::mouseMoveEvent(QMouseEvent* e) {
  if (roiDrag_ && roiFreehand_) {
    if (const auto v = nearestVoxel(e->position()); v && (outline_.empty() || outline_.back() != *v)) {
      outline_.push_back(*v);
      update();
    }
    return;
  }
  if (roiDrag_ && roi_) {
    if (const auto v = nearestVoxel(e->position())) setRoi(std::make_pair(roi_->first, *v));
    return;
  }
  const QPointF d = e->position() - dragStart_;
  if (dragButton_ == Qt::LeftButton && !dragPan_) {
    // Window/level as on a scanner console (docs/gui.md): right/left = wider/narrower window, up/down =
    // brighter/darker image. Brighter means a lower level (centre): dragging up (d.y() < 0) lowers it.
    const double width0 = dragHi_ - dragLo_, centre0 = 0.5 * (dragHi_ + dragLo_);
    const double w = width0 * std::exp(d.x() / 250.0);
    const double c = centre0 + d.y() * width0 / 400.0;
    setWindow(c - w / 2, c + w / 2);
    emit windowDragged(lo_, hi_);
  } else if (dragPan_) {
    const double mpp = geometry().mmPerPixel;
    setViewTransform(zoom_, dragPanRight_ + d.x() * mpp, dragPanUp_ - d.y() * mpp);
    emit viewTransformChanged(zoom_, panRight_, panUp_);
  } else if (dragButton_ == Qt::RightButton) {
    setViewTransform(dragZoom_ * std::exp(-d.y() / 200.0), panRight_, panUp_);
    emit viewTransformChanged(zoom_, panRight_, panUp_);
  }
  if (const auto v = voxelAt(e->position())) emit hovered((*v)[0], (*v)[1], (*v)[2]);
  else emit hovered(-1, -1, -1);
}

void SliceView::mouseReleaseEvent(QMouseEvent* e) {
  if (roiDrag_ && roiFreehand_) {
    roiDrag_ = false;
    if (const auto v = nearestVoxel(e->position()); v && (outline_.empty() || outline_.back() != *v)) outline_.push_back(*v);
    update();
    emit roiOutlineDrawn(outline_);
    return;
  }
  if (roiDrag_) {
    roiDrag_ = false;
    if (const auto v = nearestVoxel(e->position()); v && roi_) setRoi(std::make_pair(roi_->first, *v));
    if (roi_) emit roiDrawn(roi_->first, roi_->second);
    return;
  }
  // A click (no drag) points at a voxel: the 3D views link their planes and crosshair to it.
  if (dragButton_ == Qt::LeftButton && !dragPan_ && (e->position() - dragStart_).manhattanLength() <= 4) {
    if (lo_ != dragLo_ || hi_ != dragHi_) {  // undo the few pixels of window drag the click made
      setWindow(dragLo_, dragHi_);
      emit windowDragged(lo_, hi_);
    }
    if (const auto v = voxelAt(e->position())) emit clicked((*v)[0], (*v)[1], (*v)[2]);
  }
  // A right click (no zoom drag): the context menu.
  if (dragButton_ == Qt::RightButton && (e->position() - dragStart_).manhattanLength() <= 4) {
    if (zoom_ != dragZoom_) setViewTransform(dragZoom_, panRight_, panUp_);
    emit contextMenuRequested(mapToGlobal(e->position().toPoint()), voxelAt(e->position()));
  }
  dragButton_ = Qt::NoButton;
  dragPan_ = false;
}

void SliceView::mouseDoubleClickEvent(QMouseEvent*) { resetView(); }

void SliceView::wheelEvent(QWheelEvent* e) {
  const int steps = e->angleDelta().y() / 120;
  if (steps == 0) return;
  if (e->modifiers() & Qt::ControlModifier) {
    setViewTransform(zoom_ * std::pow(1.15, steps), panRight_, panUp_);
    emit viewTransformChanged(zoom_, panRight_, panUp_);
  } else {
    setSlice(slice_ + steps);
  }
  if (const auto v = voxelAt(e->position())) emit hovered((*v)[0], (*v)[1], (*v)[2]);
  e->accept();
}

void SliceView::keyPressEvent(QKeyEvent* e) {
  switch (e->key()) {
    case Qt::Key_Up:
    case Qt::Key_PageUp:
      setSlice(slice_ + 1);
      break;
    case Qt::Key_Down:
    case Qt::Key_PageDown:
      setSlice(slice_ - 1);
      break;
    case Qt::Key_Left:
      emit frameStepRequested(-1);
      break;
    case Qt::Key_Right:
      emit frameStepRequested(1);
      break;
    default:
      VtkCanvas::keyPressEvent(e);
      return;
  }
  e->accept();
}

void SliceView::leaveEvent(QEvent*) { emit hovered(-1, -1, -1); }

}  // namespace larmor::ui
