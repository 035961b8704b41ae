#pragma once
// larmor.DeviceArray: a complex64 array in a backend's memory (a GPU's, or the host's for "cpu"), so that arrays stay
// on the device between calls (NufftPlan.forward/adjoint take and give them). NumPy shape conventions
// (numpy_arrays.hpp): its shape is the engine shape reversed, its memory C order. Either its own memory (allocated
// by the backend) or borrowed: another library's array (CuPy, PyTorch, NumPy) seen without a copy, that library's
// object kept alive by `owner` (borrow.cpp).
#include <memory>
#include <string>

#include "larmor/backend/backend.hpp"
#include "numpy_arrays.hpp"

namespace larmor::python {

struct PyDeviceArray {
  std::shared_ptr<Backend> backend;
  std::string device;             ///< as selected: "cpu", "cuda", "cuda:1"
  std::unique_ptr<Buffer> buffer;
  Shape shape;                    ///< the engine's (dimension 0 fastest)
  py::object owner;               ///< borrowed: what keeps the memory alive (the producer, or its DLPack capsule)
  bool readonly = false;          ///< borrowed from a read-only array: refused as out=

  PyDeviceArray(std::shared_ptr<Backend> b, std::string dev, Shape s);
  /// Borrowed memory: `buf` releases nothing, `keep` keeps it alive.
  PyDeviceArray(std::shared_ptr<Backend> b, std::string dev, Shape s, std::unique_ptr<Buffer> buf, py::object keep);
  PyDeviceArray(PyDeviceArray&&) = default;
  PyDeviceArray& operator=(PyDeviceArray&&) = default;
  /// A borrowed array waits for the backend's queued work before letting its owner go (the producer may free or
  /// reuse the memory at once).
  ~PyDeviceArray();
  bool borrowed() const { return static_cast<bool>(owner); }
  index_t size() const { return shape.size(); }
  std::size_t bytes() const { return static_cast<std::size_t>(size()) * sizeof(cfloat); }
  /// The device id of a GPU backend ("cuda:1" -> 1), 0 for the CPU.
  int deviceIndex() const;
};

/// Uploads a NumPy array (converted to complex64 C order where it is not).
PyDeviceArray upload(const py::handle& array, const std::string& device);

/// Whether `obj` is another library's array in CUDA memory (a CuPy array, a PyTorch CUDA tensor): one that
/// NufftPlan and fft borrow as a DeviceArray (borrow.cpp).
bool isForeignCudaArray(const py::handle& obj);
/// `obj` (DLPack, the CUDA array interface, or a NumPy array) as a DeviceArray over its memory, without a copy:
/// complex64, C-contiguous; throws Error naming `what` and the reason where it cannot be borrowed.
py::object borrowArray(const py::handle& obj, const std::string& what);

}  // namespace larmor::python
