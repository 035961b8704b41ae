#pragma once
// The one declarative table of reconstruction settings (BART's opts[] per tool, FINUFFT's single options
// struct). Each entry names a field of ReconSettings once, with its type, range, default (the struct's own
// initialiser), unit, help text, CLI flag, GUI label and the methods that use it. Everything else is
// generated from it:
//   - larmor-cli's recon flags (app/), the GUI's command line and settings widgets (ui/): parse(), help(),
//     choices, ranges, tooltips;
//   - validation, with one error text per rule (set(), validate());
//   - toJson/fromJson (provenance, the GUI's session file, batch settings files);
//   - "copy as CLI" (toCliArguments()).
// A new setting is one entry in settings_table.cpp.
#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "larmor/recon/settings.hpp"

namespace larmor::recon::settings {

enum class Kind {
  Choice,   ///< one of named values (an enum in the struct); the value is the name
  Integer,  ///< long in [min, max]
  Real,     ///< double in [min, max], either end open when minOpen/maxOpen
  Flag,     ///< bool; on the command line a flag that sets `flagSets` (e.g. --kernel-direct sets false)
  Text,     ///< free text (a path)
  Dims,     ///< `count` integers written AxB[xC] (the output matrix, the GRAPPA kernel)
};

/// Where a setting is shown: everywhere, or only in JSON (internal switches the GUI and CLI set themselves).
enum class Scope { User, Internal };

/// How the GUI edits a Real: a spin box, or a text field with scientific notation (values over decades).
enum class RealStyle { Linear, Scientific };

using Value = std::variant<bool, long, double, std::string, std::vector<long>>;

/// Method masks: which reconstruction methods read a setting.
using MethodMask = unsigned;
constexpr MethodMask bit(Method m) { return 1u << static_cast<unsigned>(m); }
constexpr MethodMask kAllMethods = ~0u;
constexpr MethodMask kNonCartesian =
    bit(Method::Gridding) | bit(Method::Tron) | bit(Method::Dft) | bit(Method::Cg) | bit(Method::Cs);
/// The methods of a mask as --method spells them: "cg, cs" (what an error names when a setting is not read).
std::string methodNames(MethodMask mask);

struct Choice {
  std::string name;   ///< as written on the command line and in JSON
  std::string label;  ///< as shown in the GUI
};

struct Setting {
  std::string key;        ///< JSON path, "." between levels: "nufft.width"
  std::string flag;       ///< command-line flag without dashes: "width" (empty: no flag)
  std::string label;      ///< GUI label
  std::string group;      ///< GUI group and JSON section: "reconstruction", "nufft", "iterative", "grappa"
  std::string help;       ///< one line: tooltip and --help text
  std::string valueName;  ///< "W", "KPExKRO" (--help)
  std::string unit;       ///< "cycles/FOV", "" (appended to the help)
  Kind kind = Kind::Integer;
  Scope scope = Scope::User;
  MethodMask methods = kAllMethods;
  double min = 0, max = 0;
  bool minOpen = false, maxOpen = false;
  RealStyle realStyle = RealStyle::Linear;
  double step = 0;               ///< Real, Linear: the GUI spin box's step (0: a hundredth of the range)
  int count = 0;                 ///< Dims: how many integers
  bool dimsAsText = false;       ///< Dims: JSON as "AxB" instead of an array
  bool flagSets = true;          ///< Flag: the value the command-line flag sets
  std::string zeroMeans;         ///< Integer/Dims: what 0 means ("the header's matrix"), shown in the GUI
  std::vector<Choice> choices;   ///< Choice
  /// Choice: other names accepted for a choice ({"estimate", "walsh"}: the old name), stored as the choice.
  std::vector<std::pair<std::string, std::string>> aliases;
  /// Choice: besides the names, a path ending in this suffix is a value (--coil-maps FILE.cfl); empty: none.
  std::string fileSuffix;
  /// Whether the setting matters for these settings beyond the method (e.g. --blocks only with basic
  /// calibration). Null: whenever the method uses it.
  std::function<bool(const ReconSettings&)> applies;
  std::function<Value(const ReconSettings&)> get;
  std::function<void(ReconSettings&, const Value&)> put;

  bool usedBy(const ReconSettings& s) const;  ///< methods mask and applies()
  std::string cliFlag() const { return "--" + flag; }
};

/// Every setting, in the order the GUI and --help show them.
const std::vector<Setting>& table();
/// By JSON key or flag (without dashes); throws Error naming the key when there is none.
const Setting& find(std::string_view keyOrFlag);
/// The name of a Choice setting's value number `index` (its enum's value): choiceName("nufft.dcf", 2).
const std::string& choiceName(std::string_view key, int index);
/// The value number of `name`; throws the setting's one-line Error for an unknown name.
int choiceIndex(std::string_view key, const std::string& name);

/// Text as typed on the command line or in a GUI field -> a value of the setting's type, range-checked.
/// Throws Error("--flag TEXT: expected ...") — the one error text of each rule.
Value parse(const Setting& s, const std::string& text);
/// Range and choice check of a value of the right type; throws the same one-line Error as parse().
void check(const Setting& s, const Value& v);
/// A value as it is written on the command line ("4", "1e-05", "4x5", "pipe-menon").
std::string format(const Setting& s, const Value& v);
/// --help text: the help line, the choices or the range, the unit and the default.
std::string help(const Setting& s);

/// parse + store: throws as parse().
void set(ReconSettings& settings, const Setting& s, const std::string& text);
/// Every setting of `settings` (of one group when given) checked against its rule, and the rules between
/// settings (--method cs takes --reg tv|wavelet, --method cg the l2 priors); recon::run calls it before
/// reconstructing, so the CLI, the GUI and programs that fill the structs share one check.
void validate(const ReconSettings& settings, std::string_view group = {});

/// The settings whose defaults depend on the method, set to `settings.method`'s: for cs the total
/// variation prior, lambda 3e-4 (relative), 100 iterations and tolerance 1e-4; for cg Tikhonov, lambda 0,
/// 60 iterations, tolerance 0 (Stone et al.). The CLI calls it after --method and before the other flags;
/// the GUI when the method changes.
void applyMethodDefaults(ReconSettings& settings);

nlohmann::json toJson(const ReconSettings& settings);
/// Reads the keys it knows over `base`. Each value that is missing keeps the base's; each that is present
/// but wrong (type, range, choice) is skipped and described in *problems when given, else throws Error.
ReconSettings fromJson(const nlohmann::json& j, ReconSettings base = {}, std::vector<std::string>* problems = nullptr);

/// The command-line arguments that reproduce `settings` for its method: every setting the method uses,
/// spelled out (so later defaults do not change the result), in table order: {"--method", "cg", ...}.
std::vector<std::string> toCliArguments(const ReconSettings& settings);

}  // namespace larmor::recon::settings
