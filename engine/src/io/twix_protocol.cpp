// Siemens twix: the protocol text of a measurement's header buffers.
//
// ASCCONV (the "MeasYaps" buffer, and a copy inside "Phoenix") is a list of lines
//     sKSpace.lBaseResolution                  = 256
//     tProtocolName                            = "sol24"
//     sKSpace.ucDimension                      = 0x2
// between "### ASCCONV BEGIN ... ###" and "### ASCCONV END ###". Keys are kept as written (array indices
// included: "sSliceArray.asSlice[0].dReadoutFOV"); the first value of a key wins (MeasYaps comes before
// Phoenix). The Hungarian prefix says the type: l/ul integers (ucX may be hex), d/fl floats, t strings.
//
// XProtocol ("Meas", "Dicom", "Config") is a nested text format; Larmor reads only a few flat parameters
//     <ParamDouble."flReadoutOSFactor">  { <Precision> 6  2.000000  }
//     <ParamString."tPatientName">  { "xxxxxxx"  }
// by name: the first token inside the braces that is not a "<Tag> value" pair.
// Both parsers are bounded by the buffer's length and ignore what they do not understand.
#include <array>
#include <cctype>
#include <string_view>

#include "twix_format.hpp"

namespace larmor::io::twix {

namespace {

constexpr std::size_t kMaxKey = 256, kMaxValue = 1024;

// XProtocol parameters Larmor reads (twix_reader.cpp says what for).
constexpr std::array<std::string_view, 11> kXprotNames = {
    "flReadoutOSFactor", "tPatientName",           "PatientID",          "SoftwareVersions",
    "Manufacturer",      "ManufacturersModelName", "flMagneticFieldStrength", "tProtocolName",
    "InstitutionName",   "DeviceSerialNumber",     "iNoOfFourierColumns"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool keyChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '[' || c == ']';
}

void parseAscconvLine(std::string_view line, Protocol& p) {
  const auto eq = line.find('=');
  if (eq == std::string_view::npos) return;
  const std::string_view key = trim(line.substr(0, eq));
  std::string_view value = trim(line.substr(eq + 1));
  if (key.empty() || key.size() > kMaxKey || value.size() > kMaxValue) return;
  for (char c : key)
    if (!keyChar(c)) return;
  if (!value.empty() && value.front() == '"') {
    const auto close = value.find('"', 1);
    value = close == std::string_view::npos ? value.substr(1) : value.substr(1, close - 1);
  } else {
    const auto comment = value.find('#');
    if (comment != std::string_view::npos) value = trim(value.substr(0, comment));
  }
  p.ascconv.emplace(std::string(key), std::string(value));
}

void parseAscconv(std::string_view text, Protocol& p) {
  constexpr std::string_view begin = "### ASCCONV BEGIN", end = "### ASCCONV END";
  std::size_t pos = 0;
  while ((pos = text.find(begin, pos)) != std::string_view::npos) {
    pos = text.find('\n', pos);
    if (pos == std::string_view::npos) return;
    const std::size_t stop = std::min(text.find(end, pos), text.size());
    while (pos < stop) {
      std::size_t eol = text.find('\n', pos + 1);
      if (eol == std::string_view::npos || eol > stop) eol = stop;
      parseAscconvLine(text.substr(pos, eol - pos), p);
      pos = eol;
    }
  }
}

// The value of <Param*."name"> { ... }: the first token that is not a "<Tag> value" pair.
bool xprotValue(std::string_view text, std::string_view name, std::string& out) {
  std::string needle = ".\"";
  needle.append(name);
  needle.append("\">");
  std::size_t at = text.find(needle);
  while (at != std::string_view::npos) {
    const std::size_t open = text.find_first_not_of(" \t\r\n", at + needle.size());
    if (open == std::string_view::npos) return false;
    if (text[open] == '{') {
      const std::size_t close = text.find('}', open);
      if (close == std::string_view::npos || close - open > kMaxValue) return false;
      std::string_view body = text.substr(open + 1, close - open - 1);
      bool skipNext = false;
      while (true) {
        body = trim(body);
        if (body.empty()) return false;
        std::string_view token;
        if (body.front() == '"') {
          const std::size_t q = body.find('"', 1);
          token = q == std::string_view::npos ? body.substr(1) : body.substr(1, q - 1);
          body.remove_prefix(q == std::string_view::npos ? body.size() : q + 1);
        } else {
          std::size_t n = 0;
          while (n < body.size() && !std::isspace(static_cast<unsigned char>(body[n]))) ++n;
          token = body.substr(0, n);
          body.remove_prefix(n);
          if (token.front() == '<') {
            skipNext = true;
            continue;
          }
        }
        if (skipNext) {
          skipNext = false;
          continue;
        }
        out = std::string(token);
        return true;
      }
    }
    at = text.find(needle, at + needle.size());
  }
  return false;
}

}  // namespace

void parseProtocolBuffer(const std::string& name, const std::string& text, Protocol& p) {
  if (p.bufferNames.size() < 64) p.bufferNames.push_back(name);
  parseAscconv(text, p);
  if (name == "MeasYaps") return;  // ASCCONV only
  for (std::string_view param : kXprotNames) {
    const std::string key(param);
    if (p.xprot.count(key)) continue;
    std::string value;
    if (xprotValue(text, param, value)) p.xprot.emplace(key, value);
  }
}

}  // namespace larmor::io::twix
