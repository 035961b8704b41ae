// larmor.SenseNormal: CG-SENSE's operators on an image ((nz,) ny, nx) for a non-Cartesian trajectory, or a Cartesian
// sampling mask, and coil maps (ops/sense.hpp, docs/conventions.md's physics scale E = N^-1/2 F S):
//   normal(x)   = (E^H E + lam W^H W) x = sum_c S_c^H T S_c x + lam W^H W x,  T = N^-1 F^H F: by Toeplitz embedding
//                 for a trajectory (Q from the exact DFT, or the NUFFT: ops/toeplitz.hpp), IFFT_u diag(mask) FFT_u for
//                 a mask (ops/cartesian_sampling.hpp's CartesianGram); W the prior (none, tikhonov, fd)
//   adjoint(d)  = E^H d = N^-1/2 sum_c S_c^H F^H d_c, d (coils, M); for a mask the M sampled points in C order
//                 (numpy.flatnonzero(mask)), or whole k-space grids (coils, [nz,] ny, nx) of which they are taken
// with the engine's own objects (ToeplitzOperator, CoilSensitivities, NormalOperator, SenseEncoding), so a user's
// solver in Python applies the operator the reconstruction applies.
#include <pybind11/stl.h>

#include <cmath>
#include <cstring>

#include "bindings.hpp"
#include "larmor/ops/cartesian_sampling.hpp"
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
  std::unique_ptr<ops::FourierGram> gram;
  std::unique_ptr<ops::CoilSensitivities> maps;
  std::unique_ptr<ops::Regularizer> prior;
  std::unique_ptr<ops::NormalOperator> normal;
  std::unique_ptr<NufftPlan> plan;
  std::unique_ptr<ops::SenseEncoding> encoding;
  std::vector<std::int64_t> sampled;  ///< a mask's sampled grid indices (empty for a trajectory)
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

/// The maps (coils, [nz,] ny, nx) on the host in the engine's layout, and the object's shapes from them.
CArray mapsOf(PySenseNormal& p, const py::handle& maps) {
  const CNumpy s = complexArray(maps, "SenseNormal: the coil maps");
  require(s.ndim() == 3 || s.ndim() == 4, "SenseNormal: the coil maps are (coils, [nz,] ny, nx)");
  p.imageShape.assign(s.shape() + 1, s.shape() + s.ndim());
  p.coils = s.shape(0);
  p.voxels = s.size() / p.coils;
  p.geometry.dims = static_cast<int>(p.imageShape.size());
  for (std::size_t i = 0; i < p.imageShape.size(); ++i) p.geometry.image[i] = p.imageShape[p.imageShape.size() - 1 - i];
  CArray a(Shape{p.geometry.image[0], p.geometry.image[1], p.geometry.image[2], p.coils}, CArray::NoInit{});
  std::memcpy(a.data(), s.data(), static_cast<std::size_t>(s.size()) * sizeof(cfloat));
  return a;
}

/// What both kinds share once the plan and the Gram operator are made: the maps, the prior, A and E.
void finish(PySenseNormal& p, const CArray& maps, double lam, const std::string& reg, double samples) {
  Backend& b = *p.backend;
  p.maps = std::make_unique<ops::CoilSensitivities>(b, maps, p.voxels, p.coils);
  p.prior = priorOf(b, reg, p.geometry.image);
  p.normal = std::make_unique<ops::NormalOperator>(b, *p.gram, p.maps.get(), p.prior.get(), lam);
  p.encoding = std::make_unique<ops::SenseEncoding>(b, *p.plan, p.maps.get(), 1.0 / std::sqrt(samples));
}

