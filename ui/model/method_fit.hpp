#pragma once
// Which reconstruction methods can apply to the loaded data, and why not: the one place the GUI (the
// method list greys out what cannot run, with this text as the tooltip) and the run plan ask.
// FFT and GRAPPA read a Cartesian grid; gridding, TRON and the exact DFT need a trajectory (non-Cartesian);
// CG and compressed sensing solve either (Cartesian SENSE or the NUFFT), as engine/src/recon/recon.cpp
// dispatches them.
#include <string>

#include "larmor/data/dataset.hpp"
#include "larmor/recon/settings.hpp"

namespace larmor::model {

/// "" when `m` can reconstruct data with header `h`; otherwise one sentence for the user saying why.
std::string methodProblem(recon::Method m, const Header& h);
/// The same with the data's sampling (method_choice.hpp) also asked: GRAPPA needs regularly undersampled
/// Cartesian data with calibration lines (not fully sampled, not Poisson-disc ones).
std::string methodProblem(recon::Method m, const Dataset& d);

/// The method's name as the GUI shows it ("FFT", "GRAPPA", "Gridding", "TRON", "Exact DFT", "CG", "CS").
std::string methodLabel(recon::Method m);

}  // namespace larmor::model
