// Which methods apply to which data (method_fit.hpp).
#include "method_fit.hpp"

#include <algorithm>

#include "method_choice.hpp"

namespace larmor::model {

std::string methodLabel(recon::Method m) {
  switch (m) {
    case recon::Method::Fft: return "FFT";
    case recon::Method::Grappa: return "GRAPPA";
    case recon::Method::Gridding: return "Gridding";
    case recon::Method::Tron: return "TRON";
    case recon::Method::Dft: return "Exact DFT";
    case recon::Method::Cg: return "CG";
    case recon::Method::Cs: return "CS";
  }
  return recon::toString(m);
}

std::string methodProblem(recon::Method m, const Header& h) {
  const bool cartesian = h.trajectory == TrajectoryKind::Cartesian;
  switch (m) {
    case recon::Method::Fft:
    case recon::Method::Grappa:
      if (!cartesian)
        return methodLabel(m) + " reads a Cartesian grid; these data are " + toString(h.trajectory) +
               ": use gridding, TRON, CG or CS.";
      return {};  // GRAPPA without calibration lines: the engine says what is missing (files may not state R)
    case recon::Method::Gridding:
    case recon::Method::Tron:
    case recon::Method::Dft:
      if (cartesian) return methodLabel(m) + " needs non-Cartesian (e.g. radial) data; these data are Cartesian: use FFT, GRAPPA, CG or CS.";
      return {};
    case recon::Method::Cg:
    case recon::Method::Cs: return {};
  }
  return {};
}

std::string methodProblem(recon::Method m, const Dataset& d) {
  if (std::string why = methodProblem(m, d.header); !why.empty() || m != recon::Method::Grappa) return why;
  const SamplingFacts f = describeSampling(d);
  if (f.fullySampled) return "GRAPPA fills the lines an undersampled scan skipped; these data are fully sampled: use FFT.";
  if (!f.regular)
    return "GRAPPA needs regular undersampling; these data are sampled irregularly (" + f.summary() + "): use CS or CG.";
  if (f.calibrationLines < 2)
    return "GRAPPA calibrates from fully sampled centre lines; these data have none: use CG or CS.";
  return {};
}

}  // namespace larmor::model
