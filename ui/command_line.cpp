#include "command_line.hpp"

#include <QCommandLineParser>
#include <QFileInfo>
#include <QRegularExpression>

#include "larmor/recon/settings_table.hpp"
#include "larmor/util/error.hpp"

namespace larmor::ui {
namespace {

namespace st = recon::settings;

struct Flag {
  const char* name;
  const char* valueName;
  const char* help;
};

// The GUI's own flags besides the reconstruction settings (which come from the engine's settings table,
// as larmor-cli's do).
const Flag kGuiFlags[] = {
    {"traj", "TRAJ.cfl", "BART trajectory for .cfl k-space"},
    {"device", "D", "auto|cpu|cuda[:N]"},
    {"screenshot", "PNG", "Save a picture of the whole window (after --run)"},
    {"export-dicom", "DIR", "Export the image as a DICOM series (after --run)"},
    {"tab", "T", "Tab in front: image|compare|timings|dataset|log|side"},
    {"demo-pause", "MS", "Presenter mode: milliseconds each picture stays (default 2500)"},
};

bool isCliSetting(const st::Setting& s) { return s.scope == st::Scope::User && !s.flag.empty(); }

QString quoted(const QString& s) {
  if (!s.isEmpty() && !s.contains(QRegularExpression(QStringLiteral("[^A-Za-z0-9_./:=+-]")))) return s;
  QString q = s;
  q.replace('\'', QStringLiteral("'\\''"));
  return '\'' + q + '\'';
}

QString num(double v) { return QString::number(v, 'g', 6); }

}  // namespace

QString usageText() {
  QString s = QStringLiteral(
      "Usage: larmor [FILE] [--method M ...settings flags of larmor-cli recon...] [--run] [--screenshot PNG]\n"
      "              [--export-dicom DIR] [--quit]\n"
      "       larmor --demo [--quit]\n\n"
      "Opens the Larmor workstation on FILE (ISMRMRD .h5, BART .cfl, RawArray .ra) or, without FILE, on a\n"
      "phantom simulated at start. --run reconstructs, --screenshot saves the window, --quit exits after.\n"
      "Without a display it runs the same reconstruction headless and writes into ./out.\n\nOptions:\n");
  for (const Flag& f : kGuiFlags) s += QStringLiteral("  --%1 %2\n      %3\n").arg(f.name, f.valueName, f.help);
  for (const st::Setting& e : st::table()) {
    if (!isCliSetting(e)) continue;
    const QString value = e.kind == st::Kind::Flag ? QString() : ' ' + QString::fromStdString(e.valueName);
    s += QStringLiteral("  --%1%2\n      %3\n").arg(QString::fromStdString(e.flag), value, QString::fromStdString(st::help(e)));
  }
  s += QStringLiteral("  --demo\n      The scripted demo in presenter mode: full screen, large type (GRAPPA, a dynamic series, radial gridding vs CG vs CS)\n"
                      "  --quit-after-demo\n      With --demo: exit when the demo ends (exit code 0 when every step worked); --demo --quit does the same\n");
  s += QStringLiteral("  --run\n  --quit\n  --version\n  --help\n");
  return s;
}

GuiOptions parseGuiArguments(const QStringList& arguments, const SessionState& base) {
  QCommandLineParser p;
  p.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
  for (const Flag& f : kGuiFlags) p.addOption(QCommandLineOption(QString::fromLatin1(f.name), f.help, f.valueName));
  for (const st::Setting& e : st::table()) {
    if (!isCliSetting(e)) continue;
    const QString name = QString::fromStdString(e.flag), help = QString::fromStdString(e.help);
    if (e.kind == st::Kind::Flag) p.addOption(QCommandLineOption(name, help));
    else p.addOption(QCommandLineOption(name, help, QString::fromStdString(e.valueName)));
  }
  p.addOption(QCommandLineOption("run"));
  p.addOption(QCommandLineOption("quit"));
  p.addOption(QCommandLineOption("demo"));
  p.addOption(QCommandLineOption("quit-after-demo"));
  p.addOption(QCommandLineOption(QStringList{"help", "h"}));
  p.addOption(QCommandLineOption("version"));
  p.addPositionalArgument("FILE", "Raw data file");
  require(p.parse(arguments), ("larmor: " + p.errorText()).toStdString());

  GuiOptions o;
  o.session = base;
  o.help = p.isSet("help");
  o.version = p.isSet("version");
  o.run = p.isSet("run");
  o.quit = p.isSet("quit");
  o.screenshot = p.value("screenshot");
  o.exportDicom = p.value("export-dicom");
  o.tab = p.value("tab");
  o.quitAfterDemo = p.isSet("quit-after-demo") || (p.isSet("demo") && o.quit);  // --demo --quit: exit at its end
  o.demo = p.isSet("demo") || o.quitAfterDemo;
  if (p.isSet("demo-pause")) {
    bool ok = false;
    o.demoPauseMs = p.value("demo-pause").toInt(&ok);
    require(ok && o.demoPauseMs >= 0, "larmor: --demo-pause " + p.value("demo-pause").toStdString() + ": expected milliseconds >= 0");
  }
  const QStringList pos = p.positionalArguments();
  require(pos.size() <= 1, "larmor: one FILE at most, got " + std::to_string(pos.size()));
  if (!pos.isEmpty()) o.file = pos.front();

  auto set = [&](const QString& name) {
    const bool given = p.isSet(name);
    o.settingsGiven |= given;
    return given;
  };
  if (set("traj")) o.session.trajectoryPath = p.value("traj").toStdString();
  if (set("device")) o.session.device = p.value("device").toStdString();
  // As larmor-cli: the method first, then its defaults, then every other flag given.
  const st::Setting& method = st::find("method");
  if (set(QString::fromStdString(method.flag))) {
    st::set(o.session.settings, method, p.value(QString::fromStdString(method.flag)).toStdString());
    st::applyMethodDefaults(o.session.settings);
  }
  for (const st::Setting& e : st::table()) {
    const QString name = QString::fromStdString(e.flag);
    if (&e == &method || !isCliSetting(e) || !set(name)) continue;
    if (e.kind == st::Kind::Flag) e.put(o.session.settings, e.flagSets);
    else st::set(o.session.settings, e, p.value(name).toStdString());
  }
  return o;
}

phantom::SimulateSettings bundledPhantom(recon::Method method) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = 256;
  s.matrix[2] = 1;
  s.coils = 8;
  switch (method) {
    case recon::Method::Fft:
      break;
    case recon::Method::Grappa:
      s.accel = 2;
      s.acs = 24;
      break;
    case recon::Method::Gridding:
    case recon::Method::Tron:
      s.trajectory = TrajectoryKind::Radial;
      break;
    case recon::Method::Dft:
    case recon::Method::Cg:
    case recon::Method::Cs:
      s.trajectory = TrajectoryKind::Radial;
      s.matrix[0] = s.matrix[1] = 128;
      break;
  }
  return s;
}

