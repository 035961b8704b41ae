// The proposed export name (export_state.hpp).
#include "export_state.hpp"

#include <filesystem>

namespace larmor::model {

std::string defaultOutputBase(const DataSource& source, const RunRecord* run, const std::string& lastFolder,
                              const std::string& outputFolder) {
  namespace fs = std::filesystem;
  std::string base = source.isFile() ? fs::path(source.path).stem().string() : std::string("phantom");
  if (run) base += "-" + recon::toString(run->settings.settings.method);
  fs::path folder = lastFolder;
  if (folder.empty()) folder = fs::path(outputFolder);  // never the raw data's folder by default
  return (folder / base).string();
}

}  // namespace larmor::model

namespace larmor::model {

StudyFields studyFieldsFrom(const Header& header) {
  StudyFields f;
  f.patientName = header.patientName;
  f.patientId = header.patientId;
  f.studyDescription = header.studyDescription;
  return f;
}

std::string seriesDescription(const std::string& protocolName, const std::string& method, const std::string& frame) {
  const auto first = protocolName.find_first_not_of(" \t"), last = protocolName.find_last_not_of(" \t");
  const std::string protocol = first == std::string::npos ? std::string() : protocolName.substr(first, last - first + 1);
  std::string d = protocol.empty() ? method : method.empty() ? protocol : protocol + " " + method;
  if (!frame.empty()) d += " " + frame;
  return d.substr(0, 64);
}

}  // namespace larmor::model
