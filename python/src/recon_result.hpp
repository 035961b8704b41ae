#pragma once
// The Python object of a reconstruction's result: the engine's ReconResult, kept whole (its images are NumPy
// views of it, and larmor.write gives it to io::writeImageOutput as the CLI does, provenance and all).
#include "larmor/recon/recon.hpp"

namespace larmor::python {

struct PyReconResult {
  recon::ReconResult result;
};

}  // namespace larmor::python
