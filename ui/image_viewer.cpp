#include "image_viewer.hpp"

#include <QComboBox>
#include <QDoubleValidator>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QSlider>
#include <QToolButton>
#include <QVBoxLayout>
#include <cmath>
#include <numbers>

#include "colormaps.hpp"
#include "oblique_view.hpp"
#include "slice_view.hpp"
#include "volume_view.hpp"

namespace larmor::ui {
namespace {

QString num(double v) { return QString::number(v, 'g', 5); }

QString componentLabel(quality::Component c) {
  switch (c) {
    case quality::Component::Magnitude: return QObject::tr("Magnitude");
    case quality::Component::Phase: return QObject::tr("Phase");
    case quality::Component::Real: return QObject::tr("Real");
    case quality::Component::Imaginary: return QObject::tr("Imaginary");
  }
  return {};
}

/// The colour bar's title: the clinical name of the component (units for phase).
QString barTitle(quality::Component c) {
  switch (c) {
    case quality::Component::Magnitude: return QObject::tr("magnitude");
    case quality::Component::Phase: return QObject::tr("phase (rad)");
    case quality::Component::Real: return QObject::tr("real");
    case quality::Component::Imaginary: return QObject::tr("imaginary");
  }
  return {};
}

const QString kProbeHint = QObject::tr("Move the mouse over the image: position (mm), value and phase appear here.");

/// "L 12.3  P 4.0  S 0.0 mm": an LPS position with the letter of each coordinate's sign.
QString lpsText(const io::Vec3& r) {
  static const char plus[] = {'L', 'P', 'S'}, minus[] = {'R', 'A', 'I'};
  QStringList parts;
  for (int k = 0; k < 3; ++k) {
    const double v = r[static_cast<std::size_t>(k)];
    parts << QStringLiteral("%1 %2").arg(QChar(v < 0 ? minus[k] : plus[k])).arg(std::abs(v), 0, 'f', 1);
  }
  return parts.join(QStringLiteral("  ")) + QStringLiteral(" mm");
}

}  // namespace

QStringList ImageViewer::windowPresetNames() {
  return {QObject::tr("Auto"), QObject::tr("Full range"), QObject::tr("Soft"), QObject::tr("High contrast")};
}

ImageViewer::ImageViewer(QWidget* parent) : QWidget(parent) {
  QLayout* top = toolRow();
  makeViews();
  QWidget* sliceBox = sliceRow();
  probe_ = new QLabel(kProbeHint);
  probe_->setObjectName("probe");
  probe_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  probe_->setContentsMargins(8, 2, 8, 2);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  layout->addLayout(top);
  layout->addWidget(area_, 1);
  layout->addWidget(sliceBox);
  layout->addWidget(probe_);
  layout->addWidget(makeMeasurements());
  updateLayoutFor3D(false);
  connectTools();
  connectViews();
  connectReadingTools();
}

QLayout* ImageViewer::toolRow() {
  auto* top = new QHBoxLayout;
  top->setContentsMargins(6, 4, 6, 4);
  top->setSpacing(6);
  componentBox_ = new QComboBox;
  for (auto c : {quality::Component::Magnitude, quality::Component::Phase, quality::Component::Real,
                 quality::Component::Imaginary})
    componentBox_->addItem(componentLabel(c), static_cast<int>(c));
  componentBox_->setToolTip(tr("Which part of the complex image to show"));
  colormapBox_ = new QComboBox;
  for (const QString& n : colormapNames()) colormapBox_->addItem(n);
  colormapBox_->setToolTip(tr("Colour map (phase is cyclic: -pi and +pi look the same)"));
  loEdit_ = new QLineEdit;
  hiEdit_ = new QLineEdit;
  for (QLineEdit* e : {loEdit_, hiEdit_}) {
    auto* v = new QDoubleValidator(e);
    v->setNotation(QDoubleValidator::ScientificNotation);
    e->setValidator(v);
    e->setMaximumWidth(90);
    e->setMinimumWidth(48);
  }
  loEdit_->setToolTip(tr("Window: lowest value shown (black)"));
  hiEdit_->setToolTip(tr("Window: highest value shown (white); drag with the left button in a view"));
  auto* autoButton = new QToolButton;
  autoButton->setIcon(QIcon(":/icons/contrast.svg"));
  autoButton->setText(tr("Auto"));
  autoButton->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  autoButton->setToolTip(tr("Automatic window: 0.5th to 99.5th percentile"));
  presetBox_ = new QComboBox;
  presetBox_->setObjectName("windowPresets");
  presetBox_->addItem(tr("Preset…"));
  presetBox_->addItems(windowPresetNames());
  presetBox_->setToolTip(tr("Window presets: Auto (0.5–99.5th percentile), Full range (minimum to maximum), "
                            "Soft (a wider window, 0 to 1.5 × the 99.5th percentile), High contrast (25th to 97th percentile)"));
  auto* resetButton = new QToolButton;
  resetButton->setIcon(QIcon(":/icons/reset-view.svg"));
  resetButton->setToolTip(tr("Fit the image (zoom 1, no pan)"));
  // The row gives way on narrow screens (down to 1024 px): the lists shrink to a few letters.
  for (QComboBox* c : {componentBox_, colormapBox_, presetBox_}) {
    c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    c->setMinimumContentsLength(4);
    c->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);  // ...and take their full width when there is room
    c->setMaximumWidth(2 * c->fontMetrics().horizontalAdvance(QStringLiteral("Magnitude")) + 40);
  }
  top->addWidget(componentBox_, 10);  // the lists take the spare room first (up to their maximum width)
  top->addWidget(colormapBox_, 10);
  top->addSpacing(6);
  auto* windowLabel = new QLabel(tr("Window"));
  windowLabel->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // dropped first on a narrow screen
  windowLabel->setMinimumWidth(0);
  top->addWidget(windowLabel);
  top->addWidget(loEdit_);
  top->addWidget(new QLabel(QStringLiteral("–")));
  top->addWidget(hiEdit_);
  top->addWidget(autoButton);
  top->addWidget(presetBox_, 10);
  top->addWidget(resetButton);
  roiButton_ = new QToolButton;
  roiButton_->setObjectName("roiButton");
  roiButton_->setText(tr("ROI"));
  roiButton_->setCheckable(true);
  roiButton_->setToolTip(tr("Draw a region of interest on the image (or ctrl+drag; the arrow: rectangle, ellipse, "
                            "freehand, the distance or the angle tool): "
                            "mean, SD, min, max and area below the image; a series shows the mean over the frames"));
  top->addWidget(roiButton_);
  top->addStretch(1);
  connect(autoButton, &QToolButton::clicked, this, &ImageViewer::autoWindow);
  connect(resetButton, &QToolButton::clicked, this, [this] {
    for (SliceView* v : views_) v->resetView();
    volumeView_->resetCamera();
  });
  return top;
}

