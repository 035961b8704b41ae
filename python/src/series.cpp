// larmor.read_series and larmor.write_series: a file of several frames (contrasts, phases, repetitions, sets) as
// io::loadSeries reads it for larmor-cli recon, and io::writeSeriesOutput's outputs of their reconstructions
// (recon_series, recon.cpp). A Series' frames are its own Datasets (no copy; each keeps the Series alive).
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "larmor/io/dataset_io.hpp"
#include "larmor/io/export.hpp"
#include "larmor/io/series.hpp"
#include "recon_result.hpp"

namespace larmor::python {

namespace {

io::Series readSeries(const std::string& path, const std::string& trajectory, const std::vector<long>& matrix,
                      int repetition, int contrast, int phase, int set) {
  const io::LoadOptions lo = loadOptions(trajectory, matrix, repetition, contrast, phase, set);
  py::gil_scoped_release release;
  return io::loadSeries(path, lo);
}

py::dict key(const io::FrameKey& k) {
  py::dict o;
  o["contrast"] = k.contrast;
  o["phase"] = k.phase;
  o["repetition"] = k.repetition;
  o["set"] = k.set;
  return o;
}

py::dict writeSeries(const std::string& path, const py::list& results, const io::Series& series) {
  std::vector<recon::ReconResult> rs;
  for (const py::handle& r : results) rs.push_back(r.cast<const PyReconResult&>().result);
  require(rs.size() == series.frames.size(), "larmor.write_series: " + std::to_string(rs.size()) + " results for " +
                                                 std::to_string(series.frames.size()) + " frames");
  io::ExportOptions eo;
  eo.printWarnings = false;
  io::ExportReport rep;
  {
    py::gil_scoped_release release;
    io::checkOutputPath(path, eo);
    rep = io::writeSeriesOutput(path, rs, series, eo);
  }
  py::dict o;
  o["kind"] = io::toString(rep.kind);
  o["path"] = rep.path;
  o["files"] = rep.files;
  o["warnings"] = rep.warnings;
  return o;
}

}  // namespace

void bindSeries(py::module_& m) {
  py::class_<io::Series>(m, "Series", "The frames of a file (contrasts, phases, repetitions, sets), in FrameKey order.")
      .def("__len__", [](const io::Series& s) { return s.frames.size(); })
      .def("__getitem__", [](io::Series& s, std::size_t i) -> Dataset& {
        if (i >= s.frames.size()) throw py::index_error("larmor.Series: no frame " + std::to_string(i));
        return s.frames[i];
      }, py::return_value_policy::reference_internal)
      .def_property_readonly("keys", [](const io::Series& s) {
        py::list out;
        for (const auto& k : s.keys) out.append(key(k));
        return out;
      })
      .def_property_readonly("echo_times_ms", [](const io::Series& s) { return s.echoTimeMs; })
      .def("__repr__", [](const io::Series& s) { return "<larmor.Series " + s.describeDims() + ">"; });
  m.def("read_series", &readSeries, py::arg("path"), py::kw_only(), py::arg("trajectory") = "",
        py::arg("matrix") = std::vector<long>{}, py::arg("repetition") = -1, py::arg("contrast") = -1,
        py::arg("phase") = -1, py::arg("set") = -1, "Every frame of a file that the selectors keep (-1: all).");
  m.def("write_series", &writeSeries, py::arg("path"), py::arg("results"), py::arg("series"),
        "Writes recon_series' results as larmor-cli recon writes a series: .cfl with the frames at BART's dims, NIfTI "
        "with a 4th dimension, DICOM with temporal and echo tags, PNG frame 0.");
}

}  // namespace larmor::python