PySenseNormal make(const py::handle& traj, const py::handle& maps, const std::string& device, double lam,
                   const std::string& reg, const std::string& psf) {
  require(psf == "dft" || psf == "nufft", "SenseNormal: psf " + psf + ": expected dft or nufft");
  PySenseNormal p;
  const CArray mapArray = mapsOf(p, maps);
  const NufftGeometry g = geometryOf(traj, p.imageShape);
  p.geometry.trajectory = g.trajectory;
  p.backend = backendFor(device);
  py::gil_scoped_release release;
  Backend& b = *p.backend;
  ops::PsfOptions po;
  po.method = psf == "dft" ? ops::PsfMethod::Dft : ops::PsfMethod::Nufft;
  const CArray q = ops::computePsf(b, p.geometry, nullptr, po);
  const double n = static_cast<double>(p.voxels);
  p.gram = std::make_unique<ops::ToeplitzOperator>(b, p.geometry, q, 1.0 / n);
  p.plan = b.makeNufftPlan(p.geometry, NufftOptions{});
  finish(p, mapArray, lam, reg, n);
  return p;
}

/// A Cartesian mask ((nz,) ny, nx) of the maps' image shape, nonzero where sampled (k = 0 at index N // 2).
PySenseNormal makeCartesian(const py::handle& mask, const py::handle& maps, const std::string& device, double lam,
                            const std::string& reg) {
  PySenseNormal p;
  const CArray mapArray = mapsOf(p, maps);
  const RNumpy m = RNumpy::ensure(mask);
  require(m && std::vector<py::ssize_t>(m.shape(), m.shape() + m.ndim()) == p.imageShape,
          "SenseNormal.cartesian: the mask must be real or boolean of the maps' image shape ((nz,) ny, nx)");
  for (index_t i = 0; i < p.voxels; ++i)
    if (m.data()[i] != 0.0f) p.sampled.push_back(i);
  p.backend = backendFor(device);
  py::gil_scoped_release release;
  Backend& b = *p.backend;
  const Shape grid{p.geometry.image[0], p.geometry.image[1], p.geometry.image[2]};
  auto plan = std::make_unique<ops::CartesianPlan>(b, grid, p.sampled);
  p.gram = std::make_unique<ops::CartesianGram>(b, *plan);
  p.plan = std::move(plan);
  finish(p, mapArray, lam, reg, static_cast<double>(p.voxels));
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

/// A mask's sampled points (coils, M) of whole k-space grids (coils, [nz,] ny, nx).
CNumpy sampledPoints(const PySenseNormal& p, const CNumpy& grids) {
  const index_t m = static_cast<index_t>(p.sampled.size());
  CNumpy out(std::vector<py::ssize_t>{p.coils, m});
  for (index_t c = 0; c < p.coils; ++c)
    for (index_t j = 0; j < m; ++j) out.mutable_data()[c * m + j] = grids.data()[c * p.voxels + p.sampled[j]];
  return out;
}

py::array applyAdjoint(PySenseNormal& p, const py::handle& d) {
  CNumpy in = complexArray(d, "SenseNormal.adjoint");
  const index_t m = p.plan->samples();
  if (!p.sampled.empty() && in.size() == p.coils * p.voxels) in = sampledPoints(p, in);
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
                            "cycles per FOV (or a Cartesian mask: SenseNormal.cartesian) and coil maps "
                            "(coils, [nz,] ny, nx), with E = N^-1/2 F S.")
      .def(py::init(&make), py::arg("traj"), py::arg("maps"), py::arg("device") = "cpu", py::kw_only(),
           py::arg("lam") = 0.0, py::arg("reg") = "none", py::arg("psf") = "dft")
      .def_static("cartesian", &makeCartesian, py::arg("mask"), py::arg("maps"), py::arg("device") = "cpu",
                  py::kw_only(), py::arg("lam") = 0.0, py::arg("reg") = "none",
                  "The same operators for Cartesian sampling: a mask ((nz,) ny, nx), nonzero where sampled, k = 0 at "
                  "index N // 2 (T = IFFT_u diag(mask) FFT_u, no embedding).")
      .def("normal", &applyNormal, py::arg("x"), "(E^H E + lam W^H W) x")
      .def("adjoint", &applyAdjoint, py::arg("data"), "E^H d for data (coils, samples...)")
      .def_property_readonly("shape", [](const PySenseNormal& p) { return py::tuple(py::cast(p.imageShape)); })
      .def_property_readonly("coils", [](const PySenseNormal& p) { return p.coils; });
}

}  // namespace larmor::python
