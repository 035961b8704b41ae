#pragma once
// larmor-cli's reconstruction flags, generated from the engine's settings table
// (larmor/recon/settings_table.hpp): one CLI11 option per setting, with the table's help, range and default;
// the values are parsed and checked by the table, so the CLI and the GUI give the same one-line errors.
#include <string>
#include <vector>

#include "larmor/recon/settings.hpp"

namespace CLI {
class App;
}

namespace larmor::cli {

class SettingsOptions {
 public:
  /// Adds every user setting of the table as an option (or a flag) of `command`.
  void addTo(CLI::App& command);
  /// The settings given on the command line, over `settings` (defaults otherwise). Throws Error.
  void apply(recon::ReconSettings& settings) const;

 private:
  CLI::App* command_ = nullptr;
  std::vector<std::string> values_;  ///< one per table entry
};

/// The reference of every user setting as Markdown (`larmor-cli settings`; docs/settings.md is its output, and
/// e2e.settings_page checks that the page equals it): one table per group, a row per setting with its flag,
/// JSON key, GUI label, the methods that read it and the table's help text (choices or range, unit, default).
std::string settingsReferenceMarkdown();

}  // namespace larmor::cli
