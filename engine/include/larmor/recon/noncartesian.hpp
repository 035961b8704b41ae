#pragma once
// Non-Cartesian reconstructions: gridding (DCF -> adjoint NUFFT -> deapodize -> crop ->
// combine), TRON radial, exact DFT. Settings defaults from Beatty et al. 2005 and the papers.
#include <string>

#include <nlohmann/json.hpp>

#include "larmor/backend/backend.hpp"
#include "larmor/data/dataset.hpp"
#include "larmor/ops/nufft.hpp"
#include "larmor/util/progress.hpp"
#include "larmor/util/timer.hpp"

namespace larmor::recon {

struct ReconSettings;
struct ImageSet;

enum class DensityCompensation { Auto, Ramp, PipeMenon, None };

struct NufftSettings {
  int width = 4;                 ///< Kaiser-Bessel W
  double oversampling = 2.0;     ///< σ
  bool kernelTable = true;       ///< table lookup (else direct evaluation)
  Spreader spreader = Spreader::Auto;  ///< GPU adjoint spreader
  DensityCompensation dcf = DensityCompensation::Auto;  ///< Auto: ramp for radial, Pipe-Menon otherwise
  int dcfIterations = 10;
  TrigMode trig = TrigMode::Accurate;  ///< exact DFT trigonometry
};

/// 2D (one plane per slice) or 3D (one volume) for every non-Cartesian pipeline: 3 when the header is 3D,
/// the output has more than one partition (`outputZ`), or the trajectory leaves the kz = 0 plane.
int nonCartesianRank(const Dataset& d, index_t outputZ);

/// The NUFFT plan options of these settings (every non-Cartesian pipeline makes its plans from them).
NufftOptions nufftOptions(const NufftSettings& n);

ImageSet reconstructNonCartesian(Backend& backend, const Dataset& d, const ReconSettings& s, Timings& timings,
                                 const Progress& progress);

}  // namespace larmor::recon
