// The image tab's panes and their text form (hanging.hpp).
#include "hanging.hpp"

#include <algorithm>
#include <sstream>

namespace larmor::model {

int paneRows(PaneLayout l) { return l == PaneLayout::TwoByTwo ? 2 : 1; }
int paneColumns(PaneLayout l) { return l == PaneLayout::One ? 1 : 2; }
int paneCount(PaneLayout l) { return paneRows(l) * paneColumns(l); }

Hanging withPane(Hanging h, int pane, PaneView view) {
  if (pane < 0 || pane >= 4) return h;
  const auto at = std::find(h.panes.begin(), h.panes.end(), view);
  if (at != h.panes.end()) *at = h.panes[static_cast<std::size_t>(pane)];
  h.panes[static_cast<std::size_t>(pane)] = view;
  return h;
}

std::string viewName(PaneView v) {
  static const char* names[kPaneViews] = {"axial", "coronal", "sagittal", "volume", "oblique"};
  return names[static_cast<int>(v)];
}

std::string layoutName(PaneLayout l) { return l == PaneLayout::One ? "1x1" : l == PaneLayout::OneByTwo ? "1x2" : "2x2"; }

std::string toString(const Hanging& h) {
  std::string s = layoutName(h.layout) + ":";
  for (std::size_t i = 0; i < h.panes.size(); ++i) s += (i ? "," : "") + viewName(h.panes[i]);
  return s;
}

Hanging hangingFromString(const std::string& text) {
  const Hanging fallback;
  Hanging h;
  const auto colon = text.find(':');
  if (colon == std::string::npos) return fallback;
  const std::string layout = text.substr(0, colon);
  bool known = false;
  for (PaneLayout l : {PaneLayout::One, PaneLayout::OneByTwo, PaneLayout::TwoByTwo})
    if (layoutName(l) == layout) h.layout = l, known = true;
  if (!known) return fallback;
  std::istringstream views(text.substr(colon + 1));
  std::string name;
  std::size_t n = 0;
  while (std::getline(views, name, ',')) {
    if (n >= h.panes.size()) return fallback;
    bool found = false;
    for (int v = 0; v < kPaneViews; ++v)
      if (viewName(static_cast<PaneView>(v)) == name) h.panes[n] = static_cast<PaneView>(v), found = true;
    if (!found) return fallback;
    ++n;
  }
  if (n != h.panes.size()) return fallback;
  for (std::size_t i = 0; i < n; ++i)
    if (std::count(h.panes.begin(), h.panes.end(), h.panes[i]) > 1) return fallback;
  return h;
}

}  // namespace larmor::model
