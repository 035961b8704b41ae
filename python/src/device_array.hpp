#pragma once
// larmor.DeviceArray: a complex64 array in a backend's memory (a GPU's, or the host's for "cpu"), so that arrays stay
// on the device between calls (NufftPlan.forward/adjoint take and give them). NumPy shape conventions
// (numpy_arrays.hpp): its shape is the engine shape reversed, its memory C order.
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

  PyDeviceArray(std::shared_ptr<Backend> b, std::string dev, Shape s);
  index_t size() const { return shape.size(); }
  std::size_t bytes() const { return static_cast<std::size_t>(size()) * sizeof(cfloat); }
  /// The device id of a GPU backend ("cuda:1" -> 1), 0 for the CPU.
  int deviceIndex() const;
};

/// Uploads a NumPy array (converted to complex64 C order where it is not).
PyDeviceArray upload(const py::handle& array, const std::string& device);

}  // namespace larmor::python
