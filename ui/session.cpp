#include "session.hpp"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
#include <QSettings>

#include <algorithm>

#include "larmor/recon/settings_table.hpp"
#include "larmor/util/error.hpp"

namespace larmor::ui {

nlohmann::json toJson(const SessionState& s) {
  return {{"larmor_session", 1}, {"settings", recon::toJson(s.settings)}, {"device", s.device}, {"trajectory", s.trajectoryPath}};
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
  if (j.contains("settings")) {
    std::vector<std::string> ignored;  // an old or hand-edited file keeps the base's value for what is wrong
    s.settings = recon::settings::fromJson(j["settings"], s.settings, &ignored);
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