void ImageViewer::makeViews() {
  area_ = new QWidget;
  grid_ = new QGridLayout(area_);
  grid_->setContentsMargins(0, 0, 0, 0);
  grid_->setSpacing(2);
  views_[SliceView::Axial] = new SliceView(SliceView::Axial);
  views_[SliceView::Coronal] = new SliceView(SliceView::Coronal);
  views_[SliceView::Sagittal] = new SliceView(SliceView::Sagittal);
  volumeView_ = new VolumeView;
  obliqueView_ = new ObliqueView;
  // A hand-edited settings file may hold the value unquoted, which QSettings reads as a list of its commas' parts.
  const QVariant saved = QSettings().value(kHangingKey);
  const QString text = saved.typeId() == QMetaType::QStringList ? saved.toStringList().join(',') : saved.toString();
  hanging_ = model::hangingFromString(text.trimmed().toStdString());
  views_[SliceView::Axial]->setColorBar(true, barTitle(quality::Component::Magnitude));
  views_[SliceView::Axial]->setPlaceholder(tr("Open a file or make a phantom (File menu), then Run."));
  makePaneViews();
}

QWidget* ImageViewer::sliceRow() {
  sliceSlider_ = new QSlider(Qt::Horizontal);
  sliceLabel_ = new QLabel;
  auto* row = new QHBoxLayout;
  row->setContentsMargins(6, 0, 6, 0);
  row->addWidget(new QLabel(tr("Slice")));
  row->addWidget(sliceSlider_, 1);
  row->addWidget(sliceLabel_);
  auto* sliceBox = new QWidget;
  sliceBox->setLayout(row);
  sliceBox->setObjectName("sliceRow");
  return sliceBox;
}

