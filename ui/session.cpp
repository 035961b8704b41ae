#include "session.hpp"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
#include <QSettings>

#include <algorithm>

#include "larmor/util/error.hpp"

namespace larmor::ui {

std::string toString(recon::DensityCompensation d) {
  switch (d) {
    case recon::DensityCompensation::Auto: return "auto";
    case recon::DensityCompensation::Ramp: return "ramp";
    case recon::DensityCompensation::PipeMenon: return "pipe-menon";
    case recon::DensityCompensation::None: return "none";
  }
  return "auto";
}

recon::DensityCompensation dcfFromString(const std::string& s) {
  for (auto d : {recon::DensityCompensation::Auto, recon::DensityCompensation::Ramp,
                 recon::DensityCompensation::PipeMenon, recon::DensityCompensation::None})
    if (toString(d) == s) return d;
  throw Error("--dcf " + s + ": expected auto, ramp, pipe-menon or none");
}

nlohmann::json toJson(const SessionState& s) {
  nlohmann::json j = recon::toJson(s.settings);
  // The engine's NUFFT JSON has no density compensation entry; the session needs it to restore.
  j["nufft"]["dcf"] = toString(s.settings.nufft.dcf);
  return {{"larmor_session", 1}, {"settings", j}, {"device", s.device}, {"trajectory", s.trajectoryPath}};
}

namespace {

template <class T>
void read(const nlohmann::json& j, const char* key, T& out) {
  if (!j.is_object() || !j.contains(key)) return;
  try {
    out = j.at(key).get<T>();
  } catch (const std::exception&) {
    // keep the current value
  }
}

}  // namespace

SessionState sessionFromJson(const nlohmann::json& j, SessionState base) {
  SessionState s = std::move(base);
  if (!j.is_object()) return s;
  read(j, "device", s.device);
  read(j, "trajectory", s.trajectoryPath);
  if (!j.contains("settings")) return s;
  const auto& js = j["settings"];
  auto& st = s.settings;
  try {
    std::string m;
    read(js, "method", m);
    if (!m.empty()) st.method = recon::methodFromString(m);
    std::string c;
    read(js, "combine", c);
    if (!c.empty()) st.combine = recon::combineFromString(c);
  } catch (const std::exception&) {
  }
  if (js.contains("matrix") && js["matrix"].is_array() && js["matrix"].size() == 3)
    for (std::size_t i = 0; i < 3; ++i)
      if (js["matrix"][i].is_number_integer() && js["matrix"][i].get<long>() >= 0) st.matrix[i] = js["matrix"][i].get<long>();
  if (js.contains("nufft")) {
    const auto& n = js["nufft"];
    read(n, "width", st.nufft.width);
    read(n, "oversampling", st.nufft.oversampling);
    read(n, "kernel_table", st.nufft.kernelTable);
    read(n, "spreader", st.nufft.spreader);
    read(n, "dcf_iterations", st.nufft.dcfIterations);
    read(n, "trig", st.nufft.trig);
    std::string dcf;
    read(n, "dcf", dcf);
    try {
      if (!dcf.empty()) st.nufft.dcf = dcfFromString(dcf);
    } catch (const std::exception&) {
    }
  }
  if (js.contains("grappa")) {
    const auto& g = js["grappa"];
    std::string cal, kernel;
    read(g, "calibration", cal);
    if (cal == "basic") st.grappa.calibration = recon::GrappaCalibration::Basic;
    if (cal == "improved") st.grappa.calibration = recon::GrappaCalibration::Improved;
    read(g, "kernel", kernel);
    const auto x = kernel.find('x');
    if (x != std::string::npos) {
      const int kpe = std::atoi(kernel.substr(0, x).c_str()), kro = std::atoi(kernel.substr(x + 1).c_str());
      if (kpe >= 1 && kro >= 1) st.grappa.kernelPe = kpe, st.grappa.kernelRo = kro;
    }
    read(g, "blocks", st.grappa.blocks);
    read(g, "segment", st.grappa.segment);
    read(g, "chi", st.grappa.chi);
    read(g, "eta", st.grappa.eta);
    read(g, "kappa", st.grappa.kappa);
    read(g, "out_coils", st.grappa.outCoils);
  }
  if (js.contains("iterative")) {
    const auto& it = js["iterative"];
    read(it, "regularizer", st.iterative.regularizer);
    read(it, "lambda", st.iterative.lambda);
    read(it, "iterations", st.iterative.iterations);
    read(it, "tolerance", st.iterative.tolerance);
    read(it, "reference", st.iterative.referencePath);
    read(it, "fhd", st.iterative.fhd);
  }
  return s;
}

QString sidecarPath(const QString& dataFile) { return dataFile + QStringLiteral(".larmor.json"); }

bool saveSidecar(const QString& dataFile, const SessionState& s, QString* error) {
  QSaveFile f(sidecarPath(dataFile));
  if (!f.open(QIODevice::WriteOnly | QIODevice::Text)) {
    if (error) *error = f.errorString();
    return false;
  }
  const std::string text = toJson(s).dump(2) + "\n";
  f.write(text.data(), static_cast<qint64>(text.size()));
  if (!f.commit()) {
    if (error) *error = f.errorString();
    return false;
  }
  return true;
}

std::optional<SessionState> loadSidecar(const QString& dataFile) {
  QFile f(sidecarPath(dataFile));
  if (!f.open(QIODevice::ReadOnly)) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(f.readAll().toStdString(), nullptr, false);
  if (j.is_discarded() || !j.contains("larmor_session")) return std::nullopt;
  return sessionFromJson(j, lastSession());
}

SessionState lastSession() {
  QSettings qs;
  const QString text = qs.value("session/json").toString();
  if (text.isEmpty()) return {};
  const nlohmann::json j = nlohmann::json::parse(text.toStdString(), nullptr, false);
  return j.is_discarded() ? SessionState{} : sessionFromJson(j);
}

void saveLastSession(const SessionState& s) {
  QSettings qs;
  qs.setValue("session/json", QString::fromStdString(toJson(s).dump()));
}

QStringList recentFiles() {
  QSettings qs;
  QStringList list = qs.value("recentFiles").toStringList();
  list.erase(std::remove_if(list.begin(), list.end(), [](const QString& p) { return !QFileInfo::exists(p); }), list.end());
  return list;
}

void addRecentFile(const QString& path) {
  QSettings qs;
  const QString abs = QFileInfo(path).absoluteFilePath();
  QStringList list = qs.value("recentFiles").toStringList();
  list.removeAll(abs);
  list.prepend(abs);
  while (list.size() > 10) list.removeLast();
  qs.setValue("recentFiles", list);
}

void clearRecentFiles() {
  QSettings qs;
  qs.remove("recentFiles");
}

}  // namespace larmor::ui
