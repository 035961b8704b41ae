// larmor.devices(): the devices the CLI's --device accepts, the CPU first; and the backends by name.
#include <map>
#include <mutex>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "larmor/backend/registry.hpp"

namespace larmor::python {

std::shared_ptr<Backend> backendFor(const std::string& device) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<Backend>> kept;
  std::lock_guard lock(mutex);
  // By the name asked for, and by the backend's id: "cuda" and "cuda:0" are one backend, whose buffers either takes.
  if (auto it = kept.find(device); it != kept.end()) return it->second;
  std::shared_ptr<Backend> b = BackendRegistry::instance().select(device).backend;
  const std::string id = b->info().id;
  if (auto it = kept.find(id); it != kept.end()) b = it->second;
  kept[id] = b;
  kept[device] = b;
  return b;
}

namespace {
py::dict describe(const DeviceInfo& d) {
  py::dict o;
  o["id"] = d.id;
  o["name"] = d.name;
  o["gpu"] = d.gpu;
  o["memory_bytes"] = d.memoryBytes;
  if (d.gpu) o["compute_capability"] = py::make_tuple(d.computeMajor, d.computeMinor);
  o["multiprocessors"] = d.multiprocessors;
  o["library"] = d.library;
  return o;
}
}  // namespace

void bindDevices(py::module_& m) {
  m.def(
      "devices",
      [] {
        py::list out;
        for (const DeviceInfo& d : BackendRegistry::instance().devices()) out.append(describe(d));
        return out;
      },
      "Every usable device (dicts: id, name, gpu, memory_bytes, ...), the CPU first.");
  m.def(
      "why_no_gpu", [] { return BackendRegistry::instance().whyNoGpu(); },
      "Why no GPU is available, in one line (empty when one is).");
}

}  // namespace larmor::python