void ImageViewer::connectTools() {
  connect(componentBox_, &QComboBox::activated, this, [this](int index) {
    setComponent(static_cast<quality::Component>(componentBox_->itemData(index).toInt()));
  });
  connect(colormapBox_, &QComboBox::activated, this, [this](int) { setColormap(colormapBox_->currentText()); });
  auto applyEdits = [this] { setWindow(loEdit_->text().toDouble(), hiEdit_->text().toDouble()); };
  connect(loEdit_, &QLineEdit::editingFinished, this, applyEdits);
  connect(hiEdit_, &QLineEdit::editingFinished, this, applyEdits);
  connect(presetBox_, &QComboBox::activated, this, [this](int index) {
    if (index > 0) applyWindowPreset(presetBox_->itemText(index));
    presetBox_->setCurrentIndex(0);
  });
}

void ImageViewer::connectViews() {
  connect(sliceSlider_, &QSlider::valueChanged, this, [this](int s) { views_[SliceView::Axial]->setSlice(s); });
  for (SliceView* v : views_) {
    connect(v, &SliceView::windowDragged, this, [this](double lo, double hi) { setWindow(lo, hi); });
    connect(v, &SliceView::hovered, this, &ImageViewer::onHover);
    connect(v, &SliceView::clicked, this, &ImageViewer::linkCursor);
    // Scrolling a plane moves the cursor's coordinate along that plane's axis.
    connect(v, &SliceView::sliceChanged, this, [this, v](int s) {
      if (!cursor_ || (*cursor_)[static_cast<std::size_t>(v->axis())] == s) return;
      auto c = *cursor_;
      c[static_cast<std::size_t>(v->axis())] = s;
      linkCursor(c[0], c[1], c[2]);
    });
  }
  connect(obliqueView_, &ObliqueView::clicked, this, &ImageViewer::linkCursor);
  connect(roiButton_, &QToolButton::toggled, this, [this](bool on) { views_[SliceView::Axial]->setRoiMode(on); });
  connect(views_[SliceView::Axial], &SliceView::roiDrawn, this, [this](std::array<int, 3> a, std::array<int, 3> b) {
    roiChanged({std::min(a[0], b[0]), std::min(a[1], b[1]), std::max(a[0], b[0]), std::max(a[1], b[1]), a[2], roiShape_, {}});
  });
  connect(views_[SliceView::Axial], &SliceView::sliceChanged, this, [this](int s) {
    sliceSlider_->blockSignals(true);
    sliceSlider_->setValue(s);
    sliceSlider_->blockSignals(false);
    sliceLabel_->setText(QStringLiteral("%1 / %2").arg(s + 1).arg(views_[SliceView::Axial]->sliceCount()));
  });
}

ImageViewer::~ImageViewer() = default;

QWidget* ImageViewer::viewArea() const { return area_; }
SliceView* ImageViewer::planeView(int axis) const { return views_[std::clamp(axis, 0, 2)]; }

