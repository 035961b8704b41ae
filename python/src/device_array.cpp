// larmor.DeviceArray (device_array.hpp): upload, to_numpy, and the two zero-copy exchanges with CuPy, PyTorch
// and NumPy: the CUDA array interface (version 3; GPU arrays only) and DLPack (__dlpack__, __dlpack_device__).
// Both hand out the backend's own pointer after a synchronize, so the consumer needs no stream of ours; the
// consumer keeps the DeviceArray alive (the interface's owner, the DLPack capsule's reference).
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "device_array.hpp"
#include "dlpack.hpp"
#include "larmor/backend/registry.hpp"

namespace larmor::python {

PyDeviceArray::PyDeviceArray(std::shared_ptr<Backend> b, std::string dev, Shape s)
    : backend(std::move(b)), device(std::move(dev)), shape(std::move(s)) {
  buffer = backend->allocate(bytes());
}

PyDeviceArray::PyDeviceArray(std::shared_ptr<Backend> b, std::string dev, Shape s, std::unique_ptr<Buffer> buf,
                             py::object keep)
    : backend(std::move(b)), device(std::move(dev)), buffer(std::move(buf)), shape(std::move(s)), owner(std::move(keep)) {}

PyDeviceArray::~PyDeviceArray() {
  if (!owner || !backend) return;
  try {
    py::gil_scoped_release release;
    backend->synchronize();
  } catch (...) {  // a destructor: a failed device says so at its next call
  }
}

int PyDeviceArray::deviceIndex() const {
  const std::string id = backend->info().id;
  const auto colon = id.find(':');
  return colon == std::string::npos ? 0 : std::stoi(id.substr(colon + 1));
}

PyDeviceArray upload(const py::handle& array, const std::string& device) {
  const CNumpy a = complexArray(array, "larmor.to_device");
  PyDeviceArray d(backendFor(device), device, engineShape(a));
  py::gil_scoped_release release;
  d.backend->upload(*d.buffer, a.data(), d.bytes());
  d.backend->synchronize();
  return d;
}

namespace {

py::array toNumpyCopy(PyDeviceArray& d) {
  CArray host(d.shape, CArray::NoInit{});
  {
    py::gil_scoped_release release;
    d.backend->download(host.data(), *d.buffer, d.bytes());
    d.backend->synchronize();
  }
  return toNumpy(std::move(host));
}

py::tuple numpyShapeTuple(const PyDeviceArray& d) { return py::tuple(py::cast(numpyShape(d.shape))); }

py::dict cudaArrayInterface(PyDeviceArray& d) {
  if (!d.backend->isGpu()) throw py::attribute_error("a DeviceArray on the CPU has no __cuda_array_interface__");
  d.backend->synchronize();
  py::dict o;
  o["shape"] = numpyShapeTuple(d);
  o["typestr"] = "<c8";
  o["data"] = py::make_tuple(reinterpret_cast<std::uintptr_t>(d.buffer->ptr()), false);
  o["version"] = 3;
  o["strides"] = py::none();
  o["stream"] = py::none();  // synchronized above: nothing for the consumer to wait on
  return o;
}

/// What a DLPack capsule's tensor owns: the shape, and a reference to the DeviceArray that owns the memory.
struct DlpackContext {
  dlpack::DLManagedTensor tensor{};
  std::vector<int64_t> shape;
  PyObject* owner = nullptr;
};

void deleteDlpack(dlpack::DLManagedTensor* t) {
  auto* ctx = static_cast<DlpackContext*>(t->manager_ctx);
  const PyGILState_STATE gil = PyGILState_Ensure();  // consumers may free tensors on threads without the GIL
  Py_XDECREF(ctx->owner);
  PyGILState_Release(gil);
  delete ctx;
}

py::capsule toDlpack(py::object self) {
  PyDeviceArray& d = self.cast<PyDeviceArray&>();
  d.backend->synchronize();
  auto* ctx = new DlpackContext;
  for (auto n : numpyShape(d.shape)) ctx->shape.push_back(n);
  ctx->owner = self.inc_ref().ptr();
  dlpack::DLTensor& t = ctx->tensor.dl_tensor;
  t.data = d.buffer->ptr();
  t.device = {d.backend->isGpu() ? dlpack::kDLCUDA : dlpack::kDLCPU, d.backend->isGpu() ? d.deviceIndex() : 0};
  t.ndim = static_cast<int32_t>(ctx->shape.size());
  t.dtype = {dlpack::kDLComplex, 64, 1};
  t.shape = ctx->shape.data();
  t.strides = nullptr;
  t.byte_offset = 0;
  ctx->tensor.manager_ctx = ctx;
  ctx->tensor.deleter = deleteDlpack;
  // A capsule that no consumer took ("dltensor", not renamed "used_dltensor") frees its tensor itself.
  return py::capsule(&ctx->tensor, "dltensor", [](PyObject* capsule) {
    if (!PyCapsule_IsValid(capsule, "dltensor")) return;
    auto* t = static_cast<dlpack::DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (t && t->deleter) t->deleter(t);
  });
}

}  // namespace

void bindDeviceArray(py::module_& m) {
  py::class_<PyDeviceArray>(m, "DeviceArray",
                            "A complex64 array in a device's memory; CuPy and PyTorch read it without a copy "
                            "(__cuda_array_interface__, __dlpack__).")
      .def_property_readonly("shape", &numpyShapeTuple)
      .def_property_readonly("dtype", [](const PyDeviceArray&) { return py::dtype("complex64"); })
      .def_property_readonly("device", [](const PyDeviceArray& d) { return d.backend->info().id; })
      .def_property_readonly("nbytes", &PyDeviceArray::bytes)
      .def_property_readonly("ptr", [](PyDeviceArray& d) { return reinterpret_cast<std::uintptr_t>(d.buffer->ptr()); },
                             "the address of the first element (device memory for a GPU)")
      .def("to_numpy", &toNumpyCopy, "A copy in host memory, as a NumPy array.")
      .def("__array__", [](PyDeviceArray& d, py::object) { return toNumpyCopy(d); }, py::arg("dtype") = py::none())
      .def_property_readonly("__cuda_array_interface__", &cudaArrayInterface)
      // DLPack's keywords (stream, and DLPack 1.0's max_version, dl_device, copy): the legacy "dltensor" capsule,
      // which every version of the protocol accepts; copy=True is refused (this export is the copy-free one).
      .def("__dlpack__", [](py::object self, py::kwargs kwargs) {
        if (kwargs.contains("copy") && !kwargs["copy"].is_none() && kwargs["copy"].cast<bool>())
          throw py::buffer_error("larmor.DeviceArray.__dlpack__: copy=True is not supported (to_numpy() copies)");
        return toDlpack(self);
      })
      .def("__dlpack_device__", [](PyDeviceArray& d) {
        return py::make_tuple(d.backend->isGpu() ? int(dlpack::kDLCUDA) : int(dlpack::kDLCPU),
                              d.backend->isGpu() ? d.deviceIndex() : 0);
      })
      .def_property_readonly("borrowed", &PyDeviceArray::borrowed,
                             "whether the memory is another library's (from_dlpack, asarray), kept alive by this array")
      .def_static("from_dlpack", [](const py::handle& obj) { return borrowArray(obj, "larmor.DeviceArray.from_dlpack"); },
                  py::arg("obj"),
                  "Another library's complex64 C-contiguous array (a CuPy array, a PyTorch tensor, a NumPy array) as "
                  "a DeviceArray over the same memory, without a copy; the array keeps the producer alive.")
      .def("__repr__", [](const PyDeviceArray& d) {
        return "<larmor.DeviceArray " + d.backend->info().id + " complex64 engine shape " + d.shape.str() +
               (d.borrowed() ? " borrowed>" : ">");
      });
  m.def("asarray", [](const py::handle& obj) { return borrowArray(obj, "larmor.asarray"); }, py::arg("obj"),
        "DeviceArray.from_dlpack: a CuPy array, a PyTorch tensor or a NumPy array borrowed without a copy.");
  m.def("to_device", &upload, py::arg("array"), py::arg("device") = "cuda",
        "Uploads an array (as complex64) to a device: a DeviceArray.");
  m.def("synchronize", [](const std::string& device) {
    py::gil_scoped_release release;
    backendFor(device)->synchronize();
  }, py::arg("device") = "cuda", "Waits for the device's queued work.");
}

}  // namespace larmor::python
