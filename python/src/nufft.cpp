// larmor.NufftPlan: ops/nufft.hpp's plans, FINUFFT-shaped (make a plan for a trajectory and an image shape, then
// forward/adjoint many times), on any backend. The raw sums, no normalisation:
//   forward  d_j = sum_n x_n exp(-2 pi i k_j . r_n),  adjoint  x_n = sum_j d_j exp(+2 pi i k_j . r_n),
// with r_n = (n - floor(N/2)) / N per dimension and k_j in cycles per FOV; k_j's coordinate 0 pairs with the
// image's last NumPy axis (the engine's dimension 0), as in Dataset.trajectory.
// On the CPU, C-contiguous complex64 inputs and outputs are read and written where they are (no copy); on a GPU,
// DeviceArrays stay on the device and NumPy arrays are uploaded and downloaded around the call.
#include <pybind11/stl.h>

#include <chrono>

#include "bindings.hpp"
#include "device_array.hpp"
#include "larmor/ops/nufft.hpp"

namespace larmor::python {

namespace {

struct PyNufftPlan {
  std::shared_ptr<Backend> backend;
  std::string device;
  std::unique_ptr<NufftPlan> plan;
  std::vector<py::ssize_t> imageShape;   ///< NumPy: ([nz,] ny, nx)
  std::vector<py::ssize_t> sampleShape;  ///< NumPy: the trajectory's shape without its coordinate axis
  index_t imageVoxels = 0, samples = 0;
  const void* lastInput = nullptr;       ///< the address the last call read (tests check that it is the caller's)
};

RNumpy realArray(const py::handle& traj) {
  RNumpy t = RNumpy::ensure(traj);
  if (!t) {
    PyErr_Clear();
    throw Error("NufftPlan: the trajectory must be an array of real numbers");
  }
  return t;
}

RArray trajectory3(const RNumpy& t, int dims) {
  const py::ssize_t d = t.ndim() >= 2 ? t.shape(t.ndim() - 1) : 0;
  require(d == 2 || d == 3, "NufftPlan: the trajectory's last axis holds the coordinates (kx, ky[, kz]): 2 or 3, not " +
                                std::to_string(d));
  require(d >= dims, "NufftPlan: a " + std::to_string(dims) + "D image needs " + std::to_string(dims) + " coordinates per sample");
  const index_t m = t.size() / d;
  RArray out(Shape{3, m});
  const float* src = t.data();
  for (index_t j = 0; j < m; ++j)
    for (index_t c = 0; c < d; ++c) out[3 * j + c] = src[d * j + c];
  return out;
}

PyNufftPlan makePlan(const py::handle& traj, const std::vector<py::ssize_t>& shape, const std::string& device,
                     int width, double oversampling, bool exact) {
  require(shape.size() == 2 || shape.size() == 3, "NufftPlan: the image shape has 2 or 3 axes ((nz,) ny, nx)");
  PyNufftPlan p;
  p.device = device;
  p.backend = backendFor(device);
  p.imageShape = shape;
  NufftGeometry g;
  g.dims = static_cast<int>(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) g.image[i] = shape[shape.size() - 1 - i];
  const RNumpy t = realArray(traj);
  g.trajectory = trajectory3(t, g.dims);
  p.sampleShape.assign(t.shape(), t.shape() + t.ndim() - 1);
  p.samples = g.samples();
  p.imageVoxels = g.image[0] * g.image[1] * g.image[2];
  NufftOptions o;
  o.width = width;
  o.oversampling = oversampling;
  py::gil_scoped_release release;
  p.plan = exact ? p.backend->makeDftPlan(g, DftOptions{}) : p.backend->makeNufftPlan(g, o);
  return p;
}

/// How many transforms an input of `size` elements holds, `per` elements each.
index_t batchOf(index_t size, index_t per, const char* what) {
  require(per > 0 && size % per == 0 && size > 0, std::string("NufftPlan: the ") + what + " has " + std::to_string(size) +
                                                      " elements, not a multiple of " + std::to_string(per));
  return size / per;
}

std::vector<py::ssize_t> outShape(const std::vector<py::ssize_t>& inShape, std::size_t inCore,
                                  const std::vector<py::ssize_t>& outCore) {
  std::vector<py::ssize_t> s;
  if (inShape.size() > inCore) s.assign(inShape.begin(), inShape.end() - static_cast<std::ptrdiff_t>(inCore));
  s.insert(s.end(), outCore.begin(), outCore.end());
  return s;
}

using Transform = void (NufftPlan::*)(const Buffer&, Buffer&, index_t);

/// The leading axes of the input that are not the transform's own: the batch.
std::size_t coreAxes(const std::vector<py::ssize_t>& in, const std::vector<py::ssize_t>& core) {
  const bool tail = in.size() >= core.size() && std::equal(core.begin(), core.end(), in.end() - core.size());
  return tail ? core.size() : std::min<std::size_t>(in.size(), 1);
}

/// NumPy in, NumPy out (`out` when given: C-contiguous complex64 of the result's size).
py::array runHost(PyNufftPlan& p, const py::handle& x, py::object out, bool forward) {
  const CNumpy in = complexArray(x, forward ? "NufftPlan.forward" : "NufftPlan.adjoint");
  const index_t perIn = forward ? p.imageVoxels : p.samples, perOut = forward ? p.samples : p.imageVoxels;
  const index_t batch = batchOf(in.size(), perIn, forward ? "image" : "samples");
  const std::vector<py::ssize_t> inShape(in.shape(), in.shape() + in.ndim());
  const auto& inCore = forward ? p.imageShape : p.sampleShape;
  const auto& outCore = forward ? p.sampleShape : p.imageShape;
  require(out.is_none() || CNumpy::check_(out), "NufftPlan: out must be a C-contiguous complex64 array");
  CNumpy result = out.is_none() ? CNumpy(outShape(inShape, coreAxes(inShape, inCore), outCore))
                                : py::reinterpret_borrow<CNumpy>(out);
  require(result.size() == batch * perOut && result.writeable(),
          "NufftPlan: out must be writable and hold " + std::to_string(batch * perOut) + " elements");
  const Transform op = forward ? &NufftPlan::forward : &NufftPlan::adjoint;
  p.lastInput = in.data();
  const std::size_t inBytes = batch * perIn * sizeof(cfloat), outBytes = batch * perOut * sizeof(cfloat);
  auto* inData = const_cast<std::complex<float>*>(in.data());
  auto* outData = result.mutable_data();
  {
    py::gil_scoped_release release;
    if (!p.backend->isGpu()) {
      BorrowedBuffer src(inData, inBytes), dst(outData, outBytes);
      ((*p.plan).*op)(src, dst, batch);
    } else {
      auto src = p.backend->allocate(inBytes);
      auto dst = p.backend->allocate(outBytes);
      p.backend->upload(*src, inData, inBytes);
      ((*p.plan).*op)(*src, *dst, batch);
      p.backend->download(outData, *dst, outBytes);
      p.backend->synchronize();
    }
  }
  return result;
}

/// DeviceArray in, DeviceArray out (`out` when given), on the plan's backend; nothing is synchronized.
py::object runDevice(PyNufftPlan& p, PyDeviceArray& in, py::object out, bool forward) {
  require(in.backend == p.backend, "NufftPlan: the DeviceArray is on " + in.backend->info().id + ", the plan on " +
                                       p.backend->info().id);
  const index_t perIn = forward ? p.imageVoxels : p.samples, perOut = forward ? p.samples : p.imageVoxels;
  const index_t batch = batchOf(in.size(), perIn, forward ? "image" : "samples");
  if (out.is_none()) {
    const std::vector<py::ssize_t> inShape = numpyShape(in.shape);
    const auto& inCore = forward ? p.imageShape : p.sampleShape;
    std::vector<py::ssize_t> s = outShape(inShape, coreAxes(inShape, inCore), forward ? p.sampleShape : p.imageShape);
    std::vector<index_t> dims(s.rbegin(), s.rend());
    out = py::cast(PyDeviceArray(p.backend, p.device, Shape(dims)));
  }
  PyDeviceArray& result = out.cast<PyDeviceArray&>();
  require(result.backend == p.backend && result.size() == batch * perOut && !result.readonly,
          "NufftPlan: out must be a writable DeviceArray of " + std::to_string(batch * perOut) +
              " elements on the plan's device");
  const Transform op = forward ? &NufftPlan::forward : &NufftPlan::adjoint;
  p.lastInput = in.buffer->ptr();
  {
    py::gil_scoped_release release;
    ((*p.plan).*op)(*in.buffer, *result.buffer, batch);
    // Borrowed memory is the producer's again when the call returns (its own stream may read or overwrite it).
    if (in.borrowed() || result.borrowed()) p.backend->synchronize();
  }
  return out;
}

/// CuPy arrays and PyTorch CUDA tensors are borrowed (DeviceArrays over their memory): `out=` one of them is
/// written where it is.
py::object apply(PyNufftPlan& p, py::object x, py::object out, bool forward) {
  const char* what = forward ? "NufftPlan.forward" : "NufftPlan.adjoint";
  if (isForeignCudaArray(x)) x = borrowArray(x, what);
  if (isForeignCudaArray(out)) out = borrowArray(out, what);
  if (py::isinstance<PyDeviceArray>(x)) return runDevice(p, x.cast<PyDeviceArray&>(), out, forward);
  return runHost(p, x, out, forward);
}

/// Seconds per forward call measured inside C++ (the call and a synchronize, `repeats` times): the reference for the
/// Python call's overhead.
double cppSecondsPerForward(PyNufftPlan& p, PyDeviceArray& x, PyDeviceArray& y, int repeats) {
  const index_t batch = batchOf(x.size(), p.imageVoxels, "image");
  py::gil_scoped_release release;
  p.plan->forward(*x.buffer, *y.buffer, batch);
  p.backend->synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) {
    p.plan->forward(*x.buffer, *y.buffer, batch);
    p.backend->synchronize();
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / repeats;
}

}  // namespace

void bindNufft(py::module_& m) {
  py::class_<PyNufftPlan>(m, "NufftPlan",
                          "Non-uniform FFT between an image ((nz,) ny, nx) and samples at trajectory points (..., 2|3) "
                          "in cycles per FOV; forward: image -> samples, adjoint: samples -> image (raw sums).")
      .def(py::init(&makePlan), py::arg("traj"), py::arg("shape"), py::arg("device") = "cpu", py::kw_only(),
           py::arg("width") = 4, py::arg("oversampling") = 2.0, py::arg("exact") = false)
      .def("forward", [](PyNufftPlan& p, const py::object& x, const py::object& out) { return apply(p, x, out, true); },
           py::arg("image"), py::arg("out") = py::none())
      .def("adjoint", [](PyNufftPlan& p, const py::object& x, const py::object& out) { return apply(p, x, out, false); },
           py::arg("samples"), py::arg("out") = py::none())
      .def_property_readonly("shape", [](const PyNufftPlan& p) { return py::tuple(py::cast(p.imageShape)); })
      .def_property_readonly("samples", [](const PyNufftPlan& p) { return p.samples; })
      .def_property_readonly("device", [](const PyNufftPlan& p) { return p.backend->info().id; })
      .def_property_readonly("_last_input_address", [](const PyNufftPlan& p) {
        return reinterpret_cast<std::uintptr_t>(p.lastInput);
      })
      .def("_cpp_seconds_per_forward", &cppSecondsPerForward, py::arg("image"), py::arg("out"), py::arg("repeats") = 100);
}

}  // namespace larmor::python
