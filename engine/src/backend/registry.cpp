// Backend registry and GPU plugin loading. The CUDA backend is a separate shared object loaded with
// dlopen so that a machine without a GPU, or without the CUDA libraries, still runs everything on the CPU.
//
// The plugin is loaded only where it can be used. Loading it maps cuFFT, cuBLAS(Lt) and cuSOLVER with
// RTLD_NOW: about 170 MB resident (their relocations and static initialisers, measured on the 2-core
// machine), more than the data of a 2D reconstruction, whether or not a GPU exists. So the registry first
// asks the CUDA driver itself (libcuda.so.1: cuInit, cuDeviceGetCount, which the CUDA runtime would call
// anyway) and loads the plugin only where the driver reports a device; and `select("cpu")` loads nothing.
// No headers are needed for that: the two entry points take an unsigned or an int* and return an int
// (CUresult, 0 = success).
#include "larmor/backend/registry.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>

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

/// Empty when the CUDA driver is there and reports at least one device; else why not, in a few words.
std::string cudaDriverAbsence() {
  // The handle stays open: the CUDA runtime opens the same library again when the plugin starts.
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) return "no CUDA driver (libcuda.so.1 not found)";
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  const auto init = reinterpret_cast<InitFn>(dlsym(driver, "cuInit"));
  const auto count = reinterpret_cast<CountFn>(dlsym(driver, "cuDeviceGetCount"));
  if (!init || !count) return "no CUDA driver (libcuda.so.1 has no cuInit or cuDeviceGetCount)";
  if (const int e = init(0); e != 0) return "no CUDA device (cuInit returned CUresult " + std::to_string(e) + ")";
  int n = 0;
  if (const int e = count(&n); e != 0)
    return "no CUDA device (cuDeviceGetCount returned CUresult " + std::to_string(e) + ")";
  return n > 0 ? std::string() : "no CUDA device (the driver reports none)";
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
  std::optional<std::string> driverAbsence;  // asked once, when a plugin is found
  for (const auto& dir : pluginDirs()) {
    const fs::path lib = dir / "liblarmor_cuda.so";
    std::error_code ec;
    if (!fs::exists(lib, ec)) continue;
    if (!driverAbsence) driverAbsence = cudaDriverAbsence();
    if (!driverAbsence->empty()) {
      messages_.push_back("CUDA plugin " + lib.string() + " not loaded: " + *driverAbsence);
      return;
    }
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

std::unique_ptr<Buffer> BackendRegistry::borrow(Backend& backend, void* ptr, std::size_t bytes) {
  const std::string id = backend.info().id;
  for (auto& p : providers_)
    if (id.rfind(p->family() + ":", 0) == 0) return p->borrow(backend, ptr, bytes);
  return nullptr;
}

Selection BackendRegistry::select(const std::string& spec) {
  if (spec == "cpu") return {makeCpuBackend(), {}};  // no plugin needed (see the top of the file)
  loadPlugins();
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
