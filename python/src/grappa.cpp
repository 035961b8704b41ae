// larmor.grappa_calibrate and GrappaCalibration.apply: GRAPPA's calibration as a call of its own, and the
// reconstruction with it. What the engine's public GRAPPA (recon/grappa.hpp) splits: the sampling analysis
// (grappa::analyseSampling: R, the calibration block), the data in the calibration domain (calibrationDomain) and the
// weights W^T of every kernel entry (calibrationWeights: W = B A^H (A A^H + lambda E)^-1, solved on the backend as
// its pipeline solves them). What it does not split: its pipeline calibrates and fills in one pass on the device and
// has no filling from given weights, so apply(kspace) runs that pipeline (recon::run, method grappa, the
// calibration's settings) on k-space of the calibrated data's geometry, calibrating again on that k-space's own
// calibration lines. apply() of the calibrated data is larmor-cli recon --method grappa's image, bit for bit.
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

/// The calibrated dataset with `kspace` (same shape) in place of its own; the dataset itself for None.
std::shared_ptr<const Dataset> withKspace(const PyGrappaCalibration& c, const py::object& kspace) {
  if (kspace.is_none()) return c.dataset;
  CArray k = toCArray(kspace, "GrappaCalibration.apply: the k-space");
  require(k.size() == c.dataset->kspace.size(), "GrappaCalibration.apply: the k-space has " + std::to_string(k.size()) +
                                                     " elements, the calibrated data " +
                                                     std::to_string(c.dataset->kspace.size()));
  auto d = std::make_shared<Dataset>(*c.dataset);
  k.reshape(d->kspace.shape());
  d->kspace = std::move(k);
  return d;
}

PyReconResult apply(const PyGrappaCalibration& c, const py::object& kspace, bool keepCoilImages) {
  const std::shared_ptr<const Dataset> d = withKspace(c, kspace);
  recon::ReconRequest req;
  req.settings = c.settings;
  req.settings.keepCoilImages = keepCoilImages;
  req.device = c.device;
  req.backend = backendFor(c.device);
  req.dataset = d.get();
  PyReconResult out;
  py::gil_scoped_release release;
  out.result = recon::run(req);
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
      .def_property_readonly("weights", [](const PyGrappaCalibration& c) { return toNumpy(CArray(c.weights)); },
                             "W^T of every kernel entry, NumPy (entries, rows(B), rows(A)): the engine's "
                             "[rows(A), rows(B), entries] reversed")
      .def_property_readonly("sampling", [](const PyGrappaCalibration& c) { return samplingDict(c.sampling); })
      .def_property_readonly("device", [](const PyGrappaCalibration& c) { return c.device; })
      .def("apply", &apply, py::arg("kspace") = py::none(), py::kw_only(), py::arg("keep_coil_images") = false,
           "The GRAPPA reconstruction of k-space of the calibrated data's shape (None: the calibrated data) with the "
           "calibration's settings: the engine's pipeline, which calibrates on the k-space's own calibration lines "
           "(it has no filling from given weights). A ReconResult.");
  m.def("_grappa_calibrate", &calibrate, py::arg("dataset"), py::kw_only(), py::arg("device") = "cpu");
}

}  // namespace larmor::python