void ImageViewer::setImage(std::shared_ptr<const CArray> image, std::array<double, 3> spacingMm, const QString& title) {
  const bool sameShape = image_ && image && image_->shape() == image->shape();
  image_ = std::move(image);
  spacing_ = spacingMm;
  title_ = title;
  if (!sameShape) cursor_.reset();  // a cursor of another volume means nothing here
  if (!image_ || image_->empty()) {
    clear(tr("Empty image"));
    return;
  }
  // [x, y, z, 1, slices] -> [x, y, z * slices]: multi-slice 2D becomes a stack the slice slider walks.
  // One plane of a 3D encoding ([1, y, z]: BART's ky-kz plane after the readout IFFT; or [x, 1, z]) is a 2D
  // image of its two other axes, as larmor-cli writes it, not a volume one voxel thick (the same memory).
  const Shape& s = image_->shape();
  Shape shape{s[0], s[1], image_->size() / (s[0] * s[1])};
  planeOf3D_ = s[2] > 1 && image_->size() == s[0] * s[1] * s[2] && (s[0] == 1 || s[1] == 1);
  if (planeOf3D_) {
    const int flat = s[0] == 1 ? 0 : 1, other = 1 - flat;
    shape = Shape{s[static_cast<std::size_t>(other)], s[2], 1};
    // Square pixels, as larmor-cli's PNG: the third axis' FOV is the slab's (BART files state none), not the plane's.
    const double d = spacingMm[static_cast<std::size_t>(other)];
    spacing_ = {d, d, spacingMm[static_cast<std::size_t>(flat)]};
  }
  auto vol = std::make_shared<CArray>(*image_);
  vol->reshape(shape);
  volume_ = std::move(vol);
  // A re-run with the same shape and range (a λ change) keeps the user's window and view; an image of another
  // range (GRAPPA after the aliased FFT, another file's frame) gets a window of its own.
  const double before = rangeHigh_;
  rangeHigh_ = quality::percentileWindow(quality::component(*image_, quality::Component::Magnitude), 0.5, 99.5).hi;
  const double tolerance = userWindow_ ? kUserRange : kAutoRange;
  const bool sameRange = before > 0 && rangeHigh_ > 0 && rangeHigh_ <= tolerance * before && before <= tolerance * rangeHigh_;
  rebuildDisplay(sameShape && sameRange);
  if (sameShape) updateMeasurements();  // the ROI and the distance of the new image (another frame, a re-run)
  else clearMeasurements();
}

void ImageViewer::setRoi(const model::PlaneRoi& roi) {
  SliceView* axial = views_[SliceView::Axial];
  std::vector<std::array<int, 3>> outline;
  for (const auto& p : roi.polygon) outline.push_back({p[0], p[1], roi.z});
  const bool freehand = roi.shape == model::RoiShape::Freehand;
  axial->setRoiOutline(freehand ? outline : std::vector<std::array<int, 3>>{});
  if (freehand) axial->setRoi(std::nullopt);
  else axial->setRoi(std::make_pair(std::array<int, 3>{roi.x0, roi.y0, roi.z}, std::array<int, 3>{roi.x1, roi.y1, roi.z}));
  axial->setRoiEllipse(roi.shape == model::RoiShape::Ellipse);
  axial->setRoiFreehand(freehand);
  roiChanged(roi);
}

void ImageViewer::clear(const QString& message) {
  cursor_.reset();
  views_[SliceView::Axial]->setRoi(std::nullopt);
  views_[SliceView::Axial]->setRoiOutline({});
  clearMeasurements();
  image_.reset();
  volume_.reset();
  display_.reset();
  for (SliceView* v : views_) {
    v->setVolume(nullptr);
    v->setPlaceholder(message);
  }
  volumeView_->setVolume(nullptr);
  obliqueView_->setVolume(nullptr, spacing_);
  updateLayoutFor3D(false);
}

