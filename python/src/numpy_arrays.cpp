// NumPy <-> engine arrays (numpy_arrays.hpp): shapes reversed, copies only where the dtype or the order differ.
#include "numpy_arrays.hpp"

#include <algorithm>
#include <cstring>

#include "larmor/util/error.hpp"

namespace larmor::python {

Shape engineShape(const py::array& a) {
  std::vector<index_t> dims(a.shape(), a.shape() + a.ndim());
  std::reverse(dims.begin(), dims.end());
  return Shape(std::move(dims));
}

std::vector<py::ssize_t> numpyShape(const Shape& s) {
  std::vector<py::ssize_t> dims(s.dims().rbegin(), s.dims().rend());
  return dims;
}

CNumpy complexArray(const py::handle& a, const std::string& what) {
  if (CNumpy::check_(a)) return py::reinterpret_borrow<CNumpy>(a);
  CNumpy c = CNumpy::ensure(a);
  if (!c) {
    PyErr_Clear();
    throw Error(what + ": expected an array of complex numbers");
  }
  return c;
}

CArray toCArray(const py::handle& a, const std::string& what) {
  const CNumpy c = complexArray(a, what);
  CArray out(engineShape(c), CArray::NoInit{});
  std::memcpy(out.data(), c.data(), static_cast<std::size_t>(c.size()) * sizeof(cfloat));
  return out;
}

RArray toRArray(const py::handle& a, const std::string& what) {
  RNumpy r = RNumpy::ensure(a);
  if (!r) {
    PyErr_Clear();
    throw Error(what + ": expected an array of real numbers");
  }
  RArray out(engineShape(r), RArray::NoInit{});
  std::memcpy(out.data(), r.data(), static_cast<std::size_t>(r.size()) * sizeof(float));
  return out;
}

}  // namespace larmor::python
