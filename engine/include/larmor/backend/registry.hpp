#pragma once
// The backend registry: the one piece of global state. The CPU backend is always there; GPU backends
// come from run-time plugins (liblarmor_cuda.so, loaded with dlopen) so the program starts and works
// on a machine without a GPU or without the CUDA libraries.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "larmor/backend/backend.hpp"

namespace larmor {

/// A family of devices ("cuda"), contributed by a plugin.
class BackendProvider {
 public:
  virtual ~BackendProvider() = default;
  virtual std::string family() const = 0;
  /// The devices found now; when none, *whyNone says why in one line ("no CUDA device: ...").
  virtual std::vector<DeviceInfo> devices(std::string* whyNone) = 0;
  /// Backend for device `index` of this family; throws Error when it cannot be used.
  virtual std::shared_ptr<Backend> create(int index) = 0;
  /// `bytes` of memory at `ptr` on `backend`'s device (a backend this family created) that another library
  /// allocated and keeps alive (CuPy, PyTorch), as a buffer of `backend` that releases nothing; that library's
  /// queued work on it has finished when this returns. Null where the family cannot borrow (the default);
  /// throws Error where `ptr` is not memory of that device.
  virtual std::unique_ptr<Buffer> borrow(Backend& backend, void* ptr, std::size_t bytes) {
    (void)backend, (void)ptr, (void)bytes;
    return nullptr;
  }
};

struct Selection {
  std::shared_ptr<Backend> backend;
  std::string notice;  ///< non-empty when `auto` fell back to the CPU, saying why
};

class BackendRegistry {
 public:
  static BackendRegistry& instance();

  void addProvider(std::shared_ptr<BackendProvider> provider);
  /// Loads GPU plugins once (from LARMOR_PLUGIN_DIR, the executable's ../lib/larmor and its own
  /// folder), and only where the CUDA driver reports a device (registry.cpp says why). Safe to call many
  /// times. Messages say what was loaded or why not.
  void loadPlugins();
  const std::vector<std::string>& pluginMessages() const { return messages_; }

  /// Every usable device, the CPU first.
  std::vector<DeviceInfo> devices();
  /// Why no GPU is available (empty when one is).
  std::string whyNoGpu();
  /// "auto" (first GPU, else the CPU with a notice), "cpu" (loads no plugin), "cuda" (= cuda:0), "cuda:N".
  Selection select(const std::string& spec);
  /// BackendProvider::borrow of the family that made `backend` (its id's family); null for the CPU (whose
  /// operations take any Buffer over host memory) and a family that cannot borrow.
  std::unique_ptr<Buffer> borrow(Backend& backend, void* ptr, std::size_t bytes);

 private:
  BackendRegistry() = default;
  std::vector<std::shared_ptr<BackendProvider>> providers_;
  std::vector<std::string> messages_;
  bool pluginsLoaded_ = false;
};

std::shared_ptr<Backend> makeCpuBackend();

/// The plugin entry point a GPU plugin exports (extern "C").
using PluginRegisterFn = int (*)(BackendRegistry*, int abiVersion);
constexpr int kPluginAbiVersion = 2;  ///< 2: BackendProvider::borrow
constexpr const char* kPluginRegisterSymbol = "larmor_plugin_register";

}  // namespace larmor