void ImageViewer::rebuildDisplay(bool keepWindow) {
  if (!volume_) return;
  RArray values = quality::component(*volume_, component_);
  display_ = std::make_shared<DisplayVolume>(values, spacing_);
  const bool is3D = volume_->shape()[2] > 1 && image_->shape()[2] > 1;
  updateLayoutFor3D(is3D);
  for (SliceView* v : views_) v->setVolume(display_);
  volumeView_->setVolume(is3D ? display_ : nullptr);
  obliqueView_->setVolume(is3D ? std::make_shared<const RArray>(std::move(values)) : nullptr, spacing_);  // its last use
  const int n = static_cast<int>(volume_->shape()[2]);
  sliceSlider_->setRange(0, n - 1);
  sliceSlider_->setValue(views_[SliceView::Axial]->slice());
  sliceLabel_->setText(QStringLiteral("%1 / %2").arg(views_[SliceView::Axial]->slice() + 1).arg(n));
  sliceSlider_->parentWidget()->setVisible(!is3D && n > 1);
  views_[SliceView::Axial]->setTitle(is3D ? QString() : title_);  // 3D: the plane's name
  // A sum-of-squares image is real and non-negative: its phase is 0 everywhere, one flat colour. Say so.
  QString hint;
  if (component_ == quality::Component::Phase) {
    bool real = true;
    const cfloat* v = volume_->data();
    for (index_t n = 0; n < volume_->size() && real; ++n) real = v[n].imag() == 0 && v[n].real() >= 0;
    if (real) hint = tr("No phase: this image is real and non-negative (sum of squares). Use adaptive coil combination to see phase.");
  }
  views_[SliceView::Axial]->setInfoText(hint);
  showPaneImages();  // scaled to this image's range, in its component
  if (keepWindow) applyWindowToViews();
  else autoWindow();
}

void ImageViewer::updateLayoutFor3D(bool is3D) {
  is3D_ = is3D;
  applyHanging();  // 3D: the panes of the hanging; 2D: the axial view alone fills the area
}

void ImageViewer::setComponent(quality::Component c) {
  if (c == component_) return;
  const bool wasPhase = component_ == quality::Component::Phase;
  component_ = c;
  componentBox_->setCurrentIndex(componentBox_->findData(static_cast<int>(c)));
  // Phase has its own cyclic map; coming back restores the map the user had chosen.
  if (c == quality::Component::Phase) {
    magnitudeColormap_ = colormap_;
    colormap_ = "phase";
  } else if (wasPhase) {
    colormap_ = magnitudeColormap_;
  }
  colormapBox_->setCurrentText(colormap_);
  views_[SliceView::Axial]->setColorBar(true, barTitle(c));
  rebuildDisplay(false);
}

void ImageViewer::setColormap(const QString& name) {
  colormap_ = name;
  if (component_ != quality::Component::Phase) magnitudeColormap_ = name;
  colormapBox_->setCurrentText(name);
  for (SliceView* v : views_) v->setColormap(name);
  for (SliceView* v : paneViews_) v->setColormap(name);
  volumeView_->setColormap(name);
  obliqueView_->setColormap(name);
}

void ImageViewer::setWindow(double lo, double hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return;
  if (hi <= lo) hi = lo + std::max(1e-12, std::abs(lo) * 1e-6);
  lo_ = lo;
  hi_ = hi;
  userWindow_ = true;  // autoWindow says otherwise after it
  applyWindowToViews();
}

void ImageViewer::autoWindow() {
  if (!display_) return;
  if (component_ == quality::Component::Phase) {
    setWindow(-std::numbers::pi, std::numbers::pi);
    userWindow_ = false;
    return;
  }
  const RArray values = quality::component(*volume_, component_);
  const auto w = quality::percentileWindow(values, 0.5, 99.5);
  // Magnitudes start at zero: a window from 0 keeps the background black, as radiographers expect.
  setWindow(component_ == quality::Component::Magnitude ? 0.0 : w.lo, w.hi);
  userWindow_ = false;
}

