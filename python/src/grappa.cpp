// larmor.grappa_calibrate and GrappaCalibration.apply: GRAPPA's calibration as a call of its own, and the
// reconstruction with its weights. The engine's public GRAPPA (recon/grappa.hpp) splits what these need: the sampling
// analysis (grappa::analyseSampling: R, the calibration block), the data in the calibration domain
// (calibrationDomain), the weights W^T of every kernel entry (calibrationWeights: W = B A^H (A A^H + lambda E)^-1,
// solved on the backend as its pipeline solves them), and the filling from given weights (fillFromWeights). apply()
// fills the k-space with the calibration's weights as they are now (edited, or assigned from another scan's
// calibration: no calibration runs) and reconstructs the filled k-space by the Cartesian FFT (recon::run, method
// fft, the calibration's combine and partial Fourier settings). Of the calibrated data that is larmor-cli recon
// --method grappa's image: bit for bit with the improved kernel on 2D slices, within float32 rounding where the
// pipeline's image path leaves the calibration domain by another route (basic kernel, 3D: tests/shared/grappa_fill.cpp).
#include <pybind11/stl.h>

#include <memory>

#include "bindings.hpp"
#include "larmor/recon/grappa.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/settings_table.hpp"
#include "numpy_arrays.hpp"
#include "recon_result.hpp"
#include "recon_settings.hpp"

namespace larmor::python {

namespace {

namespace gr = recon::grappa;
namespace st = recon::settings;

struct PyGrappaCalibration {
  std::shared_ptr<const Dataset> dataset;  ///< the data calibrated: the geometry apply() takes
  recon::ReconSettings settings;
  std::string device;
  gr::Sampling sampling;
  CArray weights;  ///< W^T [rows(A), rows(B), entries]
};

PyGrappaCalibration calibrate(const Dataset& d, const std::string& device, const py::kwargs& kwargs) {
  PyGrappaCalibration c;
  c.settings = settingsFrom("grappa", kwargs);
  st::validate(c.settings);
  c.device = device;
  c.dataset = std::make_shared<const Dataset>(d);
  auto backend = backendFor(device);
  py::gil_scoped_release release;
  c.sampling = gr::analyseSampling(d);
  const CArray planes = gr::calibrationDomain(d, c.settings.grappa);
  c.weights = gr::calibrationWeights(*backend, planes, c.sampling, c.settings.grappa);
  return c;
}

/// The calibrated dataset with `kspace` (same number of elements) in place of its own; the dataset itself for None.
std::shared_ptr<const Dataset> withKspace(const PyGrappaCalibration& c, const py::object& kspace) {
  if (kspace.is_none()) return c.dataset;
  CArray k = toCArray(kspace, "GrappaCalibration.apply: the k-space");
  if (k.size() != c.dataset->kspace.size())
    throw py::value_error("GrappaCalibration.apply: the k-space has " + std::to_string(k.size()) +
                          " elements, the calibrated data " + std::to_string(c.dataset->kspace.size()));
  auto d = std::make_shared<Dataset>(*c.dataset);
  k.reshape(d->kspace.shape());
  d->kspace = std::move(k);
  return d;
}

std::string numpyShapeText(const Shape& s) {
  std::string t;
  for (const py::ssize_t n : numpyShape(s)) t += (t.empty() ? "(" : ", ") + std::to_string(n);
  return t + (s.rank() == 1 ? ",)" : ")");
}

/// New weights for the calibration: complex, of the calibrated weights' shape (a ValueError otherwise), used as given.
void setWeights(PyGrappaCalibration& c, const py::object& weights) {
  const py::array a = py::array::ensure(weights);
  if (!a || a.dtype().kind() == 'O' || a.dtype().kind() == 'U' || a.dtype().kind() == 'S')
    throw py::value_error("GrappaCalibration.weights: expected an array of complex numbers");
  if (!(engineShape(a) == c.weights.shape()))
    throw py::value_error("GrappaCalibration.weights: expected shape " + numpyShapeText(c.weights.shape()) +
                          " (entries, targets x coils, kernel x coils), got " + numpyShapeText(engineShape(a)));
  c.weights = toCArray(a, "GrappaCalibration.weights");
}

/// The k-space filled from the calibration's weights (grappa::fillFromWeights), reconstructed by the Cartesian FFT.
PyReconResult apply(const PyGrappaCalibration& c, const py::object& kspace, bool keepCoilImages) {
  const std::shared_ptr<const Dataset> given = withKspace(c, kspace);
  recon::ReconRequest req;
  req.settings = c.settings;
  req.settings.method = recon::Method::Fft;
  req.settings.keepCoilImages = keepCoilImages;
  req.device = c.device;
  req.backend = backendFor(c.device);
  PyReconResult out;
  py::gil_scoped_release release;
  Dataset filled = *given;
  filled.kspace = gr::fillFromWeights(*req.backend, *given, c.settings.grappa, c.weights);
  req.dataset = &filled;
  out.result = recon::run(req);
  out.result.provenance["grappa_weights"] = "given (GrappaCalibration.apply: grappa::fillFromWeights, then method fft)";
  return out;
}

py::dict samplingDict(const gr::Sampling& s) {
  py::dict o;
  o["acceleration"] = s.accel;
  o["acceleration_pe2"] = s.accelPe2;
  o["first_line"] = s.gridFirst;
  o["calibration_lines"] = py::make_tuple(s.acsFirst, s.acsCount);
  o["calibration_partitions"] = py::make_tuple(s.acsFirstPe2, s.acsCountPe2);
  o["lines"] = s.lines;
  return o;
}

}  // namespace

void bindGrappa(py::module_& m) {
  py::class_<PyGrappaCalibration>(m, "GrappaCalibration",
                                  "GRAPPA weights of a Cartesian dataset (grappa_calibrate): .weights, .sampling, .apply")
      .def_property("weights", [](const PyGrappaCalibration& c) { return toNumpy(CArray(c.weights)); }, &setWeights,
                    "W^T of every kernel entry, NumPy (entries, rows(B), rows(A)): the engine's [rows(A), rows(B), "
                    "entries] reversed. A copy: assign edited weights, or another calibration's, back to use them")
      .def_property_readonly("sampling", [](const PyGrappaCalibration& c) { return samplingDict(c.sampling); })
      .def_property_readonly("device", [](const PyGrappaCalibration& c) { return c.device; })
      .def("apply", &apply, py::arg("kspace") = py::none(), py::kw_only(), py::arg("keep_coil_images") = false,
           "The GRAPPA reconstruction of k-space of the calibrated data's shape (None: the calibrated data): its missing "
           "lines filled from .weights as they are (no calibration runs), then the Cartesian FFT. A ReconResult.");
  m.def("_grappa_calibrate", &calibrate, py::arg("dataset"), py::kw_only(), py::arg("device") = "cpu");
}

}  // namespace larmor::python
