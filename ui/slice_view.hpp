#pragma once
// One plane of a volume (axial, coronal or sagittal), rendered by VTK with a colour map and a window.
// Mouse: left drag = window/level, middle drag or shift+left = pan, right drag or ctrl+wheel = zoom,
// wheel = next/previous slice, double click = fit, ctrl+left drag (or left drag in ROI mode) = a rectangle,
// an ellipse or a freehand outline of interest (its statistics; the time-intensity curve of a series), a right
// click (no drag) = the context menu. Keys: Up/Down and PgUp/PgDn = next/previous slice, Left/Right = previous/next frame.
// The owner links views through the signals (the compare tab links cursor, zoom/pan and window of four views).
#include <QPoint>
#include <QString>
#include <array>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "display_orientation.hpp"
#include "display_volume.hpp"
#include "vtk_canvas.hpp"

namespace larmor::ui {

class SliceView : public VtkCanvas {
  Q_OBJECT
 public:
  enum Axis { Sagittal = 0, Coronal = 1, Axial = 2 };
  explicit SliceView(Axis axis = Axial, QWidget* parent = nullptr);
  ~SliceView() override;

  void setVolume(DisplayVolumePtr volume);
  DisplayVolumePtr volume() const { return volume_; }
  Axis axis() const { return axis_; }
  int slice() const { return slice_; }
  int sliceCount() const;
  void setSlice(int slice);
  void setWindow(double lo, double hi);
  double windowLow() const { return lo_; }
  double windowHigh() const { return hi_; }
  void setColormap(const QString& name);
  /// Colour bar on the right with `title` (units); hidden when false.
  void setColorBar(bool visible, const QString& title = {});
  void setTitle(const QString& title);
  QString title() const { return title_; }
  void setInfoText(const QString& text);
  QString infoText() const { return info_; }
  QString colorBarTitle() const { return colorBarTitle_; }
  /// The colour bar's five tick labels, bottom to top, and the power of ten they are in ("×1e12" under the bar;
  /// "" when the values read as they are): every label fits beside the bar.
  QStringList colorBarLabels() const;
  QString colorBarScale() const;
  /// The width a tick label has beside the bar, in pixels.
  static int colorBarLabelWidth();
  /// A large label in the top right corner ("A", "B" while flickering).
  void setBadge(const QString& badge);
  /// The linked cursor (voxel indices in the volume), drawn as a crosshair; nullopt hides it.
  void setCrosshair(std::optional<std::array<int, 3>> voxel);
  std::optional<std::array<int, 3>> crosshair() const { return crosshair_; }
  /// Zoom (1 = fit) and pan (mm along the screen's right and up) — for linked views.
  void setViewTransform(double zoom, double panRight, double panUp);
  double zoom() const { return zoom_; }
  void resetView();
  /// ROI mode: a left drag draws the rectangle of interest instead of changing the window.
  void setRoiMode(bool on) { roiMode_ = on; }
  bool roiMode() const { return roiMode_; }
  /// The rectangle of interest: its two corner voxels (inclusive, in this plane); nullopt hides it.
  void setRoi(std::optional<std::pair<std::array<int, 3>, std::array<int, 3>>> corners);
  /// The ROI is drawn as the ellipse inscribed in its rectangle.
  void setRoiEllipse(bool on);
  /// Freehand: a ROI drag draws an outline through the voxels the mouse passes (roiOutlineDrawn follows).
  void setRoiFreehand(bool on);
  bool roiFreehand() const { return roiFreehand_; }
  /// The freehand outline (voxels in drawing order, closed back to the first); empty hides it.
  void setRoiOutline(std::vector<std::array<int, 3>> outline);
  const std::vector<std::array<int, 3>>& roiOutline() const { return outline_; }
  /// The measuring path through voxels (the angle tool's two segments); fewer than two points hide it.
  void setMeasurePath(std::vector<std::array<int, 3>> points, const QString& label = {});
  /// The distance line between two voxels (the distance tool); nullopt hides it. `label` is drawn beside it.
  void setMeasureLine(std::optional<std::pair<std::array<int, 3>, std::array<int, 3>>> ends, const QString& label = {});
  std::optional<std::pair<std::array<int, 3>, std::array<int, 3>>> roi() const { return roi_; }
  /// Widget position of voxel `ijk`'s centre, moved by (du, dv) half voxels along the plane's volume axes
  /// (screen right and up up to their signs): the overlay's drawing, and where tests point the mouse.
  QPointF screenOf(const std::array<int, 3>& ijk, double du = 0, double dv = 0) const;
  /// Empty views say why (no image yet, an error).
  void setPlaceholder(const QString& text);
  /// Which way the volume's axes point (docs/conventions.md): decides the screen layout of the plane and
  /// the orientation letters (R/L, A/P, S/I) drawn at its edges.
  void setOrientation(const model::DisplayOrientation& o);
  const model::PlaneLayout& layout() const { return layout_; }
  /// The letters at the left, right, top and bottom edges, e.g. "RLAP".
  QString orientationLetters() const;

