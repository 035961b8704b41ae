#pragma once
// A Dataset from arrays in memory, as io::loadDataset reads the same arrays from BART .cfl files (for programs that
// hold k-space already: the Python module's larmor.recon on NumPy arrays). Same checks, same header, same masks, so
// a reconstruction of the arrays equals `larmor-cli recon K.cfl [--traj T.cfl]` of the files.
#include <string>

#include "larmor/data/dataset.hpp"
#include "larmor/io/dataset_io.hpp"

namespace larmor::io {

/// k-space [readout, pe1, pe2, coils, slices] (Cartesian; zeros where not sampled) or [readout, profiles, 1, coils,
/// slices] (BART's [1, readout, profiles, coils, slices] too) with `trajectory` [3, readout, profiles] in cycles per
/// FOV (complex, imaginary parts zero, as in a BART trajectory file; null: Cartesian). options.matrix as
/// LoadOptions says; the frame selectors and trajectoryPath are not read. Throws Error naming `name`.
Dataset datasetFromArrays(const std::string& name, CArray kspace, const CArray* trajectory,
                          const LoadOptions& options = {});

}  // namespace larmor::io
