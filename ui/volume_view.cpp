#include "volume_view.hpp"

#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>
#include <cmath>

#include <vtkCamera.h>
#include <vtkColorTransferFunction.h>
#include <vtkImageData.h>
#include <vtkPiecewiseFunction.h>
#include <vtkRenderer.h>
#include <vtkSmartPointer.h>
#include <vtkSmartVolumeMapper.h>
#include <vtkVolume.h>
#include <vtkVolumeProperty.h>

#include "colormaps.hpp"

namespace larmor::ui {

struct VolumeView::Vtk {
  vtkSmartPointer<vtkSmartVolumeMapper> mapper = vtkSmartPointer<vtkSmartVolumeMapper>::New();
  vtkSmartPointer<vtkVolume> volume = vtkSmartPointer<vtkVolume>::New();
  vtkSmartPointer<vtkColorTransferFunction> color = vtkSmartPointer<vtkColorTransferFunction>::New();
  vtkSmartPointer<vtkPiecewiseFunction> opacity = vtkSmartPointer<vtkPiecewiseFunction>::New();
};

VolumeView::VolumeView(QWidget* parent) : VtkCanvas(parent), vtk_(std::make_unique<Vtk>()) {
  vtk_->volume->SetMapper(vtk_->mapper);
  vtkVolumeProperty* prop = vtk_->volume->GetProperty();
  prop->SetColor(vtk_->color);
  prop->SetScalarOpacity(vtk_->opacity);
  prop->SetInterpolationTypeToLinear();
  prop->ShadeOff();
  applyTransfer();
}

VolumeView::~VolumeView() = default;

void VolumeView::setVolume(DisplayVolumePtr volume) {
  const bool first = !volume_;
  volume_ = std::move(volume);
  if (!volume_) {
    renderer()->RemoveVolume(vtk_->volume);
    requestRender();
    return;
  }
  vtk_->mapper->SetInputData(volume_->image());
  if (!renderer()->HasViewProp(vtk_->volume)) renderer()->AddVolume(vtk_->volume);
  if (first) resetCamera();
  requestRender();
}

void VolumeView::setWindow(double lo, double hi) {
  lo_ = lo;
  hi_ = hi > lo ? hi : lo + 1e-6;
  applyTransfer();
}

void VolumeView::setColormap(const QString& name) {
  colormap_ = name;
  applyTransfer();
}

void VolumeView::applyTransfer() {
  fillTransferFunction(vtk_->color, colormap_, lo_, hi_);
  // Below the window is transparent, then a ramp: the background and noise vanish, tissue shows as a
  // translucent cloud whose brightest parts (the window's top) are the most opaque.
  vtk_->opacity->RemoveAllPoints();
  vtk_->opacity->AddPoint(lo_, 0.0);
  vtk_->opacity->AddPoint(lo_ + 0.15 * (hi_ - lo_), 0.0);
  vtk_->opacity->AddPoint(hi_, 0.35);
  vtk_->volume->GetProperty()->SetScalarOpacityUnitDistance(volume_ ? volume_->spacing(0) * 2 : 2.0);
  requestRender();
}

void VolumeView::resetCamera() {
  vtkCamera* cam = renderer()->GetActiveCamera();
  cam->SetFocalPoint(0, 0, 0);
  cam->SetPosition(0, 0, -1);
  cam->SetViewUp(0, -1, 0);
  renderer()->ResetCamera();
  cam->Azimuth(35);
  cam->Elevation(25);
  cam->OrthogonalizeViewUp();
  cam->Zoom(1.25);
  renderer()->ResetCameraClippingRange();
  requestRender();
}

void VolumeView::drawOverlay(QPainter& p) {
  p.setPen(QColor(226, 232, 240));
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.drawText(rect().adjusted(8, 6, -8, -6), Qt::AlignLeft | Qt::AlignTop, volume_ ? tr("Volume") : tr("Volume (3D images)"));
  p.setFont(font());
  p.setPen(QColor(150, 160, 175));
  if (volume_) p.drawText(rect().adjusted(8, 6, -8, -6), Qt::AlignLeft | Qt::AlignBottom, tr("drag: rotate   wheel: zoom"));
}

void VolumeView::mousePressEvent(QMouseEvent* e) { last_ = e->position(); }

void VolumeView::mouseMoveEvent(QMouseEvent* e) {
  if (!(e->buttons() & Qt::LeftButton)) return;
  const QPointF d = e->position() - last_;
  last_ = e->position();
  vtkCamera* cam = renderer()->GetActiveCamera();
  cam->Azimuth(-d.x() * 0.5);
  cam->Elevation(d.y() * 0.5);
  cam->OrthogonalizeViewUp();
  renderer()->ResetCameraClippingRange();
  requestRender();
}

void VolumeView::mouseDoubleClickEvent(QMouseEvent*) { resetCamera(); }

void VolumeView::wheelEvent(QWheelEvent* e) {
  const int steps = e->angleDelta().y() / 120;
  if (steps == 0) return;
  renderer()->GetActiveCamera()->Zoom(std::pow(1.12, steps));
  requestRender();
  e->accept();
}

}  // namespace larmor::ui