QString cliCommand(const CliCommandInput& in) {
  QStringList parts;
  QString input = in.input;
  if (in.phantom) {
    const auto& ph = *in.phantom;
    input = QStringLiteral("phantom.h5");
    QString matrix = QString::number(ph.matrix[0]);
    if (ph.matrix[1] != ph.matrix[0] || ph.matrix[2] > 1) matrix += 'x' + QString::number(ph.matrix[1]);
    if (ph.matrix[2] > 1) matrix += 'x' + QString::number(ph.matrix[2]);
    QStringList sim = {"larmor-cli", "simulate", "--phantom", QString::fromStdString(ph.phantom), "--matrix", matrix,
                       "--coils", QString::number(ph.coils), "--traj", QString::fromStdString(toString(ph.trajectory))};
    if (ph.slices > 1) sim << "--slices" << QString::number(ph.slices);
    if (ph.accel > 1) sim << "--accel" << QString::number(ph.accel) << "--acs" << QString::number(ph.acs);
    if (ph.spokes > 0) sim << "--spokes" << QString::number(ph.spokes);
    if (ph.readout > 0) sim << "--readout" << QString::number(ph.readout);
    if (ph.interleaves > 0) sim << "--interleaves" << QString::number(ph.interleaves);
    if (ph.readoutOversampling != 2.0f) sim << "--oversampling" << num(ph.readoutOversampling);
    if (ph.noiseSigma > 0) sim << "--noise" << num(ph.noiseSigma) << "--seed" << QString::number(ph.seed);
    sim << "--output" << input;
    parts << sim.join(' ') << "&&";
  }
  QStringList rec = {"larmor-cli", "recon", quoted(input)};
  for (const std::string& arg : st::toCliArguments(in.session.settings)) rec << quoted(QString::fromStdString(arg));
  if (!in.session.trajectoryPath.empty()) rec << "--traj" << quoted(QString::fromStdString(in.session.trajectoryPath));
  rec << "--device" << QString::fromStdString(in.session.device);
  const QString out = in.output.isEmpty() ? QStringLiteral("out.cfl") : in.output;
  rec << "--output" << quoted(out) << "--json" << quoted(QFileInfo(out).completeBaseName() + ".json");
  parts << rec.join(' ');
  return parts.join(' ');
}

}  // namespace larmor::ui
