// Another library's array as a larmor.DeviceArray without a copy (DeviceArray.from_dlpack, larmor.asarray): a CuPy
// array or a PyTorch CUDA tensor through DLPack (__dlpack__: the producer's tensor, its deleter called when the
// DeviceArray goes) or the CUDA array interface (the producer object kept), and a NumPy array in host memory. The
// memory must be complex64 and C-contiguous (strides absent or those of C order), as the engine's buffers are.
// On a GPU the memory becomes a buffer of the CUDA backend through its family's BackendProvider::borrow, which
// checks that it is that device's memory and synchronizes the device (the producer's queued work on it done); on
// the CPU any host pointer is a buffer (BorrowedBuffer). A borrowed DeviceArray waits for Larmor's queued work
// before it lets the producer go (device_array.hpp).
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "device_array.hpp"
#include "dlpack.hpp"
#include "larmor/backend/registry.hpp"

namespace larmor::python {

namespace {

/// Foreign memory as the bindings see it before it is made a buffer.
struct Foreign {
  void* ptr = nullptr;
  std::vector<py::ssize_t> shape;  ///< NumPy order
  std::string device;              ///< "cpu", "cuda:N" (or "cuda": the CUDA array interface names no device)
  bool readonly = false;
  py::object owner;
};

std::size_t elements(const std::vector<py::ssize_t>& shape) {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

/// Whether strides (in units of `unit` bytes per count) are C order's for `shape`; axes of one element never count.
template <class Stride>
bool cOrder(const std::vector<py::ssize_t>& shape, const std::vector<Stride>& strides, std::size_t unit) {
  std::size_t expected = unit;
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && static_cast<std::size_t>(strides[i]) != expected) return false;
    expected *= static_cast<std::size_t>(shape[i]);
  }
  return true;
}

Foreign fromNumpy(const py::array& a, const std::string& what) {
  require(a.dtype().is(py::dtype::of<std::complex<float>>()),
          what + ": a NumPy array is borrowed only as complex64 (it is " + std::string(py::str(a.dtype())) + ")");
  require((a.flags() & py::array::c_style) != 0, what + ": a NumPy array is borrowed only C-contiguous");
  Foreign f;
  f.ptr = const_cast<void*>(a.data());
  f.shape.assign(a.shape(), a.shape() + a.ndim());
  f.device = "cpu";
  f.readonly = !a.writeable();
  f.owner = py::reinterpret_borrow<py::object>(a);
  return f;
}

std::string dlpackDevice(const dlpack::DLDevice& d, const std::string& what) {
  if (d.device_type == dlpack::kDLCPU) return "cpu";
  require(d.device_type == dlpack::kDLCUDA,
          what + ": DLPack device type " + std::to_string(d.device_type) + " is neither the CPU (1) nor CUDA (2)");
  return "cuda:" + std::to_string(d.device_id);
}

/// The legacy "dltensor" capsule (no max_version asked, which every producer answers): checked, renamed
/// "used_dltensor" (DLPack's rule: the consumer owns it now) and its tensor freed by the owner's destructor.
Foreign fromDlpack(const py::handle& obj, const std::string& what) {
  py::object capsule = obj.attr("__dlpack__")();
  auto* m = static_cast<dlpack::DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (!m) {
    PyErr_Clear();
    throw Error(what + ": __dlpack__ gave no unused 'dltensor' capsule");
  }
  const dlpack::DLTensor& t = m->dl_tensor;
  require(t.dtype.code == dlpack::kDLComplex && t.dtype.bits == 64 && t.dtype.lanes == 1,
          what + ": borrowed only as complex64 (DLPack type code " + std::to_string(t.dtype.code) + ", " +
              std::to_string(t.dtype.bits) + " bits)");
  Foreign f;
  f.shape.assign(t.shape, t.shape + t.ndim);
  require(!t.strides || cOrder(f.shape, std::vector<int64_t>(t.strides, t.strides + t.ndim), 1),
          what + ": borrowed only C-contiguous (the DLPack strides are another order's)");
  f.device = dlpackDevice(t.device, what);
  f.ptr = static_cast<char*>(t.data) + t.byte_offset;
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  f.owner = py::capsule(m, [](void* p) {
    auto* tensor = static_cast<dlpack::DLManagedTensor*>(p);
    if (tensor->deleter) tensor->deleter(tensor);
  });
  return f;
}

Foreign fromCudaArrayInterface(const py::handle& obj, const std::string& what) {
  const py::dict cai = obj.attr("__cuda_array_interface__");
  require(cai["typestr"].cast<std::string>() == "<c8",
          what + ": borrowed only as complex64 (typestr " + cai["typestr"].cast<std::string>() + ")");
  require(!cai.contains("mask") || cai["mask"].is_none(), what + ": a masked CUDA array cannot be borrowed");
  Foreign f;
  f.shape = cai["shape"].cast<std::vector<py::ssize_t>>();
  const py::object strides = cai.contains("strides") ? cai["strides"] : py::none();
  require(strides.is_none() || cOrder(f.shape, strides.cast<std::vector<py::ssize_t>>(), sizeof(cfloat)),
          what + ": borrowed only C-contiguous (the CUDA array interface's strides are another order's)");
  const auto data = cai["data"].cast<std::pair<std::uintptr_t, bool>>();
  f.ptr = reinterpret_cast<void*>(data.first);
  f.readonly = data.second;
  f.device = "cuda";
  f.owner = py::reinterpret_borrow<py::object>(obj);
  return f;
}

Foreign foreign(const py::handle& obj, const std::string& what) {
  if (py::isinstance<py::array>(obj)) return fromNumpy(py::reinterpret_borrow<py::array>(obj), what);
  if (py::hasattr(obj, "__dlpack__")) return fromDlpack(obj, what);
  if (py::hasattr(obj, "__cuda_array_interface__")) return fromCudaArrayInterface(obj, what);
  throw Error(what + ": " + std::string(py::str(py::type::of(obj).attr("__name__"))) +
              " has neither __dlpack__ nor __cuda_array_interface__ and is no NumPy array");
}

/// The buffer over f's memory: on the CPU any pointer; on a GPU the family's borrow (null: it cannot).
std::unique_ptr<Buffer> bufferOver(Backend& backend, const Foreign& f, const std::string& what) {
  const std::size_t bytes = elements(f.shape) * sizeof(cfloat);
  if (!backend.isGpu()) return std::make_unique<BorrowedBuffer>(f.ptr, bytes);
  require(bytes > 0, what + ": an empty array cannot be borrowed on a GPU");
  std::unique_ptr<Buffer> b = BackendRegistry::instance().borrow(backend, f.ptr, bytes);
  require(b != nullptr, what + ": " + backend.info().id + " cannot borrow another library's memory");
  return b;
}

}  // namespace

bool isForeignCudaArray(const py::handle& obj) {
  if (py::isinstance<py::array>(obj) || py::isinstance<PyDeviceArray>(obj)) return false;
  if (py::hasattr(obj, "__cuda_array_interface__")) return true;
  if (!py::hasattr(obj, "__dlpack_device__")) return false;
  const auto device = obj.attr("__dlpack_device__")().cast<std::pair<int, int>>();
  return device.first == dlpack::kDLCUDA;
}

py::object borrowArray(const py::handle& obj, const std::string& what) {
  if (py::isinstance<PyDeviceArray>(obj)) return py::reinterpret_borrow<py::object>(obj);
  Foreign f = foreign(obj, what);
  std::shared_ptr<Backend> backend = backendFor(f.device);
  std::vector<index_t> dims(f.shape.rbegin(), f.shape.rend());
  std::unique_ptr<Buffer> buffer;
  {
    py::gil_scoped_release release;  // a GPU's borrow synchronizes the device
    buffer = bufferOver(*backend, f, what);
  }
  PyDeviceArray d(backend, f.device, Shape(std::move(dims)), std::move(buffer), std::move(f.owner));
  d.readonly = f.readonly;
  return py::cast(std::move(d));
}

}  // namespace larmor::python
