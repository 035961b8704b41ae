// Side-by-side views with one window and linked zoom/pan/cursor (side_by_side_view.hpp).
#include "side_by_side_view.hpp"

#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QToolButton>
#include <QVBoxLayout>

#include "display_volume.hpp"
#include "larmor/quality/display.hpp"
#include "slice_view.hpp"

namespace larmor::ui {

SideBySideView::SideBySideView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  hint_ = new QLabel(tr("The newest runs of this data appear here side by side (up to four); Runs ▾ picks others."));
  hint_->setWordWrap(true);
  hint_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  hint_->setContentsMargins(8, 4, 8, 4);
  runs_ = new QToolButton;
  runs_->setObjectName("sideBySideRuns");
  runs_->setText(tr("Runs"));
  runs_->setToolTip(tr("Choose up to four runs to show; none checked shows the newest"));
  runs_->setPopupMode(QToolButton::InstantPopup);
  runs_->setMenu(new QMenu(runs_));
  auto* top = new QHBoxLayout;
  top->addWidget(hint_, 1);
  top->addWidget(runs_);
  layout->addLayout(top);
  auto* row = new QHBoxLayout;
  row->setSpacing(2);
  layout->addLayout(row, 1);
  for (int i = 0; i < kMax; ++i) {
    views_[static_cast<std::size_t>(i)] = new SliceView(SliceView::Axial);
    row->addWidget(views_[static_cast<std::size_t>(i)], 1);
    views_[static_cast<std::size_t>(i)]->setVisible(i == 0);
    views_[static_cast<std::size_t>(i)]->setPlaceholder(tr("No runs of this data yet: press Run (Ctrl+R)."));
  }
  for (SliceView* v : views_) {
    connect(v, &SliceView::viewTransformChanged, this, [this, v](double z, double pr, double pu) {
      for (SliceView* o : views_)
        if (o != v) o->setViewTransform(z, pr, pu);
    });
    connect(v, &SliceView::windowDragged, this, [this](double lo, double hi) {
      for (SliceView* o : views_) o->setWindow(lo, hi);
    });
    connect(v, &SliceView::hovered, this, [this](int i, int j, int k) {
      for (SliceView* o : views_) o->setCrosshair(i >= 0 ? std::optional<std::array<int, 3>>({i, j, k}) : std::nullopt);
    });
  }
}

void SideBySideView::setChoices(const QVector<Choice>& runs, const QVector<int>& shown) {
  QMenu* menu = runs_->menu();
  menu->clear();
  for (const Choice& c : runs) {
    QAction* a = menu->addAction(c.label);
    a->setCheckable(true);
    a->setChecked(shown.contains(c.number));
    a->setData(c.number);
    connect(a, &QAction::toggled, this, [this] {
      QVector<int> picked;  // oldest first, as the newest are shown: the menu lists the newest first
      const QList<QAction*> items = runs_->menu()->actions();
      for (auto x = items.rbegin(); x != items.rend(); ++x)
        if ((*x)->isChecked()) picked.append((*x)->data().toInt());
      emit runsPicked(picked);
    });
  }
  runs_->setEnabled(!runs.isEmpty());
}

SliceView* SideBySideView::view(int i) const { return views_[static_cast<std::size_t>(std::clamp(i, 0, kMax - 1))]; }

void SideBySideView::setPanels(const QVector<Panel>& panels, const model::DisplayOrientation& orientation) {
  count_ = std::min<int>(kMax, static_cast<int>(panels.size()));
  quality::DisplayWindow window{0, 1};
  for (int i = 0; i < kMax; ++i) {
    SliceView* v = views_[static_cast<std::size_t>(i)];
    v->setVisible(i < std::max(1, count_));
    v->setOrientation(orientation);
    if (i >= count_ || !panels[i].image || panels[i].image->empty()) {
      v->setVolume(nullptr);
      continue;
    }
    const CArray& img = *panels[i].image;
    const Shape& s = img.shape();
    CArray stack = img;
    stack.reshape(Shape{s[0], s[1], img.size() / (s[0] * s[1])});
    // Each image scaled to its own 99.5th percentile: methods differ in scale, the eye compares shapes.
    RArray mag = quality::component(stack, quality::Component::Magnitude);
    const auto w = quality::percentileWindow(mag, 0.5, 99.5);
    const float scale = w.hi > 0 ? static_cast<float>(1.0 / w.hi) : 1.f;
    for (index_t n = 0; n < mag.size(); ++n) mag.data()[n] *= scale;
    window = {0, 1};
    v->setVolume(std::make_shared<DisplayVolume>(mag, panels[i].spacingMm));
    v->setTitle(panels[i].label);
    v->setInfoText(panels[i].caption);
    v->setColormap(QStringLiteral("grey"));
    v->setWindow(window.lo, window.hi);
  }
  hint_->setVisible(count_ == 0);
}

}  // namespace larmor::ui
