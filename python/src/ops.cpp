// Building blocks with NumPy in and out: the centred unitary FFT (the project's convention, backend.hpp:
// X[k] = N^-1/2 sum_n x[n] exp(-2 pi i (k - c)(n - c) / N), c = floor(N/2), over the last `ndim` NumPy axes),
// ESPIRiT coil maps (ops/espirit.hpp) and the image quality metrics (quality/metrics.hpp).
#include <pybind11/stl.h>

#include <cstring>

#include "bindings.hpp"
#include "json_convert.hpp"
#include "larmor/ops/espirit.hpp"
#include "larmor/quality/metrics.hpp"
#include "numpy_arrays.hpp"

namespace larmor::python {

namespace {

py::array fft(const py::handle& x, int ndim, bool inverse, const std::string& device) {
  const CNumpy in = complexArray(x, "larmor.fft");
  require(ndim >= 1 && ndim <= 3 && ndim <= in.ndim(),
          "larmor.fft: ndim " + std::to_string(ndim) + " must be 1 to 3 and at most the array's axes (" +
              std::to_string(in.ndim()) + ")");
  CNumpy out(std::vector<py::ssize_t>(in.shape(), in.shape() + in.ndim()));
  const Shape shape = engineShape(in);
  const std::size_t bytes = static_cast<std::size_t>(in.size()) * sizeof(cfloat);
  const auto* src = in.data();
  auto* dst = out.mutable_data();
  {
    py::gil_scoped_release release;
    auto backend = backendFor(device);
    const FftDirection dir = inverse ? FftDirection::Inverse : FftDirection::Forward;
    if (!backend->isGpu()) {
      std::memcpy(dst, src, bytes);
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
  return out;
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
        py::arg("device") = "cpu",
        "Centred unitary FFT over the last `ndim` axes (k = 0 and the image centre at index floor(N/2)).");
  m.def("ifft", [](const py::handle& x, int ndim, const std::string& device) { return fft(x, ndim, true, device); },
        py::arg("x"), py::arg("ndim") = 2, py::kw_only(), py::arg("device") = "cpu", "The inverse of larmor.fft.");
  m.def("espirit", &espirit, py::arg("calibration"), py::arg("shape"), py::kw_only(), py::arg("kernel") = 6,
        py::arg("threshold") = 0.001, py::arg("crop") = 0.8, py::arg("device") = "cpu",
        "ESPIRiT coil maps from calibration k-space (coils, [kz,] ky, kx) onto an image grid ((nz,) ny, nx): "
        "(maps (coils, nz, ny, nx), eigenvalues (nz, ny, nx)).");
  m.def("compare", &compare, py::arg("test"), py::arg("reference"), py::kw_only(), py::arg("least_squares_scale") = true,
        "Percent error, PSNR, SSIM, NRMSE of an image against a reference (quality/metrics.hpp).");
}

}  // namespace larmor::python
