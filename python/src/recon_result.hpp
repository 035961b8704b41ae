#pragma once
// The Python object of a reconstruction's result: the engine's ReconResult, kept whole (its images are NumPy
// views of it, and larmor.write gives it to io::writeImageOutput as the CLI does, provenance and all). With
// recon(out="device") the images are also DeviceArrays on the reconstruction's device (copies of the engine's).
#include <pybind11/pybind11.h>

#include "larmor/recon/recon.hpp"

namespace larmor::python {

struct PyReconResult {
  recon::ReconResult result;
  /// out="device": .image and .coil_images as DeviceArrays (uploaded from `result`'s host images); else null.
  pybind11::object deviceImage, deviceCoilImages;
};

}  // namespace larmor::python