 signals:
  void hovered(int i, int j, int k);  ///< voxel under the mouse; -1s when it leaves the image
  void clicked(int i, int j, int k);  ///< a left click (press and release within a few pixels) on voxel (i, j, k)
  void sliceChanged(int slice);
  void windowDragged(double lo, double hi);
  void viewTransformChanged(double zoom, double panRight, double panUp);
  /// A rectangle of interest was drawn: its corner voxels (inclusive).
  void roiDrawn(std::array<int, 3> from, std::array<int, 3> to);
  /// A freehand outline was drawn: the voxels the drag passed, in order.
  void roiOutlineDrawn(std::vector<std::array<int, 3>> outline);
  /// A right click without a drag at `globalPos`, over voxel `voxel` (nullopt: beside the image).
  void contextMenuRequested(QPoint globalPos, std::optional<std::array<int, 3>> voxel);
  /// Left/Right: the previous (-1) or next (+1) frame of a series.
  void frameStepRequested(int step);

 protected:
  void beforeRender(int width, int height) override;
  void drawOverlay(QPainter& p) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  void keyPressEvent(QKeyEvent* e) override;
  void leaveEvent(QEvent* e) override;

 private:
  struct Geometry;  // screen <-> volume mapping for the current size, zoom and pan
  Geometry geometry() const;
  std::optional<std::array<int, 3>> voxelAt(QPointF pos) const;
  /// The voxel under `pos`, clamped into the volume (a drag that leaves the image); nullopt without one.
  std::optional<std::array<int, 3>> nearestVoxel(QPointF pos) const;
  void drawRoi(QPainter& p);
  void drawMeasureLine(QPainter& p);
  void applyWindow();
  int imageAreaWidth() const;
  void drawColorBar(QPainter& p);

  struct Vtk;
  std::unique_ptr<Vtk> vtk_;
  DisplayVolumePtr volume_;
  Axis axis_;
  int slice_ = 0;
  double lo_ = 0, hi_ = 1;
  QString colormap_ = "grey";
  bool colorBar_ = false;
  QString colorBarTitle_, title_, info_, badge_, placeholder_;
  std::optional<std::array<int, 3>> crosshair_;
  model::PlaneLayout layout_;
  double zoom_ = 1, panRight_ = 0, panUp_ = 0;
  bool roiMode_ = false, roiDrag_ = false, roiEllipse_ = false, roiFreehand_ = false;
  std::vector<std::array<int, 3>> outline_;
  std::vector<std::array<int, 3>> measure_;  ///< the distance line's two ends, the angle's three points
  QString measureLabel_;
  std::optional<std::pair<std::array<int, 3>, std::array<int, 3>>> roi_;
  // drag state
  Qt::MouseButton dragButton_ = Qt::NoButton;
  bool dragPan_ = false;
  QPointF dragStart_;
  double dragLo_ = 0, dragHi_ = 1, dragZoom_ = 1, dragPanRight_ = 0, dragPanUp_ = 0;
};

}  // namespace larmor::ui
