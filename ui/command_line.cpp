#include "command_line.hpp"

#include <QCommandLineParser>
#include <QFileInfo>
#include <QRegularExpression>
#include <cmath>

#include "larmor/util/error.hpp"

namespace larmor::ui {
namespace {

struct Flag {
  const char* name;
  const char* valueName;
  const char* help;
};

// The settings flags of `larmor-cli recon` (app/larmor_cli.cpp), same names and meaning.
const Flag kValueFlags[] = {
    {"traj", "TRAJ.cfl", "BART trajectory for .cfl k-space"},
    {"method", "M", "fft|gridding|tron|dft|cg|grappa"},
    {"matrix", "N[xN[xN]]", "Output matrix"},
    {"device", "D", "auto|cpu|cuda[:N]"},
    {"lambda", "L", "Regularization weight"},
    {"reg", "R", "tikhonov|fd|anatomical"},
    {"ref", "REF", "Reference image for the anatomical prior"},
    {"iters", "N", "Iterations"},
    {"tol", "X", "CG: stop at this relative residual"},
    {"fhd", "F", "CG: F^H d by dft|nufft"},
    {"width", "W", "NUFFT Kaiser-Bessel width"},
    {"grid-oversampling", "S", "NUFFT grid oversampling sigma"},
    {"dcf", "D", "auto|ramp|pipe-menon|none"},
    {"dcf-iters", "N", "Pipe-Menon iterations"},
    {"spreader", "S", "GPU adjoint gridding: auto|sector|tron"},
    {"trig", "T", "Exact DFT trigonometry: accurate|fast|recurrence"},
    {"grappa-calibration", "C", "basic|improved"},
    {"blocks", "N", "GRAPPA basic: blocks"},
    {"segment", "N", "GRAPPA basic: segment width"},
    {"grappa-kernel", "KPExKRO", "GRAPPA kernel"},
    {"chi", "X", "GRAPPA regularization chi"},
    {"eta", "X", "GRAPPA normalization eta"},
    {"kappa", "X", "GRAPPA power clipping kappa"},
    {"out-coils", "N", "Coil compression to N virtual coils"},
    {"combine", "C", "sos|adaptive"},
    {"screenshot", "PNG", "Save a picture of the whole window (after --run)"},
    {"export-dicom", "DIR", "Export the image as a DICOM series (after --run)"},
    {"tab", "T", "Tab in front: image|compare|timings|dataset|log"},
};

double toDouble(const QString& flag, const QString& v) {
  bool ok = false;
  const double d = v.toDouble(&ok);
  require(ok && std::isfinite(d), ("--" + flag + " " + v + ": expected a number").toStdString());
  return d;
}

int toInt(const QString& flag, const QString& v) {
  bool ok = false;
  const int i = v.toInt(&ok);
  require(ok, ("--" + flag + " " + v + ": expected an integer").toStdString());
  return i;
}

void parseMatrix(const QString& text, long out[3]) {
  const QStringList parts = text.split('x');
  require(!parts.isEmpty() && parts.size() <= 3, ("--matrix " + text + ": expected N, NxN or NxNxN").toStdString());
  long v[3] = {0, 0, 1};
  for (int i = 0; i < parts.size(); ++i) {
    bool ok = false;
    v[i] = parts[i].toLong(&ok);
    require(ok && v[i] >= 1 && v[i] <= 65536,
            ("--matrix " + text + ": expected N, NxN or NxNxN with N in 1..65536").toStdString());
  }
  if (parts.size() == 1) v[1] = v[0];
  for (int i = 0; i < 3; ++i) out[i] = v[i];
}

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
      "              [--export-dicom DIR] [--quit]\n\n"
      "Opens the Larmor workstation on FILE (ISMRMRD .h5, BART .cfl, RawArray .ra) or, without FILE, on a\n"
      "phantom simulated at start. --run reconstructs, --screenshot saves the window, --quit exits after.\n"
      "Without a display it runs the same reconstruction headless and writes into ./out.\n\nOptions:\n");
  for (const Flag& f : kValueFlags) s += QStringLiteral("  --%1 %2\n      %3\n").arg(f.name, f.valueName, f.help);
  s += QStringLiteral("  --kernel-direct\n      NUFFT: evaluate the kernel directly\n  --run\n  --quit\n  --version\n  --help\n");
  return s;
}

