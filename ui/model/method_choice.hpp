#pragma once
// The method that fits the data, chosen when a file opens, and what its sampling says.
// Cartesian: the sampled fraction f of the (pe1, pe2) grid within the acquired region (partial Fourier
// counted as acquired), the fully sampled centre (the block an autocalibrating method calibrates from) and
// whether the lines outside it lie on a lattice (GRAPPA's regular undersampling, R = the common gap) or not
// (Poisson disc, variable density: compressed sensing's incoherent sampling). Rules:
//   fully sampled Cartesian                     -> FFT (exact)
//   regular undersampling with calibration      -> GRAPPA
//   irregular undersampling with a full centre  -> CS (ESPIRiT maps from the centre, TV/wavelet prior)
//   undersampled without a calibration centre   -> FFT, with the aliasing warned of
//   non-Cartesian at or above Nyquist           -> gridding; below (radial: spokes < pi/2 N) -> CS
// A Cartesian reading of data every line of which peaks as strongly as the centre line is flagged: a radial
// acquisition read without its trajectory (twix files do not store one).
#include <array>
#include <string>

#include "larmor/data/dataset.hpp"
#include "larmor/recon/settings.hpp"

namespace larmor::model {

struct SamplingFacts {
  bool cartesian = true;
  bool fullySampled = true;
  double fraction = 1;       ///< Cartesian: sampled share of the pe1 x pe2 grid (1: all)
  bool regular = true;       ///< undersampled Cartesian: the lines outside the centre lie on a lattice
  int acceleration[2] = {1, 1};  ///< regular: the common gap along pe1, pe2
  std::array<long, 2> centre{0, 0};  ///< the fully sampled block around the k-space centre (pe1 x pe2); 0 without one
  long calibrationLines = 0;  ///< the file's calibration (ACS) lines, else the centre's extent along pe1
  long profiles = 0;         ///< non-Cartesian: spokes/interleaves
  bool belowNyquist = false; ///< radial below pi/2 N spokes
  bool looksRadial = false;  ///< Cartesian reading whose every line peaks like the centre line (a radial scan)
  /// "R 4 × 1, 24 calibration lines", "13 % sampled, irregular, fully sampled centre 24 × 20", "fully sampled".
  std::string summary() const;
};

/// What the data's sampling says (slice 0 and its mask decide).
SamplingFacts describeSampling(const Dataset& d);

struct MethodChoice {
  recon::Method method = recon::Method::Fft;
  std::string reason;   ///< one sentence: why this method ("Regularly undersampled (R 4) with 24 calibration lines: GRAPPA.")
  std::string warning;  ///< "" or what the image will suffer (aliasing of a zero-filled reconstruction, radial data read as Cartesian)
};

/// The method that fits the data (rules above).
MethodChoice chooseMethod(const Dataset& d);

/// "" or the aliasing `m` will show on data with `facts` (FFT or gridding of undersampled data).
std::string aliasingWarning(recon::Method m, const SamplingFacts& facts);

}  // namespace larmor::model
