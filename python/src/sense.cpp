// larmor.SenseNormal: CG-SENSE's operators on an image ((nz,) ny, nx) for a non-Cartesian trajectory and coil maps
// (ops/sense.hpp, docs/conventions.md's physics scale E = N^-1/2 F S):
//   normal(x)   = (E^H E + lam W^H W) x = sum_c S_c^H T S_c x + lam W^H W x,  T = N^-1 F^H F by Toeplitz embedding
//                 (Q from the exact DFT, or the NUFFT: ops/toeplitz.hpp), W the prior (none, tikhonov, fd)
//   adjoint(d)  = E^H d = N^-1/2 sum_c S_c^H F^H d_c, d (coils, M)
// with the engine's own objects (ToeplitzOperator, CoilSensitivities, NormalOperator, SenseEncoding), so a user's
// solver in Python applies the operator the reconstruction applies.
#include <pybind11/stl.h>

#include <cmath>
#include <cstring>

#include "bindings.hpp"
#include "larmor/ops/regularizer.hpp"
#include "larmor/ops/sense.hpp"
#include "larmor/ops/toeplitz.hpp"
#include "numpy_arrays.hpp"

namespace larmor::python {

namespace {

struct PySenseNormal {
  std::shared_ptr<Backend> backend;
  NufftGeometry geometry;
  std::vector<py::ssize_t> imageShape;
  index_t voxels = 0, coils = 0;
  std::unique_ptr<ops::ToeplitzOperator> gram;
  std::unique_ptr<ops::CoilSensitivities> maps;
  std::unique_ptr<ops::Regularizer> prior;
  std::unique_ptr<ops::NormalOperator> normal;
  std::unique_ptr<NufftPlan> plan;
  std::unique_ptr<ops::SenseEncoding> encoding;
};

NufftGeometry geometryOf(const py::handle& traj, const std::vector<py::ssize_t>& shape) {
  const RNumpy t = RNumpy::ensure(traj);
  require(t && t.ndim() >= 2 && (t.shape(t.ndim() - 1) == 2 || t.shape(t.ndim() - 1) == 3),
          "SenseNormal: the trajectory must be real (..., 2|3) in cycles per FOV");
  NufftGeometry g;
  g.dims = static_cast<int>(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) g.image[i] = shape[shape.size() - 1 - i];
  const index_t d = t.shape(t.ndim() - 1), m = t.size() / d;
  g.trajectory = RArray(Shape{3, m});
  for (index_t j = 0; j < m; ++j)
    for (index_t c = 0; c < d; ++c) g.trajectory[3 * j + c] = t.data()[d * j + c];
  return g;
}

std::unique_ptr<ops::Regularizer> priorOf(Backend& b, const std::string& reg, const index_t dims[3]) {
  if (reg == "none") return nullptr;
  if (reg == "tikhonov") return ops::makeTikhonov(b, dims);
  if (reg == "fd") return ops::makeFiniteDifference(b, dims);
  throw Error("SenseNormal: reg " + reg + ": expected none, tikhonov or fd");
}

PySenseNormal make(const py::handle& traj, const py::handle& maps, const std::string& device, double lam,
                   const std::string& reg, const std::string& psf) {
  const CNumpy s = complexArray(maps, "SenseNormal: the coil maps");
  require(s.ndim() == 3 || s.ndim() == 4, "SenseNormal: the coil maps are (coils, [nz,] ny, nx)");
  require(psf == "dft" || psf == "nufft", "SenseNormal: psf " + psf + ": expected dft or nufft");
  PySenseNormal p;
  p.imageShape.assign(s.shape() + 1, s.shape() + s.ndim());
  p.geometry = geometryOf(traj, p.imageShape);
  p.coils = s.shape(0);
  p.voxels = s.size() / p.coils;
  p.backend = backendFor(device);
  CArray mapArray(Shape{p.geometry.image[0], p.geometry.image[1], p.geometry.image[2], p.coils}, CArray::NoInit{});
  std::memcpy(mapArray.data(), s.data(), static_cast<std::size_t>(s.size()) * sizeof(cfloat));
  py::gil_scoped_release release;
  Backend& b = *p.backend;
  ops::PsfOptions po;
  po.method = psf == "dft" ? ops::PsfMethod::Dft : ops::PsfMethod::Nufft;
  const CArray q = ops::computePsf(b, p.geometry, nullptr, po);
  const double n = static_cast<double>(p.voxels);
  p.gram = std::make_unique<ops::ToeplitzOperator>(b, p.geometry, q, 1.0 / n);
  p.maps = std::make_unique<ops::CoilSensitivities>(b, mapArray, p.voxels, p.coils);
  p.prior = priorOf(b, reg, p.geometry.image);
  p.normal = std::make_unique<ops::NormalOperator>(b, *p.gram, p.maps.get(), p.prior.get(), lam);
  p.plan = b.makeNufftPlan(p.geometry, NufftOptions{});
  p.encoding = std::make_unique<ops::SenseEncoding>(b, *p.plan, p.maps.get(), 1.0 / std::sqrt(n));
  return p;
}

py::array applyNormal(PySenseNormal& p, const py::handle& x) {
  const CNumpy in = complexArray(x, "SenseNormal.normal");
  require(in.size() == p.voxels, "SenseNormal.normal: the image has " + std::to_string(in.size()) + " voxels, not " +
                                     std::to_string(p.voxels));
  CNumpy out(p.imageShape);
  const std::size_t bytes = static_cast<std::size_t>(p.voxels) * sizeof(cfloat);
  const auto* src = in.data();
  auto* dst = out.mutable_data();
  {
    py::gil_scoped_release release;
    Backend& b = *p.backend;
    auto xb = b.allocate(bytes), yb = b.allocate(bytes);
    b.upload(*xb, src, bytes);
    p.normal->apply(*xb, *yb);
    b.download(dst, *yb, bytes);
    b.synchronize();
  }
  return out;
}

py::array applyAdjoint(PySenseNormal& p, const py::handle& d) {
  const CNumpy in = complexArray(d, "SenseNormal.adjoint");
  const index_t m = p.geometry.samples();
  require(in.size() == m * p.coils, "SenseNormal.adjoint: the data has " + std::to_string(in.size()) +
                                        " samples, not coils x samples = " + std::to_string(p.coils) + " x " +
                                        std::to_string(m));
  CNumpy out(p.imageShape);
  const std::size_t perCoil = static_cast<std::size_t>(m) * sizeof(cfloat);
  const auto* src = in.data();
  auto* dst = out.mutable_data();
  {
    py::gil_scoped_release release;
    Backend& b = *p.backend;
    std::vector<std::unique_ptr<Buffer>> data;
    for (index_t c = 0; c < p.coils; ++c) {
      data.push_back(b.allocate(perCoil));
      b.upload(*data.back(), src + c * m, perCoil);
    }
    auto image = b.allocate(static_cast<std::size_t>(p.voxels) * sizeof(cfloat));
    p.encoding->adjoint(data, *image);
    b.download(dst, *image, static_cast<std::size_t>(p.voxels) * sizeof(cfloat));
    b.synchronize();
  }
  return out;
}

}  // namespace

void bindSense(py::module_& m) {
  py::class_<PySenseNormal>(m, "SenseNormal",
                            "CG-SENSE's normal operator (E^H E + lam W^H W) and E^H for a trajectory (..., 2|3) in "
                            "cycles per FOV and coil maps (coils, [nz,] ny, nx), with E = N^-1/2 F S.")
      .def(py::init(&make), py::arg("traj"), py::arg("maps"), py::arg("device") = "cpu", py::kw_only(),
           py::arg("lam") = 0.0, py::arg("reg") = "none", py::arg("psf") = "dft")
      .def("normal", &applyNormal, py::arg("x"), "(E^H E + lam W^H W) x")
      .def("adjoint", &applyAdjoint, py::arg("data"), "E^H d for data (coils, samples...)")
      .def_property_readonly("shape", [](const PySenseNormal& p) { return py::tuple(py::cast(p.imageShape)); })
      .def_property_readonly("coils", [](const PySenseNormal& p) { return p.coils; });
}

}  // namespace larmor::python
