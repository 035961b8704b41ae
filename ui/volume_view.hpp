#pragma once
// Volume rendering of a 3D image (VTK's ray-cast mapper): opacity ramps over the display window, colours
// from the current colour map. Left drag rotates, wheel zooms, double click resets.
#include "display_volume.hpp"
#include "vtk_canvas.hpp"

namespace larmor::ui {

class VolumeView : public VtkCanvas {
  Q_OBJECT
 public:
  explicit VolumeView(QWidget* parent = nullptr);
  ~VolumeView() override;
  void setVolume(DisplayVolumePtr volume);
  void setWindow(double lo, double hi);
  void setColormap(const QString& name);
  void resetCamera();

 protected:
  void drawOverlay(QPainter& p) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;

 private:
  void applyTransfer();
  struct Vtk;
  std::unique_ptr<Vtk> vtk_;
  DisplayVolumePtr volume_;
  double lo_ = 0, hi_ = 1;
  QString colormap_ = "grey";
  QPointF last_;
};

}  // namespace larmor::ui
