// The plugin's entry point: the engine dlopens liblarmor_cuda.so and calls larmor_plugin_register, which
// adds the "cuda" family of devices to the registry. Nothing here touches the GPU until devices() or
// create() is called, so loading the plugin cannot fail for want of a device. It is not cheap in memory (its
// CUDA libraries: ~200 MB resident), so engine/src/backend/registry.cpp loads it only where the CUDA driver
// reports a device. GPU only: the CPU backend is built into the engine, and registry.cpp makes it.
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "cuda_backend.hpp"
#include "larmor/backend/registry.hpp"

namespace larmor::cuda {
namespace {

class CudaProvider final : public BackendProvider {
 public:
  std::string family() const override { return "cuda"; }

  std::vector<DeviceInfo> devices(std::string* whyNone) override {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      if (whyNone) *whyNone = std::string("no CUDA device: ") + cudaGetErrorString(e);
      return {};
    }
    if (count == 0) {
      if (whyNone) *whyNone = "no CUDA device: the CUDA runtime reports none";
      return {};
    }
    std::vector<DeviceInfo> all;
    std::string problems;
    for (int i = 0; i < count; ++i) {
      try {
        all.push_back(describeDevice(i));
      } catch (const Error& err) {
        problems += (problems.empty() ? "" : "; ") + std::string("cuda:") + std::to_string(i) + ": " + err.what();
      }
    }
    if (all.empty() && whyNone) *whyNone = "no CUDA device: " + problems;
    return all;
  }

  std::shared_ptr<Backend> create(int index) override { return std::make_shared<CudaBackend>(index); }

  std::unique_ptr<Buffer> borrow(Backend& backend, void* ptr, std::size_t bytes) override {
    auto* cuda = dynamic_cast<CudaBackend*>(&backend);
    return cuda ? cuda->borrow(ptr, bytes) : nullptr;
  }
};

}  // namespace
}  // namespace larmor::cuda

namespace larmor::cuda {
namespace {
// Large host arrays pinned for DMA on first use (array.hpp, pinHostBlock; HostStaging in memory.cu).
// Portable: the pinning holds for every device's context (GPU.Multi, batch workers).
bool pinBlock(void* base, std::size_t bytes) {
  if (cudaHostRegister(base, bytes, cudaHostRegisterPortable) == cudaSuccess) return true;
  (void)cudaGetLastError();  // locked-memory limits, containers: the block stays staged
  return false;
}
void unpinBlock(void* base) {
  (void)cudaHostUnregister(base);
  (void)cudaGetLastError();  // at exit the runtime may be gone: nothing to undo then
}
const HostPinning kPinning{pinBlock, unpinBlock};
}  // namespace
}  // namespace larmor::cuda

extern "C" __attribute__((visibility("default"))) int larmor_plugin_register(larmor::BackendRegistry* registry,
                                                                              int abiVersion) {
  if (!registry || abiVersion != larmor::kPluginAbiVersion) return 1;
  try {
    registry->addProvider(std::make_shared<larmor::cuda::CudaProvider>());
    larmor::setHostPinning(&larmor::cuda::kPinning);
  } catch (...) {
    return 2;
  }
  return 0;
}
