#pragma once
// The image tab: a complex image shown as magnitude, phase, real or imaginary part; one plane for 2D
// data (a slice slider for multi-slice), axial/coronal/sagittal planes plus a volume rendering for 3D.
// Window by mouse drag, by numbers or automatic (percentiles from the engine); a pixel probe. Reading tools
// (image_viewer_tools.cpp; the measurements in model/roi_stats.hpp): ROI statistics (rectangle, ellipse or
// freehand), distance in mm between two clicks, the angle of three clicks, a right-click menu, keyboard stepping
// through slices and frames. 3D images hang in one, two or four panes (model/hanging.hpp: the planes, the volume
// rendering, the oblique plane of oblique_view.hpp; View ▸ Layout), the choice kept in QSettings; any pane may show
// another image of the session instead (a run, a reference series: image_viewer_panes.cpp), linked with this one.
#include <QPoint>
#include <QVector>
#include <QWidget>
#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "display_volume.hpp"
#include "display_orientation.hpp"
#include "hanging.hpp"
#include "larmor/array/array.hpp"
#include "larmor/io/image_geometry.hpp"
#include "larmor/quality/display.hpp"
#include "roi_stats.hpp"
#include "time_curve.hpp"

class QAction;
class QComboBox;
class QLabel;
class QLineEdit;
class QMenu;
class QSlider;
class QGridLayout;
class QLayout;
class QStackedWidget;
class QToolButton;

namespace larmor::ui {

class ObliqueView;
class SliceView;
class VolumeView;

class ImageViewer : public QWidget {
  Q_OBJECT
 public:
  explicit ImageViewer(QWidget* parent = nullptr);
  ~ImageViewer() override;

  /// image: [x, y, z, 1, slices]; multi-slice 2D is shown as a stack along z. spacingMm: voxel size.
  void setImage(std::shared_ptr<const CArray> image, std::array<double, 3> spacingMm, const QString& title);
  void clear(const QString& message);
  bool hasImage() const { return static_cast<bool>(volume_); }

