#include "settings_options.hpp"

#include <CLI/CLI.hpp>

#include "larmor/recon/settings_table.hpp"
#include "larmor/util/error.hpp"

namespace larmor::cli {

namespace st = recon::settings;

void SettingsOptions::addTo(CLI::App& command) {
  command_ = &command;
  const auto& table = st::table();
  values_.assign(table.size(), {});
  for (std::size_t i = 0; i < table.size(); ++i) {
    const st::Setting& s = table[i];
    if (s.scope != st::Scope::User || s.flag.empty()) continue;
    if (s.kind == st::Kind::Flag) command.add_flag(s.cliFlag(), s.help);
    else command.add_option(s.cliFlag(), values_[i], st::help(s))->type_name(s.valueName);
  }
}

void SettingsOptions::apply(recon::ReconSettings& settings) const {
  const auto& table = st::table();
  // The method first, then its defaults, then every other flag given (which may override them).
  for (std::size_t i = 0; i < table.size(); ++i)
    if (table[i].key == "method" && command_->count(table[i].cliFlag()) > 0) {
      st::set(settings, table[i], values_[i]);
      st::applyMethodDefaults(settings);
    }
  for (std::size_t i = 0; i < table.size(); ++i) {
    const st::Setting& s = table[i];
    if (s.key == "method") continue;
    if (s.scope != st::Scope::User || s.flag.empty() || command_->count(s.cliFlag()) == 0) continue;
    if (s.kind == st::Kind::Flag) s.put(settings, s.flagSets);
    else st::set(settings, s, values_[i]);
  }
  // A λ given on the command line is the λ used: the noise rule (cs's default) applies only where none is given.
  if (command_->count("--lambda") > 0 && command_->count("--lambda-rule") == 0)
    settings.iterative.lambdaRule = recon::LambdaRule::Fixed;
  // A flag that the chosen method does not read is an error, not ignored.
  for (std::size_t i = 0; i < table.size(); ++i) {
    const st::Setting& s = table[i];
    if (s.scope != st::Scope::User || s.flag.empty() || command_->count(s.cliFlag()) == 0) continue;
    if ((s.methods & st::bit(settings.method)) != 0) continue;
    std::string users;
    for (int m = 0; m <= static_cast<int>(recon::Method::Cs); ++m)
      if (s.methods & st::bit(static_cast<recon::Method>(m)))
        users += (users.empty() ? "" : ", ") + recon::toString(static_cast<recon::Method>(m));
    throw Error(s.cliFlag() + (s.kind == st::Kind::Flag ? "" : " " + values_[i]) + ": does not apply to --method " +
                recon::toString(settings.method) + " (it is read by " + users + ")");
  }
}

}  // namespace larmor::cli
