#pragma once
// Help → About Larmor and `larmor --version`: the version (CMake's PROJECT_VERSION, through the
// engine's versionString()) and the compute devices the backend registry found, the same list the
// settings panel's device box is filled from.
#include <QString>

class QWidget;

namespace larmor::ui {

/// "larmor 0.1.0"
QString versionLine();
/// The About box's rich text: version, what Larmor does, the device this window runs on (`current`,
/// may be empty), every device found (CPU first) and, without a GPU, why not.
QString aboutText(const QString& current = {});
void showAboutDialog(QWidget* parent, const QString& current = {});

}  // namespace larmor::ui
