#pragma once
// The `larmor` program (app/larmor.cpp calls this): the workstation window, the scripted run of the GUI
// contract (--run --screenshot --export-dicom --quit) and, without a display, the same reconstruction
// headless into ./out.
#include <QObject>

#include "command_line.hpp"

namespace larmor::ui {

class MainWindow;

int larmorMain(int argc, char** argv);

/// True when there is no display to open a window on (no DISPLAY, WAYLAND_DISPLAY or QT_QPA_PLATFORM).
bool noDisplay();

/// Without a display: loads FILE or simulates the bundled phantom, reconstructs, writes a PNG and
/// (when the engine has the DICOM writer) a DICOM series into `outDir`, naming them on stdout.
int runHeadless(const GuiOptions& options, const QString& outDir = QStringLiteral("out"));

/// Drives a MainWindow through the scripted steps: load (or phantom), run, screenshot, export, quit.
class ScriptedRun : public QObject {
  Q_OBJECT
 public:
  ScriptedRun(MainWindow* window, GuiOptions options, QObject* parent = nullptr);
  void start();
  int exitCode() const { return exitCode_; }

 signals:
  void done(int exitCode);

 private:
  void afterLoad();
  void finish(int code);
  void capture(int code);
  MainWindow* window_;
  GuiOptions options_;
  int exitCode_ = 0;
  bool finished_ = false;
};

}  // namespace larmor::ui
