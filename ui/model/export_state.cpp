// The proposed export name (export_state.hpp).
#include "export_state.hpp"

#include <filesystem>

namespace larmor::model {

std::string defaultOutputBase(const DataSource& source, const RunRecord* run, const std::string& lastFolder,
                              const std::string& workingDirectory) {
  namespace fs = std::filesystem;
  std::string base = source.isFile() ? fs::path(source.path).stem().string() : std::string("phantom");
  if (run) base += "-" + recon::toString(run->settings.settings.method);
  fs::path folder = lastFolder;
  if (folder.empty()) folder = source.isFile() ? fs::absolute(fs::path(source.path)).parent_path() : fs::path(workingDirectory);
  return (folder / base).string();
}

}  // namespace larmor::model
