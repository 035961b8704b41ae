// The image tab's panes that show another image of the session (image_viewer.hpp): a run of this or earlier data,
// a reference series (a DICOM series retrieved from a PACS), chosen per pane with the right-click menu's "Show in
// this pane" or View ▸ Layout ▸ Pane N. Such a pane shows the image's axial planes, linked with the current image's
// axial plane: the same slice (clamped to its planes), zoom and pan, component, colour map and window. The window
// is one window: each image's values are scaled by (the current image's 99.5th percentile of magnitude) / (its own),
// so that methods and scanners of other scales are compared by their shapes, as Side by side does.
#include <QAction>
#include <QActionGroup>
#include <QGridLayout>
#include <QMenu>
#include <algorithm>
#include <cmath>

#include "image_viewer.hpp"
#include "larmor/quality/display.hpp"
#include "slice_view.hpp"

namespace larmor::ui {

namespace {

/// The factor that brings `image`'s 99.5th percentile of magnitude to `range` (1 without either).
double scaleTo(const CArray& image, double range) {
  const double own = quality::percentileWindow(quality::component(image, quality::Component::Magnitude), 0.5, 99.5).hi;
  return own > 0 && range > 0 ? range / own : 1.0;
}

}  // namespace

void ImageViewer::makePaneViews() {
  for (std::size_t p = 0; p < paneViews_.size(); ++p) {
    auto* v = new SliceView(SliceView::Axial);
    v->setObjectName(QStringLiteral("paneImage%1").arg(p + 1));
    v->setPlaceholder(tr("Right-click ▸ Show in this pane: a run or a reference series"));
    v->hide();
    paneViews_[p] = v;
    SliceView* axial = views_[SliceView::Axial];
    connect(v, &SliceView::windowDragged, this, [this](double lo, double hi) { setWindow(lo, hi); });
    connect(v, &SliceView::sliceChanged, this, [axial](int s) {
      if (s < axial->sliceCount() && s != axial->slice()) axial->setSlice(s);
    });
    connect(v, &SliceView::viewTransformChanged, this, [this, v](double z, double pr, double pu) {
      for (SliceView* o : paneViews_)
        if (o != v) o->setViewTransform(z, pr, pu);  // (setViewTransform does not signal)
      views_[SliceView::Axial]->setViewTransform(z, pr, pu);
    });
    connect(v, &SliceView::contextMenuRequested, this, [this, v](QPoint at, std::optional<std::array<int, 3>>) {
      showContextMenu(at, std::nullopt, paneOf(v));
    });
  }
  SliceView* axial = views_[SliceView::Axial];
  connect(axial, &SliceView::sliceChanged, this, [this](int s) {
    for (SliceView* v : paneViews_)
      if (v->volume() && std::min(s, v->sliceCount() - 1) != v->slice()) v->setSlice(std::min(s, v->sliceCount() - 1));
  });
  connect(axial, &SliceView::viewTransformChanged, this, [this](double z, double pr, double pu) {
    for (SliceView* v : paneViews_) v->setViewTransform(z, pr, pu);
  });
}

bool ImageViewer::panesShowImages() const {
  for (int p = 0; p < model::paneCount(hanging_.layout); ++p)
    if (paneIds_[static_cast<std::size_t>(p)] != 0) return true;
  return false;
}

int ImageViewer::paneOf(const QObject* view) const {
  for (int p = 0; p < 4; ++p)
    if (paneWidget(p) == view) return p;
  return 0;
}

int ImageViewer::paneImage(int pane) const { return pane >= 0 && pane < 4 ? paneIds_[static_cast<std::size_t>(pane)] : 0; }

SliceView* ImageViewer::paneImageView(int pane) const {
  return pane >= 0 && pane < 4 ? paneViews_[static_cast<std::size_t>(pane)] : nullptr;
}

void ImageViewer::setPaneChoices(const QVector<PaneChoice>& choices) {
  paneChoices_ = choices;
  bool gone = false;
  for (int& id : paneIds_)
    if (id != 0 && std::none_of(choices.begin(), choices.end(), [id](const PaneChoice& c) { return c.id == id; })) {
      id = 0;
      gone = true;
    }
  for (int p = 0; p < 4; ++p) fillPaneImageActions(p);
  showPaneImages();
  if (gone) applyHanging();  // (each run brings new choices: the panes stay where they are otherwise)
}

void ImageViewer::setPaneImage(int pane, int id) {
  if (pane < 0 || pane >= 4) return;
  if (id != 0 && std::none_of(paneChoices_.begin(), paneChoices_.end(), [id](const PaneChoice& c) { return c.id == id; })) return;
  paneIds_[static_cast<std::size_t>(pane)] = id;
  // A 2D image in one pane: the layout's panes show once another image is chosen (two at least).
  if (id != 0 && pane >= model::paneCount(hanging_.layout)) {
    hanging_.layout = pane >= 2 ? model::PaneLayout::TwoByTwo : model::PaneLayout::OneByTwo;
    setHanging(hanging_);
  }
  showPaneImages();
  applyHanging();
  fillPaneImageActions(pane);
}

void ImageViewer::showPaneImages() {
  for (std::size_t p = 0; p < paneViews_.size(); ++p) {
    SliceView* v = paneViews_[p];
    const int id = paneIds_[p];
    const auto c = std::find_if(paneChoices_.begin(), paneChoices_.end(), [id](const PaneChoice& x) { return x.id == id; });
    if (id == 0 || c == paneChoices_.end() || !c->image || c->image->empty()) {
      v->setVolume(nullptr);
      continue;
    }
    const Shape& s = c->image->shape();
    CArray stack = *c->image;
    stack.reshape(Shape{s[0], s[1], stack.size() / (s[0] * s[1])});
    RArray values = quality::component(stack, component_);
    const double k = component_ == quality::Component::Phase ? 1.0 : scaleTo(stack, rangeHigh_);
    for (index_t n = 0; n < values.size(); ++n) values.data()[n] = static_cast<float>(values.data()[n] * k);
    v->setVolume(std::make_shared<DisplayVolume>(values, c->spacingMm));
    v->setTitle(c->label);
    v->setInfoText(std::abs(k - 1.0) > 0.05 ? tr("shown ×%1: the current image's range").arg(k, 0, 'g', 3) : QString());
    v->setColormap(colormap_);
    v->setWindow(lo_, hi_);
    v->setSlice(std::min(views_[SliceView::Axial]->slice(), v->sliceCount() - 1));
  }
}

void ImageViewer::fillPaneImageActions(int pane) {
  QMenu* m = paneMenus_[static_cast<std::size_t>(pane)];
  if (!m) return;
  for (QAction* a : m->actions())
    if (a->objectName().startsWith(QStringLiteral("pane%1Image").arg(pane + 1)) || a->property("paneImages").toBool()) {
      m->removeAction(a);
      a->deleteLater();
    }
  QAction* sep = m->addSeparator();
  sep->setProperty("paneImages", true);
  auto* group = new QActionGroup(sep);
  for (const PaneChoice& c : paneChoices_) {
    QAction* a = m->addAction(c.label, this, [this, pane, id = c.id] { setPaneImage(pane, id); });
    a->setObjectName(QStringLiteral("pane%1Image%2").arg(pane + 1).arg(c.id));
    a->setCheckable(true);
    a->setChecked(paneIds_[static_cast<std::size_t>(pane)] == c.id);
    group->addAction(a);
  }
}

void ImageViewer::addShowInPane(QMenu* menu, int pane) {
  QMenu* m = menu->addMenu(tr("Show in this pane"));
  m->setObjectName("showInPaneMenu");
  QAction* current = m->addAction(tr("The pane's own view"), this, [this, pane] { setPaneImage(pane, 0); });
  current->setObjectName("showInPane0");
  current->setCheckable(true);
  current->setChecked(paneImage(pane) == 0);
  m->addSeparator();
  for (const PaneChoice& c : paneChoices_) {
    QAction* a = m->addAction(c.label, this, [this, pane, id = c.id] { setPaneImage(pane, id); });
    a->setObjectName(QStringLiteral("showInPane%1").arg(c.id));
    a->setCheckable(true);
    a->setChecked(paneImage(pane) == c.id);
  }
  m->setEnabled(!paneChoices_.isEmpty());
}

}  // namespace larmor::ui
