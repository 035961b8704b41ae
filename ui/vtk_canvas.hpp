#pragma once
// The Qt 6 <-> VTK bridge: a plain QWidget that owns an off-screen vtkRenderWindow, renders into it
// when something changed and paints the read-back pixels as a QImage. Debian's VTK Qt module is built
// against Qt 5, so VTK's own widget cannot be used; rendering off screen also means QWidget::grab (the
// --screenshot flag, the PNG export) captures the VTK content like any other widget.
#include <QImage>
#include <QWidget>
#include <memory>

class vtkRenderer;
class vtkRenderWindow;

namespace larmor::ui {

class VtkCanvas : public QWidget {
  Q_OBJECT
 public:
  explicit VtkCanvas(QWidget* parent = nullptr);
  ~VtkCanvas() override;

  vtkRenderer* renderer() const;
  vtkRenderWindow* renderWindow() const;
  /// Marks the scene changed; the next paint renders it (several changes cost one render).
  void requestRender();
  /// Frames rendered by VTK so far (a new picture on screen; the λ latency test counts them).
  quint64 framesRendered() const { return frames_; }
  /// Milliseconds the last VTK render took (render, read-back, conversion): where a picture's time goes.
  double lastRenderMs() const { return lastRenderMs_; }
  /// Renders now if needed and returns the frame (what the widget paints, without the Qt overlay).
  QImage frame();

 signals:
  /// A new VTK picture has been rendered and is being painted (emitted from paintEvent).
  void frameRendered();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  /// Text, crosshairs and badges drawn by Qt over the VTK frame (crisper than VTK text).
  virtual void drawOverlay(QPainter&) {}
  /// Called before each render with the size in device pixels (cameras that fit the image).
  virtual void beforeRender(int /*width*/, int /*height*/) {}

 private:
  void renderNow();
  quint64 frames_ = 0;
  double lastRenderMs_ = 0;
  struct Vtk;
  std::unique_ptr<Vtk> vtk_;
  QImage frame_;
  bool dirty_ = true;
};

}  // namespace larmor::ui
