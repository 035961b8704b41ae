#pragma once
// NumPy <-> engine arrays. NumPy's axes are the engine's in reverse order (C order: the last NumPy axis is the
// engine's dimension 0, the fastest varying), so a C-contiguous NumPy array and an engine array of the reversed
// shape are the same bytes. Arrays leave without a copy (the engine array moves into the owner of the NumPy
// array); C-contiguous complex64 arrays enter without a copy where the engine takes a pointer (BorrowedBuffer:
// the CPU backend's operations and plans read and write a Buffer through ptr() alone).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <complex>
#include <string>
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/backend/buffer.hpp"

namespace larmor::python {
namespace py = pybind11;

using CNumpy = py::array_t<std::complex<float>, py::array::c_style | py::array::forcecast>;
using RNumpy = py::array_t<float, py::array::c_style | py::array::forcecast>;

/// The engine shape of a NumPy array (its shape reversed).
Shape engineShape(const py::array& a);
/// The NumPy shape of an engine shape (reversed).
std::vector<py::ssize_t> numpyShape(const Shape& s);

/// Moves the engine array into a NumPy array of the reversed shape (no copy of the elements).
template <class T>
py::array toNumpy(Array<T>&& a) {
  auto* owner = new Array<T>(std::move(a));
  py::capsule free(owner, [](void* p) { delete static_cast<Array<T>*>(p); });
  return py::array_t<T>(numpyShape(owner->shape()), owner->data(), free);
}

/// A copy of a NumPy array as an engine array (converted to complex64 / float32 where it is another dtype).
CArray toCArray(const py::handle& a, const std::string& what);
RArray toRArray(const py::handle& a, const std::string& what);

/// Memory the engine does not own (a NumPy array's, or a device pointer that a caller keeps alive), as a Buffer.
class BorrowedBuffer final : public Buffer {
 public:
  BorrowedBuffer(void* p, std::size_t bytes) : p_(p), bytes_(bytes) {}
  std::size_t bytes() const override { return bytes_; }
  void* ptr() override { return p_; }
  const void* ptr() const override { return p_; }

 private:
  void* p_;
  std::size_t bytes_;
};

/// The array as complex64, C-contiguous: the argument itself when it already is (no copy), else a converted copy.
CNumpy complexArray(const py::handle& a, const std::string& what);

}  // namespace larmor::python
