#pragma once
// The parts of the _larmor extension (one bind function per file) and what they share: the backends by
// device name, kept for the life of the process (a CUDA backend's context, streams and plan caches are worth
// keeping between calls).
#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include <vector>

#include "larmor/backend/backend.hpp"
#include "larmor/io/dataset_io.hpp"

namespace larmor::python {
namespace py = pybind11;

/// read()'s and read_series()'s keywords as the readers' options (data.cpp).
io::LoadOptions loadOptions(const std::string& trajectory, const std::vector<long>& matrix, int repetition,
                            int contrast, int phase, int set);

/// The backend for "cpu", "cuda", "cuda:N" or "auto", as the CLI's --device selects it (plugins loaded on first
/// use); the same object for the same name. Throws Error with the registry's message.
std::shared_ptr<Backend> backendFor(const std::string& device);

void bindErrors(py::module_& m);   // errors.cpp
void bindDevices(py::module_& m);  // devices.cpp
void bindData(py::module_& m);     // data.cpp
void bindRecon(py::module_& m);    // recon.cpp
void bindDeviceArray(py::module_& m);  // device_array.cpp
void bindNufft(py::module_& m);    // nufft.cpp
void bindOps(py::module_& m);      // ops.cpp
void bindPriors(py::module_& m);   // priors.cpp
void bindMaps(py::module_& m);     // maps.cpp
void bindSense(py::module_& m);    // sense.cpp
void bindSeries(py::module_& m);   // series.cpp
void bindGrappa(py::module_& m);   // grappa.cpp

}  // namespace larmor::python