GuiOptions parseGuiArguments(const QStringList& arguments, const SessionState& base) {
  QCommandLineParser p;
  p.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
  for (const Flag& f : kValueFlags) p.addOption(QCommandLineOption(QString::fromLatin1(f.name), f.help, f.valueName));
  p.addOption(QCommandLineOption("kernel-direct"));
  p.addOption(QCommandLineOption("run"));
  p.addOption(QCommandLineOption("quit"));
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
  const QStringList pos = p.positionalArguments();
  require(pos.size() <= 1, "larmor: one FILE at most, got " + std::to_string(pos.size()));
  if (!pos.isEmpty()) o.file = pos.front();

  auto& s = o.session.settings;
  auto set = [&](const char* name) {
    const bool given = p.isSet(name);
    o.settingsGiven |= given;
    return given;
  };
  if (set("traj")) o.session.trajectoryPath = p.value("traj").toStdString();
  if (set("method")) s.method = recon::methodFromString(p.value("method").toStdString());
  if (set("matrix")) parseMatrix(p.value("matrix"), s.matrix);
  if (set("device")) o.session.device = p.value("device").toStdString();
  if (set("combine")) s.combine = recon::combineFromString(p.value("combine").toStdString());
  // NUFFT
  if (set("width")) {
    s.nufft.width = toInt("width", p.value("width"));
    require(s.nufft.width >= 2 && s.nufft.width <= 16, "--width must be in 2..16");
  }
  if (set("grid-oversampling")) {
    s.nufft.oversampling = toDouble("grid-oversampling", p.value("grid-oversampling"));
    require(s.nufft.oversampling >= 1 && s.nufft.oversampling <= 4, "--grid-oversampling must be in 1..4");
  }
  if (set("dcf")) s.nufft.dcf = dcfFromString(p.value("dcf").toStdString());
  if (set("dcf-iters")) {
    s.nufft.dcfIterations = toInt("dcf-iters", p.value("dcf-iters"));
    require(s.nufft.dcfIterations >= 1 && s.nufft.dcfIterations <= 1000, "--dcf-iters must be in 1..1000");
  }
  if (set("spreader")) {
    s.nufft.spreader = p.value("spreader").toStdString();
    require(s.nufft.spreader == "auto" || s.nufft.spreader == "sector" || s.nufft.spreader == "tron",
            "--spreader " + s.nufft.spreader + ": expected auto, sector or tron");
  }
  if (set("trig")) {
    s.nufft.trig = p.value("trig").toStdString();
    require(s.nufft.trig == "accurate" || s.nufft.trig == "fast" || s.nufft.trig == "recurrence",
            "--trig " + s.nufft.trig + ": expected accurate, fast or recurrence");
  }
  if (set("kernel-direct")) s.nufft.kernelTable = false;
  // GRAPPA
  if (set("grappa-calibration")) {
    const QString c = p.value("grappa-calibration");
    require(c == "basic" || c == "improved", ("--grappa-calibration " + c + ": expected basic or improved").toStdString());
    s.grappa.calibration = c == "basic" ? recon::GrappaCalibration::Basic : recon::GrappaCalibration::Improved;
  }
  if (set("grappa-kernel")) {
    const QStringList k = p.value("grappa-kernel").split('x');
    bool ok1 = false, ok2 = false;
    const int kpe = k.size() == 2 ? k[0].toInt(&ok1) : 0, kro = k.size() == 2 ? k[1].toInt(&ok2) : 0;
    require(ok1 && ok2 && kpe >= 1 && kro >= 1 && kpe <= 64 && kro <= 64,
            ("--grappa-kernel " + p.value("grappa-kernel") + ": expected KPExKRO, e.g. 4x5").toStdString());
    s.grappa.kernelPe = kpe;
    s.grappa.kernelRo = kro;
  }
  if (set("blocks")) s.grappa.blocks = toInt("blocks", p.value("blocks"));
  if (set("segment")) s.grappa.segment = toInt("segment", p.value("segment"));
  if (set("chi")) {
    s.grappa.chi = toDouble("chi", p.value("chi"));
    require(s.grappa.chi >= 0, "--chi must be >= 0");
  }
  if (set("eta")) {
    s.grappa.eta = toDouble("eta", p.value("eta"));
    require(s.grappa.eta > 0, "--eta must be > 0");
  }
  if (set("kappa")) {
    s.grappa.kappa = toDouble("kappa", p.value("kappa"));
    require(s.grappa.kappa >= 0 && s.grappa.kappa < 1, "--kappa must be in [0, 1)");
  }
  if (set("out-coils")) {
    s.grappa.outCoils = toInt("out-coils", p.value("out-coils"));
    require(s.grappa.outCoils >= 0, "--out-coils must be >= 0");
  }
  // Iterative
  if (set("reg")) {
    s.iterative.regularizer = p.value("reg").toStdString();
    const auto& r = s.iterative.regularizer;
    require(r == "tikhonov" || r == "fd" || r == "anatomical", "--reg " + r + ": expected tikhonov, fd or anatomical");
  }
  if (set("lambda")) {
    s.iterative.lambda = toDouble("lambda", p.value("lambda"));
    require(s.iterative.lambda >= 0, "--lambda must be >= 0");
  }
  if (set("iters")) {
    s.iterative.iterations = toInt("iters", p.value("iters"));
    require(s.iterative.iterations >= 1 && s.iterative.iterations <= 100000, "--iters must be in 1..100000");
  }
  if (set("tol")) s.iterative.tolerance = toDouble("tol", p.value("tol"));
  if (set("fhd")) {
    s.iterative.fhd = p.value("fhd").toStdString();
    require(s.iterative.fhd == "dft" || s.iterative.fhd == "nufft", "--fhd " + s.iterative.fhd + ": expected dft or nufft");
  }
  if (set("ref")) s.iterative.referencePath = p.value("ref").toStdString();
  require(s.iterative.regularizer != "anatomical" || !s.iterative.referencePath.empty(),
          "--reg anatomical needs --ref REF.cfl|.h5");
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
  const auto& s = in.session.settings;
  QStringList rec = {"larmor-cli", "recon", quoted(input)};
  if (!in.session.trajectoryPath.empty()) rec << "--traj" << quoted(QString::fromStdString(in.session.trajectoryPath));
  rec << "--method" << QString::fromStdString(recon::toString(s.method));
  rec << "--device" << QString::fromStdString(in.session.device);
  if (s.matrix[0] > 0) {
    QString m = QString::number(s.matrix[0]) + 'x' + QString::number(s.matrix[1] > 0 ? s.matrix[1] : s.matrix[0]);
    if (s.matrix[2] > 1) m += 'x' + QString::number(s.matrix[2]);
    rec << "--matrix" << m;
  }
  rec << "--combine" << QString::fromStdString(recon::toString(s.combine));
  const bool nonCartesian = s.method == recon::Method::Gridding || s.method == recon::Method::Tron ||
                            s.method == recon::Method::Dft || s.method == recon::Method::Cg;
  if (nonCartesian) {
    rec << "--width" << QString::number(s.nufft.width) << "--grid-oversampling" << num(s.nufft.oversampling) << "--dcf"
        << QString::fromStdString(toString(s.nufft.dcf));
    if (s.nufft.dcf == recon::DensityCompensation::PipeMenon || s.nufft.dcf == recon::DensityCompensation::Auto)
      rec << "--dcf-iters" << QString::number(s.nufft.dcfIterations);
    if (s.nufft.spreader != "auto") rec << "--spreader" << QString::fromStdString(s.nufft.spreader);
    if (!s.nufft.kernelTable) rec << "--kernel-direct";
    if (s.method == recon::Method::Dft || s.method == recon::Method::Cg)
      rec << "--trig" << QString::fromStdString(s.nufft.trig);
  }
  if (s.method == recon::Method::Cg) {
    const auto& it = s.iterative;
    rec << "--reg" << QString::fromStdString(it.regularizer) << "--lambda" << num(it.lambda) << "--iters"
        << QString::number(it.iterations) << "--fhd" << QString::fromStdString(it.fhd);
    if (it.tolerance > 0) rec << "--tol" << num(it.tolerance);
    if (!it.referencePath.empty()) rec << "--ref" << quoted(QString::fromStdString(it.referencePath));
  }
  if (s.method == recon::Method::Grappa) {
    const auto& g = s.grappa;
    const bool basic = g.calibration == recon::GrappaCalibration::Basic;
    rec << "--grappa-calibration" << (basic ? "basic" : "improved") << "--grappa-kernel"
        << QStringLiteral("%1x%2").arg(g.kernelPe).arg(g.kernelRo) << "--chi" << num(g.chi) << "--eta" << num(g.eta)
        << "--kappa" << num(g.kappa);
    if (basic) rec << "--blocks" << QString::number(g.blocks) << "--segment" << QString::number(g.segment);
    if (g.outCoils > 0) rec << "--out-coils" << QString::number(g.outCoils);
  }
  const QString out = in.output.isEmpty() ? QStringLiteral("out.cfl") : in.output;
  rec << "--output" << quoted(out) << "--json" << quoted(QFileInfo(out).completeBaseName() + ".json");
  parts << rec.join(' ');
  return parts.join(' ');
}

}  // namespace larmor::ui
