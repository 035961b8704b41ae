#include "theme.hpp"

#include <QApplication>
#include <QPalette>
#include <QStyleFactory>

namespace larmor::ui {

void applyTheme(QApplication& app) {
  app.setStyle(QStyleFactory::create("Fusion"));
  QPalette p;
  const QColor window(37, 41, 48), base(27, 30, 36), text(222, 228, 236), accent(61, 133, 198);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, QColor(33, 37, 44));
  p.setColor(QPalette::ToolTipBase, QColor(50, 55, 64));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, QColor(48, 53, 62));
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, QColor(255, 90, 90));
  p.setColor(QPalette::Highlight, accent);
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Link, QColor(110, 170, 230));
  p.setColor(QPalette::PlaceholderText, QColor(130, 138, 150));
  for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, role, QColor(115, 122, 133));
  app.setPalette(p);
  app.setStyleSheet(QStringLiteral(R"(
    QToolTip { border: 1px solid #4a5260; }
    QDockWidget::title { background: #2b3038; padding: 5px 8px; font-weight: bold; }
    QGroupBox { border: 1px solid #3d434e; border-radius: 4px; margin-top: 14px; padding-top: 4px; }
    QGroupBox::title { subcontrol-origin: margin; left: 8px; padding: 0 4px; color: #9fc3e8; font-weight: bold; }
    QTabBar::tab { padding: 6px 16px; }
    QTabBar::tab:selected { color: #ffffff; border-bottom: 2px solid #3d85c6; }
    #errorBanner { background: #5a1f24; border-bottom: 1px solid #a33b45; }
    #errorText { color: #ffd9dc; font-weight: bold; }
    #devicePill { border-radius: 8px; padding: 2px 6px; font-weight: bold; }
    #devicePill[kind="cpu"] { background: #6b4d12; color: #ffe2a8; }
    #devicePill[kind="gpu"] { background: #1d5a35; color: #c8f5d8; }
    #deviceNote { color: #f0c060; }
    #probe { color: #c9d3df; font-family: monospace; }
    #runButton { background: #2e6b45; font-weight: bold; padding: 5px; }
    #runButton:hover { background: #378253; }
    #timingSummary { padding: 4px; }
    QProgressBar { border: 1px solid #4a5260; border-radius: 3px; background: #1b1e24; height: 12px; }
    QProgressBar::chunk { background: #3d85c6; }
  )"));
}

}  // namespace larmor::ui