  quality::Component component() const { return component_; }
  void setComponent(quality::Component c);
  QString colormap() const { return colormap_; }
  void setColormap(const QString& name);
  void setWindow(double lo, double hi);
  double windowLow() const { return lo_; }
  double windowHigh() const { return hi_; }
  /// The window from the 0.5th and 99.5th percentiles of the shown component (phase: [-pi, pi]).
  void autoWindow();
  /// Window presets: "Auto", "Full range", "Soft", "High contrast" (windowPresetNames()).
  static QStringList windowPresetNames();
  void applyWindowPreset(const QString& name);
  /// The display convention of the data (orientation letters, which way the planes are drawn).
  void setOrientation(const model::DisplayOrientation& o);
  /// The patient geometry of the image, for positions in mm (LPS) in the probe; nullopt: voxel indices only.
  void setPatientGeometry(std::optional<io::ImageGeometry> g);
  /// The probe shows "position, value" after a hover; "" until then (and after new data).
  void resetProbe();
  /// The area with the views (what "Export PNG of the view" saves).
  QWidget* viewArea() const;
  SliceView* planeView(int axis) const;
  VolumeView* volumeView() const { return volumeView_; }
  ObliqueView* obliqueView() const { return obliqueView_; }
  /// The panes of a 3D image (2D images show the axial plane alone); setHanging keeps it in QSettings
  /// ("viewer/hanging"), which the next viewer starts from.
  const model::Hanging& hanging() const { return hanging_; }
  void setHanging(const model::Hanging& h);
  static constexpr const char* kHangingKey = "viewer/hanging";
  /// The widget in pane `pane` of the current hanging (nullptr beyond the layout's panes).
  QWidget* paneWidget(int pane) const;
  /// View ▸ Layout: 1×1, 1×2, 2×2 and each pane's view (actions "layout1x1", …, "pane1Oblique", …) or another
  /// image of the session (actions "pane2Image3" for choice 3, image_viewer_panes.cpp).
  QMenu* layoutMenu();
  /// An image a pane can show instead of its view of the current image: a run of the session, a reference series.
  struct PaneChoice {
    int id = 0;  ///< nonzero: a run's number, or a reference file's (negative) id
    QString label;
    std::shared_ptr<const CArray> image;  ///< [x, y, z, 1, slices]
    std::array<double, 3> spacingMm{1, 1, 1};
  };
  /// What the panes can show besides the current image (the right-click menu's "Show in this pane", View ▸ Layout ▸
  /// Pane N); a pane showing an image no longer offered goes back to its view.
  void setPaneChoices(const QVector<PaneChoice>& choices);
  /// Pane `pane` (0..3) shows choice `id`'s axial planes (its slice, window, zoom and pan linked with the current
  /// image's axial plane; its values scaled to the current image's range), or with 0 its view of the current image.
  /// A 2D image hangs the layout's panes once one of them shows another image (the current image in the first,
  /// a pane without an image says how to choose one).
  void setPaneImage(int pane, int id);
  int paneImage(int pane) const;  ///< the choice pane `pane` shows, 0: the current image
  SliceView* paneImageView(int pane) const;
  QString probeText() const;
  /// 3D: the linked cursor at voxel (i, j, k): the sagittal, coronal and axial planes move to x = i,
  /// y = j, z = k and all three draw the crosshair there (a click on a plane does this). 2D: nothing.
  void linkCursor(int i, int j, int k);
  std::optional<std::array<int, 3>> linkedCursor() const { return cursor_; }
  /// The ROI tool (a rectangle on the axial plane; ctrl+drag draws one without it).
  QToolButton* roiButton() const { return roiButton_; }
  /// Draws `roi` on the axial plane as if the user had (roiDrawn follows).
  void setRoi(const model::PlaneRoi& roi);
  /// The shape the next ROI is drawn with (the ROI button's menu).
  void setRoiShape(model::RoiShape shape);
  model::RoiShape roiShape() const { return roiShape_; }
  std::optional<model::PlaneRoi> roi() const { return roi_; }
  /// "ROI ellipse: mean …, SD …, min …, max …, area … mm² (n voxels)"; "" without a ROI.
  QString roiStatsText() const { return roiText_; }
  /// The distance tool (the ROI button's menu, the right-click menu): each left click on the axial plane is an end
  /// of the line (two ends: the distance).
  void setDistanceMode(bool on);
  bool distanceMode() const;
  /// "distance 12.5 mm"; "" until two points are clicked.
  QString distanceText() const { return distanceText_; }
  /// The angle tool: three left clicks on the axial plane, an end, the vertex, the other end; the angle at the
  /// vertex in degrees, in physical space (the voxel size of the data).
  void setAngleMode(bool on);
  bool angleMode() const;
  /// "angle 63.4°"; "" until three points are clicked.
  QString angleText() const { return angleText_; }
  /// Opens the image's context menu (object name "imageContextMenu") at `globalPos` over `voxel` of pane `pane`
  /// (its "Show in this pane" submenu: actions "showInPane0" for the pane's own view, "showInPane3" for choice 3);
  /// returns it.
  QMenu* showContextMenu(QPoint globalPos, std::optional<std::array<int, 3>> voxel, int pane = 0);

 signals:
  void probed(const QString& text);
  /// A rectangle of interest was drawn on the axial plane (voxels of the [x, y, z x slices] stack).
  void roiDrawn(const larmor::model::PlaneRoi& roi);
  void windowChanged(double lo, double hi);
  /// Left/Right on the image: the previous (-1) or next (+1) frame.
  void frameStepRequested(int step);
  /// The context menu's "Export screenshot…".
  void screenshotRequested();

