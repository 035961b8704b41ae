// Building blocks with NumPy in and out: the centred unitary FFT (the project's convention, backend.hpp:
// X[k] = N^-1/2 sum_n x[n] exp(-2 pi i (k - c)(n - c) / N), c = floor(N/2), over the last `ndim` NumPy axes; on
// DeviceArrays too, borrowed CuPy/PyTorch arrays included),
// ESPIRiT coil maps (ops/espirit.hpp) and the image quality metrics (quality/metrics.hpp).
#include <pybind11/stl.h>

#include <cstring>

#include "bindings.hpp"
#include "device_array.hpp"
#include "json_convert.hpp"
#include "larmor/ops/espirit.hpp"
#include "larmor/quality/metrics.hpp"
#include "numpy_arrays.hpp"

namespace larmor::python {

namespace {

void checkRank(int ndim, py::ssize_t rank) {
  require(ndim >= 1 && ndim <= 3 && ndim <= rank, "larmor.fft: ndim " + std::to_string(ndim) +
                                                      " must be 1 to 3 and at most the array's axes (" +
                                                      std::to_string(rank) + ")");
}

/// NumPy in, NumPy out (`out` when given: C-contiguous complex64 of the input's size, may be the input).
py::object fftHost(const py::handle& x, py::object out, int ndim, bool inverse, const std::string& device) {
  const CNumpy in = complexArray(x, "larmor.fft");
  checkRank(ndim, in.ndim());
  require(out.is_none() || (CNumpy::check_(out) && py::reinterpret_borrow<CNumpy>(out).size() == in.size() &&
                            py::reinterpret_borrow<CNumpy>(out).writeable()),
          "larmor.fft: out must be a writable C-contiguous complex64 array of the input's size");
  CNumpy result = out.is_none() ? CNumpy(std::vector<py::ssize_t>(in.shape(), in.shape() + in.ndim()))
                                : py::reinterpret_borrow<CNumpy>(out);
  const Shape shape = engineShape(in);
  const std::size_t bytes = static_cast<std::size_t>(in.size()) * sizeof(cfloat);
  const auto* src = in.data();
  auto* dst = result.mutable_data();
  {
    py::gil_scoped_release release;
    auto backend = backendFor(device);
    const FftDirection dir = inverse ? FftDirection::Inverse : FftDirection::Forward;
    if (!backend->isGpu()) {
      if (dst != src) std::memcpy(dst, src, bytes);
      BorrowedBuffer data(dst, bytes);
      backend->fft(data, shape, ndim, dir);
    } else {
      auto data = backend->allocate(bytes);
      backend->upload(*data, src, bytes);
      backend->fft(*data, shape, ndim, dir);
      backend->download(dst, *data, bytes);
      backend->synchronize();
    }
  }
  return result;
}

/// DeviceArray in, DeviceArray out on its backend (`out` when given, may be the input: in place); borrowed memory
/// is synchronized before returning, as NufftPlan does.
py::object fftDevice(PyDeviceArray& x, py::object out, int ndim, bool inverse) {
  checkRank(ndim, static_cast<py::ssize_t>(x.shape.rank()));
  if (out.is_none()) out = py::cast(PyDeviceArray(x.backend, x.device, x.shape));
  require(py::isinstance<PyDeviceArray>(out), "larmor.fft: out must be a DeviceArray for a DeviceArray input");
  PyDeviceArray& result = out.cast<PyDeviceArray&>();
  require(result.backend == x.backend && result.size() == x.size() && !result.readonly,
          "larmor.fft: out must be a writable DeviceArray of the input's size on its device");
  py::gil_scoped_release release;
  if (result.buffer->ptr() != x.buffer->ptr()) x.backend->copy(*result.buffer, *x.buffer, x.bytes());
  x.backend->fft(*result.buffer, x.shape, ndim, inverse ? FftDirection::Inverse : FftDirection::Forward);
  if (x.borrowed() || result.borrowed()) x.backend->synchronize();
  return out;
}

py::object fft(py::object x, int ndim, bool inverse, const std::string& device, py::object out) {
  if (isForeignCudaArray(x)) x = borrowArray(x, "larmor.fft");
  if (isForeignCudaArray(out)) out = borrowArray(out, "larmor.fft");
  if (py::isinstance<PyDeviceArray>(x)) return fftDevice(x.cast<PyDeviceArray&>(), out, ndim, inverse);
  return fftHost(x, out, ndim, inverse, device);
}

py::tuple espirit(const py::handle& calibration, const std::vector<index_t>& shape, int kernel, double threshold,
                  double crop, const std::string& device) {
  require(shape.size() == 2 || shape.size() == 3, "larmor.espirit: the image shape has 2 or 3 axes ((nz,) ny, nx)");
  CArray calib = toCArray(calibration, "larmor.espirit: the calibration k-space");
  require(calib.shape().rank() == shape.size() + 1,
          "larmor.espirit: the calibration k-space is (coils, " + std::string(shape.size() == 3 ? "kz, " : "") + "ky, kx)");
  // Engine [c0, c1, (c2,) C] -> [c0, c1, c2, C].
  std::vector<index_t> dims = calib.shape().dims();
  if (shape.size() == 2) dims.insert(dims.begin() + 2, 1);
  calib.reshape(Shape(dims));
  index_t grid[3] = {1, 1, 1};
  for (std::size_t i = 0; i < shape.size(); ++i) grid[i] = shape[shape.size() - 1 - i];
  ops::EspiritOptions o;
  o.kernel = kernel;
  o.threshold = threshold;
  o.crop = crop;
  ops::EspiritResult r;
  {
    py::gil_scoped_release release;
    r = ops::espirit(*backendFor(device), calib, grid, o);
  }
  return py::make_tuple(toNumpy(std::move(r.maps)), toNumpy(std::move(r.eigenvalues)));
}

py::object compare(const py::handle& test, const py::handle& reference, bool leastSquaresScale) {
  const CArray t = toCArray(test, "larmor.compare: the test image");
  const CArray r = toCArray(reference, "larmor.compare: the reference");
  quality::CompareOptions o;
  o.leastSquaresScale = leastSquaresScale;
  quality::Metrics metrics;
  {
    py::gil_scoped_release release;
    metrics = quality::compare(t, r, o);
  }
  return toPython(quality::toJson(metrics));
}

}  // namespace

void bindOps(py::module_& m) {
  m.def("fft", &fft, py::arg("x"), py::arg("ndim") = 2, py::kw_only(), py::arg("inverse") = false,
        py::arg("device") = "cpu", py::arg("out") = py::none(),
        "Centred unitary FFT over the last `ndim` axes (k = 0 and the image centre at index floor(N/2)); a DeviceArray "
        "(or a CuPy/PyTorch CUDA array, borrowed) is transformed on its device into a DeviceArray (out= one, or x).");
  m.def("ifft", [](py::object x, int ndim, const std::string& device, py::object out) {
    return fft(std::move(x), ndim, true, device, std::move(out));
  }, py::arg("x"), py::arg("ndim") = 2, py::kw_only(), py::arg("device") = "cpu", py::arg("out") = py::none(),
        "The inverse of larmor.fft.");
  m.def("espirit", &espirit, py::arg("calibration"), py::arg("shape"), py::kw_only(), py::arg("kernel") = 6,
        py::arg("threshold") = 0.001, py::arg("crop") = 0.8, py::arg("device") = "cpu",
        "ESPIRiT coil maps from calibration k-space (coils, [kz,] ky, kx) onto an image grid ((nz,) ny, nx): "
        "(maps (coils, nz, ny, nx), eigenvalues (nz, ny, nx)).");
  m.def("compare", &compare, py::arg("test"), py::arg("reference"), py::kw_only(), py::arg("least_squares_scale") = true,
        "Percent error, PSNR, SSIM, NRMSE of an image against a reference (quality/metrics.hpp).");
}

}  // namespace larmor::python
