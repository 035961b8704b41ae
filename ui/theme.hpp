#pragma once
// The workstation look: Qt's Fusion style with a dark palette (images read best on a dark surround,
// as on scanner consoles and PACS), plus a few named widgets styled by object name.
class QApplication;

namespace larmor::ui {
void applyTheme(QApplication& app);
}
