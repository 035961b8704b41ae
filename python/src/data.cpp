// larmor.read / larmor.write and the Dataset: what io::loadDataset reads (ISMRMRD, twix, .cfl, RawArray) with its
// arrays as NumPy views that share the dataset's memory (no copy; kept alive by the Dataset object), its header
// as a dict; and io::writeImageOutput's outputs (DICOM folder, NIfTI, .cfl, PNG), chosen by the path as the CLI's
// --output.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "json_convert.hpp"
#include "larmor/io/dataset_arrays.hpp"
#include "larmor/io/dataset_io.hpp"
#include "larmor/io/export.hpp"
#include "numpy_arrays.hpp"
#include "recon_result.hpp"

namespace larmor::python {

namespace {

/// A NumPy view of an engine array that the Python object `owner` keeps alive.
template <class T>
py::object view(Array<T>& a, py::handle owner) {
  if (a.empty() && a.shape().rank() == 0) return py::none();
  return py::array_t<T>(numpyShape(a.shape()), a.data(), owner);
}

template <class T>
py::object optionalView(std::optional<Array<T>>& a, py::handle owner) {
  return a ? view(*a, owner) : py::none();
}

py::tuple triple(const index_t v[3]) { return py::make_tuple(v[0], v[1], v[2]); }
py::tuple triple(const float v[3]) { return py::make_tuple(v[0], v[1], v[2]); }

py::dict geometry(const Geometry& g) {
  py::dict o;
  o["present"] = g.present;
  o["position_mm"] = triple(g.position);
  o["read_dir"] = triple(g.readDir);
  o["phase_dir"] = triple(g.phaseDir);
  o["slice_dir"] = triple(g.sliceDir);
  o["slice_positions_mm"] = g.slicePositions;
  return o;
}

py::dict header(const Header& h) {
  py::dict o;
  o["encoded_matrix"] = triple(h.encoded);
  o["recon_matrix"] = triple(h.recon);
  o["encoded_fov_mm"] = triple(h.encodedFovMm);
  o["recon_fov_mm"] = triple(h.reconFovMm);
  o["coils"] = h.coils;
  o["slices"] = h.slices;
  o["trajectory"] = toString(h.trajectory);
  o["acceleration"] = py::make_tuple(h.accelerationPe1, h.accelerationPe2);
  o["calibration_lines"] = h.calibrationLines;
  o["acquired_fraction"] = triple(h.acquiredFraction);
  o["field_strength_t"] = h.systemFieldT;
  o["patient_name"] = h.patientName;
  o["patient_id"] = h.patientId;
  o["study_description"] = h.studyDescription;
  o["protocol_name"] = h.protocolName;
  o["device_description"] = h.deviceDescription;
  o["geometry"] = geometry(h.geometry);
  return o;
}

Dataset read(const std::string& path, const std::string& trajectory, const std::vector<long>& matrix, int repetition,
             int contrast, int phase, int set) {
  const io::LoadOptions lo = loadOptions(trajectory, matrix, repetition, contrast, phase, set);
  py::gil_scoped_release release;
  return io::loadDataset(path, lo);
}

/// k-space (coils, pe1, readout), ([slices,] coils, pe2, pe1, readout) or, with a trajectory (profiles, readout,
/// 2|3) in cycles per FOV, ([slices,] coils, 1, profiles, readout): the Dataset a .cfl of them would give.
Dataset fromArrays(const py::handle& kspace, const py::object& trajectory, const std::vector<long>& matrix) {
  CArray k = toCArray(kspace, "larmor.Dataset.from_arrays: the k-space");
  std::vector<index_t> dims = k.shape().dims();
  require(dims.size() >= 3 && dims.size() <= 5, "larmor.Dataset.from_arrays: the k-space has " +
                                                     std::to_string(dims.size()) +
                                                     " axes; 3 to 5 are read ([slices,] coils, [pe2,] pe1, readout)");
  if (dims.size() == 3) dims.insert(dims.begin() + 2, 1);
  k.reshape(Shape(dims));
  std::optional<CArray> traj;
  if (!trajectory.is_none()) {
    const RNumpy t = RNumpy::ensure(trajectory);
    require(t && t.ndim() == 3 && (t.shape(2) == 2 || t.shape(2) == 3),
            "larmor.Dataset.from_arrays: the trajectory must be real (profiles, readout, 2|3)");
    const index_t n = t.size() / t.shape(2), d = t.shape(2);
    traj.emplace(Shape{3, t.shape(1), t.shape(0)});
    for (index_t j = 0; j < n; ++j)
      for (index_t c = 0; c < d; ++c) (*traj)[3 * j + c] = t.data()[d * j + c];
  }
  io::LoadOptions lo;
  for (std::size_t i = 0; i < 3 && i < matrix.size(); ++i) lo.matrix[i] = matrix[i];
  py::gil_scoped_release release;
  return io::datasetFromArrays("arrays", std::move(k), traj ? &*traj : nullptr, lo);
}

/// An image in the engine's [x, y, z, 1, slices] (a NumPy array of up to 5 axes: (slices, 1, z, y, x)).
CArray imageArray(const py::handle& image) {
  CArray a = toCArray(image, "larmor.write: the image");
  require(a.shape().rank() >= 2 && a.shape().rank() <= 5,
          "larmor.write: the image has " + std::to_string(a.shape().rank()) + " axes; 2 to 5 are written (slices, 1, z, y, x)");
  std::vector<index_t> dims = a.shape().dims();
  dims.resize(5, 1);
  a.reshape(Shape(dims));
  return a;
}

py::dict write(const std::string& path, const py::object& image, const Dataset* like, const py::dict& options) {
  recon::ReconResult own;
  const recon::ReconResult* r = &own;
  if (py::isinstance<PyReconResult>(image)) r = &image.cast<const PyReconResult&>().result;
  else own.image = imageArray(image);
  Dataset blank;
  if (!like) {
    blank.source = "numpy";
    for (int i = 0; i < 3; ++i) blank.header.recon[i] = blank.header.encoded[i] = r->image.shape()[i];
    blank.header.slices = r->image.shape()[4];
    like = &blank;
  }
  io::ExportOptions eo;
  eo.printWarnings = false;
  if (options.contains("series_description")) eo.seriesDescription = options["series_description"].cast<std::string>();
  if (options.contains("anonymize")) eo.anonymize = options["anonymize"].cast<bool>();
  if (options.contains("components")) eo.components = options["components"].cast<std::vector<std::string>>();
  if (options.contains("nifti_complex")) eo.niftiComplex = options["nifti_complex"].cast<bool>();
  io::ExportReport rep;
  {
    py::gil_scoped_release release;
    io::checkOutputPath(path, eo);
    rep = io::writeImageOutput(path, *r, *like, eo);
  }
  py::dict o;
  o["kind"] = io::toString(rep.kind);
  o["path"] = rep.path;
  o["files"] = rep.files;
  o["warnings"] = rep.warnings;
  return o;
}

void bindDatasetClass(py::module_& m) {
  py::class_<Dataset>(m, "Dataset", "A dataset as read: k-space, trajectory, masks and header (NumPy views, no copy).")
      .def_static("from_arrays", &fromArrays, py::arg("kspace"), py::arg("trajectory") = py::none(),
                  py::arg("matrix") = std::vector<long>{},
                  "The Dataset that a BART .cfl of these arrays would give: k-space ([slices,] coils, [pe2,] pe1, "
                  "readout), or with a trajectory (profiles, readout, 2|3) in cycles per FOV ([slices,] coils, 1, "
                  "profiles, readout).")
      .def_readonly("source", &Dataset::source)
      .def_property_readonly("header", [](const Dataset& d) { return header(d.header); })
      .def_property_readonly("kspace", [](py::object self) { return view(self.cast<Dataset&>().kspace, self); },
                             "complex64 (slices, coils, pe2, pe1, readout); non-Cartesian (slices, coils, 1, profiles, readout)")
      .def_property_readonly("trajectory", [](py::object self) {
        auto& d = self.cast<Dataset&>();
        return d.trajectory.empty() ? py::none() : view(d.trajectory, self);
      }, "float32 (profiles, readout, 3) in cycles per FOV (non-Cartesian), else None")
      .def_property_readonly("sampled", [](py::object self) { return view(self.cast<Dataset&>().sampled, self); })
      .def_property_readonly("calibration", [](py::object self) { return view(self.cast<Dataset&>().calibration, self); })
      .def_property_readonly("reference", [](py::object self) { return optionalView(self.cast<Dataset&>().reference, self); })
      .def_property_readonly("coil_maps", [](py::object self) { return optionalView(self.cast<Dataset&>().coilMaps, self); })
      .def_property_readonly("noise", [](py::object self) { return optionalView(self.cast<Dataset&>().noise, self); })
      .def_readonly("warnings", &Dataset::warnings)
      .def("__repr__", [](const Dataset& d) {
        return "<larmor.Dataset " + d.source + " " + toString(d.header.trajectory) + " kspace " + d.kspace.shape().str() + ">";
      });
}

}  // namespace

void bindData(py::module_& m) {
  bindDatasetClass(m);
  m.def("read", &read, py::arg("path"), py::kw_only(), py::arg("trajectory") = "",
        py::arg("matrix") = std::vector<long>{}, py::arg("repetition") = -1, py::arg("contrast") = -1,
        py::arg("phase") = -1, py::arg("set") = -1,
        "Reads ISMRMRD (.h5), Siemens twix (.dat), BART .cfl or RawArray (.ra) k-space, as larmor-cli recon does.");
  m.def("write", &write, py::arg("path"), py::arg("image"), py::kw_only(), py::arg("like") = nullptr,
        py::arg("options") = py::dict(),
        "Writes an image (a ReconResult or a complex array (slices, 1, z, y, x)) as DICOM (DIR/), NIfTI (.nii), "
        "BART (.cfl) or PNG (.png), with the geometry and patient of `like`.");
}

io::LoadOptions loadOptions(const std::string& trajectory, const std::vector<long>& matrix, int repetition,
                            int contrast, int phase, int set) {
  io::LoadOptions lo;
  lo.trajectoryPath = trajectory;
  for (std::size_t i = 0; i < 3 && i < matrix.size(); ++i) lo.matrix[i] = matrix[i];
  lo.repetition = repetition;
  lo.contrast = contrast;
  lo.phase = phase;
  lo.set = set;
  return lo;
}

}  // namespace larmor::python
