// larmor.coil_maps: coil sensitivity maps as `larmor-cli maps` makes them (recon/coil_maps.hpp): ESPIRiT or Walsh
// from the dataset's calibration region, on the output matrix, with the settings that the maps read
// (calibration_size, espirit_crop, calibration_radius, matrix) named as the CLI's flags.
#include "bindings.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/coil_maps.hpp"
#include "larmor/recon/noncartesian.hpp"
#include "numpy_arrays.hpp"
#include "recon_settings.hpp"

namespace larmor::python {

namespace {

py::array coilMaps(const Dataset& d, const std::string& source, const std::string& device, const py::kwargs& kwargs) {
  py::dict settings;
  for (const auto& [k, v] : kwargs) settings[k] = v;
  settings["coil_maps"] = source;
  const recon::ReconSettings s = settingsFrom("cg", settings);
  index_t out[3];
  recon::outputMatrix(d, s, out);
  if (d.header.trajectory != TrajectoryKind::Cartesian && recon::nonCartesianRank(d, out[2]) == 2) out[2] = 1;
  CArray maps;
  {
    py::gil_scoped_release release;
    maps = recon::coilMaps(*backendFor(device), d, out, s);
  }
  return toNumpy(std::move(maps));
}

}  // namespace

void bindMaps(py::module_& m) {
  m.def("coil_maps", &coilMaps, py::arg("dataset"), py::arg("source") = "espirit", py::kw_only(),
        py::arg("device") = "cpu",
        "Coil maps (slices, coils, z, y, x) as `larmor-cli maps` makes them: source espirit or walsh; settings "
        "calibration_size, espirit_crop, calibration_radius, matrix as the CLI's flags.");
}

}  // namespace larmor::python
