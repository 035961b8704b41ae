// The image tab's panes (image_viewer.hpp): the hanging of model/hanging.hpp put into the view grid — the
// layout's panes row by row, each with its view, the other views hidden — and View ▸ Layout, which changes it and
// keeps it in QSettings for the next start. A 2D image shows the axial plane alone whatever the hanging, unless a
// pane shows another image of the session (image_viewer_panes.cpp): then the layout's panes, the current image first.
#include <QAction>
#include <QActionGroup>
#include <QGridLayout>
#include <QMenu>
#include <QSettings>

#include "image_viewer.hpp"
#include "oblique_view.hpp"
#include "slice_view.hpp"
#include "volume_view.hpp"

namespace larmor::ui {

namespace {

QString viewLabel(model::PaneView v) {
  switch (v) {
    case model::PaneView::Axial: return QObject::tr("Axial");
    case model::PaneView::Coronal: return QObject::tr("Coronal");
    case model::PaneView::Sagittal: return QObject::tr("Sagittal");
    case model::PaneView::Volume: return QObject::tr("3D rendering");
    case model::PaneView::Oblique: return QObject::tr("Oblique");
  }
  return {};
}

}  // namespace

QWidget* ImageViewer::viewWidget(model::PaneView v) const {
  switch (v) {
    case model::PaneView::Axial: return views_[SliceView::Axial];
    case model::PaneView::Coronal: return views_[SliceView::Coronal];
    case model::PaneView::Sagittal: return views_[SliceView::Sagittal];
    case model::PaneView::Volume: return volumeView_;
    case model::PaneView::Oblique: return obliqueView_;
  }
  return nullptr;
}

QWidget* ImageViewer::paneWidget(int pane) const {
  const bool panes = is3D_ || panesShowImages();
  if (!panes) return pane == 0 ? views_[SliceView::Axial] : nullptr;
  if (pane < 0 || pane >= model::paneCount(hanging_.layout)) return nullptr;
  if (paneIds_[static_cast<std::size_t>(pane)] != 0) return paneViews_[static_cast<std::size_t>(pane)];
  if (!is3D_)  // 2D: the current image in the first pane, a pane with no other image says how to choose one
    return pane == 0 ? views_[SliceView::Axial] : static_cast<QWidget*>(paneViews_[static_cast<std::size_t>(pane)]);
  return viewWidget(hanging_.panes[static_cast<std::size_t>(pane)]);
}

void ImageViewer::applyHanging() {
  std::vector<QWidget*> all(paneViews_.begin(), paneViews_.end());
  for (int v = 0; v < model::kPaneViews; ++v) all.push_back(viewWidget(static_cast<model::PaneView>(v)));
  for (QWidget* w : all) {
    grid_->removeWidget(w);
    w->hide();
  }
  const bool panes = is3D_ || panesShowImages();
  const int rows = panes ? model::paneRows(hanging_.layout) : 1, cols = panes ? model::paneColumns(hanging_.layout) : 1;
  for (int pane = 0; pane < rows * cols; ++pane) {
    if (QWidget* w = paneWidget(pane)) {
      grid_->addWidget(w, pane / cols, pane % cols);
      w->show();
    }
  }
  for (int k = 0; k < 2; ++k) {  // equal panes; the unused row and column take no room
    grid_->setRowStretch(k, k < rows ? 1 : 0);
    grid_->setColumnStretch(k, k < cols ? 1 : 0);
  }
}

void ImageViewer::setHanging(const model::Hanging& h) {
  hanging_ = h;
  QSettings().setValue(kHangingKey, QString::fromStdString(model::toString(h)));
  applyHanging();
}

QMenu* ImageViewer::layoutMenu() {
  if (layoutMenu_) return layoutMenu_;
  layoutMenu_ = new QMenu(tr("&Layout"), this);
  layoutMenu_->setObjectName("layoutMenu");
  auto* layouts = new QActionGroup(layoutMenu_);
  for (model::PaneLayout l : {model::PaneLayout::One, model::PaneLayout::OneByTwo, model::PaneLayout::TwoByTwo}) {
    const QString name = QString::fromStdString(model::layoutName(l));
    QAction* a = layoutMenu_->addAction(QString(name).replace('x', QChar(0x00D7)), this, [this, l] {
      model::Hanging h = hanging_;
      h.layout = l;
      setHanging(h);
    });
    a->setObjectName("layout" + name);
    a->setCheckable(true);
    layouts->addAction(a);
  }
  layoutMenu_->addSeparator();
  for (int pane = 0; pane < 4; ++pane) {
    QMenu* m = layoutMenu_->addMenu(tr("Pane %1").arg(pane + 1));
    paneMenus_[static_cast<std::size_t>(pane)] = m;
    auto* views = new QActionGroup(m);
    for (int v = 0; v < model::kPaneViews; ++v) {
      const auto view = static_cast<model::PaneView>(v);
      QAction* a = m->addAction(viewLabel(view), this, [this, pane, view] {
        paneIds_[static_cast<std::size_t>(pane)] = 0;  // the pane's view of the current image again
        setHanging(model::withPane(hanging_, pane, view));
      });
      a->setObjectName(QStringLiteral("pane%1%2").arg(pane + 1).arg(viewLabel(view).section(' ', 0, 0)));
      a->setCheckable(true);
      views->addAction(a);
    }
    fillPaneImageActions(pane);  // the other images of the session, after the views
  }
  // The checks follow the hanging each time the menu opens.
  connect(layoutMenu_, &QMenu::aboutToShow, this, [this] {
    for (QAction* a : layoutMenu_->findChildren<QAction*>()) {
      const QString n = a->objectName();
      if (n.startsWith("layout")) a->setChecked(n.mid(6).toStdString() == model::layoutName(hanging_.layout));
      if (n.startsWith("pane") && n.size() > 5 && !n.mid(5).startsWith("Image")) {
        const int pane = n.mid(4, 1).toInt() - 1;
        a->setChecked(pane >= 0 && pane < 4 && paneIds_[static_cast<std::size_t>(pane)] == 0 &&
                      n.mid(5) == viewLabel(hanging_.panes[static_cast<std::size_t>(pane)]).section(' ', 0, 0));
      }
      if (n.startsWith("pane") && n.mid(5).startsWith("Image")) {
        const int pane = n.mid(4, 1).toInt() - 1;
        a->setChecked(pane >= 0 && pane < 4 && paneIds_[static_cast<std::size_t>(pane)] == n.mid(10).toInt());
      }
    }
  });
  return layoutMenu_;
}

}  // namespace larmor::ui
