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
