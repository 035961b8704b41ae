// Backend registry and GPU plugin loading. The CUDA backend is a separate shared object loaded with
// dlopen so that a machine without a GPU, or without the CUDA libraries, still runs everything on the CPU.
#include "larmor/backend/registry.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace larmor {
namespace fs = std::filesystem;

namespace {
std::mutex registryMutex;

/// Folders searched for liblarmor_cuda.so, in order.
std::vector<fs::path> pluginDirs() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("LARMOR_PLUGIN_DIR"); env && *env) dirs.emplace_back(env);
  // Next to the engine library: build/lib/larmor and /usr/lib/<arch>/larmor.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&makeCpuBackend), &info) && info.dli_fname)
    dirs.push_back(fs::path(info.dli_fname).parent_path() / "larmor");
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.push_back(exe.parent_path().parent_path() / "lib" / "larmor");
  return dirs;
}
}  // namespace

BackendRegistry& BackendRegistry::instance() {
  static BackendRegistry registry;
  return registry;
}

void BackendRegistry::addProvider(std::shared_ptr<BackendProvider> provider) {
  std::lock_guard lock(registryMutex);
  providers_.push_back(std::move(provider));
}

void BackendRegistry::loadPlugins() {
  {
    std::lock_guard lock(registryMutex);
    if (pluginsLoaded_) return;
    pluginsLoaded_ = true;
  }
  if (const char* off = std::getenv("LARMOR_NO_GPU"); off && *off && std::string(off) != "0") {
    messages_.push_back("GPU plugins not loaded: LARMOR_NO_GPU is set");
    return;
  }
  std::string lastError = "liblarmor_cuda.so not found (this build may have no CUDA backend)";
  for (const auto& dir : pluginDirs()) {
    const fs::path lib = dir / "liblarmor_cuda.so";
    std::error_code ec;
    if (!fs::exists(lib, ec)) continue;
    void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* err = dlerror();
      lastError = "CUDA plugin " + lib.string() + " could not be loaded: " + (err ? err : "unknown error");
      continue;
    }
    auto fn = reinterpret_cast<PluginRegisterFn>(dlsym(handle, kPluginRegisterSymbol));
    if (!fn) {
      lastError = "CUDA plugin " + lib.string() + " has no " + kPluginRegisterSymbol;
      dlclose(handle);
      continue;
    }
    // The handle stays open for the life of the process: backends created from it live in it.
    if (fn(this, kPluginAbiVersion) != 0) {
      lastError = "CUDA plugin " + lib.string() + " refused to register (ABI mismatch)";
      continue;
    }
    messages_.push_back("loaded CUDA plugin " + lib.string());
    return;
  }
  messages_.push_back(lastError);
}

std::vector<DeviceInfo> BackendRegistry::devices() {
  loadPlugins();
  std::vector<DeviceInfo> all{makeCpuBackend()->info()};
  for (auto& p : providers_) {
    std::string why;
    for (auto& d : p->devices(&why)) all.push_back(d);
  }
  return all;
}

std::string BackendRegistry::whyNoGpu() {
  loadPlugins();
  if (providers_.empty()) return messages_.empty() ? "no GPU plugin" : messages_.back();
  std::string reasons;
  for (auto& p : providers_) {
    std::string why;
    if (!p->devices(&why).empty()) return {};
    reasons += (reasons.empty() ? "" : "; ") + (why.empty() ? p->family() + ": no device" : why);
  }
  return reasons;
}

Selection BackendRegistry::select(const std::string& spec) {
  loadPlugins();
  if (spec == "cpu") return {makeCpuBackend(), {}};
  if (spec == "auto" || spec.empty()) {
    for (auto& p : providers_) {
      std::string why;
      if (!p->devices(&why).empty()) {
        try {
          return {p->create(0), {}};
        } catch (const Error& e) {
          return {makeCpuBackend(), std::string("running on the CPU: ") + e.what()};
        }
      }
    }
    return {makeCpuBackend(), "running on the CPU: " + whyNoGpu()};
  }
  // family[:index]
  const auto colon = spec.find(':');
  const std::string family = spec.substr(0, colon);
  int index = 0;
  if (colon != std::string::npos) {
    const std::string num = spec.substr(colon + 1);
    char* end = nullptr;
    const long v = std::strtol(num.c_str(), &end, 10);
    require(!num.empty() && end && *end == '\0' && v >= 0, "--device " + spec + ": expected auto, cpu, cuda or cuda:N");
    index = static_cast<int>(v);
  }
  for (auto& p : providers_) {
    if (p->family() != family) continue;
    std::string why;
    const auto devs = p->devices(&why);
    require(!devs.empty(), "--device " + spec + ": " + (why.empty() ? "no device" : why));
    require(index < static_cast<int>(devs.size()),
            "--device " + spec + ": only " + std::to_string(devs.size()) + " " + family + " device(s) found");
    return {p->create(index), {}};
  }
  if (family == "cuda") throw Error("--device " + spec + ": no CUDA backend available (" + whyNoGpu() + ")");
  throw Error("--device " + spec + ": unknown device; expected auto, cpu, cuda or cuda:N");
}

}  // namespace larmor