void ImageViewer::applyWindowPreset(const QString& name) {
  if (!display_) return;
  const int which = windowPresetNames().indexOf(name);
  if (which <= 0 || component_ == quality::Component::Phase) {
    autoWindow();
    return;
  }
  const RArray values = quality::component(*volume_, component_);
  const bool magnitude = component_ == quality::Component::Magnitude;
  if (which == 1) {
    const auto w = quality::percentileWindow(values, 0.0, 100.0);
    setWindow(magnitude ? 0.0 : w.lo, w.hi);
  } else if (which == 2) {
    const auto w = quality::percentileWindow(values, 0.5, 99.5);
    setWindow(magnitude ? 0.0 : w.lo, magnitude ? 1.5 * w.hi : w.lo + 1.5 * (w.hi - w.lo));
  } else {
    const auto w = quality::percentileWindow(values, 25.0, 97.0);
    setWindow(w.lo, w.hi);
  }
}

void ImageViewer::setOrientation(const model::DisplayOrientation& o) {
  for (SliceView* v : views_) v->setOrientation(o);
  for (SliceView* v : paneViews_) v->setOrientation(o);
}

void ImageViewer::setPatientGeometry(std::optional<io::ImageGeometry> g) {
  patient_ = planeOf3D_ ? std::nullopt : std::move(g);  // the plane's axes are not the geometry's x, y
}

void ImageViewer::resetProbe() { probe_->setText(kProbeHint); }

void ImageViewer::applyWindowToViews() {
  for (SliceView* v : views_) {
    v->setColormap(colormap_);
    v->setWindow(lo_, hi_);
  }
  volumeView_->setColormap(colormap_);
  volumeView_->setWindow(lo_, hi_);
  obliqueView_->setColormap(colormap_);
  obliqueView_->setWindow(lo_, hi_);
  for (SliceView* v : paneViews_) {
    v->setColormap(colormap_);
    v->setWindow(lo_, hi_);
  }
  syncWindowEdits();
  emit windowChanged(lo_, hi_);
}

void ImageViewer::syncWindowEdits() {
  loEdit_->setText(num(lo_));
  hiEdit_->setText(num(hi_));
}

void ImageViewer::linkCursor(int i, int j, int k) {
  if (!volume_ || !(volume_->shape()[2] > 1 && image_->shape()[2] > 1)) return;  // 3D only
  const auto& sh = volume_->shape();
  if (i < 0 || j < 0 || k < 0 || i >= sh[0] || j >= sh[1] || k >= sh[2]) return;
  cursor_ = std::array<int, 3>{i, j, k};
  views_[SliceView::Sagittal]->setSlice(i);
  views_[SliceView::Coronal]->setSlice(j);
  views_[SliceView::Axial]->setSlice(k);
  for (SliceView* v : views_) v->setCrosshair(cursor_);
  obliqueView_->setCentre(*cursor_);
}

void ImageViewer::onHover(int i, int j, int k) {
  const bool inside = i >= 0 && volume_;
  for (SliceView* v : views_) {
    if (inside && volume_->shape()[2] > 1 && image_->shape()[2] > 1) v->setCrosshair(std::array<int, 3>{i, j, k});
    else v->setCrosshair(cursor_);  // the clicked cursor stays when the mouse leaves
  }
  if (!inside) return;
  const auto pv = quality::probe(*volume_, i, j, k);
  const bool multiSlice = image_->shape()[2] == 1 && volume_->shape()[2] > 1;
  const QString pos = multiSlice ? QStringLiteral("x %1  y %2  slice %3").arg(i).arg(j).arg(k + 1)
                                 : (volume_->shape()[2] > 1 ? QStringLiteral("x %1  y %2  z %3").arg(i).arg(j).arg(k)
                                                            : QStringLiteral("x %1  y %2").arg(i).arg(j));
  QString mm;
  if (patient_ && k < patient_->planes()) mm = QStringLiteral("  (%1)").arg(lpsText(patient_->position(k, i, j)));
  const QString text = QStringLiteral("%1%2    magnitude %3    phase %4°    re %5    im %6")
                           .arg(pos, mm, num(pv.magnitude), QString::number(pv.phase * 180.0 / std::numbers::pi, 'f', 1),
                                num(pv.value.real()), num(pv.value.imag()));
  probe_->setText(text);
  emit probed(text);
}

QString ImageViewer::probeText() const { return probe_->text(); }

}  // namespace larmor::ui
