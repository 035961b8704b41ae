#pragma once
// Help ▸ User guide and Help ▸ Keyboard shortcuts: where the user guide is (the installed docs folder, else the
// source tree's docs, else the README) and the table of the workstation's keys and mouse gestures.
#include <QString>

class QWidget;

namespace larmor::ui {

/// The user guide's file: <prefix>/share/doc/larmor/gui.md beside the installed program, else docs/gui.md of
/// the source tree this build came from, else its README.md; "" when none exists.
QString userGuidePath();

/// The keys and gestures as an HTML table (the dialog's text; docs/gui.md has the same list).
QString shortcutsHtml();

/// A non-modal dialog (object name "shortcutsDialog") with shortcutsHtml().
void showShortcutsDialog(QWidget* parent);

}  // namespace larmor::ui
