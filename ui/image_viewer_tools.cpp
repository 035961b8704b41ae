// The image tab's reading tools (image_viewer.hpp): ROI statistics under the image (model/roi_stats.hpp on the
// shown image's magnitude, the voxel size from the data), the distance between two clicked voxels in mm, the
// right-click menu and the keys that step through slices and frames. The measurements are the model's; this
// file only wires the widgets to them.
#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QClipboard>
#include <QLabel>
#include <QMenu>
#include <QToolButton>

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
  measurements_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  measurements_->hide();
  return measurements_;
}

void ImageViewer::connectReadingTools() {
  auto* shapes = new QMenu(roiButton_);
  auto* group = new QActionGroup(shapes);
  for (model::RoiShape s : {model::RoiShape::Rectangle, model::RoiShape::Ellipse}) {
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
  roiButton_->setMenu(shapes);
  roiButton_->setPopupMode(QToolButton::MenuButtonPopup);
  SliceView* axial = views_[SliceView::Axial];
  connect(roiButton_, &QToolButton::toggled, this, [this](bool on) {
    if (on) distanceAction_->setChecked(false);
  });
  connect(distanceAction_, &QAction::toggled, this, [this](bool on) { setDistanceMode(on); });
  connect(axial, &SliceView::clicked, this, &ImageViewer::distanceClick);
  connect(axial, &SliceView::frameStepRequested, this, &ImageViewer::frameStepRequested);
  for (SliceView* v : views_)
    connect(v, &SliceView::contextMenuRequested, this, [this](QPoint at, std::optional<std::array<int, 3>> voxel) {
      showContextMenu(at, voxel);
    });
}

void ImageViewer::setRoiShape(model::RoiShape shape) {
  roiShape_ = shape;
  views_[SliceView::Axial]->setRoiEllipse(shape == model::RoiShape::Ellipse);
  if (roi_ && roi_->shape != shape) {
    model::PlaneRoi r = *roi_;
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

void ImageViewer::setDistanceMode(bool on) {
  if (distanceAction_->isChecked() != on) distanceAction_->setChecked(on);  // toggled comes back here
  if (on) roiButton_->setChecked(false);
  distanceEnds_.clear();
  if (on) {
    distanceText_.clear();
    views_[SliceView::Axial]->setMeasureLine(std::nullopt);
    updateMeasurements();
  }
}

bool ImageViewer::distanceMode() const { return distanceAction_->isChecked(); }

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
  QStringList parts;
  for (const QString& t : {roiText_, distanceText_})
    if (!t.isEmpty()) parts << t;
  if (distanceMode() && distanceEnds_.size() < 2) parts << tr("Distance: click %1 point").arg(distanceEnds_.empty() ? tr("the first") : tr("the second"));
  measurements_->setText(parts.join(QLatin1Char('\n')));  // one line each: none is cut off at 1024 px
  measurements_->setVisible(!parts.isEmpty());
}

void ImageViewer::clearMeasurements() {
  roi_.reset();
  distanceEnds_.clear();
  roiText_.clear();
  distanceText_.clear();
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

QMenu* ImageViewer::showContextMenu(QPoint globalPos, std::optional<std::array<int, 3>> voxel) {
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
  for (model::RoiShape s : {model::RoiShape::Rectangle, model::RoiShape::Ellipse})
    menu->addAction(tr("ROI %1").arg(shapeName(s)), this, [this, s] {
      setRoiShape(s);
      roiButton_->setChecked(true);
    });
  menu->addAction(tr("Distance"), this, [this] { setDistanceMode(true); });
  menu->addSeparator();
  menu->addAction(tr("Export screenshot…"), this, &ImageViewer::screenshotRequested);
  menu->popup(globalPos);
  return menu;
}

}  // namespace larmor::ui
