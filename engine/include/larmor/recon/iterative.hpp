#pragma once
// Advanced iterative reconstruction (Stone et al. 2008, Haldar-Liang): (F^H F + λ W^H W) ρ = F^H d by
// PCG, F^H F through Toeplitz embedding (issue 5).
#include <string>

#include <nlohmann/json.hpp>

#include "larmor/backend/backend.hpp"
#include "larmor/recon/dataset.hpp"
#include "larmor/util/progress.hpp"
#include "larmor/util/timer.hpp"

namespace larmor::recon {

struct ReconSettings;
struct ImageSet;

struct IterativeSettings {
  std::string regularizer = "tikhonov";  ///< tikhonov | fd | anatomical
  double lambda = 0.0;
  int iterations = 60;                   ///< the paper's default
  double tolerance = 0.0;                ///< relative residual; 0 = iterations only
  std::string referencePath;             ///< anatomical prior image
  std::string fhd = "dft";               ///< dft | nufft
};

nlohmann::json toJson(const IterativeSettings& s);

ImageSet reconstructIterative(Backend& backend, const Dataset& d, const ReconSettings& s, Timings& timings,
                              const Progress& progress);

}  // namespace larmor::recon