 private:
  // The constructor's parts: the tool row (component, colour map, window; parents nothing yet), the view grid
  // in area_, the slice row, and the signals of the tools and of the views.
  QLayout* toolRow();
  void makeViews();
  QWidget* sliceRow();
  void connectTools();
  void connectViews();
  void rebuildDisplay(bool keepWindow);
  void applyWindowToViews();
  void updateLayoutFor3D(bool is3D);
  void onHover(int i, int j, int k);
  void syncWindowEdits();
  // The reading tools (image_viewer_tools.cpp).
  QWidget* makeMeasurements();
  void connectReadingTools();
  void roiChanged(const model::PlaneRoi& roi);
  void distanceClick(int i, int j, int k);
  void angleClick(int i, int j, int k);
  void outlineDrawn(const std::vector<std::array<int, 3>>& outline);
  void applyHanging();
  QWidget* viewWidget(model::PaneView v) const;
  // The panes that show another image (image_viewer_panes.cpp).
  void makePaneViews();
  bool panesShowImages() const;  ///< a pane of the layout shows a choice
  void showPaneImages();         ///< each such pane's image in the current component, scale and window
  void fillPaneImageActions(int pane);
  int paneOf(const QObject* view) const;
  void addShowInPane(QMenu* menu, int pane);
  void updateMeasurements();
  void clearMeasurements();
  void copyValue(std::array<int, 3> voxel);

  std::shared_ptr<const CArray> image_;
  std::shared_ptr<CArray> volume_;  // the image as [x, y, z*slices]
  std::array<double, 3> spacing_{1, 1, 1};
  bool planeOf3D_ = false;  ///< the image is one plane of a 3D encoding, shown as 2D
  QString title_;
  DisplayVolumePtr display_;
  quality::Component component_ = quality::Component::Magnitude;
  QString colormap_ = "grey", magnitudeColormap_ = "grey";
  std::optional<io::ImageGeometry> patient_;
  std::optional<std::array<int, 3>> cursor_;  ///< the clicked voxel (3D), kept when the mouse leaves
  double lo_ = 0, hi_ = 1;
  /// The shown image's range: the 99.5th percentile of its magnitude. A new image of the same shape keeps a
  /// window the user set while its range is within kUserRange of this one (a λ change, not another file's
  /// frame); an automatic window follows any change of range beyond kAutoRange (GRAPPA after the aliased FFT).
  double rangeHigh_ = 0;
  bool userWindow_ = false;  ///< the window was set by the user (drag, numbers, a preset), not automatic
  static constexpr double kUserRange = 1.5, kAutoRange = 1.05;

  QComboBox* componentBox_ = nullptr;
  QComboBox* colormapBox_ = nullptr;
  QComboBox* presetBox_ = nullptr;
  QToolButton* roiButton_ = nullptr;
  QAction* distanceAction_ = nullptr;  ///< in the ROI button's menu
  QAction* angleAction_ = nullptr;     ///< in the ROI button's menu
  QLabel* measurements_ = nullptr;
  std::optional<model::PlaneRoi> roi_;
  model::RoiShape roiShape_ = model::RoiShape::Rectangle;
  std::vector<std::array<int, 3>> distanceEnds_, anglePoints_;
  QString roiText_, distanceText_, angleText_;
  QLineEdit* loEdit_ = nullptr;
  QLineEdit* hiEdit_ = nullptr;
  QWidget* area_ = nullptr;
  QGridLayout* grid_ = nullptr;
  SliceView* views_[3] = {nullptr, nullptr, nullptr};
  VolumeView* volumeView_ = nullptr;
  ObliqueView* obliqueView_ = nullptr;
  model::Hanging hanging_;
  std::array<SliceView*, 4> paneViews_{};  ///< the panes' views of a choice
  std::array<int, 4> paneIds_{};           ///< the choice each pane shows, 0: its view of the current image
  QVector<PaneChoice> paneChoices_;
  std::array<QMenu*, 4> paneMenus_{};      ///< View ▸ Layout ▸ Pane N
  bool is3D_ = false;
  QMenu* layoutMenu_ = nullptr;
  QSlider* sliceSlider_ = nullptr;
  QLabel* sliceLabel_ = nullptr;
  QLabel* probe_ = nullptr;
};

}  // namespace larmor::ui
