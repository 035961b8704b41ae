#pragma once
// The GUI's command line (ARCHITECTURE.md, GUI contract):
//   larmor [FILE] [--method M ...the settings flags of `larmor-cli recon`...] [--run] [--screenshot PNG]
//          [--export-dicom DIR] [--quit]
// and the reverse: the `larmor-cli` command that reproduces what the window reconstructs.
#include <QString>
#include <QStringList>
#include <optional>

#include "larmor/phantom/simulate.hpp"
#include "session.hpp"

namespace larmor::ui {

struct GuiOptions {
  QString file;                 ///< empty: the bundled phantom
  SessionState session;         ///< settings, device, trajectory from the flags (over the saved session)
  bool settingsGiven = false;   ///< a settings flag was given (then the saved session is not used)
  bool run = false, quit = false;
  QString screenshot;           ///< PNG of the whole window after the run
  QString exportDicom;          ///< DICOM series directory after the run
  QString tab;                  ///< image | compare | timings | dataset | log (the tab in front)
  bool help = false;
  bool version = false;         ///< --version: print "larmor X.Y.Z" and exit
  bool demo = false;            ///< --demo: presenter mode (full screen, large type, the scripted demo)
  bool quitAfterDemo = false;   ///< --quit-after-demo or --demo --quit: exit when the demo ends (0: every step worked)
  int demoPauseMs = 2500;       ///< --demo-pause MS: how long each demo picture stays
};

/// Parses `arguments` (argv[0] first) over `base`. Throws Error with one line for a bad flag or value.
GuiOptions parseGuiArguments(const QStringList& arguments, const SessionState& base = {});
QString usageText();

/// The phantom the window opens without a file, chosen so `method` has data it can reconstruct:
/// a 256² 8-coil Cartesian Shepp-Logan (fft), undersampled R = 2 with 24 calibration lines (grappa),
/// radial for the non-Cartesian methods (128² for the exact DFT and CG, whose cost grows with
/// samples x voxels).
phantom::SimulateSettings bundledPhantom(recon::Method method);

struct CliCommandInput {
  QString input;                                   ///< data file; empty with `phantom`
  std::optional<phantom::SimulateSettings> phantom;  ///< simulated data: a `simulate` step first
  SessionState session;
  QString output = QStringLiteral("out.cfl");
};
/// `larmor-cli [simulate ... &&] recon FILE --method ... --output OUT` with the flags of the settings
/// that matter for the method (all of them spelled out, so the defaults of a later version do not
/// change the result).
QString cliCommand(const CliCommandInput& in);

}  // namespace larmor::ui
