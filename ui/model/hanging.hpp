#pragma once
// The image tab's layout without Qt: one, two (side by side) or four panes (2 x 2), each showing one view of a
// 3D image — a plane (axial, coronal, sagittal), the volume rendering or the oblique plane — and its text form,
// "2x2:axial,coronal,sagittal,volume", which the workstation keeps in its settings between starts. A view
// shows in one pane at most: putting it in a pane swaps it with that pane's view.
#include <array>
#include <string>

namespace larmor::model {

enum class PaneLayout { One, OneByTwo, TwoByTwo };
enum class PaneView { Axial, Coronal, Sagittal, Volume, Oblique };
constexpr int kPaneViews = 5;

struct Hanging {
  PaneLayout layout = PaneLayout::TwoByTwo;
  /// The view of each pane, row by row; the first paneCount(layout) are shown.
  std::array<PaneView, 4> panes{PaneView::Axial, PaneView::Coronal, PaneView::Sagittal, PaneView::Volume};
  bool operator==(const Hanging&) const = default;
};

int paneCount(PaneLayout l);
/// Rows and columns of the layout: 1x1, 1x2, 2x2.
int paneRows(PaneLayout l);
int paneColumns(PaneLayout l);
/// `h` with `view` in pane `pane` (0..3); the pane that had `view` gets the view `pane` had.
Hanging withPane(Hanging h, int pane, PaneView view);

/// "axial", "coronal", "sagittal", "volume", "oblique"; "1x1", "1x2", "2x2".
std::string viewName(PaneView v);
std::string layoutName(PaneLayout l);
std::string toString(const Hanging& h);
/// The hanging of `text`; the default (2x2 of the three planes and the volume) for text it does not read, or a
/// view named twice (an old or hand-edited setting never stops the program).
Hanging hangingFromString(const std::string& text);

}  // namespace larmor::model
