// Backend selection and the skip rule of device.hpp.
#include "support/device.hpp"

#include <filesystem>
#include <map>
#include <mutex>

#include "larmor/backend/registry.hpp"
#include "larmor/util/error.hpp"

namespace larmor::test {

namespace {
BackendRegistry& registry() {
  auto& reg = BackendRegistry::instance();
  reg.loadPlugins();  // once; later calls return at once
  return reg;
}
}  // namespace

bool machineHasGpu(std::string* evidence) {
  std::string found;
  std::error_code ec;
  if (std::filesystem::exists("/dev/nvidia0", ec)) found = "/dev/nvidia0 exists";
  for (const DeviceInfo& d : registry().devices())
    if (d.gpu) found += (found.empty() ? "" : "; ") + ("the registry lists " + d.id + " (" + d.name + ")");
  if (evidence) *evidence = found.empty() ? "no GPU on this machine: " + registry().whyNoGpu() : found;
  return !found.empty();
}

std::vector<Backend*> splitDevices(Backend& first, int count, std::vector<std::shared_ptr<Backend>>& owned) {
  std::vector<Backend*> out{&first};
  std::vector<std::string> gpus;
  if (first.isGpu())
    for (const DeviceInfo& d : BackendRegistry::instance().devices())
      if (d.gpu) gpus.push_back(d.id);
  for (int i = 1; i < count; ++i) {
    owned.push_back(first.isGpu() ? BackendRegistry::instance().select(gpus[static_cast<std::size_t>(i) % gpus.size()]).backend
                                  : makeCpuBackend());
    out.push_back(owned.back().get());
  }
  return out;
}

std::shared_ptr<Backend> backendNamed(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<Backend>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto& be = cache[name];
  if (!be) {
    be = registry().select(name).backend;
    if (!be) throw Error("select(\"" + name + "\") returned no backend");
  }
  return be;
}

void selectOrSkip(const std::string& name, std::shared_ptr<Backend>& be) {
  if (name != "cpu") {
    std::string evidence;
    if (!machineHasGpu(&evidence)) GTEST_SKIP() << evidence;
    try {
      be = backendNamed(name);
    } catch (const std::exception& e) {
      FAIL() << "this machine has a GPU (" << evidence << ") but select(\"" << name << "\") failed: " << e.what()
             << "; registry: " << registry().whyNoGpu();
    }
    ASSERT_TRUE(be->isGpu()) << "select(\"" << name << "\") gave " << be->info().id;
    return;
  }
  be = backendNamed(name);
}

std::string deviceParamName(const ::testing::TestParamInfo<std::string>& info) {
  std::string s;
  for (char c : info.param) s += (c == ':' ? '_' : c);
  return s;
}

}  // namespace larmor::test
