// The image tab's reading tools (image_viewer.hpp): ROI statistics under the image (model/roi_stats.hpp on the
// shown image's magnitude, the voxel size from the data; rectangle, ellipse or a freehand outline), the distance
// between two clicked voxels in mm, the angle of three clicks in degrees, the right-click menu and the keys that step through slices and frames. The measurements are the model's; this
// file only wires the widgets to them.
#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QClipboard>
#include <QLabel>
#include <QMenu>
#include <QToolButton>
#include <cmath>

#include "image_viewer.hpp"
#include "larmor/quality/display.hpp"
#include "slice_view.hpp"

namespace larmor::ui {

namespace {

QString shapeName(model::RoiShape s) {
  switch (s) {
    case model::RoiShape::Rectangle: return QObject::tr("rectangle");
    case model::RoiShape::Ellipse: return QObject::tr("ellipse");
    case model::RoiShape::Freehand: return QObject::tr("freehand");
  }
  return {};
}

}  // namespace

QWidget* ImageViewer::makeMeasurements() {
  measurements_ = new QLabel;
  measurements_->setObjectName("measurements");
  measurements_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  measurements_->setContentsMargins(8, 0, 8, 2);
  // Wrapped at the words: the ROI line (mean, SD, min, max, area, voxels) is wider than the image at 1280 px.
  measurements_->setWordWrap(true);
  measurements_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  measurements_->hide();
  return measurements_;
}

void ImageViewer::connectReadingTools() {
  auto* shapes = new QMenu(roiButton_);
  auto* group = new QActionGroup(shapes);
  for (model::RoiShape s : {model::RoiShape::Rectangle, model::RoiShape::Ellipse, model::RoiShape::Freehand}) {
    QAction* a = shapes->addAction(tr("ROI %1").arg(shapeName(s)), this, [this, s] {
      setRoiShape(s);
      roiButton_->setChecked(true);
    });
    a->setCheckable(true);
    a->setChecked(s == roiShape_);
    group->addAction(a);
  }
  // The distance tool shares the ROI button's menu: the tool row keeps within 1024 px.
  shapes->addSeparator();
  distanceAction_ = shapes->addAction(tr("Distance (two clicks)"));
  distanceAction_->setObjectName("distanceTool");
  distanceAction_->setCheckable(true);
  angleAction_ = shapes->addAction(tr("Angle (three clicks: end, vertex, end)"));
  angleAction_->setObjectName("angleTool");
  angleAction_->setCheckable(true);
  roiButton_->setMenu(shapes);
  roiButton_->setPopupMode(QToolButton::MenuButtonPopup);
  SliceView* axial = views_[SliceView::Axial];
  connect(roiButton_, &QToolButton::toggled, this, [this](bool on) {
    if (on) {
      distanceAction_->setChecked(false);
      angleAction_->setChecked(false);
    }
  });
  connect(distanceAction_, &QAction::toggled, this, [this](bool on) { setDistanceMode(on); });
  connect(angleAction_, &QAction::toggled, this, [this](bool on) { setAngleMode(on); });
  connect(axial, &SliceView::clicked, this, &ImageViewer::distanceClick);
  connect(axial, &SliceView::clicked, this, &ImageViewer::angleClick);
  connect(axial, &SliceView::roiOutlineDrawn, this, &ImageViewer::outlineDrawn);
  connect(axial, &SliceView::frameStepRequested, this, &ImageViewer::frameStepRequested);
  for (SliceView* v : views_)
    connect(v, &SliceView::contextMenuRequested, this, [this, v](QPoint at, std::optional<std::array<int, 3>> voxel) {
      showContextMenu(at, voxel, paneOf(v));
    });
}

void ImageViewer::setRoiShape(model::RoiShape shape) {
  roiShape_ = shape;
  views_[SliceView::Axial]->setRoiEllipse(shape == model::RoiShape::Ellipse);
  views_[SliceView::Axial]->setRoiFreehand(shape == model::RoiShape::Freehand);
  // A drawn rectangle has no outline to become freehand; an outline becomes the rectangle or ellipse of its box.
  if (roi_ && roi_->shape != shape && shape != model::RoiShape::Freehand) {
    const std::array<int, 3> a{roi_->x0, roi_->y0, roi_->z}, b{roi_->x1, roi_->y1, roi_->z};
    views_[SliceView::Axial]->setRoiOutline({});
    views_[SliceView::Axial]->setRoi(std::make_pair(a, b));
    model::PlaneRoi r = roi_->bounds();
    r.shape = shape;
    roiChanged(r);
  }
}

void ImageViewer::roiChanged(const model::PlaneRoi& roi) {
  roi_ = roi;
  roiShape_ = roi.shape;
  updateMeasurements();
  emit roiDrawn(roi);
}

void ImageViewer::outlineDrawn(const std::vector<std::array<int, 3>>& outline) {
  if (outline.empty()) return;
  std::vector<std::array<int, 2>> xy;
  for (const auto& v : outline) xy.push_back({v[0], v[1]});
  roiChanged(model::freehandRoi(xy, outline.front()[2]));
}

void ImageViewer::setDistanceMode(bool on) {
  if (distanceAction_->isChecked() != on) distanceAction_->setChecked(on);  // toggled comes back here
  if (on) {
    roiButton_->setChecked(false);
    angleAction_->setChecked(false);
  }
  distanceEnds_.clear();
  if (on) {
    distanceText_.clear();
    views_[SliceView::Axial]->setMeasureLine(std::nullopt);
    updateMeasurements();
  }
}

bool ImageViewer::distanceMode() const { return distanceAction_->isChecked(); }

void ImageViewer::setAngleMode(bool on) {
  if (angleAction_->isChecked() != on) angleAction_->setChecked(on);  // toggled comes back here
  if (on) {
    roiButton_->setChecked(false);
    distanceAction_->setChecked(false);
  }
  anglePoints_.clear();
  if (on) {
    angleText_.clear();
    views_[SliceView::Axial]->setMeasurePath({});
    updateMeasurements();
  }
}

bool ImageViewer::angleMode() const { return angleAction_->isChecked(); }

void ImageViewer::angleClick(int i, int j, int k) {
  if (!angleMode() || !volume_) return;
  if (anglePoints_.size() >= 3) anglePoints_.clear();  // a fourth click starts a new angle
  anglePoints_.push_back({i, j, k});
  if (anglePoints_.size() < 3) views_[SliceView::Axial]->setMeasurePath(anglePoints_.size() == 2 ? anglePoints_ : std::vector{anglePoints_[0], anglePoints_[0]});
  updateMeasurements();
}

void ImageViewer::distanceClick(int i, int j, int k) {
  if (!distanceMode() || !volume_) return;
  if (distanceEnds_.size() >= 2) distanceEnds_.clear();  // a third click starts a new line
  distanceEnds_.push_back({i, j, k});
  if (distanceEnds_.size() == 1) views_[SliceView::Axial]->setMeasureLine(std::make_pair(distanceEnds_[0], distanceEnds_[0]));
  updateMeasurements();
}

void ImageViewer::updateMeasurements() {
  roiText_.clear();
  if (roi_ && volume_) {
    const model::RoiStats st = model::roiStatistics(*volume_, *roi_, spacing_);
    roiText_ = tr("ROI %1: %2").arg(shapeName(roi_->shape), QString::fromStdString(model::formatRoiStats(st)));
  }
  if (distanceEnds_.size() == 2 && volume_) {
    const double mm = model::distanceMm(distanceEnds_[0], distanceEnds_[1], spacing_);
    distanceText_ = tr("distance %1 mm").arg(mm, 0, 'f', 1);
    views_[SliceView::Axial]->setMeasureLine(std::make_pair(distanceEnds_[0], distanceEnds_[1]),
                                             QStringLiteral("%1 mm").arg(mm, 0, 'f', 1));
  }
  if (anglePoints_.size() == 3 && volume_) {
    const double deg = model::angleDeg(anglePoints_[0], anglePoints_[1], anglePoints_[2], spacing_);
    angleText_ = std::isfinite(deg) ? tr("angle %1°").arg(deg, 0, 'f', 1) : tr("angle: the vertex is an end");
    views_[SliceView::Axial]->setMeasurePath(anglePoints_, std::isfinite(deg) ? QStringLiteral("%1°").arg(deg, 0, 'f', 1) : QString());
  }
  QStringList parts;
  for (const QString& t : {roiText_, distanceText_, angleText_})
    if (!t.isEmpty()) parts << t;
  if (distanceMode() && distanceEnds_.size() < 2) parts << tr("Distance: click %1 point").arg(distanceEnds_.empty() ? tr("the first") : tr("the second"));
  static const char* angleSteps[] = {"Angle: click one end", "Angle: click the vertex", "Angle: click the other end"};
  if (angleMode() && anglePoints_.size() < 3) parts << tr(angleSteps[anglePoints_.size()]);
  measurements_->setText(parts.join(QLatin1Char('\n')));  // one line each, wrapped where the image is narrower
  measurements_->setVisible(!parts.isEmpty());
}

void ImageViewer::clearMeasurements() {
  roi_.reset();
  distanceEnds_.clear();
  anglePoints_.clear();
  roiText_.clear();
  distanceText_.clear();
  angleText_.clear();
  views_[SliceView::Axial]->setMeasureLine(std::nullopt);
  updateMeasurements();
}

void ImageViewer::copyValue(std::array<int, 3> v) {
  if (!volume_) return;
  const auto pv = quality::probe(*volume_, v[0], v[1], v[2]);
  const double value = component_ == quality::Component::Phase  ? pv.phase
                       : component_ == quality::Component::Real ? pv.value.real()
                       : component_ == quality::Component::Imaginary ? pv.value.imag()
                                                                     : pv.magnitude;
  QApplication::clipboard()->setText(QString::number(value, 'g', 9));
}

QMenu* ImageViewer::showContextMenu(QPoint globalPos, std::optional<std::array<int, 3>> voxel, int pane) {
  auto* menu = new QMenu(this);
  menu->setObjectName("imageContextMenu");
  menu->setAttribute(Qt::WA_DeleteOnClose);
  QMenu* presets = menu->addMenu(tr("Window presets"));
  for (const QString& name : windowPresetNames()) presets->addAction(name, this, [this, name] { applyWindowPreset(name); });
  menu->addAction(tr("Reset window"), this, &ImageViewer::autoWindow);
  QAction* copy = menu->addAction(tr("Copy value"), this, [this, voxel] {
    if (voxel) copyValue(*voxel);
  });
  copy->setEnabled(voxel.has_value() && volume_);
  menu->addSeparator();
  for (model::RoiShape s : {model::RoiShape::Rectangle, model::RoiShape::Ellipse, model::RoiShape::Freehand})
    menu->addAction(tr("ROI %1").arg(shapeName(s)), this, [this, s] {
      setRoiShape(s);
      roiButton_->setChecked(true);
    });
  menu->addAction(tr("Distance"), this, [this] { setDistanceMode(true); });
  menu->addAction(tr("Angle"), this, [this] { setAngleMode(true); });
  menu->addSeparator();
  addShowInPane(menu, pane);  // a run of the session or a reference series in this pane
  menu->addAction(tr("Export screenshot…"), this, &ImageViewer::screenshotRequested);
  menu->popup(globalPos);
  return menu;
}

}  // namespace larmor::ui
