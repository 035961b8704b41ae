// Compressed sensing's proximal steps and coil compression with NumPy in and out:
//   tv_prox(x, t)        prox of t TV(u) (isotropic total variation, forward differences, Neumann boundary), by the
//                        fast gradient projection of Beck & Teboulle from a zero dual field (backend/sparsity_ops.hpp)
//   total_variation(x)   TV(x) = sum_v sqrt(sum_d |x(v + e_d) - x(v)|^2)
//   wavelet_prox(x, t)   S^-1 Psi^H soft_t(Psi S x): Daubechies-4, detail bands only, circular shift S
//   wavelet_l1(x)        ||Psi x||_1 over the detail bands
//   coil_compression(dataset, coils) and compress_coils(data, matrix): SVD coil compression
//                        (recon/coil_compression.hpp)
// Images are ((nz,) ny, nx) complex64 (the engine's [nx, ny, nz]).
#include <pybind11/stl.h>

#include <array>
#include <cstring>

#include "bindings.hpp"
#include "larmor/recon/coil_compression.hpp"
#include "numpy_arrays.hpp"

namespace larmor::python {

namespace {

Shape imageShape(const CNumpy& x, const char* what) {
  require(x.ndim() == 2 || x.ndim() == 3, std::string(what) + ": the image has 2 or 3 axes ((nz,) ny, nx)");
  Shape s = engineShape(x);
  return s.rank() == 2 ? Shape{s[0], s[1], 1} : s;
}

/// A copy of `x` changed in place by `step` on the device's backend (the CPU works on the copy itself).
template <class Step>
py::array inPlaceCopy(const py::handle& image, const std::string& device, const char* what, Step step) {
  const CNumpy in = complexArray(image, what);
  const Shape shape = imageShape(in, what);
  CNumpy out(std::vector<py::ssize_t>(in.shape(), in.shape() + in.ndim()));
  const std::size_t bytes = static_cast<std::size_t>(in.size()) * sizeof(cfloat);
  const auto* src = in.data();
  auto* dst = out.mutable_data();
  {
    py::gil_scoped_release release;
    auto backend = backendFor(device);
    if (!backend->isGpu()) {
      std::memcpy(dst, src, bytes);
      BorrowedBuffer data(dst, bytes);
      step(*backend, data, shape);
    } else {
      auto data = backend->allocate(bytes);
      backend->upload(*data, src, bytes);
      step(*backend, *data, shape);
      backend->download(dst, *data, bytes);
      backend->synchronize();
    }
  }
  return out;
}

/// A measure of an image on the device's backend.
template <class Measure>
double measured(const py::handle& image, const std::string& device, const char* what, Measure measure) {
  const CNumpy in = complexArray(image, what);
  const Shape shape = imageShape(in, what);
  const std::size_t bytes = static_cast<std::size_t>(in.size()) * sizeof(cfloat);
  auto* src = const_cast<std::complex<float>*>(in.data());
  py::gil_scoped_release release;
  auto backend = backendFor(device);
  if (!backend->isGpu()) {
    BorrowedBuffer data(src, bytes);
    return measure(*backend, data, shape);
  }
  auto data = backend->allocate(bytes);
  backend->upload(*data, src, bytes);
  return measure(*backend, *data, shape);
}

py::array tvProx(const py::handle& x, double t, int iterations, const std::string& device) {
  require(t >= 0 && iterations >= 1, "larmor.tv_prox: t must be >= 0 and iterations >= 1");
  return inPlaceCopy(x, device, "larmor.tv_prox", [&](Backend& b, Buffer& data, const Shape& s) {
    auto dual = b.allocate(static_cast<std::size_t>(SparsityOps::tvDualElements(s)) * sizeof(cfloat));
    b.fill(*dual, cfloat(0.f, 0.f), SparsityOps::tvDualElements(s));
    b.sparsityOps().tvProx(data, s, t, iterations, *dual);
  });
}

py::array waveletProx(const py::handle& x, double t, const std::vector<index_t>& shift, const std::string& device) {
  require(t >= 0, "larmor.wavelet_prox: t must be >= 0");
  std::array<index_t, 3> engineShift{0, 0, 0};
  for (std::size_t i = 0; i < shift.size() && i < 3; ++i) engineShift[i] = shift[shift.size() - 1 - i];
  return inPlaceCopy(x, device, "larmor.wavelet_prox", [&](Backend& b, Buffer& data, const Shape& s) {
    for (int d = 0; d < 3; ++d)
      require(engineShift[d] >= 0 && engineShift[d] < s[d], "larmor.wavelet_prox: each shift must be in [0, the axis's length)");
    b.sparsityOps().waveletProx(data, s, t, engineShift);
  });
}

py::tuple coilCompression(const Dataset& d, int coils) {
  recon::CoilCompression cc;
  {
    py::gil_scoped_release release;
    cc = recon::computeCoilCompression(d, coils);
  }
  return py::make_tuple(toNumpy(std::move(cc.matrix)), cc.keptEnergy);
}

/// data ([slices,] coils, ...voxels) through matrix (slices, out, in) -> ([slices,] out, ...voxels).
py::array compressCoils(const py::handle& data, const py::handle& matrix) {
  CArray m = toCArray(matrix, "larmor.compress_coils: the matrix");
  CArray a = toCArray(data, "larmor.compress_coils: the data");
  require(m.shape().rank() == 3 || m.shape().rank() == 2, "larmor.compress_coils: the matrix is ([slices,] out, in)");
  recon::CoilCompression cc;
  cc.inCoils = m.shape()[0];
  cc.outCoils = m.shape()[1];
  cc.slices = m.shape()[2];
  cc.matrix = std::move(m);
  const index_t perSlice = a.size() / cc.slices;
  require(perSlice * cc.slices == a.size() && perSlice % cc.inCoils == 0,
          "larmor.compress_coils: the data " + a.shape().str() + " is not [voxels, " + std::to_string(cc.inCoils) +
              " coils, " + std::to_string(cc.slices) + " slices]");
  const index_t voxels = perSlice / cc.inCoils;
  CArray out;
  {
    py::gil_scoped_release release;
    out = recon::applyCoilCompression(cc, a, voxels);
  }
  std::vector<index_t> dims = a.shape().dims();
  // The coil axis is the one whose stride is `voxels` (the engine's shape with the coils replaced).
  index_t stride = 1;
  for (auto& n : dims) {
    if (stride == voxels && n == cc.inCoils) {
      n = cc.outCoils;
      break;
    }
    stride *= n;
  }
  out.reshape(Shape(dims));
  return toNumpy(std::move(out));
}

}  // namespace

void bindPriors(py::module_& m) {
  m.def("tv_prox", &tvProx, py::arg("x"), py::arg("t"), py::kw_only(), py::arg("iterations") = 20,
        py::arg("device") = "cpu", "argmin_u 1/2 ||u - x||^2 + t TV(u) (isotropic TV), by FGP from a zero dual field.");
  m.def("total_variation", [](const py::handle& x, const std::string& device) {
    return measured(x, device, "larmor.total_variation",
                    [](Backend& b, const Buffer& data, const Shape& s) { return b.sparsityOps().totalVariation(data, s); });
  }, py::arg("x"), py::kw_only(), py::arg("device") = "cpu", "sum_v sqrt(sum_d |x(v + e_d) - x(v)|^2).");
  m.def("wavelet_prox", &waveletProx, py::arg("x"), py::arg("t"), py::kw_only(),
        py::arg("shift") = std::vector<index_t>{}, py::arg("device") = "cpu",
        "S^-1 Psi^H soft_t(Psi S x): Daubechies-4 wavelets, detail bands soft-thresholded, S = numpy.roll by shift.");
  m.def("wavelet_l1", [](const py::handle& x, const std::string& device) {
    return measured(x, device, "larmor.wavelet_l1",
                    [](Backend& b, const Buffer& data, const Shape& s) { return b.sparsityOps().waveletL1(data, s); });
  }, py::arg("x"), py::kw_only(), py::arg("device") = "cpu", "||Psi x||_1 over the detail bands.");
  m.def("coil_compression", &coilCompression, py::arg("dataset"), py::arg("coils"),
        "SVD coil compression from the calibration lines: (matrix (slices, out, in), kept energy per slice).");
  m.def("compress_coils", &compressCoils, py::arg("data"), py::arg("matrix"),
        "Data ([slices,] coils, ...) through a coil_compression matrix: ([slices,] out coils, ...).");
}

}  // namespace larmor::python
