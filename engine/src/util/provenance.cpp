// Provenance JSON (provenance.hpp) and its anonymized form: a walk over the whole JSON tree that removes
// what could name a patient or a site: dates, the host, and any path or file name, found by the key that
// holds it (input, reference, coil_maps, ...) and, whatever the key, by the look of the value (a word with
// a '/' or '\\', or NAME.ext), so that a path a later version adds under a new key goes as well.
#include "larmor/util/provenance.hpp"

#include <unistd.h>

#include <array>
#include <cctype>
#include <ctime>
#include <string_view>

#include "larmor_version.hpp"

namespace larmor {

std::string versionString() { return LARMOR_VERSION; }

std::string utcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json toJson(const Timings& t) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : t.stages()) stages.push_back({{"stage", s.stage}, {"ms", s.milliseconds}, {"device", s.device}});
  return {{"stages", stages}, {"total_ms", t.totalMilliseconds()}};
}

nlohmann::json provenance(const nlohmann::json& settings, const std::string& device, const std::string& deviceName,
                          const Timings& timings, const std::string& input) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return {{"software", "Larmor"},
          {"version", versionString()},
          {"created_utc", utcNow()},
          {"host", host},
          {"input", input},
          {"device", {{"id", device}, {"name", deviceName}}},
          {"settings", settings},
          {"timings", toJson(timings)}};
}

namespace {

const char* const kRemoved = "removed (anonymized)";

bool endsWith(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

/// A key whose string value is a path, a file or a host (or a keyword of its setting).
bool isPathKey(std::string_view k) {
  static constexpr std::array<std::string_view, 6> exact = {"input", "output", "host", "reference", "coil_maps",
                                                            "cache_directory"};
  for (auto e : exact)
    if (k == e) return true;
  for (std::string_view tail : {"path", "file", "dir", "directory", "folder"})
    if (endsWith(k, tail)) return true;
  return false;
}

/// Values of path keys that name no file: the settings' keywords.
bool isKeyword(std::string_view v) {
  for (std::string_view w : {"", "espirit", "walsh", "dataset", "estimate", "none", "none (one coil)", "auto", "default"})
    if (v == w) return true;
  return false;
}

bool isOpening(char c) { return c == '"' || c == '\'' || c == '(' || c == '[' || c == '{' || c == '<'; }
bool isClosing(char c) {
  return c == '"' || c == '\'' || c == ')' || c == ']' || c == '}' || c == '>' || c == ',' || c == ';' ||
         c == ':' || c == '.' || c == '!' || c == '?';
}
bool isSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

/// A string under any key but a path key: its paths go; one that is nothing but a path goes whole.
void scrubText(nlohmann::json& j) {
  const std::string v = j.get<std::string>();
  const std::string clean = withoutPaths(v);
  if (clean != v) j = clean == "<path removed>" ? std::string(kRemoved) : clean;
}

void anonymize(nlohmann::json& j) {
  if (j.is_string()) {
    scrubText(j);
    return;
  }
  if (j.is_array()) {
    for (auto& e : j) anonymize(e);
    return;
  }
  if (!j.is_object()) return;
  j.erase("created_utc");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it->is_string()) {
      anonymize(*it);
      continue;
    }
    if (isPathKey(it.key())) {
      if (it.key() == "host" || !isKeyword(it->get<std::string>())) *it = kRemoved;
      continue;
    }
    scrubText(*it);
  }
}

}  // namespace

bool looksLikePath(const std::string& w) {
  if (w.find('/') != std::string::npos || w.find('\\') != std::string::npos) return true;
  const auto dot = w.rfind('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 >= w.size() || w.size() - dot - 1 > 8) return false;
  if (!std::isalpha(static_cast<unsigned char>(w[dot + 1]))) return false;
  for (std::size_t i = dot + 1; i < w.size(); ++i)
    if (!std::isalnum(static_cast<unsigned char>(w[i])) && w[i] != '_') return false;
  return true;
}

std::string withoutPaths(const std::string& text) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (isSpace(text[i])) {
      out += text[i++];
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && !isSpace(text[end])) ++end;
    std::size_t a = i, b = end;  // the word without its brackets, quotes and trailing punctuation
    while (a < b && isOpening(text[a])) ++a;
    while (b > a && isClosing(text[b - 1])) --b;
    const std::string core = text.substr(a, b - a);
    if (!core.empty() && looksLikePath(core)) out += text.substr(i, a - i) + "<path removed>" + text.substr(b, end - b);
    else out += text.substr(i, end - i);
    i = end;
  }
  return out;
}

nlohmann::json anonymizedProvenance(nlohmann::json provenance) {
  anonymize(provenance);
  return provenance;
}

}  // namespace larmor
