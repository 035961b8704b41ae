#pragma once
// The oblique plane of a 3D image (multiplanar reformatting): a plane through the linked cursor, turned by two
// angles (tilt about x, then spin about y; the sliders under the picture, or a left drag: across = spin, up and
// down = tilt), resampled trilinearly from the shown component by model/oblique_plane.hpp when it is painted
// (a few milliseconds for a 256³ volume). The cursor is the picture's centre and is drawn as a crosshair; a click
// moves the cursor to the voxel under the mouse (the three orthogonal planes follow, ImageViewer::linkCursor).
#include <QWidget>
#include <array>
#include <memory>

#include "larmor/array/array.hpp"
#include "oblique_plane.hpp"

class QSlider;

namespace larmor::ui {

class ObliqueView : public QWidget {
  Q_OBJECT
 public:
  explicit ObliqueView(QWidget* parent = nullptr);

  /// values: [x, y, z] (the shown component); nullptr clears. The plane keeps its angles and moves to the
  /// volume's centre when it has no cursor inside it.
  void setVolume(std::shared_ptr<const RArray> values, std::array<double, 3> spacingMm);
  void setWindow(double lo, double hi);
  void setColormap(const QString& name);
  /// The plane passes through voxel (i, j, k) (the linked cursor).
  void setCentre(std::array<int, 3> voxel);
  void setAngles(double tiltDeg, double spinDeg);
  const model::ObliquePlane& plane() const { return plane_; }
  /// The resampled picture [side, side] as last painted (resampled now when stale); empty without a volume.
  const RArray& picture();
  int side() const { return side_; }
  /// Widget position of sample (a, b) of the picture, and the voxel nearest to the point under widget position.
  QPointF screenOf(double a, double b) const;
  std::array<int, 3> voxelAt(QPointF pos) const;

 signals:
  /// A left click (no drag) on voxel (i, j, k).
  void clicked(int i, int j, int k);
  void anglesChanged(double tiltDeg, double spinDeg);

 protected:
  void paintEvent(QPaintEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;

 private:
  QRectF pictureRect() const;
  void resample();
  void syncSliders();

  std::shared_ptr<const RArray> values_;
  std::array<double, 3> spacing_{1, 1, 1};
  model::ObliquePlane plane_{{-1, -1, -1}, 0, 0};  ///< the centre outside: the next volume's centre
  RArray picture_;
  bool stale_ = true;
  int side_ = 0;
  double step_ = 1, lo_ = 0, hi_ = 1;
  std::array<QRgb, 256> lut_{};
  QSlider* tilt_ = nullptr;
  QSlider* spin_ = nullptr;
  QPointF press_;
  double pressTilt_ = 0, pressSpin_ = 0;
  bool pressed_ = false;
};

}  // namespace larmor::ui
