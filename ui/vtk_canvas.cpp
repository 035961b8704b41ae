#include "vtk_canvas.hpp"

#include <QElapsedTimer>
#include <QPaintEvent>
#include <QPainter>

#include <vtkNew.h>
#include <vtkRenderWindow.h>
#include <vtkRenderer.h>
#include <vtkSmartPointer.h>
#include <vtkUnsignedCharArray.h>

namespace larmor::ui {

struct VtkCanvas::Vtk {
  vtkSmartPointer<vtkRenderWindow> window = vtkSmartPointer<vtkRenderWindow>::New();
  vtkSmartPointer<vtkRenderer> renderer = vtkSmartPointer<vtkRenderer>::New();
};

VtkCanvas::VtkCanvas(QWidget* parent) : QWidget(parent), vtk_(std::make_unique<Vtk>()) {
  vtk_->window->SetOffScreenRendering(1);
  vtk_->window->SetMultiSamples(0);
  vtk_->window->AddRenderer(vtk_->renderer);
  vtk_->renderer->SetBackground(0.04, 0.05, 0.07);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setMinimumSize(120, 120);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

VtkCanvas::~VtkCanvas() {
  // Release the GL context while the window object is still whole.
  vtk_->window->Finalize();
}

vtkRenderer* VtkCanvas::renderer() const { return vtk_->renderer; }
vtkRenderWindow* VtkCanvas::renderWindow() const { return vtk_->window; }

void VtkCanvas::requestRender() {
  dirty_ = true;
  update();
}

void VtkCanvas::renderNow() {
  const qreal dpr = devicePixelRatioF();
  const int w = std::max(1, static_cast<int>(width() * dpr));
  const int h = std::max(1, static_cast<int>(height() * dpr));
  // VTK's OpenGL window on Linux needs an X server (GLX); with Qt on a platform without one
  // (QT_QPA_PLATFORM=offscreen and no DISPLAY) it would abort, so the view stays empty instead.
  static const bool haveX = !qEnvironmentVariableIsEmpty("DISPLAY");
  if (!haveX) {
    frame_ = QImage(w, h, QImage::Format_RGB32);
    frame_.fill(QColor(10, 13, 18));
    frame_.setDevicePixelRatio(dpr);
    dirty_ = false;
    return;
  }
  QElapsedTimer clock;
  clock.start();
  beforeRender(w, h);
  vtk_->window->SetSize(w, h);
  vtk_->window->Render();
  vtkNew<vtkUnsignedCharArray> pixels;
  vtk_->window->GetRGBACharPixelData(0, 0, w - 1, h - 1, 0, pixels);
  // OpenGL's rows start at the bottom; QImage's at the top.
  QImage img(pixels->GetPointer(0), w, h, w * 4, QImage::Format_RGBA8888);
  frame_ = img.mirrored(false, true).convertToFormat(QImage::Format_RGB32);
  frame_.setDevicePixelRatio(dpr);
  dirty_ = false;
  lastRenderMs_ = static_cast<double>(clock.nsecsElapsed()) / 1e6;
}

QImage VtkCanvas::frame() {
  if (dirty_ || frame_.isNull()) renderNow();
  return frame_;
}

void VtkCanvas::paintEvent(QPaintEvent*) {
  // Rendering here (not in a timer) is what makes QWidget::grab include the VTK picture.
  const bool rendered = dirty_ || frame_.isNull() || frame_.size() / frame_.devicePixelRatio() != size();
  if (rendered) {
    renderNow();
    ++frames_;
  }
  QPainter p(this);
  p.drawImage(0, 0, frame_);
  p.setRenderHint(QPainter::Antialiasing);
  p.setRenderHint(QPainter::TextAntialiasing);
  drawOverlay(p);
  if (rendered) emit frameRendered();
}

void VtkCanvas::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  dirty_ = true;
}

}  // namespace larmor::ui
