// The Help menu's guide and shortcut list (help.hpp).
#include "help.hpp"

#include <QCoreApplication>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QVBoxLayout>

namespace larmor::ui {

QString userGuidePath() {
  const QString app = QCoreApplication::applicationDirPath();
  const QStringList candidates = {app + "/../share/doc/larmor/gui.md", QStringLiteral(LARMOR_SOURCE_DIR "/docs/gui.md"),
                                  QStringLiteral(LARMOR_SOURCE_DIR "/README.md")};
  for (const QString& c : candidates)
    if (QFileInfo::exists(c)) return QDir::cleanPath(QFileInfo(c).absoluteFilePath());
  return {};
}

QString shortcutsHtml() {
  const char* rows[][2] = {
      {"Ctrl+O", "Open a file"},
      {"Ctrl+R / Esc", "Run / cancel the reconstruction"},
      {"Ctrl+1 … Ctrl+5", "Image, Compare, Timings, Log, Side by side"},
      {"Ctrl+= / Ctrl+− / Ctrl+0", "Zoom in / out / actual size (the window's size as before the zoom)"},
      {"F11", "Presenter mode on or off (full screen, large type)"},
      {"Up / Down, PgUp / PgDn", "Next / previous slice (click the image first)"},
      {"Left / Right", "Previous / next frame of a series"},
      {"Mouse wheel", "Next / previous slice; with Ctrl: zoom"},
      {"Left drag", "Window: right/left wider/narrower, up/down brighter/darker"},
      {"Ctrl+left drag", "A region of interest (its statistics; the curve over the frames)"},
      {"Middle drag, Shift+left drag", "Pan"},
      {"Right drag / right click", "Zoom / the image's menu (presets, copy value, ROI, distance, angle, screenshot)"},
      {"Left drag on the oblique plane", "Turn the plane (across: spin, up/down: tilt); a click moves the cursor"},
      {"Double click", "Fit the image"},
      {"Ctrl+Shift+C", "Copy as a larmor-cli command"},
  };
  QString html = QStringLiteral("<table cellspacing='4'>");
  for (const auto& r : rows)
    html += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>").arg(QString::fromUtf8(r[0]), QString::fromUtf8(r[1]));
  return html + QStringLiteral("</table>");
}

void showShortcutsDialog(QWidget* parent) {
  auto* d = new QDialog(parent);
  d->setObjectName("shortcutsDialog");
  d->setWindowTitle(QObject::tr("Keyboard shortcuts"));
  d->setAttribute(Qt::WA_DeleteOnClose);
  auto* layout = new QVBoxLayout(d);
  auto* text = new QLabel(shortcutsHtml());
  text->setObjectName("shortcutsText");
  text->setTextFormat(Qt::RichText);
  layout->addWidget(text);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
  QObject::connect(buttons, &QDialogButtonBox::rejected, d, &QDialog::close);
  layout->addWidget(buttons);
  d->show();
}

}  // namespace larmor::ui
